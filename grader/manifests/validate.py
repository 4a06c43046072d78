"""Strict schema validation of every document, reported as findings people can act on.

Each failure names the resource, the field path and why, in words rather than in
jsonschema's: an unknown field is named (with the closest valid name), a missing field is
named, a type error says what was expected and what was found. A kind with no schema is an
error unless allowed, because an unvalidated document is exactly where a typo hides.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

import jsonschema

from grader.shared.schema_words import article, explain

from .fieldpath import fmt_path
from .loader import Document, PathKey
from .results import Finding
from .schema_store import SchemaStore

__all__ = ["MAX_ERRORS_PER_DOCUMENT", "validate_documents"]

#: Beyond this many errors in one document the rest are summarised in one finding.
MAX_ERRORS_PER_DOCUMENT = 20

_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _expected(schema: dict[str, Any]) -> str:
    types = schema.get("type")
    if isinstance(types, list):
        return " or ".join(t for t in types if t != "null")
    return str(types)


def _describe(error: jsonschema.ValidationError) -> list[tuple[PathKey, str, str]]:
    """(path, why, fix) for one jsonschema error, in plain words."""
    path: PathKey = tuple(error.absolute_path)
    kind, value = error.validator, error.instance
    rule: Any = error.validator_value
    schema: dict[str, Any] = error.schema if isinstance(error.schema, dict) else {}
    if kind == "additionalProperties" and isinstance(value, dict):
        known = list(schema.get("properties", {}))
        out = []
        for extra in sorted(k for k in value if k not in known):
            close = difflib.get_close_matches(extra, known, n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            out.append(
                (
                    path + (extra,),
                    f"unknown field '{extra}'{hint}",
                    f"rename it to '{close[0]}'" if close else "remove it: the schema has no such field",
                )
            )
        if out:
            return out
    if kind == "required" and isinstance(value, dict):
        missing = [r for r in rule if r not in value]
        return [(path + (m,), f"required field '{m}' is missing", f"add '{m}'") for m in missing]
    if kind == "type":
        expected = _expected(schema)
        why = f"expected {expected}, got {_type_name(value)} {_short(value)}"
        if expected == "string" and isinstance(value, (int, float, bool)):
            return [(path, why, f'quote it: "{value}"')]
        return [(path, why, f"give it {article(expected)} value")]
    if kind in ("oneOf", "anyOf") and all(isinstance(s, dict) and list(s) == ["type"] for s in rule):
        expected = " or ".join(sorted({_expected(s) for s in rule}))
        return [
            (
                path,
                f"expected {expected}, got {_type_name(value)} {_short(value)}",
                f"give it {article(expected)} value",
            )
        ]
    if kind == "enum":
        return [(path, f"{_short(value)} is not one of {', '.join(map(repr, rule))}", "use one of the allowed values")]
    if kind == "const":
        return [(path, f"must be {rule!r}, got {_short(value)}", f"set it to {rule!r}")]
    return [(path, explain(error), "correct the value to satisfy the schema")]


def _finding(doc: Document, passed: bool, message: str, path: PathKey | None = None, fix: str = "") -> Finding:
    return Finding(
        passed=passed,
        message=message,
        resource=doc.ref,
        path=fmt_path(path) if path is not None else None,
        fix=fix,
        file=doc.file,
        line=doc.line_of(path) if path else doc.line,
    )


def _validate_one(doc: Document, store: SchemaStore, allow: set[str]) -> list[Finding]:
    if not doc.api_version or not doc.kind:
        missing = [k for k in ("apiVersion", "kind") if not doc.data.get(k)]
        return [
            _finding(
                doc,
                False,
                f"document has no {' or '.join(missing)}",
                (missing[0],),
                "give every document an apiVersion and a kind",
            )
        ]
    findings = (
        []
        if doc.name or doc.metadata.get("generateName")
        else [
            _finding(
                doc,
                False,
                "metadata.name is missing; the API server rejects an object without one",
                ("metadata", "name"),
                "give it a metadata.name",
            )
        ]
    )
    findings += [
        _finding(
            doc,
            False,
            f"key '{d.path[-1]}' appears twice (lines {d.first_line} and "
            f"{d.second_line}); YAML keeps only the last, Kubernetes rejects it",
            d.path,
            "keep one of them",
        )
        for d in doc.duplicates
    ]
    validator = store.validator(doc.api_version, doc.kind)
    if validator is None:
        if doc.kind.lower() in allow:
            allowed = f"no schema for {doc.api_version} {doc.kind}; allowed by --allow-kind"
            return [*findings, _finding(doc, True, allowed)]
        others = store.known_api_versions(doc.kind)
        why = (
            (
                f"{doc.api_version} {doc.kind} is not served by Kubernetes {store.version}; "
                f"the kit has {doc.kind} as {', '.join(others)}"
            )
            if others
            else f"no schema for {doc.api_version} {doc.kind} (Kubernetes {store.version} and the kit's CRDs)"
        )
        fix = f"use apiVersion {others[0]}" if others else f"use a known kind, or pass --allow-kind {doc.kind}"
        return findings + [_finding(doc, False, why, ("apiVersion",) if others else ("kind",), fix)]
    errors = sorted(validator.iter_errors(doc.data), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    described = [item for error in errors for item in _describe(error)]
    for path, why, fix in described[:MAX_ERRORS_PER_DOCUMENT]:
        findings.append(_finding(doc, False, why, path, fix))
    if len(described) > MAX_ERRORS_PER_DOCUMENT:
        findings.append(
            _finding(
                doc,
                False,
                f"and {len(described) - MAX_ERRORS_PER_DOCUMENT} more schema errors",
                None,
                "fix the errors above and run again",
            )
        )
    if not findings:
        findings.append(_finding(doc, True, f"valid against the strict {doc.api_version} {doc.kind} schema"))
    return findings


def validate_documents(docs: Iterable[Document], store: SchemaStore, allow_kinds: Iterable[str] = ()) -> list[Finding]:
    """Findings for every document: one pass each, or one failure per problem."""
    allow = {k.lower() for k in allow_kinds}
    return [finding for doc in docs for finding in _validate_one(doc, store, allow)]
