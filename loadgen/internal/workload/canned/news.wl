# News server — seed 003 Table 1 row "news server", Table 2 column "news
# server", §5.2 "News server".
#
# Table 2 as extracted (percent): lookup 1, read 22, write 64, getattr 0,
#   readlink 0, readdir 1, create 1, remove 1, mkdir 0, rmdir 0, fsstat 1,
#   setattr 0, readdirplus 0, access 1, commit 8.  Sum = 100, no correction.
#
# §5.2: one file per newsgroup; new messages are appended, users read random
#   sections; near-flat popularity (no group above 2.5% of accesses); sizes
#   bimodal near 5 KB and 45 KB.
# Table 1: "Zipf (small alpha)" (we take 0.3: with 100 groups the most popular
#   gets ~3%, with 1000 groups ~0.6%), sizes bimodal (news_sizes.dist),
#   directories "large (100+)", I/O "random r, append w".
name = news
description = News server: appends dominate, random reads, near-flat popularity (Zipf 0.3)
mix = lookup:1, read:22, write:64, readdir:1, create:1, remove:1, fsstat:1, access:1, commit:8

files_per_dir = 100:2, 200:1, 500:1     # "large (100+)"
dirs_per_dir = 2
symlinks_per_dir = 0
max_depth = 1
file_popularity = zipf:0.3
dir_popularity = uniform
symlink_popularity = uniform
file_size = @news_sizes.dist            # mean 25 KiB

read_size = 8K
write_size = @news_sizes.dist           # one article appended per WRITE
seq_run = 1:2, 2:1, 4:1                 # short random sections
write_seq_run = 1
read_access = random
write_access = append

fileset_files_per_ops = 2
fileset_min_files = 16
