"""Tries to read what a candidate must never see: paths from secrets.json and the harness's own."""

import glob
import json
import os

with open("secrets.json") as given:
    paths = json.load(given)["read"]
paths += [
    "/tmp/.h",
    "/tmp/.h/kit/grader/rubric/rubric.yaml",
    "/tmp/.h/kit/grader/unseen/sizing_sets.yaml",
    "/tmp/.h/submission/submission.yaml",
    "/proc/1/environ",
]
paths += glob.glob("/tmp/.h/**", recursive=True)[:50]
# Ledger data (JSON lines or JSON), wherever it might sit; the fake server's own source files are
# meant to be readable (a candidate imports the package), so only data files count.
paths += [p for top in ("/tmp", "/var/tmp", "/dev/shm") for p in glob.glob(f"{top}/**/*ledger*.json*", recursive=True)][
    :20
]
found = {}
for path in paths:
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            with open(path, "rb") as fh:
                fh.read(64)
        found[path] = "read"
    except OSError as exc:
        found[path] = exc.strerror or "error"
print("FINDINGS " + json.dumps({"found": found}), flush=True)
