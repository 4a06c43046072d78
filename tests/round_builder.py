"""A synthetic hiring round: the submissions, and their report folders as `grader grade-many` leaves them.

    python tests/round_builder.py DEST [--size N]        # DEST/submissions/<name>/, DEST/grades/<name>/

Every member has a person's name (`candidate` in submission.yaml, the folder's name) and says it in
its memo and in an author line of its code, as candidates do. The members:

- the reference, as it is, and the independent submission (tests/fixtures/independent_submission);
- copies of the reference disguised the ways people disguise copying: identifiers renamed,
  functions reordered, comments and whitespace changed, one function in each code deliverable
  re-implemented, and all four at once; a copy of the reference's gateway alone over the starter;
- two copies of the independent submission, each with its identifiers renamed another way;
- the starter as handed out (skeleton only);
- the chaff (a copy of the reference with one defect each), as many as `--size` leaves room for;
  past the chaff, more disguised copies of the reference and of the independent submission.

The report folders are not graded here: each is a grade re-judged from recorded runs
(tests/fixtures/runs/): the reference's for its copies, the independent submission's for its copies
and the skeleton, each chaff's own. Their records carry the member's name where a candidate's files
reach a report (the memo's text, the load generator's output tails). The similarity check reads only
`sources.json.gz`, which is the member's real files.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import gzip
import io
import json
import keyword
import re
import shutil
import sys
import tokenize
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = ROOT / "submissions"
RUNS = ROOT / "tests" / "fixtures" / "runs"
INDEPENDENT = ROOT / "tests" / "fixtures" / "independent_submission"
STARTER = ROOT / "starter"
CODE_FOLDERS = ("loadgen", "gateway", "sizing")

FIRST = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "John", "Margaret", "Ken"]
LAST = [
    "Okonkwo",
    "Lindqvist",
    "Marchetti",
    "Takahashi",
    "Dubois",
    "Kowalczyk",
    "Haddad",
    "Oyelaran",
    "Novak",
    "Castellanos",
]


@dataclass(frozen=True)
class Member:
    name: str  # the folder's name
    candidate: str  # as in submission.yaml
    kind: str  # reference, independent, disguised, independent-copy, gateway-copy, skeleton, chaff
    copied: str  # what it copies: "reference", "independent" or "" (its own work)
    disguise: str = ""
    runs: str = "reference"  # the recorded runs its report is re-judged from


def person(i: int) -> str:
    return f"{FIRST[i % 10]} {LAST[(i // 10 + i) % 10]}"


def slug(candidate: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", candidate.lower()).strip("-")


# ---- disguises: each a function of one Python file's text ----------------------------------------------

_BUILTIN_NAMES = set(dir(builtins))


def defined_names(texts: list[str]) -> set[str]:
    """Names the code defines itself (functions, classes, arguments, assigned names and attributes)."""
    names: set[str] = set()
    for text in texts:
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
    return {
        n
        for n in names
        if not (n.startswith("__") or keyword.iskeyword(n) or n in _BUILTIN_NAMES or n in ("self", "cls", "_"))
    }


def rename(text: str, mapping: dict[str, str]) -> str:
    """Every NAME token in `mapping` renamed (code only: strings and comments are left alone)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    edits = [
        (starts[t.start[0] - 1] + t.start[1], starts[t.end[0] - 1] + t.end[1], mapping[t.string])
        for t in tokenize.generate_tokens(io.StringIO(text).readline)
        if t.type == tokenize.NAME and t.string in mapping
    ]
    for start, end, new in reversed(edits):
        text = text[:start] + new + text[end:]
    return text


_SYNONYMS = {
    "record": "entry",
    "result": "outcome",
    "request": "call",
    "response": "answer",
    "value": "item",
    "chunk": "piece",
    "route": "path",
    "count": "tally",
    "event": "message",
    "line": "row",
    "stats": "tallies",
    "health": "liveness",
    "time": "clock",
    "start": "begin",
    "end": "finish",
    "error": "fault",
    "status": "state",
    "config": "settings",
    "tokens": "pieces",
    "local": "onprem",
    "api": "cloud",
    "cost": "price",
    "summary": "digest",
    "data": "payload",
    "text": "body",
}


def synonyms(name: str) -> str:
    parts = name.split("_")
    swapped = [_SYNONYMS.get(p.lower(), p) for p in parts]
    new = "_".join(swapped)
    return new if new != name else name + "_v"


def suffixed(name: str) -> str:
    return name[:1] + name[1:] + "X" if name[:1].isupper() else name + "_x"


def reorder(text: str) -> str:
    """The module's top-level functions and classes in reverse order (each with its decorators)."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    blocks = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            blocks.append((first, node.end_lineno or node.lineno))
    if len(blocks) < 2:
        return text
    head = lines[: blocks[0][0]]
    inside = set().union(*(range(a, b) for a, b in blocks))
    rest = [
        line for i, line in enumerate(lines[blocks[0][0] :], start=blocks[0][0]) if i not in inside and line.strip()
    ]
    moved = ["".join(lines[a:b]).rstrip("\n") + "\n\n\n" for a, b in reversed(blocks)]
    return "".join(head) + "".join(rest) + ("\n\n" if rest else "") + "".join(moved)


def recomment(text: str) -> str:
    """Comments removed and new ones written; indentation halved; blank lines doubled."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.COMMENT]
    lines = text.splitlines(keepends=True)
    for t in reversed(tokens):
        row, col = t.start
        line = lines[row - 1]
        lines[row - 1] = line[:col].rstrip() + ("\n" if line.endswith("\n") else "")
    out = []
    for line in lines:
        stripped = line.lstrip(" ")
        indent = (len(line) - len(stripped)) // 2
        if stripped.startswith(("def ", "async def ", "class ")):
            out.append(" " * indent + "# --- here we go ---\n")
        out.append(" " * indent + stripped)
        if not stripped.strip():
            out.append("\n")
    return "".join(out)


NEW_FUNCTIONS = {
    "loadgen/percentiles.py": (
        "nearest_rank",
        """def nearest_rank(values, p):
    if p <= 0 or p > 100:
        raise ValueError("bad percentile: " + repr(p))
    data = list(values)
    if len(data) == 0:
        return None
    data.sort()
    k = 0
    while (k + 1) * 100 < p * len(data):
        k += 1
    return data[k]
""",
    ),
    "gateway/router.py": (
        "_no_route",
        """    def _no_route(self, request, trace):
        reasons = trace.notes if trace.notes else ["nothing could be tried"]
        joined = " / ".join(reasons)
        if request.require != "local":
            last = trace.last_failure
            if last and last.kind == "timeout":
                return error_reply(504, "all routes timed out: " + joined, "gateway_error", "upstream_timeout")
            return error_reply(502, "all routes failed: " + joined, "gateway_error", "upstream_failed")
        return error_reply(503, "local only, and local failed: " + joined, "service_unavailable",
                           "local_route_failed")
""",
    ),
    "sizing/arithmetic.py": (
        "size",
        """def size(i):
    out = {"contract": 4, "inputs": i.to_dict()}
    peak = peak_output_tokens_per_s(i)
    needed = replicas_for_load(peak, i.throughput)
    chosen = needed if needed > i.min_replicas else i.min_replicas
    out["peak_output_tokens_per_s"] = _num(peak)
    out["per_stream_output_tokens_per_s"] = _num(exact(i.throughput) / i.concurrency)
    out["replicas_for_load"] = needed
    out["replicas"] = chosen
    prices = list(i.gpu_hour_usd)
    per_million = []
    for price in prices:
        for u in i.utilisation:
            usd = cost_per_million_output_tokens(price, i.gpus_per_replica, i.throughput, u)
            per_million.append({"gpu_hour_usd": price, "utilisation": u, "usd": _num(usd)})
    out["cost_per_million_output_tokens"] = per_million
    chats = chats_per_month(i)
    rows, per_chat = [], []
    for price in prices:
        for n in sorted(set([1, chosen])):
            rows.append({"gpu_hour_usd": price, "replicas": n,
                         "usd": _num(monthly_cost(price, i.gpus_per_replica, n, i.hours_per_month))})
        bill = monthly_cost(price, i.gpus_per_replica, chosen, i.hours_per_month)
        per_chat.append({"gpu_hour_usd": price, "usd": _num(bill / chats)})
    out["monthly_cost"] = rows
    out["cost_per_chat_usd"] = per_chat
    out["chats_per_month"] = _num(chats)
    api_chat = api_cost_per_chat(i)
    out["api"] = {"cost_per_chat_usd": _num(api_chat),
                  "list_usd_per_million_output_tokens": _num(exact(i.api_output_usd_per_million)),
                  "usd_per_million_output_tokens_with_input": _num(api_usd_per_million_output_tokens_with_input(i)),
                  "monthly_usd": _num(api_chat * chats)}
    tokens = kv_cache_tokens(i)
    fits = tokens // i.context_tokens
    out["kv_cache"] = {"bytes_per_token": _num(kv_bytes_per_token(i)), "tokens": tokens,
                       "sequences_at_context": fits, "holds_concurrency": fits >= i.concurrency}
    hours = batch_hours(i.batch_output_tokens, i.throughput)
    out["batch_hours"] = _num(hours) if hours is not None else None
    return out
""",
    ),
}


def reimplement(path: str, text: str) -> str:
    """The one function this file has in NEW_FUNCTIONS written anew (another algorithm, another shape)."""
    if path not in NEW_FUNCTIONS:
        return text
    name, new = NEW_FUNCTIONS[path]
    (node,) = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef) and n.name == name]
    lines = text.splitlines(keepends=True)
    return "".join(lines[: node.lineno - 1]) + new + "".join(lines[node.end_lineno :])


DISGUISES: dict[str, tuple[str, ...]] = {
    "renamed": ("rename",),
    "reordered": ("reorder",),
    "recommented": ("recomment",),
    "reimplemented": ("reimplement",),
    "all-four": ("reimplement", "reorder", "rename", "recomment"),
}


def disguise(
    folder: Path,
    steps: tuple[str, ...],
    *,
    rename_with: Callable[[str], str] = synonyms,
    folders: tuple[str, ...] = CODE_FOLDERS,
) -> None:
    files = sorted(p for f in folders for p in (folder / f).rglob("*.py")) if folders else sorted(folder.glob("*.py"))
    mapping = {n: rename_with(n) for n in sorted(defined_names([p.read_text() for p in files]))}
    for path in files:
        rel = path.relative_to(folder).as_posix()
        text = path.read_text()
        for step in steps:
            if step == "rename":
                text = rename(text, mapping)
            elif step == "reorder":
                text = reorder(text)
            elif step == "recomment":
                text = recomment(text)
            elif step == "reimplement":
                text = reimplement(rel, text)
        path.write_text(text)


# ---- the members ---------------------------------------------------------------------------------------


def members(size: int, chaff: list[str]) -> list[Member]:
    plan: list[tuple[str, str, str, str, str]] = [  # kind, copied, disguise, runs, source
        ("reference", "", "", "reference", "reference"),
        ("independent", "", "", "independent", "independent"),
        *(("disguised", "reference", d, "reference", "reference") for d in DISGUISES),
        ("gateway-copy", "reference", "renamed", "reference", "reference"),
        ("independent-copy", "independent", "suffixed", "independent", "independent"),
        ("independent-copy", "independent", "synonyms", "independent", "independent"),
        ("skeleton", "", "", "independent", "starter"),
    ]
    plan += [("chaff", "", "", name, name) for name in chaff[: max(0, size - len(plan))]]
    extra = 0
    while len(plan) < size:
        d = list(DISGUISES)[extra % len(DISGUISES)]
        plan.append(
            ("disguised", "reference", d, "reference", "reference")
            if extra % 3
            else (
                "independent-copy",
                "independent",
                "synonyms" if extra % 2 else "suffixed",
                "independent",
                "independent",
            )
        )
        extra += 1
    return [
        Member(slug(person(i)), person(i), kind, copied, d, runs) for i, (kind, copied, d, runs, _) in enumerate(plan)
    ]


def _write_submission(member: Member, dest: Path) -> None:
    if member.kind == "skeleton":
        shutil.copytree(STARTER, dest, ignore=shutil.ignore_patterns("__pycache__"))
    elif member.kind == "chaff":
        from grader.kit.chaff import materialize

        materialize(SUBMISSIONS / "chaff" / member.runs, dest)
    elif member.kind == "gateway-copy":
        shutil.copytree(STARTER, dest, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.rmtree(dest / "gateway")
        shutil.copytree(
            SUBMISSIONS / "reference" / "gateway", dest / "gateway", ignore=shutil.ignore_patterns("__pycache__")
        )
        disguise(dest, ("rename",), folders=("gateway",))
    else:
        source = INDEPENDENT if member.runs == "independent" else SUBMISSIONS / "reference"
        shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        if member.kind == "disguised":
            disguise(dest, DISGUISES[member.disguise])
        elif member.kind == "independent-copy":
            disguise(dest, ("rename",), rename_with=suffixed if member.disguise == "suffixed" else synonyms, folders=())
    _sign(member, dest)


def _sign(member: Member, dest: Path) -> None:
    """The candidate's name where candidates put it: submission.yaml, the memo, an author line."""
    contract = dest / "submission.yaml"
    text = contract.read_text()
    text = re.sub(r"(?m)^candidate:.*$", f"candidate: {member.candidate}", text)
    contract.write_text(text if "candidate:" in text else f"candidate: {member.candidate}\n{text}")
    import yaml

    data = yaml.safe_load(contract.read_text())
    memo = dest / str(data.get("memo", "memo/MEMO.md"))
    if memo.suffix == ".md" and memo.is_file():
        memo.write_text(memo.read_text().rstrip("\n") + f"\n\nWritten by {member.candidate} ({_email(member)}).\n")
    script = next((p for p in sorted(dest.rglob("*.py")) if "tests" not in p.parts), None)
    if script is not None:
        script.write_text(f"# Author: {member.candidate} <{_email(member)}>\n" + script.read_text())


def _email(member: Member) -> str:
    return member.name.replace("-", ".") + "@example.org"


def _report_folder(member: Member, submission: Path, dest: Path) -> None:
    """A grade of `member` re-judged from recorded runs, its records carrying the member's name."""
    from grader.grading.rejudge import rejudge
    from grader.round.sources import snapshot, write_sources

    runs = dest / "runs"
    shutil.copytree(RUNS / member.runs, runs, ignore=shutil.ignore_patterns("source.txt"))
    index = json.loads((runs / "index.json").read_text())
    index["candidate"] = member.candidate
    index["submission"] = str(submission)
    rewritten = []
    memo = runs / "memo.json.gz"
    if memo.is_file():
        record = json.loads(gzip.decompress(memo.read_bytes()))
        record["text"] = record.get("text", "") + f"\nWritten by {member.candidate} ({_email(member)}).\n"
        memo.write_bytes(gzip.compress(json.dumps(record).encode(), mtime=0))
        rewritten.append(memo.name)
    for path in sorted(runs.glob("loadgen-*.json.gz")):
        record = json.loads(gzip.decompress(path.read_bytes()))
        record["stderr_tail"] = f"loadgen by {member.candidate}\n" + (record.get("stderr_tail") or "")
        path.write_bytes(gzip.compress(json.dumps(record).encode(), mtime=0))
        rewritten.append(path.name)
    # A record changed here is no longer the bytes the grade wrote: without its digest, it is checked
    # against the record schema as it is read back, as a record from an older grader is.
    for name in rewritten:
        index.get("digests", {}).pop(name, None)
    (runs / "index.json").write_text(json.dumps(index, indent=1))
    rejudge(dest)
    write_sources(snapshot(submission), dest)


def build_round(
    dest: Path, *, size: int = 20, chaff: list[str] | None = None, first: int | None = None
) -> dict[str, Member]:
    """Write `dest/submissions/<name>/` and `dest/grades/<name>/` for a round of `size` members; return them by name.

    `chaff` (default: every chaff, by name) is the order chaff join the round in; `first` keeps only the first
    members (the reference, the independent submission, a renamed copy of the reference, ...) for a quick round."""
    if chaff is None:
        chaff = sorted(
            p.name
            for p in (SUBMISSIONS / "chaff").iterdir()
            if (p / "chaff.yaml").is_file() and (RUNS / p.name / "index.json").is_file()
        )
    found = {m.name: m for m in members(size, chaff)[:first]}
    for member in found.values():
        submission = dest / "submissions" / member.name
        _write_submission(member, submission)
        _report_folder(member, submission, dest / "grades" / member.name)
    return found


def summarised_round(dest: Path, *, first: int = 3, similarity: bool = True) -> tuple[Path, dict[str, Member]]:
    """A quick round of the `first` members, summarised as `grade-many` leaves it (grades.csv, index.html, the
    item analysis and, unless not wanted, similarity within the round with its side-by-side pages); its grades
    folder and members."""
    from grader.round.rebuild import SummaryOptions, summarise

    found = build_round(dest, size=11, first=first)
    summarise(dest / "grades", SummaryOptions(kit_leaks=False) if similarity else SummaryOptions(threshold=None))
    return dest / "grades", found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path)
    parser.add_argument("--size", type=int, default=20)
    args = parser.parse_args(argv)
    if args.dest.exists() and any(args.dest.iterdir()):
        parser.error(f"{args.dest}: must be new or empty")
    found = build_round(args.dest, size=args.size)
    manifest = {name: m.__dict__ for name, m in found.items()}
    (args.dest / "members.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(found)} members: {args.dest / 'submissions'} and {args.dest / 'grades'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


def write_report(
    folder: Path,
    candidate: str,
    criteria: list[tuple[str, str, float, float, str]],
    human: Sequence[tuple[str, float | None, float]] = (),
) -> Path:
    """A minimal report.json as the grader writes it: (id, deliverable, weight, points, status) per criterion."""
    folder.mkdir(parents=True, exist_ok=True)
    checklist = [{"id": hid, "item": f"item {hid}", "score": score, "max_score": most} for hid, score, most in human]
    score = sum(points for _, _, _, points, status in criteria if status in ("passed", "failed"))
    score += sum(s for _, s, _ in human if s is not None)
    report = {
        "score": score,
        "max_score": sum(w for _, _, w, _, _ in criteria) + sum(m for _, _, m in human),
        "tests": [
            {"name": cid, "score": p if st in ("passed", "failed") else 0.0, "max_score": w, "tags": []}
            for cid, _, w, p, st in criteria
        ],
        "extra_data": {
            "kit": {
                "candidate": candidate,
                "sandboxed": True,
                "contract_problems": [],
                "seed": 0,
                "submission": f"/returns/{folder.name}",
                "criteria": [
                    {
                        "id": cid,
                        "deliverable": d,
                        "weight": w,
                        "score": p,
                        "status": st,
                        "title": f"{cid} holds",
                        "output": f"checked for {candidate}",
                    }
                    for cid, d, w, p, st in criteria
                ],
            },
            "human": {"checklist": checklist},
        },
    }
    (folder / "report.json").write_text(json.dumps(report, indent=1))
    (folder / "junit.xml").write_text(f'<testsuite name="{candidate}"/>\n')
    (folder / "report.html").write_text(f"<html><body><h1>{candidate}</h1><mark>x</mark></body></html>\n")
    return folder
