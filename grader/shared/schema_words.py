"""jsonschema's errors as sentences a person acts on, for every schema the grader checks against.

jsonschema words its errors for programmers ("{'a': 1} has too many properties", "'x' should not be
valid under {'pattern': ...}"); these are the same facts said about the value the person wrote.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

__all__ = ["article", "explain", "problems_of", "schema_problems", "where"]

_TYPES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "list",
    dict: "mapping",
    type(None): "null",
}
_SCHEMA_TYPES = {"object": "mapping", "array": "list"}


def article(noun: str) -> str:
    """'an integer', 'a string'."""
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _type_words(rule: Any) -> str:
    names = rule if isinstance(rule, list) else [rule]
    return " or ".join(_SCHEMA_TYPES.get(str(n), str(n)) for n in names)


def explain(error: jsonschema.ValidationError) -> str:
    """One sentence for one error, about the value at the error's path.

    jsonschema's own words are kept where they already read as a sentence ("'x' is a required
    property", "Additional properties are not allowed ('y' was unexpected)").
    """
    kind = error.validator
    value: Any = error.instance  # jsonschema types these as possibly unset; a reported error has both
    rule: Any = error.validator_value
    got = _TYPES.get(type(value), type(value).__name__)
    if kind == "type":
        return f"must be {article(_type_words(rule))}, not {article(got)} ({_short(value)})"
    if kind == "enum":
        return f"{_short(value)} is not one of {', '.join(map(repr, rule))}"
    if kind == "const":
        return f"must be {rule!r}, not {_short(value)}"
    if kind == "pattern":
        return f"{_short(value)} does not match the required form (pattern {rule})"
    if kind == "not":
        return f"{_short(value)} has a form that is not allowed here"
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        words = {"minimum": "at least", "exclusiveMinimum": "above", "maximum": "at most", "exclusiveMaximum": "below"}
        return f"must be {words[kind]} {rule:g}, not {_short(value)}"
    if kind in ("minItems", "maxItems"):
        return f"must hold {'at least' if kind == 'minItems' else 'at most'} {rule} item{'s' if rule != 1 else ''}, not {len(value)}"
    if kind in ("minProperties", "maxProperties"):
        return f"must have {'at least' if kind == 'minProperties' else 'at most'} {rule} key{'s' if rule != 1 else ''}, not {len(value)}"
    if kind in ("minLength", "maxLength"):
        return f"must be {'at least' if kind == 'minLength' else 'at most'} {rule} character{'s' if rule != 1 else ''} long"
    if kind in ("oneOf", "anyOf"):
        return f"{_short(value)} matches none of the allowed shapes"
    return error.message


def where(path: Any) -> str:
    """A validation error's place as a field path: `loadgen.command[0]`, or `(top level)`."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def problems_of(validator: jsonschema.protocols.Validator, data: Any) -> list[str]:
    """Every way `data` breaks the validator's schema, as `field.path: what is wrong` lines, in path order."""
    errors = sorted(validator.iter_errors(data), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    return [f"{where(e.absolute_path)}: {explain(e)}" for e in errors]


@cache
def _validator(schema_file: Path) -> jsonschema.protocols.Validator:
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def schema_problems(schema_file: Path, data: Any) -> list[str]:
    """`problems_of` against a self-contained schema file (read once)."""
    return problems_of(_validator(schema_file), data)
