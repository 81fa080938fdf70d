"""pandas as tuiloss imports it: without pyarrow.

pandas imports pyarrow at its own import whenever pyarrow is installed (as it is beside
Hugging Face ``datasets``, MLflow and many another ML library), for types tuiloss never uses:
that costs ~60 MB of resident memory and ~0.1 s before the first chunk of a CSV log is read.
:func:`load_pandas` imports pandas with pyarrow hidden for the length of that import; pandas
then takes it for absent, and whatever imports pyarrow later (an HDFS root's client) gets it.
"""

from __future__ import annotations

import sys
import threading
from types import ModuleType

_lock = threading.Lock()


def load_pandas() -> ModuleType:
    """The pandas module, imported without pyarrow when tuiloss imports it first."""
    module = sys.modules.get("pandas")
    if module is not None and not _importing(module):
        return module
    with _lock:
        hide = "pyarrow" not in sys.modules
        if hide:
            sys.modules["pyarrow"] = None  # type: ignore[assignment]  # an import of it fails
        try:
            import pandas
        finally:
            if hide and sys.modules.get("pyarrow", False) is None:
                del sys.modules["pyarrow"]
    return pandas


def _importing(module: ModuleType) -> bool:
    """Whether ``module`` is still being imported (by another thread)."""
    spec = getattr(module, "__spec__", None)
    return bool(getattr(spec, "_initializing", False))
