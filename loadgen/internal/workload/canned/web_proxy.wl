# Web proxy — seed 003 Table 1 row "Web proxy", Table 2 column "Web proxy",
# §5.1 (Figure 3 model), §5.2 "Web proxy", §6.7.
#
# Table 2 as extracted (percent): lookup 14, read 6, write 23, getattr 18,
#   readlink 0, readdir 1, create 11, remove 11, mkdir 0, rmdir 0, fsstat 1,
#   setattr 0, readdirplus 0, access 4, commit 12.  Sum = 101 (rounding).
# Correction: commit 12 -> 11. The §5.2/§6.7 model issues one commit (fsync)
#   per file written after its asynchronous sequential writes, and a file is
#   written once per create, so commit = create = 11; the other columns of
#   Table 2 that have creates are consistent with that reading. Sum = 100.
#
# Model: memory hit -> getattr; memory miss -> lookup, then a disk hit reads
#   the file sequentially (8 KB reads), a disk miss creates and writes it
#   sequentially (then commit) and occasionally removes an old one.
# Table 1: Zipf 0.6 < alpha < 0.9 (0.75), sizes as Web server (mean 10.5 KB),
#   directories "small (dozens)", I/O sequential r/w.
name = web_proxy
description = Web proxy: web server plus create/write/commit/remove of cached objects, Zipf 0.75
mix = lookup:14, read:6, write:23, getattr:18, readdir:1, create:11, remove:11, fsstat:1, access:4, commit:11

files_per_dir = 12:1, 24:2, 36:2, 48:1   # "small (dozens)", mean 30
dirs_per_dir = 2:1, 4:2, 8:1
symlinks_per_dir = 0
max_depth = 4
file_popularity = zipf:0.75
dir_popularity = uniform
symlink_popularity = uniform
file_size = @web_sizes.dist

read_size = 8K
write_size = 8K
seq_run = whole
write_seq_run = whole                    # new cache files are written entirely
read_access = sequential
write_access = sequential

fileset_files_per_ops = 2
fileset_min_files = 16
