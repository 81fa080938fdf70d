"""What the benchmarks ran on, for the head of RESULTS.md."""

from __future__ import annotations

import os
import platform
import sys
from importlib.metadata import PackageNotFoundError, version

PACKAGES = ("tuiloss", "numpy", "pandas", "orjson", "textual", "tensorboard", "protobuf", "crc32c")


def describe() -> dict[str, str]:
    """CPU model, cores, memory, OS, Python and the versions of what is measured."""
    info = {
        "cpu": _cpu_model(),
        "cores": str(os.cpu_count() or "?"),
        "memory": _memory(),
        "os": f"{platform.system()} {platform.release()}",
        "python": f"{platform.python_implementation()} {sys.version.split()[0]}",
        "load average": " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?",
    }
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            continue
    info["packages"] = ", ".join(versions)
    return info


def load_average() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory() -> str:
    try:
        with open("/proc/meminfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
    except OSError:
        pass
    return "?"
