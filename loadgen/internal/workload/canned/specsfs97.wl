# SPECsfs97 (SPEC SFS 2.0, NFSv3 workload) — seed 003 Table 1 row "SPECsfs97",
# Table 2 column "SPEC 1997", §5.2.
#
# Table 2 as extracted (percent): lookup 27, read 18, write 9, getattr 11,
#   readlink 7, readdir 2, create 1, remove 1, mkdir 0, rmdir 0, fsstat 1,
#   setattr 1, readdirplus 9, access "%" (digit lost in the text extraction),
#   commit 5.  Known entries sum to 92.
# Correction: access = 7 and fsinfo = 1. These are the SFS 2.0 (= SFS 3.0)
#   NFSv3 mix percentages (SPEC SFS user's guide; e.g. also quoted in NetApp's
#   SFS 3.0 vs SFS 2008 comparison: ACCESS 7%); FSINFO 1% is in the SPEC mix but
#   is not a row of Table 2. Sum = 100.
#
# Table 1: popularity "random 10%" (SPECsfs97 touches 10% of its file set:
#   modelled as 10% of files with weight 1, 90% with weight 0, stratified);
#   sizes 1KB-1MB (SFS 2.0 size table, specsfs97_sizes.dist); directories
#   "large (thousands)"; I/O "random r/w".
name = specsfs97
description = SPECsfs97 NFSv3 mix: metadata-heavy, random r/w, 10% of files active
mix = lookup:27, read:18, write:9, getattr:11, readlink:7, readdir:2, create:1, remove:1, fsstat:1, fsinfo:1, setattr:1, readdirplus:9, access:7, commit:5

files_per_dir = 1000:1, 2000:1, 3000:1   # "large (thousands)"
dirs_per_dir = 4
symlinks_per_dir = 100                   # targets for the 7% readlink
max_depth = 2
file_popularity = 1:10, 0:90             # "random 10%"
dir_popularity = uniform
symlink_popularity = uniform
file_size = @specsfs97_sizes.dist        # mean 26.7 KiB

read_size = 8K                           # not given in seed 003; NFSv3 8 KB blocks (our choice)
write_size = 8K
seq_run = 1                              # "random r/w"
read_access = random
write_access = random

fileset_files_per_ops = 2                # see package doc; SPEC itself: 375 (10 MB per op/s)
fileset_min_files = 16
