"""`RunKey`: a run's name in a grade's records, written and read in this one place.

    loadgen/baseline            the load generator's run of the public scenario `baseline`
    loadgen/baseline.v2         its second unseen variant's run
    loadgen/baseline@2          the rerun (attempt 2) of a borderline criterion judged from it
    tests, gateway, sizing, ... a section run once for all its criteria
    tests@2/tests.slot-chaff    a rerun of the runs of one criterion of a section run once
    gateway.v1@2/gateway.cap    an unseen gateway variant's rerun for one criterion

A key names its record's file (`file_name`) and is kept in every record and in replays' and side by sides'
listings, so its spelling is part of the records' format: a grade recorded before reads back the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["RunKey", "RunKeyError"]

_KEY = re.compile(
    r"(?P<section>[a-z]+)(?:/(?P<scenario>[^@/]+?))?(?:\.v(?P<variant>[1-9][0-9]*))?"
    r"(?:@(?P<attempt>[2-9])(?:/(?P<criterion>[^@/]+))?)?"
)


class RunKeyError(ValueError):
    """A string that is not a run key; the message quotes it."""


@dataclass(frozen=True)
class RunKey:
    section: str  # the deliverable whose run it is
    scenario: str = ""  # the load generator's public scenario ("" for the other sections)
    variant: int = 0  # the unseen variant's number (0: the public run)
    attempt: int = 1  # 2: a borderline criterion's rerun
    criterion: str = ""  # a rerun made for this one criterion (a section run once for all its criteria)

    @classmethod
    def parse(cls, text: str) -> RunKey:
        found = _KEY.fullmatch(text)
        if found is None:
            raise RunKeyError(f"{text!r} is not a run key (SECTION[/SCENARIO][.vN][@ATTEMPT[/CRITERION]])")
        return cls(
            found["section"],
            found["scenario"] or "",
            int(found["variant"] or 0),
            int(found["attempt"] or 1),
            found["criterion"] or "",
        )

    def __str__(self) -> str:
        text = self.section + (f"/{self.scenario}" if self.scenario else "")
        text += f".v{self.variant}" if self.variant else ""
        if self.attempt > 1:
            text += f"@{self.attempt}" + (f"/{self.criterion}" if self.criterion else "")
        return text

    @property
    def name(self) -> str:
        """What was run, as a report names it: `baseline`, `baseline.v2`, `gateway.v1`, `tests`."""
        base = self.scenario or self.section
        return f"{base}.v{self.variant}" if self.variant else base

    @property
    def is_variant(self) -> bool:
        return self.variant > 0

    @property
    def is_rerun(self) -> bool:
        return self.attempt > 1

    def file_name(self) -> str:
        """`loadgen/baseline@2` -> `loadgen-baseline@2.json.gz`: a rerun is `@N` in its key and its file alike."""
        return str(self).replace("/", "-") + ".json.gz"
