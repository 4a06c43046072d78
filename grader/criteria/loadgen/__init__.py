"""The load generator's criteria: per-request checks against the ledger (`requests.py`) and the
figures over a run (`summary.py`), both registered with the criteria registry."""

from grader.criteria.loadgen import requests, summary

__all__ = ["requests", "summary"]
