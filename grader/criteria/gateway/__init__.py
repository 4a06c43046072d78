"""The gateway's criteria: routing, answers and /stats, judged from both fake servers' ledgers.

`checks.py` holds the routing checks, `delivery.py` how the answer reaches the client (streaming,
headers, concurrency, the start), `stats.py` the `/stats` checks (all register with the criteria
registry); `answers.py` reads what the grader's client got and draws each case's timeline.
"""

from grader.criteria.gateway import checks, delivery, stats

__all__ = ["checks", "delivery", "stats"]
