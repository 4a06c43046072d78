"""The submission contract (version 1): its JSON schemas, and reading `submission.yaml`.

The schemas live in `schemas/contract/` (one per machine-readable file a submission produces or
receives) and are the single source of truth; this module only loads them, resolves their
cross-references offline, and turns validation errors into messages that name the file and the
field. `load_submission` is what the grader calls first: everything after it can trust the shape.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from grader.shared.contracts import LATEST, supported, version_of
from grader.shared.kit_files import schemas_dir
from grader.shared.schema_words import problems_of
from grader.shared.yaml_files import YamlError, read_yaml, split_front_matter

__all__ = [
    "CONTRACT_VERSION",
    "KINDS",
    "PARTS",
    "SCHEMA_DIR",
    "ContractCheck",
    "ContractError",
    "PercentileRef",
    "Problem",
    "Submission",
    "check_output",
    "check_submission",
    "load_submission",
    "memo_front_matter",
    "schema_errors",
]

CONTRACT_VERSION = LATEST  # what the kit's own bundle, starter and reference declare
SCHEMA_DIR = schemas_dir() / "contract"
KINDS = (
    "submission",
    "loadgen-results",
    "gateway-config",
    "gateway-stats",
    "sizing-output",
    "memo-front-matter",
    "manifest-report",
)


class ContractError(ValueError):
    """A submission or one of its outputs breaks the contract; the message says where and how."""


def _registry() -> tuple[Registry, dict[str, dict[str, Any]]]:
    schemas = {kind: json.loads((SCHEMA_DIR / f"{kind}.schema.json").read_text()) for kind in KINDS}
    registry: Registry = Registry().with_resources(
        (schema["$id"], Resource.from_contents(schema)) for schema in schemas.values()
    )
    return registry, schemas


_REGISTRY, _SCHEMAS = _registry()
_VALIDATORS = {kind: Draft202012Validator(schema, registry=_REGISTRY) for kind, schema in _SCHEMAS.items()}


@functools.cache
def schema_digest(kind: str) -> str:
    """The sha256 of a contract schema as this kit has it: what a stored check of a file names, so a check made
    against another schema is made again, never trusted."""
    if kind not in _SCHEMAS:
        raise KeyError(f"no contract schema named {kind!r} (known: {', '.join(KINDS)})")
    return hashlib.sha256(json.dumps(_SCHEMAS[kind], sort_keys=True).encode()).hexdigest()


def schema_errors(kind: str, data: Any) -> list[str]:
    """Every way `data` breaks the schema of `kind`, as 'field.path: what is wrong' lines."""
    if kind not in _SCHEMAS:
        raise KeyError(f"no contract schema named {kind!r} (known: {', '.join(KINDS)})")
    if isinstance(data, dict) and "contract" in data and version_of(data["contract"]) is None:
        versions = ", ".join(str(v) for v in supported())
        return [f"contract: version {data['contract']!r} is not one this grader grades (it grades versions {versions})"]
    return problems_of(_VALIDATORS[kind], data)


@dataclass(frozen=True)
class PercentileRef:
    """Where `loadgen.percentile` points: the function the grader swaps wrong methods in for.

    Its stated signature: `function(values: Sequence[float], p: float) -> float | None`, the
    nearest-rank p-th percentile (0 < p <= 100) of values in any order, None for no values.
    """

    module: str  # dotted, importable with the submission folder first on sys.path
    function: str
    file: Path  # the module's source file inside the submission

    @property
    def spec(self) -> str:
        return f"{self.module}:{self.function}"


@dataclass(frozen=True)
class Submission:
    folder: Path
    data: dict[str, Any]

    @property
    def contract(self) -> int:
        """The contract version the submission declares, which its grade follows (the latest for none it names)."""
        return version_of(self.data.get("contract")) or LATEST

    def follows(self) -> str:
        """What the submission says it follows, for a person: its contract version and its bundle's stamp."""
        line = f"follows contract {self.contract}"
        if self.contract < LATEST:
            line += f" (an earlier brief: graded by its rules; the kit's latest is {LATEST})"
        stamp = self.data.get("edition")
        if isinstance(stamp, dict):
            made = ", ".join(f"{k} {stamp[k]}" for k in ("name", "kit", "contract", "rubric") if k in stamp)
            line += f"; its bundle: {made}"
        return line

    def command(self, part: str, key: str = "command") -> list[str]:
        return list(self.data[part][key])

    def path(self, *keys: str) -> Path:
        value: Any = self.data
        for key in keys:
            value = value[key]
        return self.folder / str(value)

    @property
    def manifests(self) -> tuple[str, Path]:
        """("values" | "rendered", path)."""
        ((mode, rel),) = self.data["manifests"].items()
        return mode, self.folder / rel

    @property
    def percentile(self) -> PercentileRef:
        """The load generator's percentile function (`loadgen.percentile`), located but not imported."""
        module, function = self.data["loadgen"]["percentile"].split(":")
        return PercentileRef(module, function, _module_file(self.folder, module))


@dataclass(frozen=True)
class Problem:
    """One way a submission breaks the contract, and what the grade does about it."""

    part: str  # the part of submission.yaml it concerns ("loadgen", "memo", ...); "*" for the whole file
    message: str  # where and what, e.g. "memo: memo/MEMO.md does not exist"
    skips: bool  # the grade leaves the part's criteria out ("skipped"), rather than running them to fail


@dataclass(frozen=True)
class ContractCheck:
    """A submission checked against the contract: every problem, by part. `grader contract`, `grader check`, the
    grade and `grader replay` all read this one check; they differ only in what they do with it.

    What a problem makes the grade skip, stated here once (tests/rooms/contract/test_contract_check.py has a case
    for each):
    - no submission.yaml, not YAML or not a mapping, or a contract version this grader does not grade: every
      criterion (part "*");
    - a part of submission.yaml that breaks its schema: that part's criteria;
    - a memo file that does not exist: the memo's criteria.
    Every other problem is reported and its part is still graded, its criteria failing on what they read: a memo
    whose front matter breaks its schema (`memo.front-matter`), a manifests file that does not exist, a
    `loadgen.percentile` that names no function (the tests' criteria), a command whose script does not exist (run,
    and failed with the command's own error).
    """

    folder: Path
    submission: Submission | None  # None when the whole file is unusable
    problems: tuple[Problem, ...] = ()

    def by_part(self) -> dict[str, list[str]]:
        """Every problem's message, by part, as submission.yaml names it ("submission.yaml: memo: ...")."""
        out: dict[str, list[str]] = {}
        for problem in self.problems:
            out.setdefault(problem.part, []).append(f"submission.yaml: {problem.message}")
        return out

    def skipping(self, part: str) -> list[str]:
        """Why the grade skips `part`'s criteria (the whole file's problems, then the part's own): none when it
        grades them."""
        return [f"submission.yaml: {p.message}" for p in self.problems if p.skips and p.part in ("*", part)]

    def report(self) -> list[str]:
        """Every problem for a person, each marked when its part goes ungraded: what `grader contract` and
        `grader check` print."""
        head = [] if self.submission is None else [f"{self.folder / 'submission.yaml'}:"]
        indent = "  " if head else ""
        return head + [f"{indent}{p.message}{_consequence(p)}" for p in self.problems]

    def loaded(self) -> Submission:
        """The submission, when nothing is wrong with it; else a ContractError listing every problem."""
        if self.submission is None:
            raise ContractError("\n".join(p.message for p in self.problems))
        if self.problems:
            lines = "\n  ".join(p.message for p in self.problems)
            raise ContractError(f"{self.folder / 'submission.yaml'}:\n  {lines}")
        return self.submission


def _consequence(problem: Problem) -> str:
    if not problem.skips:
        return ""
    return "  (nothing is graded)" if problem.part == "*" else f"  (its {problem.part} criteria are not graded)"


#: The parts of submission.yaml, one per deliverable (the tests run under `loadgen`).
PARTS = ("loadgen", "gateway", "manifests", "sizing", "memo")


def check_submission(folder: Path) -> ContractCheck:
    """Check `folder/submission.yaml` against the contract: its shape and version, then the files each sound part
    names (a part that breaks its schema is not read further)."""
    folder = Path(folder)
    path = folder / "submission.yaml"
    if not folder.is_dir():
        whole = f"{folder}: not a folder (a submission is a folder with submission.yaml at its top)"
        return ContractCheck(folder, None, (Problem("*", whole, True),))
    if not path.is_file():
        whole = f"{folder}: no submission.yaml at its top (see starter/submission.yaml)"
        return ContractCheck(folder, None, (Problem("*", whole, True),))
    try:
        data = read_yaml(path)
    except YamlError as exc:
        return ContractCheck(folder, None, (Problem("*", str(exc), True),))
    if not isinstance(data, dict):
        return ContractCheck(folder, None, (Problem("*", "must be a mapping of parts (see the contract)", True),))
    problems = [Problem(_part_of(line), line, True) for line in schema_errors("submission", data)]
    submission = Submission(folder, data)
    broken = {p.part for p in problems}
    if "*" in broken:  # the file's shape cannot be trusted: nothing it names is read
        return ContractCheck(folder, submission, tuple(problems))
    if "manifests" not in broken:
        mode, manifests = submission.manifests
        if not manifests.exists():
            problems.append(
                Problem("manifests", f"manifests.{mode}: {manifests.relative_to(folder)} does not exist", False)
            )
    if "memo" not in broken:
        problems += _memo_problems(submission)
    if "loadgen" not in broken:
        problems += [Problem("loadgen", line, False) for line in _percentile_problems(submission)]
    problems += _command_problems(submission, skip=broken)
    return ContractCheck(folder, submission, tuple(problems))


def _part_of(line: str) -> str:
    """The part a schema problem of submission.yaml concerns: its field's first name, or for a problem of the whole
    file (a missing part, the contract version) the part it names, else "*"."""
    head = line.split(":", 1)[0]
    part = head.split(".")[0].split("[")[0]
    if part in ("(top level)", "contract"):
        return next((p for p in PARTS if f"'{p}'" in line), "*")
    return part


def _memo_problems(submission: Submission) -> list[Problem]:
    memo, name = submission.path("memo"), submission.data["memo"]
    if not memo.is_file():
        return [Problem("memo", f"memo: {name} does not exist", True)]
    try:  # the memo's front matter is part of the contract too; the grade scores it (memo.front-matter)
        front = memo_front_matter(memo, str(name))  # named as the candidate wrote it, not by this machine's path
    except ContractError as exc:
        return [Problem("memo", f"memo: {exc}", False)]
    return [
        Problem("memo", f"memo: {name}: front matter: {line}", False)
        for line in schema_errors("memo-front-matter", front)
    ]


def load_submission(folder: Path) -> Submission:
    """Read and check `folder/submission.yaml` (`check_submission`); a ContractError lists every problem."""
    return check_submission(folder).loaded()


_PYTHONS = ("python", "python3")
_COMMANDS = (("loadgen", "command"), ("loadgen", "test_command"), ("gateway", "command"), ("sizing", "command"))


def _command_problems(submission: Submission, *, skip: set[str]) -> list[Problem]:
    """Each command's script exists under the submission: `python x.py` needs x.py, `./run.sh` needs run.sh (the
    parts in `skip` broke their schema and are not read). Reported, never skipping: the grade runs the command and
    its criteria fail with its own error.

    Only what the argv names as a file is checked (`python -m pytest` names a module, which may
    come from anywhere on the path); the commands themselves are not run here.
    """
    problems = []
    for part, key in _COMMANDS:
        if part in skip or not isinstance(submission.data.get(part), dict):
            continue
        argv = submission.data[part].get(key)
        script = _script_of([str(a) for a in argv]) if argv else None
        if script is not None and not (submission.folder / script).is_file():
            message = f"{part}.{key}: {script} does not exist under the submission (commands run from its folder)"
            problems.append(Problem(part, message, False))
    return problems


def _script_of(argv: list[str]) -> str | None:
    """The file a command runs, if it names one: python's script argument, or a relative program."""
    program = Path(argv[0]).name
    if program in _PYTHONS or program.startswith("python3."):
        for arg in argv[1:]:
            if arg in ("-m", "-c"):
                return None
            if not arg.startswith("-"):
                return arg
        return None
    return argv[0] if "/" in argv[0] and not Path(argv[0]).is_absolute() else None


def _module_file(folder: Path, module: str) -> Path:
    """The file `import module` would load from `folder`: a.b -> a/b.py, else a/b/__init__.py."""
    base = folder.joinpath(*module.split("."))
    plain = base.with_name(base.name + ".py")
    package = base / "__init__.py"
    return package if not plain.is_file() and package.is_file() else plain


def _percentile_problems(submission: Submission) -> list[str]:
    """`loadgen.percentile` names a module file under the submission that defines the function.

    Read statically (the code is the candidate's and is not run here): a top-level def, an
    assignment or an import of that name counts; a module with `import *` is given the benefit.
    """
    ref = submission.percentile
    where = f"loadgen.percentile: {ref.spec}"
    if not ref.file.is_file():
        rel = ref.file.relative_to(submission.folder).as_posix()
        return [
            (
                f"{where}: no module file {rel} under the submission (the module is imported with the submission "
                "folder first on sys.path)"
            )
        ]
    try:
        tree = ast.parse(ref.file.read_bytes(), filename=str(ref.file))
    except (SyntaxError, ValueError) as exc:
        lineno = getattr(exc, "lineno", None)  # a SyntaxError's; a ValueError (a NUL byte) has none
        line = f" line {lineno}" if lineno else ""
        return [
            (
                f"{where}: {ref.file.relative_to(submission.folder).as_posix()}:{line} is not valid Python "
                f"({getattr(exc, 'msg', exc)})"
            )
        ]
    names = _top_level_names(tree)
    if ref.function in names or "*" in names:
        return []
    return [f"{where}: {ref.file.relative_to(submission.folder).as_posix()} defines no top-level {ref.function!r}"]


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add("*" if alias.name == "*" else alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def check_output(kind: str, path: Path) -> list[str]:
    """Problems with one output file (JSON, or YAML for configs and memo front matter)."""
    if path.suffix in (".yaml", ".yml"):
        data = _yaml(path)
    elif path.suffix == ".md":
        data = memo_front_matter(path)
    else:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ContractError(f"{path}: cannot read ({exc.strerror})") from None
        except json.JSONDecodeError as exc:
            raise ContractError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    return schema_errors(kind, data)


def _yaml(path: Path) -> Any:
    try:
        return read_yaml(path)
    except YamlError as exc:
        raise ContractError(str(exc)) from None


def memo_front_matter(path: Path, name: str | None = None) -> dict[str, Any]:
    """The YAML mapping between the memo's first two `---` lines (the one reader `grader grade` uses too); errors
    name the file as `name` (its path in the submission, as submission.yaml gives it), else by `path`."""
    shown = name or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ContractError(f"{shown}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ContractError(f"{shown}: not UTF-8 text (byte {exc.start})") from None
    try:
        return split_front_matter(text, source=shown).data
    except YamlError as exc:
        raise ContractError(str(exc)) from None
