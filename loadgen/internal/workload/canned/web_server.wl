# Web server — seed 003 Table 1 row "Web server", Table 2 column "Web server",
# §5.2 "Web server", Table 4 (same mix measured: 14/28/55/1/1/1).
#
# Table 2 as extracted (percent): lookup 14, read 28, write 0, getattr 55,
#   readlink 0, readdir 1, create 0, remove 0, mkdir 0, rmdir 0, fsstat 1,
#   setattr 0, readdirplus 0, access 1, commit 0.  Sum = 100, no correction.
#
# §5.2: 80% memory-cache hits give a single getattr; a miss does a lookup and
#   reads the file sequentially and in its entirety with 8 KB reads (two on
#   average). Read-only.
# Table 1: popularity Zipf 0.6 < alpha < 0.9 (we take the midpoint 0.75);
#   sizes long-tail, mean 10.5 KB, median 1.3 KB (web_sizes.dist); directories
#   "small (dozens)"; I/O sequential reads.
name = web_server
description = Web server: getattr-dominated, read-only, whole-file sequential reads, Zipf 0.75
mix = lookup:14, read:28, getattr:55, readdir:1, fsstat:1, access:1

files_per_dir = 12:1, 24:2, 36:2, 48:1   # "small (dozens)", mean 30
dirs_per_dir = 2:1, 4:2, 8:1
symlinks_per_dir = 0
max_depth = 4
file_popularity = zipf:0.75
dir_popularity = uniform
symlink_popularity = uniform
file_size = @web_sizes.dist

read_size = 8K
write_size = 8K                          # unused (read-only)
seq_run = whole                          # whole file, sequentially
read_access = sequential
write_access = sequential

fileset_files_per_ops = 2
fileset_min_files = 16
