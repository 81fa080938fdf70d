import os
from pathlib import Path

import pytest
from hypothesis import settings

# The fuzz tests run on the same examples every time (a red run is then a bug to replay, never
# luck); TUILOSS_FUZZ_EXPLORE=1 makes each run draw new ones, to look for bugs.
settings.register_profile("fixed", derandomize=True, print_blob=True)
settings.register_profile("explore", print_blob=True)
settings.load_profile("explore" if os.environ.get("TUILOSS_FUZZ_EXPLORE") else "fixed")

REPO = Path(__file__).resolve().parents[1]
SAMPLE_LOGS = REPO / "sample_logs"


def real_logs_dir() -> Path | None:
    """../shared/real_logs beside the checkout (CI has it); None when absent."""
    env = os.environ.get("TUILOSS_REAL_LOGS")
    candidate = Path(env) if env else REPO.parent / "shared" / "real_logs"
    return candidate if candidate.is_dir() else None


@pytest.fixture
def real_logs() -> Path:
    folder = real_logs_dir()
    if folder is None:
        pytest.skip("../shared/real_logs is not present")
    return folder


@pytest.fixture
def sample_logs(tmp_path) -> Path:
    """A private copy of the bundled sample logs."""
    import shutil

    target = tmp_path / "sample_logs"
    shutil.copytree(SAMPLE_LOGS, target)
    return target


def pytest_addoption(parser: pytest.Parser) -> None:
    """Options of the reliability suite's chaos test (see tests/reliability/conftest.py)."""
    group = parser.getgroup("tuiloss reliability")
    group.addoption("--long", action="store_true", default=False,
                    help="run the chaos test for ten minutes per watch mode (see --chaos-seconds)")
    group.addoption("--chaos-seconds", type=float, default=None, metavar="N",
                    help="seconds of chaos per watch mode (default about 25)")
    group.addoption("--chaos-trials", type=int, default=None, metavar="N",
                    help="fewest chaos trials per watch mode (default 10)")


@pytest.fixture(autouse=True, scope="session")
def no_exit_in_process():
    """``os._exit`` called in the test process would end the run silently with status 0: fail instead."""
    import os

    real = os._exit

    def refuse(status: int) -> None:
        raise AssertionError(f"os._exit({status}) called in the test process")

    os._exit = refuse
    yield
    os._exit = real
