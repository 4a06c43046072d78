"""Run records: the raw facts each run left (what was run, what it printed and wrote, every ledger), one module
per section, and the book that keeps them as files beside a report. Records are facts only: what follows from
them is judged in criteria/."""
