# Transaction processing (database) — seed 003 Table 1 row "transaction
# processing", Table 2 column "database", §5.2 "Transaction processing", §6.3.
#
# Table 2 as extracted (percent): lookup 0, read 61, write 31, getattr 3,
#   readlink 0, readdir 0, create 0, remove 0, mkdir 0, rmdir 0, fsstat 0,
#   setattr 0, readdirplus 0, access 1, commit 4.  Sum = 100, no correction.
#
# §5.2: modelled after TPC-C, reading and writing within a handful of large
#   files in a 2:1 ratio (61:31), random I/O, with some short (256 KB)
#   sequential asynchronous writes followed by commit (batch log writes).
# Table 1: "few files", sizes "large (GB - TB)", directories small, random r/w.
# Scaled for a loopback test box: 64 MiB files, 4 files minimum (0.004 files
#   per op/s). On a real testbed raise file_size (e.g. file_size = 4G).
name = db_tp
description = Database / transaction processing: random 8 KB r/w (2:1) in a few large files
mix = read:61, write:31, getattr:3, access:1, commit:4

files_per_dir = 4                        # "few files", "small" directories
dirs_per_dir = 0
symlinks_per_dir = 0
max_depth = 0
file_popularity = uniform
dir_popularity = uniform
symlink_popularity = uniform
file_size = 64M                          # GB-TB in the paper; scaled down (see above)

read_size = 8K
write_size = 8K
seq_run = 1                              # random reads
write_seq_run = 1:3, 32:1                # mostly random; 1 in 4 runs a 256 KB (32 x 8 KB) sequential log write
read_access = random
write_access = random

fileset_files_per_ops = 0.004
fileset_min_files = 4
