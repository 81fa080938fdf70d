"""``tuiloss serve`` as a process, without a browser: where it listens, what it says, how it stops."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from serve_process import Served, free_port

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.e2e]


@pytest.fixture(autouse=True)
def needs_textual_serve():
    pytest.importorskip("textual_serve", reason="textual-serve is not installed (pip install 'tuiloss[serve]')")


def get(port: int, path: str, headers: dict[str, str], address: str = "127.0.0.1") -> bytes:
    """The raw reply to one HTTP/1.0 request to the server."""
    lines = [f"GET {path} HTTP/1.0", *(f"{k}: {v}" for k, v in headers.items()), "", ""]
    with socket.create_connection((address, port), timeout=5) as client:
        client.sendall("\r\n".join(lines).encode())
        reply = b""
        while chunk := client.recv(65536):
            reply += chunk
    return reply


def status(reply: bytes) -> bytes:
    return reply.split(b"\r\n", 1)[0].split(b" ", 1)[1]


def test_loopback_by_default_and_ctrl_c_stops_it_cleanly():
    port = free_port()
    served = Served([str(REPO / "sample_logs"), "--port", str(port)])
    try:
        assert served.wait_for(f"tuiloss serve: open http://127.0.0.1:{port} (Ctrl+C stops)", 30), served.output
        assert "authentication" not in served.output
        page = get(port, "/", {"Host": f"localhost:{port + 1}"})  # as forwarded by ssh -L from another port
        assert status(page) == b"200 OK" and b"textual-terminal" in page
        assert f'data-session-websocket-url="ws://localhost:{port + 1}/ws"'.encode() in page
        # another site's name for 127.0.0.1 (DNS rebinding), another site's page opening the websocket
        assert status(get(port, "/", {"Host": f"evil.example:{port}"})).startswith(b"403")
        upgrade = {"Host": f"127.0.0.1:{port}", "Origin": "http://evil.example", "Connection": "Upgrade",
                   "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
        assert status(get(port, "/ws", upgrade)).startswith(b"403")
        assert served.interrupt() == 0
        assert served.output.strip().splitlines() == [
            f"tuiloss serve: open http://127.0.0.1:{port} (Ctrl+C stops)", "tuiloss serve: stopped"]
    finally:
        served.close()


def test_another_host_is_warned_about():
    port = free_port("0.0.0.0")
    served = Served([str(REPO / "sample_logs"), "--host", "0.0.0.0", "--port", str(port)])
    try:
        assert served.wait_for(f"open http://0.0.0.0:{port}", 30), served.output
        assert "no authentication" in served.output and f"ssh -L {port}:127.0.0.1:{port}" in served.output
        assert served.interrupt() == 0
    finally:
        served.close()


def test_a_port_in_use_is_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        served = Served([str(REPO / "sample_logs"), "--port", str(port)])
        try:
            assert served.process.wait(timeout=30) == 2
            served.read(1)
            lines = served.output.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"tuiloss: cannot listen on http://127.0.0.1:{port}: ")
        finally:
            served.close()


def test_ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
            port = probe.getsockname()[1]
    except OSError:
        pytest.skip("this machine has no IPv6 loopback")
    served = Served([str(REPO / "sample_logs"), "--host", "::1", "--port", str(port)])
    try:
        assert served.wait_for(f"tuiloss serve: open http://[::1]:{port} (Ctrl+C stops)", 30), served.output
        assert "authentication" not in served.output
        reply = get(port, "/", {"Host": f"[::1]:{port}"}, address="::1")
        assert status(reply) == b"200 OK" and f"ws://[::1]:{port}/ws".encode() in reply
        assert served.interrupt() == 0
    finally:
        served.close()
