"""Tries to write outside its work folder: paths from secrets.json, the system, the harness, the kit."""

import json
import os
import sys

with open("secrets.json") as given:
    targets = json.load(given)["write"]
targets += [
    "/hostile-was-here",
    "/usr/hostile-was-here",
    "/tmp/.h/hostile-was-here",
    os.path.join(sys.prefix, "hostile-was-here"),
    os.path.join(os.path.dirname(json.__file__), "hostile-was-here"),
]
written = {}
for path in targets:
    try:
        with open(path, "w") as fh:
            fh.write("hostile")
        written[path] = "written"
    except OSError as exc:
        written[path] = exc.strerror or "error"
print("FINDINGS " + json.dumps({"written": written}), flush=True)
