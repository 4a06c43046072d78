"""Run untrusted candidate code, and the fake servers it talks to, in one sandbox per grading session.

    with Sandbox(submission_dir, limits=Limits()) as box:
        server = box.serve("local", max_num_seqs=2, token_rate=200, seed=7)
        result = box.run(["python", "-m", "loadgen", "--base-url", server["base_url"]], timeout_s=60)
        records = box.ledger("local")

The candidate's commands run as an unprivileged user inside bubblewrap (own network namespace
with loopback only, own PID and IPC namespaces, a read-only allowlist of the filesystem, a
size-limited work folder, per-command cgroup and rlimits), beside a trusted harness that runs
the fake servers and answers the calls above. See box.py for the outer side, harness.py for the
inside and protocol.py for what they exchange.
"""

from .box import Sandbox, isolation_available
from .box_api import Box
from .protocol import Limits, RunResult, SandboxError, SandboxRefused

__all__ = ["Box", "Limits", "RunResult", "Sandbox", "SandboxError", "SandboxRefused", "isolation_available"]
