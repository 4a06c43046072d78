"""The HTML report's inline stylesheet: one page that reads on screen, offline, and on paper."""

CSS = """
:root { --ink: #1d1d1f; --muted: #5f6368; --line: #d7dbe0; --panel: #f6f8fa;
  --passed: #1b7f3b; --passed-bg: #e3f4e8; --failed: #b3261e; --failed-bg: #fbe4e2;
  --inconclusive: #8a5a00; --inconclusive-bg: #fff1c7; --skipped: #4a5058; --skipped-bg: #e9ebee; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff; font: 15px/1.45 system-ui, -apple-system,
  "Segoe UI", Roboto, Helvetica, Arial, sans-serif; }
main, header, .scores, .checklist, footer { max-width: 1060px; margin: 0 auto; padding: 0 20px; }
h1 { font-size: 24px; margin: 18px 0 6px; }
h2 { font-size: 19px; margin: 0 0 8px; display: flex; flex-wrap: wrap; align-items: center; gap: 8px; }
h3 { font-size: 14px; margin: 14px 0 4px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
a { color: #1f5fa8; }
code, pre, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "Liberation Mono", monospace; font-size: 13px; }
pre { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px;
  margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.banner { padding: 12px 20px; font-weight: 700; font-size: 17px; }
.unsandboxed { background: #b3261e; color: #fff; border-bottom: 4px solid #7a1712; }
.sandboxed { background: var(--passed-bg); color: var(--passed); font-weight: 600; font-size: 14px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 8px 0 12px; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.total { font-size: 30px; font-weight: 700; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 12px; font-size: 14px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--panel); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.deliverable td { background: #eef2f6; font-weight: 600; }
.badge { display: inline-block; border-radius: 999px; padding: 1px 10px; font-size: 12px; font-weight: 700;
  letter-spacing: .05em; border: 1px solid currentColor; white-space: nowrap; }
.badge.passed { color: var(--passed); background: var(--passed-bg); }
.badge.failed { color: var(--failed); background: var(--failed-bg); }
.badge.inconclusive { color: var(--inconclusive); background: var(--inconclusive-bg); border-style: dashed; }
.badge.skipped { color: var(--skipped); background: var(--skipped-bg); border-style: dotted; }
.tag { display: inline-block; border-radius: 4px; padding: 0 6px; font-size: 12px; background: #3c4043; color: #fff; }
.criterion { border: 1px solid var(--line); border-left: 6px solid var(--skipped); border-radius: 6px;
  padding: 12px 16px; margin: 16px 0; page-break-inside: avoid; }
.criterion.passed { border-left-color: var(--passed); }
.criterion.failed { border-left-color: var(--failed); }
.criterion.inconclusive { border-left-color: #e0a100; }
.criterion .points { color: var(--muted); margin: 0 0 8px; }
.criterion .hidden-note { font-size: 13px; font-weight: 400; color: var(--muted); }
.empty { color: var(--muted); font-style: italic; }
.table-wrap { max-height: 420px; overflow: auto; border: 1px solid var(--line); border-radius: 6px; }
.table-wrap table { margin: 0; }
figure { margin: 10px 0; flex: 1 1 440px; max-width: 560px; }
figure svg { width: 100%; height: auto; display: block; border: 1px solid var(--line); border-radius: 6px; }
figcaption { color: var(--muted); font-size: 13px; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; }
details { margin-top: 10px; }
summary { cursor: pointer; color: var(--muted); }
.checklist input[type=number] { width: 6em; }
.checklist input[type=text] { width: 100%; }
.checklist input { font: inherit; padding: 2px 4px; border: 1px solid #9aa0a6; border-radius: 4px; }
footer { color: var(--muted); font-size: 13px; margin: 24px auto 40px; }
@media print {
  .table-wrap { max-height: none; overflow: visible; }
  a { color: inherit; text-decoration: none; }
}
"""
