"""Render the chart offline with helm-python-sdk (Helm's Go SDK; no helm binary, no cluster).

Helm validates the values against the chart's values.schema.json while rendering, so an
unknown key or a wrong type in the values file comes back as a render problem naming the key.
The SDK is imported only here, so checking rendered YAML never loads its 80 MB library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .loader import Document, LoadProblem, PathKey, display_name, load_text

__all__ = ["RELEASE_NAME", "RenderOutcome", "render_chart", "template_file"]

#: Release name and namespace used for offline rendering.
RELEASE_NAME = "vllm"
NAMESPACE = "default"
_VIOLATION = re.compile(r"^- at '([^']*)': (.+)$", re.MULTILINE)


@dataclass
class RenderOutcome:
    """Documents rendered from a chart, or why there are none."""

    chart: str
    values: str | None
    documents: list[Document] = field(default_factory=list)
    yaml_problems: list[LoadProblem] = field(default_factory=list)
    error: str | None = None  # Helm's message: a values schema violation or a template failure
    values_doc: Document | None = None  # the parsed values file, to place schema violations on lines

    def violations(self) -> list[tuple[PathKey, str]]:
        """Helm's values-schema violations as (key path, why); empty for other errors.

        Helm lists them as "- at '/image/tag': got number, want string"; an unknown key is
        reported at its parent, so its name is appended to the path.
        """
        found = []
        for match in _VIOLATION.finditer(self.error or ""):
            pointer, why = match.group(1), match.group(2).strip()
            path: PathKey = tuple(
                int(p) if p.isdigit() else p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]
            )
            extra = re.match(r"additional propert(?:y|ies) '([^']+)'", why)
            found.append((path + (extra.group(1),) if extra else path, why))
        return found


def _values(values_file: Path, outcome: RenderOutcome) -> dict[str, object] | None:
    name = display_name(values_file)
    try:
        text = values_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        outcome.yaml_problems.append(LoadProblem(name, f"cannot read: {exc}"))
        return None
    docs, problems = load_text(text, name)
    outcome.yaml_problems.extend(problems)
    if problems:
        return None
    if len(docs) > 1:
        outcome.yaml_problems.append(LoadProblem(name, "a values file holds one YAML document", docs[1].line))
        return None
    outcome.values_doc = docs[0] if docs else None
    for dup in docs[0].duplicates if docs else []:
        outcome.yaml_problems.append(
            LoadProblem(
                name,
                f"key '{dup.path[-1]}' appears twice (lines {dup.first_line} "
                f"and {dup.second_line}); YAML keeps only the last",
                dup.second_line,
            )
        )
    return docs[0].data if docs else {}


def template_file(chart_dir: Path, template: str) -> str:
    """Helm's template name (`<chart name>/templates/x.yaml`) as the file a person opens.

    Helm prefixes the name from Chart.yaml, which need not be the folder's name; findings name
    the folder instead (`chart/templates/x.yaml`), relative to the working folder when inside it.
    """
    _, _, inside = template.partition("/")
    return f"{display_name(chart_dir)}/{inside or template}"


def render_chart(chart_dir: Path, values_file: Path | None = None) -> RenderOutcome:
    """Render every template of `chart_dir` with `values_file` over the chart's defaults."""
    import helm_python

    outcome = RenderOutcome(chart=display_name(chart_dir), values=display_name(values_file) if values_file else None)
    values = _values(values_file, outcome) if values_file else {}
    if values is None or outcome.yaml_problems:
        outcome.error = "the values file is not valid YAML"
        return outcome
    try:
        with helm_python.Chart.load(chart_dir) as chart:
            rendered = chart.render(values=values, name=RELEASE_NAME, namespace=NAMESPACE)
    except helm_python.HelmError as exc:
        outcome.error = str(exc).strip()
        return outcome
    for template in sorted(rendered):
        text = rendered[template]
        if template.endswith("NOTES.txt") or not text.strip():
            continue
        docs, problems = load_text(text, template_file(chart_dir, template))
        outcome.documents.extend(docs)
        outcome.yaml_problems.extend(problems)
    return outcome
