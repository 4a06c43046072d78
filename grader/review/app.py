"""The web app of `grader review`: its routes, each reading or writing through the room's other modules.

    app = build_app(open_round(Path("grades")), reviewer="alice")        # an ASGI app; server.py serves it

| route | what |
| --- | --- |
| `GET /` | the round: the ranking, sortable and filterable (pages.py) |
| `GET /items` | the item analysis, from the round's items.csv |
| `GET /c/KEY` | a candidate: guide and report beside the scoring sheet, decision and live exercises |
| `POST /c/KEY/sheet` | save the sheet (sheet.py): 200, 400 naming the field, or 409 naming who saved first |
| `POST /c/KEY/reveal` | in a blind review, reveal that candidate's name (recorded) |
| `POST /c/KEY/live`, `GET /c/KEY/live/JOB` | start a live exercise; its progress and verdict (live_jobs.py) |
| `GET /files/PATH` | a file under the round's folder, path-checked (access.py) |
| `POST /export` | grades.csv with the interview's points and the decisions (export.py) |

Every answer passes through the round's blinding (blinding.py) before it leaves, and carries a Content
Security Policy that lets only the app's own script run. Form input that is wrong is a 400 with a message
naming the field, never a 5xx.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from grader.reports import FILE_NAMES, HumanScoreError
from grader.review.access import Gate, NotServed, read_served, served_path
from grader.review.blinding import NameLeak
from grader.review.candidate_page import CandidateView, candidate_page
from grader.review.export import export_grades
from grader.review.guide import ensure_guide
from grader.review.live_jobs import LIVE, Busy, LiveJob, LiveJobs, exercises, recorded_runs, submission_for
from grader.review.pages import error_page, items_page, points, round_page
from grader.review.round_view import ReviewError, ReviewRound
from grader.review.script import CSS, SCRIPT
from grader.review.sheet import FORM_MAX_BYTES, Conflict, SheetError, load_sheet, parse_entry, save_sheet

__all__ = ["ReviewApp", "build_app"]

HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        "frame-ancestors 'self'; form-action 'self'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # not no-referrer: a browser then posts forms with `Origin: null`
    "Cache-Control": "no-store",
}
# In a blind review only text is served, each file redacted as the page is; a binary file could name anyone.
BLIND_TEXT = (".html", ".htm", ".json", ".csv", ".md", ".txt", ".log", ".svg", ".xml", ".jsonl")
_TYPES = {".md": "text/plain", ".log": "text/plain", ".jsonl": "text/plain", ".csv": "text/csv"}


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ReviewApp:
    """The app's state: the round, who saves, the live runs started here."""

    def __init__(self, review: ReviewRound, reviewer: str) -> None:
        self.review = review
        self.reviewer = reviewer
        self.jobs = LiveJobs()
        self.round_id = hashlib.sha256(str(review.root).encode()).hexdigest()[:12]

    # ---- answers --------------------------------------------------------------------------------------

    def _text(self, text: str) -> str:
        return self.review.blinding.scrub(text)

    def html(self, text: str, status: int = 200) -> Response:
        try:
            body = self._text(text)
        except NameLeak:
            status, body = 403, error_page(403, "This page would name a candidate in a blind review: not shown.")
        return Response(body, status, headers=HEADERS, media_type="text/html; charset=utf-8")

    def json(self, data: Any, status: int = 200) -> Response:
        try:
            body = self._text(json.dumps(data, ensure_ascii=False))
        except NameLeak:
            status, body = 403, json.dumps({"message": "This answer would name a candidate in a blind review."})
        return Response(body, status, headers=HEADERS, media_type="application/json")

    def refusal(self, request: Request, status: int, message: str) -> Response:
        if "application/json" in request.headers.get("accept", ""):
            return self.json({"ok": False, "message": message}, status)
        return self.html(error_page(status, message), status)

    def _folder(self, key: str) -> tuple[str, Path]:
        name = self.review.blinding.name_for(key)
        if name is None or not (self.review.folder(name) / FILE_NAMES["json"]).is_file():
            raise _Refused(404, f"{key}: no such candidate in this round")
        return name, self.review.folder(name)

    # ---- pages ----------------------------------------------------------------------------------------

    def round(self, request: Request) -> Response:
        try:
            entries = self.review.entries()
        except ReviewError as exc:  # a report.json broken since the app started: named, in one line
            return self.refusal(request, 500, str(exc))
        return self.html(round_page(self.review, entries, reviewer=self.reviewer))

    def items(self, request: Request) -> Response:
        return self.html(items_page(self.review, reviewer=self.reviewer))

    def candidate(self, request: Request) -> Response:
        key = request.path_params["key"]
        try:
            name, folder = self._folder(key)
        except _Refused as refused:
            return self.refusal(request, refused.status, str(refused))
        note = ensure_guide(folder)
        try:
            sheet = load_sheet(folder)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            sheet, note = None, f"{folder / FILE_NAMES['json']}: cannot be read as a kit report ({exc})"
        try:
            entry = self.review.entry(key)
        except ReviewError as exc:
            return self.refusal(request, 500, str(exc))
        if entry is None:
            return self.refusal(request, 404, f"{key}: no such candidate in this round")
        found, why = exercises()
        view = CandidateView(
            entry,
            sheet,
            note,
            found,
            why,
            recorded_runs(folder),
            self.jobs.running(folder),
            self._submission(name, folder) is not None,
        )
        return self.html(candidate_page(self.review, view, reviewer=self.reviewer, round_id=self.round_id))

    def _submission(self, name: str, folder: Path) -> Path | None:
        return submission_for(folder, name, self.review.submissions, self.review.round_dir / "review" / "submissions")

    # ---- forms ----------------------------------------------------------------------------------------

    async def _form(self, request: Request) -> list[tuple[str, str]]:
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind not in ("application/x-www-form-urlencoded", ""):
            raise SheetError(f"form: sent as {kind[:60]}; send it URL-encoded, as the page does")
        declared = request.headers.get("content-length", "0")
        if not declared.isdigit() or int(declared) > FORM_MAX_BYTES:
            raise SheetError(f"form: larger than {FORM_MAX_BYTES // 1024} KiB")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > FORM_MAX_BYTES:
                raise SheetError(f"form: larger than {FORM_MAX_BYTES // 1024} KiB")
        try:
            return parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=2000, strict_parsing=False)
        except (UnicodeDecodeError, ValueError):
            raise SheetError("form: not UTF-8 URL-encoded fields") from None

    def _wants_json(self, request: Request) -> bool:
        return "application/json" in request.headers.get("accept", "")

    async def save(self, request: Request) -> Response:
        key = request.path_params["key"]
        try:
            _, folder = self._folder(key)
            pairs = await self._form(request)
            sheet = await run_in_threadpool(self._save, folder, pairs)
        except _Refused as refused:
            return self.refusal(request, refused.status, str(refused))
        except (SheetError, HumanScoreError) as exc:
            return self.refusal(request, 400, str(exc))
        except Conflict as exc:
            return self.refusal(request, 409, str(exc))
        if not self._wants_json(request):
            return RedirectResponse(f"/c/{key}", 303)
        scored = [line for line in sheet.lines if line.score is not None]
        got, most = sum(line.score or 0.0 for line in scored), sum(line.max_score or 0.0 for line in scored)
        return self.json(
            {
                "ok": True,
                "version": sheet.version,
                "interview": points(got, most) if scored else "not scored yet",
                "saved_by": sheet.saved_by,
                "saved_at": sheet.saved_at,
                "message": f"Saved by {sheet.saved_by} at {time.strftime('%H:%M:%S')}: {len(scored)} of "
                f"{len(sheet.lines)} lines scored" + (f", decision: {sheet.decision}" if sheet.decision else "") + ".",
            }
        )

    def _save(self, folder: Path, pairs: Sequence[tuple[str, str]]) -> Any:
        try:
            sheet = load_sheet(folder)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise _Refused(409, f"{FILE_NAMES['json']} cannot be read as a kit report ({exc})") from None
        if not sheet.lines:
            raise _Refused(409, "this candidate's guide has no scoring sheet yet: open their page first")
        return save_sheet(folder, parse_entry(pairs, sheet, self.reviewer))

    async def reveal(self, request: Request) -> Response:
        key = request.path_params["key"]
        blinding = self.review.blinding
        try:
            name, _ = self._folder(key)
            pairs = await self._form(request)
        except _Refused as refused:
            return self.refusal(request, refused.status, str(refused))
        except SheetError as exc:
            return self.refusal(request, 400, str(exc))
        if not blinding.active:
            return self.refusal(request, 400, "this review is not blind: every name is shown already")
        who = next((v.strip() for k, v in pairs if k == "reviewer" and v.strip()), self.reviewer)[:80]
        if blinding.is_hidden(name):
            await run_in_threadpool(blinding.reveal, key, who)
        return RedirectResponse(f"/c/{key}", 303)

    async def live_start(self, request: Request) -> Response:
        key = request.path_params["key"]
        try:
            name, folder = self._folder(key)
            pairs = await self._form(request)
        except _Refused as refused:
            return self.refusal(request, refused.status, str(refused))
        except SheetError as exc:
            return self.refusal(request, 400, str(exc))
        wanted = [v for k, v in pairs if k == "exercise"]
        found, why = exercises()
        if why:
            return self.refusal(request, 409, why)
        if len(wanted) != 1 or wanted[0] not in {x.name for x in found}:
            given = wanted[0][:60] if wanted else "missing"
            return self.refusal(request, 400, f"exercise: {given!r} is not one of {', '.join(x.name for x in found)}")
        submission = await run_in_threadpool(self._submission, name, folder)
        if submission is None:
            return self.refusal(request, 409, "the candidate's submission is not on this machine (--submissions DIR)")
        try:
            job = self.jobs.start(folder, submission, wanted[0])
        except Busy as exc:
            return self.refusal(request, 409, str(exc))
        if not self._wants_json(request):
            return RedirectResponse(f"/c/{key}", 303)
        return self.json({"ok": True, "job": job.id})

    def live_job(self, request: Request) -> Response:
        key = request.path_params["key"]
        try:
            name, folder = self._folder(key)
        except _Refused as refused:
            return self.refusal(request, refused.status, str(refused))
        job = self.jobs.get(request.path_params["job"])
        if job is None or job.folder != folder:
            return self.refusal(request, 404, "no such run of a live exercise for this candidate")
        since = request.query_params.get("since", "0")
        if not since.isdigit():
            return self.refusal(request, 400, f"since: {since[:20]!r} is not a line number")
        lines = job.lines[int(since) :]
        return self.json(
            {
                "state": job.state,
                "exercise": job.exercise,
                "lines": lines,
                "next": int(since) + len(lines),
                "elapsed": round(time.time() - job.started),
                "verdict": _verdict(job),
                "statuses": job.statuses,
                "report": (
                    "/files/" + self.review.relative(name, LIVE, job.exercise, f"run-{job.run}", FILE_NAMES["html"])
                    if job.run
                    else None
                ),
            }
        )

    # ---- files and export -----------------------------------------------------------------------------

    def files(self, request: Request) -> Response:
        blinding = self.review.blinding
        relative = blinding.file_path(request.path_params["path"])
        try:
            path = served_path(self.review.root, relative)
            if blinding.active and not path.name.lower().endswith(BLIND_TEXT):
                raise NotServed(403, "only text files are shown in a blind review")
            data = read_served(path)
        except NotServed as refused:
            return self.refusal(request, refused.status, f"{request.path_params['path'][:200]}: {refused}")
        kind, encoding = mimetypes.guess_type(path.name)
        kind = _TYPES.get(path.suffix.lower(), kind if encoding is None else None) or "application/octet-stream"
        if kind.startswith("text/") or kind in ("application/json", "image/svg+xml", "application/xml"):
            if blinding.active:
                try:
                    data = self._text(data.decode("utf-8", errors="replace")).encode()
                except NameLeak:
                    return self.refusal(request, 403, "this file would name a candidate in a blind review")
            kind += "; charset=utf-8"
        return Response(data, headers=HEADERS, media_type=kind)

    async def export(self, request: Request) -> Response:
        try:
            path = await run_in_threadpool(export_grades, self.review)
            text = path.read_text(encoding="utf-8")
        except ReviewError as exc:
            return self.refusal(request, 400, str(exc))
        try:
            body = self._text(text)
        except NameLeak:
            return self.refusal(request, 403, "grades.csv would name a candidate in a blind review")
        headers = {**HEADERS, "Content-Disposition": 'attachment; filename="grades.csv"'}
        return Response(body, headers=headers, media_type="text/csv; charset=utf-8")

    def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name == "review.js":
            return Response(SCRIPT, headers=HEADERS, media_type="text/javascript; charset=utf-8")
        if name == "review.css":
            return Response(CSS, headers=HEADERS, media_type="text/css; charset=utf-8")
        return self.refusal(request, 404, "no such file")

    def routes(self) -> list[Route]:
        return [
            Route("/", self.round, methods=["GET"]),
            Route("/items", self.items, methods=["GET"]),
            Route("/c/{key}", self.candidate, methods=["GET"]),
            Route("/c/{key}/sheet", self.save, methods=["POST"]),
            Route("/c/{key}/reveal", self.reveal, methods=["POST"]),
            Route("/c/{key}/live", self.live_start, methods=["POST"]),
            Route("/c/{key}/live/{job}", self.live_job, methods=["GET"]),
            Route("/files/{path:path}", self.files, methods=["GET"]),
            Route("/export", self.export, methods=["POST"]),
            Route("/static/{name}", self.static, methods=["GET"]),
        ]


def _verdict(job: LiveJob) -> str:
    if job.state == "running":
        return ""
    if job.state == "error":
        return f"Not run: {job.message}"
    failed = [c for c, s in job.statuses.items() if s != "passed"]
    return f"{job.state.upper()} {job.score or 0:g}/{job.max_score or 0:g}: {job.exercise}, run {job.run}" + (
        f" (not passed: {', '.join(failed)})" if failed else ""
    )


def build_app(
    review: ReviewRound, *, reviewer: str, token: str | None = None, hosts: frozenset[str] | None = None
) -> Gate:
    """The ASGI app for `review`: the routes behind the Host, Origin and token checks (access.py)."""
    state = ReviewApp(review, reviewer)

    async def refused(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "the app failed on this request"
        return state.refusal(request, status, str(detail))

    app = Starlette(routes=state.routes(), exception_handlers={HTTPException: refused, Exception: refused})
    return Gate(app, token=token, hosts=hosts)
