"""The analysis package's names load their modules on first use, and every one of them exists."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tuiloss.core.analysis as analysis


@pytest.mark.parametrize("name", analysis.__all__)
def test_every_public_name_resolves_to_its_module(name):
    value = getattr(analysis, name)
    assert value.__module__.startswith("tuiloss.core.analysis.")
    assert name in dir(analysis)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        analysis.nothing_here  # noqa: B018


def test_formatting_alone_loads_no_detector():
    code = ("import sys, tuiloss.core.analysis.display\n"
            "print(sorted(m for m in sys.modules if m.startswith('tuiloss.core.analysis.')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['tuiloss.core.analysis.display']"
