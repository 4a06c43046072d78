"""The gateway's criteria: routing, answers and /stats, judged from both fake servers' ledgers.

`checks.py` holds the routing checks and the registry (`CHECKS`, `CASES_OF`); `answers.py` reads
what the grader's client got; `stats.py` judges `/stats` against the ledgers.
"""

from grader.criteria.gateway.checks import CASES_OF, CHECKS

__all__ = ["CASES_OF", "CHECKS"]
