"""Whose speed a sentence gives: one user's, or the server's aggregate beside a user's.

A speed in the text with the value of an aggregate figure (or of the sizing's throughput while more than one
stream shares it) is sold as a user's speed when the sentence says a user gets it. The sentence is read by its
parts, not its shape: the clause the number stands in (clauses part at `;`, at brackets, and at words that
set two things side by side: while, whereas, but, against, versus, compared with, than, below, unlike), the
user that clause speaks of (a user, a request, a stream, a chat; "all 16 streams" and "over all users" are the
aggregate's, not a user), and what it says of the number. The number is not given to a user when
- no user is spoken of in its clause ("Per-request TPS was 192.2 tokens/s at p50, against 358.3 output
  tokens/s aggregate");
- it is an operand or the result of arithmetic shown ("595 tokens/s / 16 streams = 37.2 tokens/s");
- a negation bears on the number or on the user ("no user sees 595 tokens/s", "595 tokens/s is not a
  user's speed");
- the words beside it call it the aggregate (aggregate, total, combined, adds up to, throughput, the
  server's, the replica's) and its clause speaks of users together ("users' chats add up to 166.67 tokens/s"), or the sentence sets
  a user's speed beside it (another speed, not an aggregate), says it is shared, or says it is no user's
  ("Per-request TPS (p50 192.2 tokens/s, n = 6) sits far below the 358.3 output tokens/s aggregate").
Anything else gives it to the user: "each user sees 595 tokens/s"; "each user gets the full 595 tokens/s
aggregate", which calls it the aggregate and still hands it to each user.
"""

from __future__ import annotations

import re

__all__ = ["given_to_a_user"]

_NOUNS = r"(?:users|requests|streams|chats|sessions|clients)"
_USER = re.compile(
    rf"\b(?:per[- ](?:user|request|stream|chat|session|client)"
    rf"|each\s+of\s+(?:the\s+)?(?:\d[\d,]*\s+)?(?:[a-z]+\s+)?{_NOUNS}"
    r"|(?:each|every|a|an|one|any|the|single|individual)\s+(?:single\s+|individual\s+)?"
    r"(?:user|request|stream|chat|session|client)(?:'s)?"
    r"|users?\s+(?:each|all)|users?(?:'s|')?|(?:request|stream|chat|client)'s)(?!\w)",
    re.IGNORECASE,
)
#: Words for many users at once: the aggregate's, never one user.
_MANY = re.compile(
    rf"\b(?:(?:across|over|for|among|between|of|by)\s+)?(?:all|the\s+whole)\s+(?:the\s+)?(?:\d[\d,]*\s+)?"
    rf"(?:[a-z]+\s+)?{_NOUNS}\b"
    rf"|\b\d[\d,]*\s+(?:[a-z]+\s+)?{_NOUNS}\b"
    rf"|\b{_NOUNS}\s+(?:combined|together|in\s+total|at\s+once)\b",
    re.IGNORECASE,
)
_BREAK = re.compile(
    r";|\b(?:while|whereas|but|against|versus|vs\.?|compared\s+(?:with|to)|than|below|unlike|besides?|"
    r"next\s+to|instead\s+of)\b",
    re.IGNORECASE,
)
_AGGREGATE = re.compile(
    r"\b(?:aggregate|total|combined|overall|altogether|collectively|together|in\s+all|between\s+them|sum|"
    r"add(?:s|ed)?\s+up|throughput|server|replica|replicas|GPU|node|fleet|system)(?:'s|s')?(?!\w)",
    re.IGNORECASE,
)
#: Users spoken of together ("users", "users'"), not one of them.
_COLLECTIVE = re.compile(r"^users'?$", re.IGNORECASE)
_SHARED = re.compile(
    r"\b(?:shared|split|divided|spread)\s+(?:by|among|between|across|over)\b|\bshares?\b", re.IGNORECASE
)
#: The speed handed to each one of them: "595 tokens/s each", "apiece".
_EACH_AFTER = re.compile(r"^\W*(?:each|apiece|per\s+(?:user|request|stream|chat|head))\b", re.IGNORECASE)
_NEAR_WORDS = 4  # how far from the number a word calls it the aggregate
_NEGATION = r"\b(?:not|never|no|nor|neither|isn't|aren't|wasn't|doesn't|don't|cannot|can't)\b"
_NEGATION_BEFORE = re.compile(rf"{_NEGATION}(?:\W+\w+){{0,4}}?\W+$", re.IGNORECASE)
_NEGATION_AFTER = re.compile(r"^\W*(?:[\w']+\W+){0,2}?(?:is|are|was|were)\s+(?:not|never)\b", re.IGNORECASE)
_ARITHMETIC_BEFORE = re.compile(r"(?:[=≈×*÷+]|\s[x/-])\s*$")
_ARITHMETIC_AFTER = re.compile(r"^\s*(?:[×*÷+/]|x\s|-\s)\s*\$?\d|^\s*(?:divided|shared|split)\s+(?:by|among|between)")


def _brackets(sentence: str) -> list[tuple[int, int]]:
    """The outermost bracketed parts of the sentence, brackets included."""
    out, depth, opened = [], 0, 0
    for i, char in enumerate(sentence):
        if char in "([":
            opened = i if depth == 0 else opened
            depth += 1
        elif char in ")]" and depth:
            depth -= 1
            if depth == 0:
                out.append((opened, i + 1))
    return out


def _clause(sentence: str, at: int) -> str:
    """The clause holding position `at`: the sentence with every other part blanked. Bracketed words are a
    clause of their own inside the one around them."""
    text = sentence
    inside = next(((a, b) for a, b in _brackets(sentence) if a < at < b), None)
    for a, b in _brackets(sentence):
        if (a, b) != inside:
            text = text[:a] + " " * (b - a) + text[b:]
    lo, hi = (inside[0] + 1, inside[1] - 1) if inside else (0, len(text))
    for m in _BREAK.finditer(text, lo, hi):
        if m.end() <= at:
            lo = m.end()
        elif m.start() >= at:
            hi = m.start()
            break
    return " " * lo + text[lo:hi]


def _near(clause: str, start: int, end: int) -> str:
    """The clause's words around a speed: a few before its number, the speed itself, a few after its unit."""
    before = re.findall(r"\S+", clause[:start])[-_NEAR_WORDS:]
    after = re.findall(r"\S+", clause[end:])[:_NEAR_WORDS]
    return " ".join([*before, clause[start:end], *after])


def _users(text: str) -> list[re.Match[str]]:
    """The users a text speaks of, leaving out words for many at once ("all 16 streams")."""
    many = [m.span() for m in _MANY.finditer(text)]
    return [u for u in _USER.finditer(text) if not any(a <= u.start() and u.end() <= b for a, b in many)]


def _no_users(sentence: str, users: list[re.Match[str]]) -> bool:
    return any(_NEGATION_BEFORE.search(sentence[: u.start()]) for u in users)


def given_to_a_user(sentence: str, number: tuple[int, int], speed_end: int, beside: bool) -> bool:
    """Whether the sentence gives the aggregate speed whose number is at `number` (its unit ending at `speed_end`)
    to a user. `beside`: the sentence quotes another speed that is no aggregate (a user's, set beside it)."""
    clause = _clause(sentence, number[0])
    users = _users(clause)
    if not users:
        return False
    if _ARITHMETIC_BEFORE.search(sentence[: number[0]]) or _ARITHMETIC_AFTER.search(sentence[speed_end:]):
        return False
    if _NEGATION_BEFORE.search(sentence[: number[0]]) or _NEGATION_AFTER.search(sentence[speed_end:]):
        return False
    if _no_users(clause, users):
        return False
    if _EACH_AFTER.search(sentence[speed_end:]):
        return True
    near = _near(clause, number[0], speed_end)
    if _AGGREGATE.search(near) or _MANY.search(near):
        together = all(_COLLECTIVE.match(u.group(0)) for u in users)
        set_apart = together or beside or _SHARED.search(sentence) or _no_users(sentence, _users(sentence))
        return not set_apart
    return True
