"""The public surface the grader and candidates build on, pinned; and the package's lint and type gate."""

from __future__ import annotations

import httpx
from kit_paths import ROOT

import fake_server
from fake_server import serve

RECORD_FIELDS = {
    "id",
    "number",
    "model",
    "endpoint",
    "stream",
    "arrival",
    "max_tokens",
    "status",
    "fault",
    "headers_sent",
    "queued",
    "scheduled",
    "prefill_start",
    "prefill_end",
    "finished",
    "prompt_tokens",
    "message_tokens",
    "cached_tokens",
    "completion_tokens",
    "reasoning_tokens",
    "content_tokens",
    "preemptions",
    "generation",
    "finish_reason",
    "error",
    "step_lag_max",
    "cost_usd",
    "chunks",
    "queue_wait",
    "first_content",
}


def test_public_names_are_pinned() -> None:
    assert sorted(fake_server.__all__) == sorted(
        [
            "ModelSettings",
            "RunningServer",
            "ServerSettings",
            "SettingsError",
            "build_settings",
            "fill_settings",
            "list_scenarios",
            "serve",
            "serve_fleet",
            "serve_subprocess",
            "tokenizer",
        ]
    )
    for name in (
        "openai_base_url",
        "port",
        "ledger",
        "configure",
        "set_faults",
        "set_healthy",
        "reset",
        "metrics",
        "log_text",
    ):
        assert hasattr(fake_server.RunningServer, name), name


def test_ledger_record_fields_are_pinned() -> None:
    with serve(token_rate=500) as server:
        httpx.post(
            server.openai_base_url + "/chat/completions",
            timeout=10,
            json={"model": "fake-model", "messages": [{"role": "user", "content": "x"}], "max_tokens": 2},
        )
        (record,) = server.ledger()
    assert set(record) == RECORD_FIELDS


def _package_imports() -> dict[str, set[str]]:
    """Module (dotted, below fake_server) -> the fake_server modules it imports, lazily or not, read from the source."""
    import ast

    out = {}
    package = ROOT / "fake_server"
    for path in package.rglob("*.py"):
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("fake_server"):
                below = (node.module or "").removeprefix("fake_server").lstrip(".")
                if not below or (package / below.replace(".", "/")).is_dir():  # from a package: its modules
                    deps |= {".".join(filter(None, (below, alias.name))) for alias in node.names}
                else:
                    deps.add(below)
            assert not (isinstance(node, ast.ImportFrom) and node.level > 0), f"{path}: a relative import"
        out[".".join(path.relative_to(package).with_suffix("").parts)] = deps
    return out


def test_the_engine_knows_no_http_and_neither_knows_how_it_is_hosted() -> None:
    """The three rooms depend one way: hosting -> http -> engine, never back."""
    graph = _package_imports()
    assert {"engine.step_loop", "engine.scheduler", "http.app", "hosting.handle", "hosting.launch", "settings"} <= set(
        graph
    )
    for module, deps in graph.items():
        if module.startswith("engine."):
            assert not {d for d in deps if d.startswith(("http.", "hosting."))}, module
        if module.startswith("http."):
            assert not {d for d in deps if d.startswith("hosting.")}, module


def test_no_import_cycles_in_the_package() -> None:
    graph = {module: deps - {"__init__"} for module, deps in _package_imports().items() if module != "__init__"}
    assert {
        "engine.step_loop",
        "settings",
        "engine.faults",
        "hosting.launch",
        "hosting.fleet",
        "engine.metrics",
        "hosting.server",
        "hosting.host",
        "hosting.handle",
        "http.control",
    } <= set(graph)
    cycles: list[tuple[str, ...]] = []
    for start in graph:
        stack: list[tuple[str, tuple[str, ...]]] = [(start, (start,))]
        while stack:
            module, path = stack.pop()
            for dep in graph.get(module, ()):
                if dep == start:
                    cycles.append(path + (dep,))
                elif dep not in path:
                    stack.append((dep, (*path, dep)))
    assert cycles == []
