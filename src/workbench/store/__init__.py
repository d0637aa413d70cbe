"""The results store: the Store and its layout (base), on S3/MinIO (s3) and on a directory
(local)."""
