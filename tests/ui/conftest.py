"""Async tests without a plugin, and app builders for the viewer's tests."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from tuiloss.config import Config


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run ``async def`` tests in a fresh event loop (Textual's pilot is async)."""
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        names = pyfuncitem._fixtureinfo.argnames
        asyncio.run(pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in names}))
        return True
    return None


@pytest.fixture
def config_for():
    def make(*paths, **changes) -> Config:
        return Config(paths=tuple(str(p) for p in paths), **changes)

    return make
