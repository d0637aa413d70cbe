# Peer-to-peer media server — seed 003 Table 1 row "peer-peer media server",
# Table 2 column "peer-peer", §5.2 "Peer-to-peer server".
#
# Table 2 as extracted (percent): lookup 1, read 54, write 35, getattr 1,
#   readlink 0, readdir 0, create 1, remove 1, mkdir 0, rmdir 0, fsstat 1,
#   setattr 0, readdirplus 0, access 1, commit 5.  Sum = 100, no correction.
#   (Uploads 50% more frequent than downloads: read/write = 54/35 = 1.54.)
#
# §5.2: downloads = create + sequential asynchronous writes + commit; uploads =
#   lookup + sequential reads; I/O two orders of magnitude more frequent than
#   namespace operations (3.7 MB files / 32 KB transfers = ~115 I/Os per file).
# Table 1: popularity "Zipf (large alpha)" (we take 1.5); sizes "large
#   (avg 3.7 MB)" (p2p_sizes.dist); directories "large (100 - 1000)";
#   I/O sequential r/w.
name = p2p
description = Peer-to-peer media server: large files, sequential 32 KB reads and writes, Zipf 1.5
mix = lookup:1, read:54, write:35, getattr:1, create:1, remove:1, fsstat:1, access:1, commit:5

files_per_dir = 100:1, 250:1, 500:1, 1000:1   # "large (100 - 1000)"
dirs_per_dir = 2
symlinks_per_dir = 0
max_depth = 2
file_popularity = zipf:1.5
dir_popularity = uniform
symlink_popularity = uniform
file_size = @p2p_sizes.dist                   # mean 3.74 MB

read_size = 32K                               # our choice (large media transfers)
write_size = 32K
seq_run = whole
write_seq_run = whole
read_access = sequential
write_access = sequential

fileset_files_per_ops = 0.05                  # 1000 ops/s -> 50 files (~190 MB)
fileset_min_files = 16
