"""Hosting: where a fake server runs and how a test drives it.

`server.py` makes one uvicorn server on a bound socket; `host.py` runs servers in a background
thread of this process or in a child process; `handle.py` is `RunningServer`, the one handle both
give back; `launch.py` has `serve`, `serve_fleet` and `serve_subprocess`; `fleet.py` reads a fleet
file.
"""
