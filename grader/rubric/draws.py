"""Draws: a setting's value drawn afresh, seeded, for the unseen variants and for a cohort's edition.

A draw replaces one setting of a published scenario, case or config, and most are read against the value it
replaces (the published one, `p`): a solution fitted to `p` must fail on every draw, so a draw keeps its
distance from it, and a stall meant to trip a drawn timeout follows that timeout. The forms (YAML):

    [lo, hi]                           an integer from lo to hi inclusive (both integers), else a number
    {one_of: [...]}                    one of the values
    {range: [lo, hi], away: {ratio: r}}  within [lo, hi], outside [p / r, p * r]
    {range: [lo, hi], away: {by: x}}     within [lo, hi], outside [p - x, p + x]
    {scale: [a, b]}                    p times a number from a to b
    {shift: [a, b]}                    p plus a number from a to b
    {follow: PATH, plus: [a, b]}       the value at PATH (drawn first, or published) plus a number from a to b

A number is rounded to 3 decimals, an integer stays one (an integer setting drawn by scale or shift is rounded
to the nearest). `follow` reads PATH in the draw's context: the settings being drawn, and for a gateway case
also `config` and `servers` of the same variant, and `published` (the values before any draw).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["DrawError", "draw", "drawn", "get_path", "problem_of", "set_path", "steps"]


class DrawError(ValueError):
    """A draw that cannot be made: its spec is malformed, or nothing in its range is far enough from `p`."""


def steps(path: str) -> list[str | int]:
    return [int(p) if p.isdigit() else p for p in path.split(".")]


def get_path(target: Any, path: str) -> Any:
    """The value at a dotted path (`server.faults.0.seconds`); KeyError/IndexError/TypeError when it is not there."""
    for step in steps(path):
        target = target[step]
    return target


def set_path(target: Any, path: str, value: Any) -> None:
    """Set the value at a dotted path that exists already: a draw never adds a setting."""
    *parents, last = steps(path)
    for step in parents:
        target = target[step]
    target[last]
    target[last] = value


def problem_of(spec: Any) -> str | None:
    """What is wrong with a draw's spec, or None."""
    if isinstance(spec, list):
        ok = len(spec) == 2 and all(_number(v) for v in spec) and spec[0] <= spec[1]
        return None if ok else "a range is [lo, hi] with lo <= hi"
    if not isinstance(spec, dict):
        return "a draw is [lo, hi] or a mapping (one_of, range with away, scale, shift, follow with plus)"
    keys = set(spec)
    if keys == {"one_of"}:
        return None if isinstance(spec["one_of"], list) and spec["one_of"] else "one_of needs a non-empty list"
    if keys in ({"scale"}, {"shift"}):
        return problem_of(spec[next(iter(keys))])
    if keys == {"follow", "plus"}:
        if not isinstance(spec["follow"], str) or not spec["follow"]:
            return "follow names a dotted path"
        return None if _number(spec["plus"]) else problem_of(spec["plus"])
    if keys == {"range", "away"}:
        away = spec["away"]
        if not isinstance(away, dict) or len(away) != 1 or not set(away) <= {"ratio", "by"}:
            return "away is {ratio: r} or {by: x}"
        ((kind, size),) = away.items()
        if not _number(size) or size <= (1 if kind == "ratio" else 0):
            return "away.ratio must be above 1 and away.by above 0"
        return problem_of(spec["range"])
    return f"unknown draw keys {sorted(keys)}"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _uniform(lo: float, hi: float, rng: random.Random, integer: bool) -> float:
    return float(rng.randint(int(lo), int(hi))) if integer else rng.uniform(lo, hi)


def _like(value: float, published: Any) -> Any:
    """A drawn number in the published value's kind: an integer stays one; a number gets 3 decimals."""
    if isinstance(published, int) and not isinstance(published, bool):
        return round(value)
    return round(value, 3)


def draw(spec: Any, rng: random.Random, published: Any, look_up: Callable[[str], Any] | None = None) -> Any:
    """One value of `spec` (module docstring), `published` being the value it replaces; `look_up(PATH)` reads
    a followed setting."""
    if isinstance(spec, list):
        lo, hi = spec
        integer = isinstance(lo, int) and isinstance(hi, int)
        value = _uniform(lo, hi, rng, integer)
        return int(value) if integer else round(value, 3)
    if "one_of" in spec:
        return rng.choice(list(spec["one_of"]))
    if "scale" in spec:
        low, high = spec["scale"]
        return _like(float(published) * _uniform(low, high, rng, False), published)
    if "shift" in spec:
        low, high = spec["shift"]
        return _like(float(published) + _uniform(low, high, rng, False), published)
    if "follow" in spec:
        if look_up is None:
            raise DrawError(f"follow {spec['follow']}: nothing to follow here")
        base = look_up(spec["follow"])
        low, high = spec["plus"] if isinstance(spec["plus"], list) else (spec["plus"], spec["plus"])
        return _like(float(base) + _uniform(low, high, rng, False), published)
    return _away(spec, rng, published)


def _away(spec: dict[str, Any], rng: random.Random, published: Any) -> Any:
    """A value of spec's range outside the band around `published`, every allowed value as likely."""
    lo, hi = spec["range"]
    ((kind, size),) = spec["away"].items()
    p = float(published)
    band = (p / size, p * size) if kind == "ratio" else (p - size, p + size)
    integer = isinstance(lo, int) and isinstance(hi, int) and isinstance(published, int)
    if integer:
        allowed = [v for v in range(int(lo), int(hi) + 1) if not band[0] <= v <= band[1]]
        if not allowed:
            raise DrawError(f"no integer of [{lo}, {hi}] lies outside {band[0]:g}..{band[1]:g} (published {p:g})")
        return rng.choice(allowed)
    pieces = [(lo, min(hi, band[0])), (max(lo, band[1]), hi)]
    pieces = [(a, b) for a, b in pieces if b > a]
    if not pieces:
        raise DrawError(f"nothing of [{lo}, {hi}] lies outside {band[0]:g}..{band[1]:g} (published {p:g})")
    total = sum(b - a for a, b in pieces)
    at = rng.uniform(0, total)
    for a, b in pieces:
        if at <= b - a:
            return round(a + at, 3)
        at -= b - a
    return round(pieces[-1][1], 3)


def drawn(
    base: dict[str, Any],
    draws: Mapping[str, Any],
    rng: random.Random,
    context: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A copy of `base` with every listed setting drawn: the independent draws first, in a fixed order (the same
    seed gives the same values), then those that follow another setting. `context` adds what a `follow` may read
    besides `base`'s own settings (published or drawn elsewhere)."""
    out = copy.deepcopy(base)
    scope = {**(context or {}), **out}

    def look_up(path: str) -> Any:
        return get_path(scope, path)

    later = sorted(p for p, s in draws.items() if isinstance(s, dict) and "follow" in s)
    for path in [*sorted(p for p in draws if p not in later), *later]:
        value = draw(draws[path], rng, get_path(base, path), look_up)
        set_path(out, path, value)
        scope.update(out)
    return out
