"""The criteria: each deliverable's checks, judged against what the fake servers' ledgers show."""
