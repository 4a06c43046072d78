"""Prompts of about P tokens, different for every request.

Each word is short, lower-case and plain, so it is one token with its leading space for the fake
server's tokenizer and about one token for real BPE tokenizers. The first words depend on the
request's index, so no two prompts share a first KV block and the server's prefix cache cannot make
a run look faster than its traffic would be. The chat template the server wraps around the
message adds its own few tokens; P counts the message text only.
"""

from __future__ import annotations

import random

__all__ = ["make_prompt", "WORDS"]

WORDS = (
    "able about above across after again against air all almost alone along also always among "
    "animal answer any area around ask away back ball base bear beat become bed before begin behind "
    "best better between big bird black blue boat body book both box boy bring brown build busy "
    "call came car care carry case cat cause center change check child city class clear close cold "
    "color come common cook copy corn cost could count course cover cross cry cut dark day deep "
    "desk differ direct do dog door down draw dream drive drop dry during each early earth east eat "
    "edge egg end enough even ever every eye face fact fall farm fast father feel few field fill "
    "final find fine fire first fish five floor flow fly follow food foot force form free friend "
    "front full game garden gave give glass go gold good grass great green ground group grow half "
    "hand happy hard head hear heat help high hill hold home hope horse hot hour house idea inch"
).split()


def make_prompt(index: int, tokens: int, seed: int = 0) -> str:
    """`tokens` words chosen by (seed, index): the same arguments always give the same text."""
    rng = random.Random(f"{seed}:{index}")
    return " ".join(WORDS[rng.randrange(len(WORDS))] for _ in range(tokens))
