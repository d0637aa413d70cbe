# Genomics pipeline — an APPROXIMATION of the SPECstorage Solution 2020
# GENOMICS workload (SPEC storage subcommittee; N. Principe, K. Cantrell,
# "Introducing the AI/ML and Genomics Workloads from the SPEC Storage
# Subcommittee", SNIA SDC 2019; SPECstorage Solution 2020 User's Guide).
# Not seed 003: the eighth canned workload, after a modern benchmark
# (issue 17 item 8). It is not SPEC's workload and its results are not
# SPECstorage results.
#
# Published operation mix (percent of operations, about): sequential read 70,
# random read 2, sequential write 8, random write 1, stat 12, access 4,
# create 1, unlink 1, chmod 1.  Sum = 100.  Reads mostly 128 KiB, writes
# mostly 512 KiB.
#
# Mapped to NFSv3 procedures: read 72 (70 + 2), write 9 (8 + 1),
# getattr 12 (stat), access 4, create 1, remove 1 (unlink), setattr 1 (chmod).
#
# What fstress cannot express exactly (approximations):
# * Sequential and random reads share one access pattern: runs start at a
#   random (aligned) offset and continue sequentially. A run of 1 READ is a
#   random read; a run of 32 READs (4 MiB at 128 KiB) is a sequential read.
#   Run weights 1:32, 32:35 give READ ops 32 random : 1120 sequential
#   = 2 : 70. A run reaching the end of its file stops there, so sequential
#   runs in small files are shorter and the random share is a little higher.
# * The same for writes: write_seq_run = 1:1, 8:1 (8 WRITEs of 512 KiB =
#   4 MiB) gives WRITE ops 1 random : 8 sequential. Writes overwrite inside
#   the file set; SPEC's new output files are not modelled (create only makes
#   an empty scratch file).
# * SPEC's file-level operations (open/close, mkdir, rename, ...) have no
#   NFSv3 counterpart in its published mix; none are added. No COMMIT: the
#   published mix has no fsync share (sync exports make the writes stable).
# * "Mostly 128 KiB / 512 KiB": 90 % at that size, 10 % at a quarter of it
#   (our choice; the exact SPEC size tables are not reproduced).
# * Sizes and popularity are our choices: genomics files (FASTQ, BAM) are
#   GB-sized; scaled to 2-16 MiB (mean 8.25 MiB) for a loopback box, uniform
#   popularity (a pipeline stage reads each input once), 0.005 files per
#   op/s (8000 ops/s -> 40 files, ~330 MiB), 16 files minimum.
name = genomics
description = Genomics pipeline (approximates SPECstorage 2020 GENOMICS): 128 KiB sequential reads, 512 KiB writes, stat
mix = read:72, write:9, getattr:12, access:4, create:1, remove:1, setattr:1

files_per_dir = 32
dirs_per_dir = 0
symlinks_per_dir = 0
max_depth = 0
file_popularity = uniform
dir_popularity = uniform
symlink_popularity = uniform
file_size = 2M:1, 4M:2, 8M:3, 16M:2          # mean 8.25 MiB (scaled down, see above)

read_size = 128K:9, 32K:1
write_size = 512K:9, 128K:1
seq_run = 1:32, 32:35                        # 2 random : 70 sequential READs
write_seq_run = 1:1, 8:1                     # 1 random : 8 sequential WRITEs
read_access = random
write_access = random

fileset_files_per_ops = 0.005
fileset_min_files = 16
