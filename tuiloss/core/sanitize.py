"""Text read from logs, made safe to print or put on screen.

Run labels, metric names and config values come from files anyone can write.
They are data: before they reach a terminal, escape sequences and control
characters are removed and bidi overrides dropped, so a log cannot move the
cursor, set the window title, ring the bell or reorder what is shown.
"""

from __future__ import annotations

import re

# ESC-introduced sequences: CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST),
# DCS/SOS/PM/APC (ESC P/X/^/_ ... ST), and two-byte escapes (ESC + one char).
_ESCAPES = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]                # CSI
    | \x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?   # OSC, ended by BEL or ST (or the end)
    | \x1b[PX^_][^\x1b]*(?:\x1b\\)?        # DCS, SOS, PM, APC
    | \x9b[0-?]*[ -/]*[@-~]                # 8-bit CSI
    | \x9d[^\x07\x9c]*(?:\x07|\x9c)?       # 8-bit OSC
    | \x1b.?                               # any other escape (or a lone ESC)
    """,
    re.VERBOSE | re.DOTALL,
)
# C0 and C1 controls, DEL, bidi embeddings/overrides/isolates, and other
# invisible formatting characters that can disguise text.
_CONTROLS = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb]"
)
# Lone surrogates: the bytes of a name that is not UTF-8 (os.fsdecode keeps them as U+DC80..U+DCFF).
# Printed, they become those raw bytes again (0x9b is an 8-bit CSI); drawn, they take six cells.
_SURROGATES = re.compile("[\ud800-\udfff]")
# What markdown (and the HTML inside it) would read as markup, not text.
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()!~])")
_SPACES = re.compile(r"\s+")
ELLIPSIS = "…"
#: The ellipsis where only ASCII may be drawn (``--ascii``).
ASCII_ELLIPSIS = "..."


def strip_controls(text: str) -> str:
    """Remove escape sequences and control characters; whitespace runs become one space.

    Bytes that are not UTF-8 (lone surrogates) become U+FFFD, one cell wide, never raw bytes.
    """
    text = _ESCAPES.sub("", _SURROGATES.sub("\ufffd", text))
    text = _SPACES.sub(" ", text.replace("\t", " ").replace("\n", " ").replace("\r", " "))
    return _CONTROLS.sub("", text).strip()


def truncate_middle(text: str, max_len: int, ellipsis: str = ELLIPSIS) -> str:
    """Shorten ``text`` to ``max_len`` characters, keeping its start and end.

    Run labels differ at both ends (``Pre-Norm | ... | Run 1``), so the middle goes.
    """
    if max_len <= 0:
        return ""
    if len(text) <= max_len:
        return text
    if max_len <= len(ellipsis):
        return ellipsis[:max_len]
    kept = max_len - len(ellipsis)
    head = (kept + 1) // 2
    tail = kept - head
    return text[:head] + ellipsis + (text[-tail:] if tail else "")


def safe_label(value: object, max_len: int | None = 80, *, ascii: bool = False) -> str:
    """Text from a log, ready to render as plain text (``rich.text.Text``).

    Args:
        value: a label, metric name or config value (anything; ``str()`` is taken).
        max_len: longest result in characters, ``None`` for no limit.
        ascii: shorten with ``...`` instead of ``…``.
    """
    text = strip_controls(str(value))
    if max_len is None:
        return text
    return truncate_middle(text, max_len, ASCII_ELLIPSIS if ascii else ELLIPSIS)


#: Plain-ASCII stand-ins for the characters tuiloss' own sentences use (``--ascii``).
_ASCII_FOR = str.maketrans({"±": "+-", "×": "x", "…": "...", "→": "->", "←": "<-", "–": "-", "—": "-",
                            "≥": ">=", "≤": "<=", "≈": "~", "µ": "u", "·": ".", "•": "-", "✓": "+", "■": "#",
                            "▲": "^", "▼": "v", "↗": "/", "↘": "\\", "─": "-", "↑": "^", "↓": "v", "↺": "@"})


def to_ascii(text: str) -> str:
    """``text`` in plain ASCII: tuiloss' own symbols spelt out, any other character ``?``."""
    text = text.translate(_ASCII_FOR)
    return text if text.isascii() else "".join(ch if ch.isascii() else "?" for ch in text)


def escape_markdown(text: str, *, table: bool = False) -> str:
    """Text from a log, shown literally in markdown: markup characters escaped, HTML tags inert.

    A run named ``![img](https://...)``, ``[link](...)`` or ``<img src=...>`` is shown as
    those characters, never as an image, a link or HTML. In a table cell (``table``) a pipe,
    which would end the cell, is escaped too.
    """
    text = _MARKDOWN.sub(r"\\\1", strip_controls(text))
    if table:
        text = text.replace("|", "\\|")
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
