# Mail server — seed 003 Table 1 row "mail server", Table 2 column "mail
# server", §5.2 "Mail server" (after Saito et al.).
#
# Table 2 as extracted (percent): lookup 27, read 14, write 24, getattr 3,
#   readlink 0, readdir 0, create 0, remove 0, mkdir 0, rmdir 0, fsstat 1,
#   setattr 4, readdirplus 0, access 3, commit 24.  Sum = 100, no correction.
#
# §5.2: one file per user mailbox; delivery (90% of transactions) appends a
#   message, retrieval (10%) reads the mailbox sequentially; some truncate
#   (setattr). Zipf-like popularity, alpha = 1.3. Message size mean 4.7 KB,
#   long tail (Pareto) out to 1 MB.
# Table 1: Zipf 1.3, sizes long-tail (avg 4.7 KB), directories "large (500+)",
#   I/O "seq r, append w".
# Bounded Pareto, alpha 1.2: x_min = 1073 B with x_max = 1 MiB gives mean
#   4.7 KiB (file sizes); per-WRITE append size capped at 64 KiB, x_min = 1496 B
#   keeps the mean at 4.7 KiB.
name = mail
description = Mail server: lookups, appends with commit, sequential mailbox reads, Zipf 1.3
mix = lookup:27, read:14, write:24, getattr:3, fsstat:1, setattr:4, access:3, commit:24

files_per_dir = 500:2, 1000:1, 2000:1   # "large (500+)"
dirs_per_dir = 2
symlinks_per_dir = 0
max_depth = 1
file_popularity = zipf:1.3
dir_popularity = uniform
symlink_popularity = uniform
file_size = pareto:1.2,1073,1M           # mean 4.7 KiB

read_size = 8K
write_size = pareto:1.2,1496,64K         # one appended message per WRITE, mean 4.7 KiB
seq_run = whole                          # mailbox retrieval reads the whole file
write_seq_run = 1
read_access = sequential
write_access = append

fileset_files_per_ops = 2
fileset_min_files = 16
