"""Writes to stdout or stderr (argv[1]) without end, stopping by itself at 3 GiB."""

import os
import sys

fd = 2 if sys.argv[1] == "stderr" else 1
block = b"flood " * 10923 + b"\n"  # 64 KiB
for _ in range(3 * 1024 * 1024 * 1024 // len(block)):
    os.write(fd, block)
