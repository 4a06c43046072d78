"""The gateway's criteria: routing, answers and /stats, judged from both fake servers' ledgers.

`checks.py` holds the routing checks, `stats.py` the `/stats` checks (both register with the
criteria registry); `answers.py` reads what the grader's client got and draws each case's timeline.
"""

from grader.criteria.gateway import checks, stats

__all__ = ["checks", "stats"]
