"""ChecklistItem manifests end to end: read or render, validate strictly, run the checklist.

`check_manifests` is the one entry point; the CLI and the grader both call it. What it reads:

- a chart folder (one holding Chart.yaml): rendered with `values` over its defaults;
- otherwise YAML files and folders of rendered manifests (multi-document; folders recursively).

Every run reports the same checks in the same order (plus `render` for a chart), so results
can be compared across submissions by id.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from .checks import CHECKLIST, ChecklistItem, ManifestSet
from .fieldpath import fmt_path
from .loader import Document, LoadProblem, display_name, load_paths, yaml_files
from .render import RenderOutcome, render_chart
from .results import CheckResult, DocumentSummary, Finding, ManifestReport
from .schema_store import SchemaStore
from .validate import validate_documents
from .workload import find_servers

__all__ = ["ManifestInputError", "check_manifests", "is_chart"]


class ManifestInputError(ValueError):
    """The input cannot be checked at all (a missing path, values for rendered YAML)."""


def is_chart(path: Path) -> bool:
    return path.is_dir() and (path / "Chart.yaml").is_file()


def _yaml_result(problems: list[LoadProblem], parsed: str, docs: list[Document], need_docs: bool) -> CheckResult:
    findings = [
        Finding(
            passed=False,
            file=p.file,
            line=p.line,
            fix="fix the YAML syntax at this line",
            message=f"YAML error: {p.message}" + (f" (column {p.column})" if p.column else ""),
        )
        for p in problems
    ]
    if need_docs and not docs and not problems:
        findings.append(
            Finding(
                passed=False,
                message="no YAML documents found",
                fix="give a chart folder, or YAML files or folders of manifests",
            )
        )
    if not findings:
        findings.append(Finding(passed=True, message=parsed))
    return CheckResult("yaml-parse", "YAML parses", findings)


def _render_result(outcome: RenderOutcome) -> CheckResult:
    values = f" with {outcome.values}" if outcome.values else " with its default values"
    title = "Chart renders with the values"
    if not outcome.error:
        return CheckResult(
            "render",
            title,
            [
                Finding(
                    passed=True, message=f"chart {outcome.chart} rendered{values}: {len(outcome.documents)} documents"
                )
            ],
        )
    violations = outcome.violations()
    if not violations:
        return CheckResult(
            "render",
            title,
            [
                Finding(
                    passed=False,
                    message=f"chart {outcome.chart} did not render{values}: {' '.join(outcome.error.split())}",
                    file=outcome.values or outcome.chart,
                    fix="correct the values (or the template) the message names",
                )
            ],
        )
    doc = outcome.values_doc
    return CheckResult(
        "render",
        title,
        [
            Finding(
                passed=False,
                message=f"{why} (values.schema.json)",
                resource="values",
                path=fmt_path(path) if path else None,
                file=outcome.values,
                line=doc.line_of(path) if doc and path else None,
                fix="correct this value; values.yaml documents every key and its type",
            )
            for path, why in violations
        ],
    )


def _summaries(docs: list[Document]) -> list[DocumentSummary]:
    return [DocumentSummary(d.api_version, d.kind, d.name, d.namespace, d.file, d.line) for d in docs]


def _read(paths: list[Path], values: Path | None) -> tuple[list[Document], str, list[CheckResult]]:
    """The documents to check, a description of where they came from, and the reading checks."""
    if len(paths) == 1 and is_chart(paths[0]):
        outcome = render_chart(paths[0], values)
        docs = outcome.documents
        parsed = (f"{outcome.values} and " if outcome.values else "") + f"{len(docs)} rendered documents parsed"
        return (
            docs,
            f"{outcome.chart} rendered with {outcome.values or 'its default values'}",
            [_yaml_result(outcome.yaml_problems, parsed, docs, need_docs=False), _render_result(outcome)],
        )
    if values is not None:
        raise ManifestInputError("--values needs a chart folder (one holding Chart.yaml) as PATH")
    docs, problems = load_paths(paths)
    files = len(yaml_files(paths))
    parsed = f"{len(docs)} documents in {files} file{'s' if files != 1 else ''} parsed"
    return docs, ", ".join(display_name(p) for p in paths), [_yaml_result(problems, parsed, docs, need_docs=True)]


def _checklist(docs: list[Document], earlier: list[CheckResult]) -> list[CheckResult]:
    if not docs:
        failed = ", ".join(c.id for c in earlier if not c.passed)
        return [
            CheckResult(
                c.id,
                c.title,
                [Finding(False, f"not checked: there are no documents ({failed} failed)", fix=f"fix {failed} first")],
            )
            for c in CHECKLIST
        ]
    context = ManifestSet(docs, find_servers(docs))
    return [CheckResult(c.id, c.title, _run(c, context)) for c in CHECKLIST]


def _run(check: ChecklistItem, context: ManifestSet) -> list[Finding]:
    """One check's findings; a bug in the check becomes a visible failure, never a lost report."""
    try:
        return check.run(context)
    except Exception as exc:  # noqa: BLE001 - reported below, with the exception, as a failure
        return [
            Finding(
                False,
                f"checker error in {check.id}: {type(exc).__name__}: {exc}",
                fix="report this to the kit's maintainers with the manifests; it is not your error",
            )
        ]


def check_manifests(
    paths: Sequence[Path], *, values: Path | None = None, schemas: Path | None = None, allow_kinds: Iterable[str] = ()
) -> ManifestReport:
    """Read or render `paths`, validate every document, run the checklist; never raises on bad YAML."""
    paths = [Path(p) for p in paths]
    if not paths:
        raise ManifestInputError("give a chart folder or manifest files")
    for path in [*paths, *([values] if values else [])]:
        if not path.exists():
            raise ManifestInputError(f"{path}: no such file or folder")
    if schemas is not None and not Path(schemas).is_dir():
        raise ManifestInputError(
            f"--schemas {schemas}: no such folder (give a folder laid out like the kit's schemas/)"
        )
    store = SchemaStore(schemas) if schemas else SchemaStore()
    docs, source, reading = _read(paths, values)
    validation = CheckResult(
        "schema-valid",
        f"Strict schema validation (Kubernetes {store.version} and CRDs)",
        validate_documents(docs, store, allow_kinds)
        or [
            Finding(
                passed=False, message="no documents to validate", fix="give manifests that contain Kubernetes objects"
            )
        ],
    )
    checks = [*reading, validation, *_checklist(docs, reading)]
    return ManifestReport(source=source, kubernetes_version=store.version, documents=_summaries(docs), checks=checks)
