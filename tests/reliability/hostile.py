"""A tree of logs whose names, metric names and config values attack the terminal.

Every attack carries a marker, so a test can tell whether it reached the
terminal: a title change to ``PWNED-TITLE``, a clipboard write of ``PWNED-CLIP``
(base64 ``UFdORUQtQ0xJUA==``), a hyperlink to ``evil.example``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

MARKUP = "[bold red]boom[/]"
LINK_MARKUP = "[link=https://evil.example/m]click[/link]"
CSI = "\x1b[2J\x1b[31mred\x1b[0m"
OSC_TITLE = "\x1b]0;PWNED-TITLE\x07"
OSC_TITLE_ST = "\x1b]2;PWNED-TITLE\x1b\\"
OSC_LINK = "\x1b]8;;https://evil.example/x\x1b\\here\x1b]8;;\x1b\\"
OSC_CLIP = "\x1b]52;c;UFdORUQtQ0xJUA==\x07"
C0 = "bell\x07back\x08cr\rvt\x0bff\x0cnul"
C1 = "\x9b31mcsi8\x9d0;PWNED-TITLE\x9c"
BIDI = "\u202eevil\u202c \u2066iso\u2069 zero\u200bwidth"
LONG = "L" * 10_000

#: Byte sequences that must never be written to a terminal.
FORBIDDEN = (
    b"\x1b]0;PWNED", b"\x1b]2;PWNED", b"\x1b]52;", b"\x1b]8;;https://evil", b"UFdORUQtQ0xJUA",
    b"\x1b[2J\x1b[31mred", "\u202e".encode(), "\u2066".encode(), "\x9b".encode(), "\x9d".encode(),
)
#: Characters a sanitised line may not hold (newlines separate lines; tabs are allowed).
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def nanogpt(n: int = 30) -> str:
    return "".join(f"iter {i * 10}: loss {2.0 / (i + 1):.4f}, time 12.00ms\n" for i in range(n))


def build(root: Path) -> dict[str, str]:
    """Write the hostile tree under ``root``; return {what: the raw hostile value} for checks."""
    root.mkdir(parents=True, exist_ok=True)

    def folder(name: str) -> Path:
        path = root / name
        path.mkdir()
        return path

    a = folder("a [bold red]boom [reverse]")  # markup: a name cannot hold "/", so no closing tag
    (a / "train.log").write_text(nanogpt())
    (a / "config.json").write_text(json.dumps({"lr": LINK_MARKUP, "note": OSC_LINK, "tag": MARKUP, "seed": 1}))

    b = folder(f"b {OSC_TITLE}")
    lines = []
    for i in range(20):
        lines.append(json.dumps({"step": i, "loss": 1.0 / (i + 1), f"{OSC_CLIP}acc": 0.5, "[red]m[/red]": 0.1,
                                 LONG: 2.0, f"{C1}x": 1.0}))
    (b / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    (b / "config.json").write_text(json.dumps({"seed": 2, "opt": CSI}))

    c = folder(f"c {CSI}")
    rows = "".join(f"{i},{1.0 / (i + 1)},{0.5},{0.25}\n" for i in range(20))
    (c / "metrics.csv").write_text(f"step,loss,{CSI}val,{BIDI}rev\n" + rows)

    d = folder(f"d {BIDI}")
    (d / "train.log").write_text(nanogpt())
    (d / "config.yaml").write_text(json.dumps({"run_name": LONG + OSC_TITLE_ST, "seed": 3}))

    e = folder(f"e {C1}")
    (e / "train.log").write_text(nanogpt())
    (e / "config.json").write_text(json.dumps({"seed": 4, "comment": C0}))

    f = folder(f"f {OSC_CLIP} {C0.replace(chr(0), '')}")
    (f / "train.log").write_text(nanogpt())
    (f / f"{OSC_TITLE}.png").write_bytes(b"\x89PNG\r\n\x1a\n")  # passed over; listed with --verbose
    os.symlink(".", f / f"loop {OSC_TITLE}")  # a symlink loop: its notice names the path

    g = folder("new\nline")
    (g / "train.log").write_text(nanogpt())

    undecodable = os.path.join(os.fsencode(root), b"bytes \xff\xfe \x1b]0;PWNED-TITLE\x07")  # not UTF-8
    os.mkdir(undecodable)
    with open(os.path.join(undecodable, b"train.log"), "w") as handle:
        handle.write(nanogpt())

    run = root / "mlruns" / "0" / "abc123"
    (run / "metrics").mkdir(parents=True)
    (run / "params").mkdir()
    (run / "tags").mkdir()
    (run / "meta.yaml").write_text("run_id: abc123\nstatus: 1\n")
    (run / "metrics" / "loss").write_text("".join(f"17000000000{i:02d} {1.0 / (i + 1)} {i + 1}\n" for i in range(20)))
    (run / "params" / "lr").write_text(CSI)
    (run / "tags" / "mlflow.runName").write_text(MARKUP + OSC_TITLE)
    return {"long": LONG, "csi": CSI, "link": LINK_MARKUP, "clip_metric": f"{OSC_CLIP}acc"}
