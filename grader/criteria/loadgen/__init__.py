"""The load generator's criteria: per-request checks against the ledger (`requests.py`), the
figures over a run (`summary.py`) and the prompt it sends (`prompt.py`), all registered with the
criteria registry."""

from grader.criteria.loadgen import prompt, requests, summary

__all__ = ["prompt", "requests", "summary"]
