from hypothesis import given
from hypothesis import strategies as st
from rich.text import Text

from tuiloss.ui.markup import safe_label, safe_markup, strip_controls, truncate_middle


def test_plain_labels_pass_through():
    assert safe_label("Pre-Norm | Gradient Clip=10 | Run 1") == "Pre-Norm | Gradient Clip=10 | Run 1"


def test_csi_osc_and_bell_are_removed():
    assert safe_label("\x1b[31mred\x1b[0m run") == "red run"
    assert safe_label("\x1b]0;pwned title\x07run") == "run"
    assert safe_label("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "link"
    assert safe_label("ding\x07dong") == "dingdong"
    assert safe_label("\x1b[2J\x1b[Hclear") == "clear"


def test_eight_bit_controls_and_lone_escape_are_removed():
    assert safe_label("a\x9b31mb") == "ab"
    assert safe_label("x\x1b") == "x"
    assert safe_label("a\x85b") == "a b"  # NEL is a line break
    assert safe_label("a\x9d0;title\x9cb") == "ab"  # 8-bit OSC ... ST
    assert safe_label("a\x90b") == "ab"


def test_bidi_overrides_and_zero_width_are_removed():
    assert safe_label("run\u202eevil\u202c") == "runevil"
    assert safe_label("\u2066a\u2069\u200bb") == "ab"


def test_newlines_and_tabs_become_single_spaces():
    assert safe_label("two\nlines\r\n\tand tab") == "two lines and tab"


def test_markup_is_escaped_for_markup_strings():
    assert safe_markup("[bold]x[/bold]") == "\\[bold]x\\[/bold]"
    # as a Text, brackets are just text
    assert Text(safe_label("[red]x")).plain == "[red]x"


def test_long_labels_keep_both_ends():
    label = "Pre-Norm | Attn. Relax | Gradient Clip=1 | Seed 1234 | Run 7"
    short = truncate_middle(label, 30)
    assert len(short) == 30
    assert short.startswith("Pre-Norm") and short.endswith("Run 7")
    assert "…" in short
    assert safe_label(label, 30) == short
    assert truncate_middle("abc", 1) == "…"
    assert truncate_middle("abc", 0) == ""


@given(st.text())
def test_no_control_character_survives(text):
    out = safe_label(text, None)
    assert "\x1b" not in out and "\x07" not in out
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in out)
    assert not any(0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069 for c in out)


@given(st.text(), st.integers(min_value=0, max_value=50))
def test_length_is_bounded(text, n):
    assert len(safe_label(text, n)) <= n


def test_strip_controls_of_plain_text_is_identity():
    assert strip_controls("loss/train") == "loss/train"
