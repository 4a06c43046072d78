"""Ignores SIGTERM and sleeps an hour: past every timeout the grader has."""

import signal
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(3600)
