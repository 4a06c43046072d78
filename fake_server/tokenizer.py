"""The fake server's tokenizer: deterministic, documented, and the only way anything is counted.

What counts as a token (the same rule in `/tokenize`, in `usage` and in the context-length check):

* a run of up to 12 word characters (letters, digits, `_`), together with the whitespace before it;
  a longer word is split into pieces of 12, the later pieces without whitespace;
* a single character that is neither a word character nor whitespace (punctuation, symbols),
  together with the whitespace before it;
* whitespace at the very end of the text;
* each chat-template marker (`<|im_start|>`, `<|im_end|>`) is one token.

A chat request is rendered with a ChatML-style template before it is tokenized::

    <|im_start|>{role}\\n{content}<|im_end|>\\n   (once per message)
    <|im_start|>assistant\\n                       (the generation prompt)

so a one-message chat "Hello" is 8 tokens: `<|im_start|>`, `user`, `\\nHello`, `<|im_end|>`,
`\\n`, `<|im_start|>`, `assistant`, `\\n`. Some models' templates add a default system message when a
chat has none (Qwen2.5's does); a model's `default_system_prompt` setting does the same here, so only the
server's own `/tokenize` knows how many tokens a chat costs on it. Token ids are stable across runs
(CRC-32 of the piece), which is all the prefix cache needs.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Sequence

__all__ = [
    "IM_END",
    "IM_START",
    "count",
    "message_text",
    "render_chat",
    "token_ids",
    "tokenize",
]

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
_SPECIAL_IDS = {IM_START: 1, IM_END: 2}
_VOCAB = 100_000
_PIECE = re.compile(r"\s*\w{1,12}|\s*[^\w\s]|\s+")
_SPECIAL = re.compile(r"(<\|im_start\|>|<\|im_end\|>)")


def tokenize(text: str) -> list[str]:
    """Split `text` into token strings; `"".join(tokenize(t)) == t` always holds."""
    pieces: list[str] = []
    for part in _SPECIAL.split(text):
        if not part:
            continue
        if part in _SPECIAL_IDS:
            pieces.append(part)
        else:
            pieces.extend(_PIECE.findall(part))
    return pieces


def count(text: str) -> int:
    return len(tokenize(text))


def _piece_id(piece: str) -> int:
    special = _SPECIAL_IDS.get(piece)
    if special is not None:
        return special
    return 16 + zlib.crc32(piece.encode("utf-8")) % _VOCAB


def token_ids(pieces: Iterable[str]) -> list[int]:
    return [_piece_id(p) for p in pieces]


def message_text(content: object) -> str:
    """The text of a message's `content`: a string, a list of `{"type": "text"}` parts, or None."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))


def render_chat(messages: Sequence[dict[str, object]], default_system_prompt: str = "") -> str:
    """Render chat messages with the ChatML-style template and the assistant generation prompt; a chat that
    does not open with a system message gets `default_system_prompt` as one, when it is not empty."""
    out = []
    if default_system_prompt and not (messages and messages[0].get("role") == "system"):
        out.append(f"{IM_START}system\n{default_system_prompt}{IM_END}\n")
    for message in messages:
        out.append(f"{IM_START}{message['role']}\n{message_text(message.get('content'))}{IM_END}\n")
    out.append(f"{IM_START}assistant\n")
    return "".join(out)
