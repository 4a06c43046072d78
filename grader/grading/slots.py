"""The grade's sandboxes for timed work (`--sandboxes N`): how many sections' runs are made at once.

A timed section holds a slot while it runs. When there are more timed sections than slots, the rest wait,
and a slot that falls free with no section waiting for it is lent to a running section, which makes its
remaining runs in a second sandbox beside its own. So no more than N sandboxes make timed runs at once,
and none stands idle while a section still has runs to make: with two slots, the gateway's starts and the
candidate's tests begin together, and the load generator's runs, started when the tests end, finish in two
sandboxes once the gateway is done.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["Slots"]

#: How often a section waiting to borrow a slot looks again whether it still has runs to make.
_LOOK_S = 0.1


class Slots:
    def __init__(self, count: int) -> None:
        self._free = max(1, count)
        self._tickets = 0  # sections that asked for a slot
        self._served = 0  # of those, how many have one: a free slot is theirs before it is lent
        self._changed = threading.Condition()

    def ask(self) -> int:
        """A section's place in the queue for a slot: slots are given in the order they were asked for."""
        with self._changed:
            self._tickets += 1
            return self._tickets - 1

    @contextmanager
    def held(self, ticket: int) -> Iterator[None]:
        """A slot for a whole section, once every section that asked before it has had one."""
        with self._changed:
            self._changed.wait_for(lambda: self._free > 0 and self._served == ticket)
            self._served += 1
            self._free -= 1
            self._changed.notify_all()
        try:
            yield
        finally:
            self.give()

    def borrow(self, done: Callable[[], bool]) -> bool:
        """Wait for a slot no section is waiting for; False once `done()` says nothing is left to make."""
        with self._changed:
            while not done():
                if self._free > 0 and self._served == self._tickets:
                    self._free -= 1
                    return True
                self._changed.wait(timeout=_LOOK_S)
        return False

    def give(self) -> None:
        """A held or borrowed slot back."""
        with self._changed:
            self._free += 1
            self._changed.notify_all()
