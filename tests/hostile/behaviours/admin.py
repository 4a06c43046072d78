"""Tries the fake server's /admin API (and its ledger) at the URL it was given."""

import json
import sys
import urllib.error
import urllib.request

base = sys.argv[sys.argv.index("--base-url") + 1].removesuffix("/v1")
answers = {}
for method, path, body in [
    ("GET", "/admin/config", None),
    ("GET", "/admin/ledger", None),
    ("POST", "/admin/config", b'{"max_num_seqs": 1000}'),
    ("POST", "/admin/faults", b"[]"),
    ("POST", "/admin/reset", b"{}"),
]:
    request = urllib.request.Request(
        base + path, data=body, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            answers[f"{method} {path}"] = reply.status
    except urllib.error.HTTPError as exc:
        answers[f"{method} {path}"] = exc.code
    except OSError as exc:
        answers[f"{method} {path}"] = str(exc)
print("FINDINGS " + json.dumps({"answers": answers}), flush=True)
