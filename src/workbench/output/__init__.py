"""What people read: the console's trial line and result block, the notifications of a run."""
