"""Injected by the grader into a candidate's test run: swap a wrong percentile method in.

When GRADER_PERCENTILE ("module:function", the submission's `loadgen.percentile`) and
GRADER_PERCENTILE_METHOD name a method, the function is replaced the moment its module is first
imported, before any other module can bind the name, and a marker file records that it happened
(so "your tests never imported it" is told apart from "your tests did not notice").
This file is placed on PYTHONPATH only for that run; it imports nothing from the kit.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import math
import os
import sys
from typing import Any


def _linear(values: Any, p: float) -> Any:
    ordered = sorted(values)
    if not ordered:
        return None
    h = (len(ordered) - 1) * p / 100
    low = math.floor(h)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (h - low) * (ordered[high] - ordered[low])


def _floor_rank(values: Any, p: float) -> Any:
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[max(1, math.floor(p / 100 * len(ordered))) - 1]


def _off_by_one(values: Any, p: float) -> Any:
    ordered = sorted(values)
    if not ordered:
        return None
    rank = math.ceil(round(p * len(ordered), 9) / 100)
    return ordered[min(rank + 1, len(ordered)) - 1]


def _unsorted(values: Any, p: float) -> Any:
    items = list(values)
    if not items:
        return None
    rank = math.ceil(round(p * len(items), 9) / 100)
    return items[max(rank, 1) - 1]


METHODS = {"linear": _linear, "floor": _floor_rank, "off-by-one": _off_by_one, "unsorted": _unsorted}


def _only_the_method_differs(original: Any, method: Any) -> Any:
    """The candidate's function with only its answer replaced: out-of-range p, empty lists and
    anything else it refuses or returns None for behave exactly as the candidate wrote them, so a
    test of that behaviour cannot "catch" a wrong method by accident."""

    def swapped(values: Any, p: float, *args: Any, **kwargs: Any) -> Any:
        values = list(values)
        answer = original(list(values), p, *args, **kwargs)
        return answer if answer is None else method(values, p)

    swapped.__name__ = getattr(original, "__name__", "percentile")
    swapped.__doc__ = getattr(original, "__doc__", None)
    return swapped


class _Swap(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, module: str, function: str, method: Any, marker: str) -> None:
        self.module, self.function, self.method, self.marker = module, function, method, marker
        self.inner: Any = None

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.module or self.inner is not None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        self.inner = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec: Any) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.inner.exec_module(module)
        original = getattr(module, self.function, None)
        if callable(original):
            setattr(module, self.function, _only_the_method_differs(original, self.method))
            with open(self.marker, "a", encoding="utf-8") as f:
                f.write(f"{self.module}:{self.function}\n")


def _method(name: str) -> Any:
    """The named wrong method: one of the above, or, for "injected", the `method` of the module injected beside
    this file for this run alone (a method the brief does not name)."""
    if name != "injected":
        return METHODS.get(name)
    try:
        from grader_wrong_method import method  # type: ignore[import-not-found]
    except ImportError:
        return None
    return method


def _install() -> None:
    target = os.environ.get("GRADER_PERCENTILE", "")
    method = _method(os.environ.get("GRADER_PERCENTILE_METHOD", ""))
    marker = os.environ.get("GRADER_PERCENTILE_MARKER", "")
    if ":" not in target or method is None or not marker:
        return
    module, function = target.split(":", 1)
    sys.meta_path.insert(0, _Swap(module, function, method, marker))


_install()
