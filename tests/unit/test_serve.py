"""``tuiloss serve``'s headless parts: which hosts are this machine only, the URL, the watch
command each page runs (quoted for the shell textual-serve starts it with), the usage errors."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from tuiloss.cli import build_parser, main, watch_argv
from tuiloss.serve import INSTALL, exposure_warning, is_loopback, refusal, url, watch_command


@pytest.mark.parametrize("host", ["127.0.0.1", "127.4.5.6", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_hosts(host):
    assert is_loopback(host)
    assert exposure_warning(host, 8000) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "10.0.0.1", "node01", "example.org"])
def test_other_hosts_are_warned_about(host):
    assert not is_loopback(host)
    warning = exposure_warning(host, 8123)
    assert "no authentication" in warning and "ssh -L 8123:127.0.0.1:8123" in warning and host in warning


def test_url():
    assert url("127.0.0.1", 8000) == "http://127.0.0.1:8000"
    assert url("::1", 9000) == "http://[::1]:9000"
    assert url("[::1]", 9000) == "http://[::1]:9000"


def _serve_args(argv):
    parser = build_parser()
    args, extra = parser.parse_known_args(["serve", *argv])
    assert not extra
    return parser, args


def test_the_watch_arguments_are_serves_own_but_host_and_port():
    argv = ["--metric", "val_loss", "--format", "text", "--pattern", "-x (?P<step>\\d+) (?P<loss>\\S+)",
            "--step", "iter", "-v", "--poll", "2.5", "--ascii", "--bell", "--smooth", "0.9", "--linear-x",
            "--linear-y", "--export-dir", "out dir", "--host", "0.0.0.0", "--port", "9001", "logs a", "-b c"]
    parser, args = _serve_args(argv[:-1] + ["--", argv[-1]])
    words = watch_argv(args, parser)
    assert "--host" not in " ".join(words) and "9001" not in words
    watched, extra = parser.parse_known_args(["watch", *words])
    assert not extra
    served = {k: v for k, v in vars(args).items() if k not in ("command", "host", "port")}
    assert {k: v for k, v in vars(watched).items() if k != "command"} == served
    assert watched.paths == ["logs a", "-b c"] and watched.pattern.startswith("-x")


@pytest.mark.parametrize("keys", ["norm,gradient_clip", "none"])
def test_group_keys_pass_to_the_served_watch(keys):
    parser, args = _serve_args(["--group-by", keys, "sample_logs"])
    watched, extra = parser.parse_known_args(["watch", *watch_argv(args, parser)])
    assert not extra and watched.group_by == args.group_by


def test_defaults_add_no_options():
    parser, args = _serve_args(["sample_logs"])
    assert watch_argv(args, parser) == ["--", "sample_logs"]


NAMES = ["plain", "with space", "it's", 'say "hi"', "$HOME", "a;b", "a&b|c", "`id`", "*", "-dash", "tab\there",
         "new\nline", "ünïcode"]


def test_the_command_reaches_watch_word_for_word_through_the_shell(tmp_path):
    """textual-serve runs the command with ``sh -c``: each word arrives as it was, never expanded."""
    echo = tmp_path / "echo-argv"
    echo.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    echo.chmod(0o755)
    words = ["--smooth=0.6", "--", *NAMES]
    command = watch_command(words, python=str(echo))
    out = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, check=True, timeout=30,
                         env={**os.environ, "HOME": "/nowhere"})
    assert json.loads(out.stdout) == ["-m", "tuiloss", "watch", *words]
    assert shlex.split(command)[4:] == words


def test_missing_path_is_a_usage_error(capsys, tmp_path):
    assert main(["serve", str(tmp_path / "nope")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


@pytest.mark.parametrize("port", ["0", "65536", "http"])
def test_bad_port_is_a_usage_error(capsys, port):
    with pytest.raises(SystemExit) as exit:
        main(["serve", "sample_logs", "--port", port])
    assert exit.value.code == 2
    assert "--port" in capsys.readouterr().err


def test_unknown_metric_is_said_before_serving(capsys, sample_logs):
    assert main(["serve", str(sample_logs), "--metric", "nope"]) == 2
    assert "no such metric" in capsys.readouterr().err


def test_without_textual_serve_one_line_names_the_extra(monkeypatch, capsys, sample_logs):
    monkeypatch.setitem(sys.modules, "textual_serve", None)
    monkeypatch.setitem(sys.modules, "textual_serve.server", None)
    assert main(["serve", str(sample_logs)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and INSTALL in err and "Traceback" not in err


@pytest.mark.parametrize("host, origin, loopback_only, refused", [
    ("127.0.0.1:8000", None, True, False),
    ("localhost:9000", "http://localhost:9000", True, False),  # through ssh -L from another port
    ("[::1]:8000", "http://[::1]:8000", True, False),
    ("evil.example:8000", None, True, True),  # DNS rebinding: another site's name for 127.0.0.1
    ("127.0.0.1:8000", "http://evil.example", True, True),  # another site's page opening the websocket
    ("127.0.0.1:8000", "null", True, True),
    ("node01:8000", None, False, False),  # bound to every interface: reached by the machine's name
    ("node01:8000", "http://node01:8000", False, False),
    ("node01:8000", "http://evil.example", False, True),
    ("[::1:8000", None, True, True),  # malformed
    ("127.0.0.1:8000", "http://[::1", True, True),
])
def test_requests_from_other_sites_are_refused(host, origin, loopback_only, refused):
    assert (refusal(host, origin, loopback_only=loopback_only) is not None) == refused
