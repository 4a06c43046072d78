"""Write the offline Kubernetes schemas into `schemas/` (`make schemas`).

The source is the strict JSON schemas bundled by the `kubernetes-validate` package for the
pinned version (`schema_store.KUBERNETES_VERSION`). For each kind in `KINDS` this writes, in
kubeconform's layout, `v<version>-standalone-strict/<kind>-<group>-<version>.json` and the
plain `<kind>.json`, each standalone: every `$ref` inlined, so kubeconform, an editor or
`jsonschema` can use one file with nothing else. Descriptions are dropped and the JSON is
compact, to keep the committed size small (about 0.75 MB in all); field names, types and
`additionalProperties: false` all stay.

The CRD schemas under `schemas/crds/` are hand-written and not touched here.

    python -m grader.kit.schemas_build            # regenerate
    python -m grader.kit.schemas_build --check    # exit 1 if the committed files are stale
"""

from __future__ import annotations

import argparse
import filecmp
import json
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from grader.manifests.schema_store import (
    KUBERNETES_VERSION,
    builtin_dir_name,
    builtin_file_name,
    default_schemas_dir,
)

#: What a one-replica serving deployment and its neighbours may contain. Keep it to kinds a
#: candidate plausibly writes: each workload kind inlines the whole PodSpec (~100 KB).
KINDS: tuple[tuple[str, str], ...] = (
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("v1", "Pod"),
    ("batch/v1", "Job"),  # e.g. a one-off weights download
    ("v1", "Service"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "Secret"),
    ("v1", "ConfigMap"),
    ("v1", "ServiceAccount"),
    ("v1", "Namespace"),
    ("policy/v1", "PodDisruptionBudget"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("networking.k8s.io/v1", "Ingress"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
)

# Annotations that do not affect validation; dropping them shrinks the files ~4x.
_DROPPED_KEYS = frozenset({"description", "$id"})


class SchemaBuildError(RuntimeError):
    """The bundled schemas are missing something this script relies on."""


def source_dir(version: str = KUBERNETES_VERSION) -> Path:
    """kubernetes-validate's strict schema folder for `version`."""
    root = resources.files("kubernetes_validate") / "kubernetes-json-schema" / f"v{version}-local-strict"
    path = Path(str(root))
    if not path.is_dir():
        raise SchemaBuildError(f"kubernetes-validate has no strict schemas for Kubernetes {version} ({path})")
    return path


def _inline(node: Any, defs: dict[str, Any], stack: tuple[str, ...], in_properties: bool = False) -> Any:
    """Copy `node` with every `$ref` replaced by its definition and annotations dropped.

    Keys of a `properties` map are field names, not keywords, so a field called
    `description` (PriorityClass has one) is kept.
    """
    if isinstance(node, list):
        return [_inline(item, defs, stack) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in stack:
            raise SchemaBuildError(f"recursive definition {name}; it cannot be inlined")
        if name not in defs:
            raise SchemaBuildError(f"unresolvable $ref {node['$ref']}")
        return _inline(defs[name], defs, stack + (name,))
    out: dict[str, Any] = {}
    for key, value in node.items():
        if not in_properties and (key in _DROPPED_KEYS or (key.startswith("x-kubernetes-") and stack)):
            continue
        out[key] = _inline(value, defs, stack, in_properties=(key == "properties" and not in_properties))
    return out


def _assert_strict(node: Any, where: str) -> None:
    """Every object schema with declared properties must forbid the others."""
    if isinstance(node, list):
        for item in node:
            _assert_strict(item, where)
    elif isinstance(node, dict):
        if "properties" in node and node.get("additionalProperties") is not False:
            raise SchemaBuildError(f"{where}: an object schema allows unknown fields")
        for key, value in node.items():
            if key == "properties":
                for sub in value.values():
                    _assert_strict(sub, where)
            else:
                _assert_strict(value, where)


def standalone_schema(api_version: str, kind: str, version: str = KUBERNETES_VERSION) -> dict[str, Any]:
    """The strict schema of one kind with every reference inlined."""
    src = source_dir(version)
    defs = json.loads((src / "_definitions.json").read_text(encoding="utf-8"))["$defs"]
    path = src / builtin_file_name(api_version, kind)
    if not path.is_file():
        raise SchemaBuildError(f"no schema for {api_version} {kind} in {src}")
    schema: dict[str, Any] = _inline(json.loads(path.read_text(encoding="utf-8")), defs, ())
    _assert_strict(schema, f"{api_version} {kind}")
    return schema


def _dump(schema: dict[str, Any]) -> str:
    # Compact: indentation alone would triple the size (the PodSpec nests deep). Sorted keys keep
    # the output deterministic; `python -m json.tool FILE` shows one readably.
    return json.dumps(schema, sort_keys=True, separators=(",", ":")) + "\n"


def build(out_root: Path, version: str = KUBERNETES_VERSION) -> list[Path]:
    """Write every kind's schema under `out_root`; remove files no longer generated."""
    out_dir = out_root / builtin_dir_name(version)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for api_version, kind in KINDS:
        text = _dump(standalone_schema(api_version, kind, version))
        for name in (builtin_file_name(api_version, kind), f"{kind.lower()}.json"):
            target = out_dir / name
            target.write_text(text, encoding="utf-8")
            written.append(target)
    for stale in set(out_dir.glob("*.json")) - set(written):
        stale.unlink()
    return written


def check(out_root: Path, version: str = KUBERNETES_VERSION) -> list[str]:
    """Names of committed files that differ from a fresh build (empty when up to date)."""
    committed = out_root / builtin_dir_name(version)
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / builtin_dir_name(version)
        build(Path(tmp), version)
        names = sorted({p.name for p in fresh.glob("*.json")} | {p.name for p in committed.glob("*.json")})
        return [
            n
            for n in names
            if not (committed / n).is_file()
            or not (fresh / n).is_file()
            or not filecmp.cmp(committed / n, fresh / n, shallow=False)
        ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.kit.schemas_build", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=default_schemas_dir(), help="schemas folder (default: the kit's)")
    parser.add_argument("--check", action="store_true", help="compare with a fresh build instead of writing")
    args = parser.parse_args(argv)
    if args.check:
        stale = check(args.out)
        for name in stale:
            print(f"stale: {builtin_dir_name()}/{name}", file=sys.stderr)
        if stale:
            print("run `make schemas` and commit the result", file=sys.stderr)
        return 1 if stale else 0
    written = build(args.out)
    size = sum(p.stat().st_size for p in written)
    print(
        f"wrote {len(written)} schemas for Kubernetes {KUBERNETES_VERSION} ({size / 1e6:.2f} MB) "
        f"to {args.out / builtin_dir_name()}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
