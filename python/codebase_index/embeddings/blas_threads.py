"""Limit numpy's OpenBLAS to one thread while our own worker threads run matmuls.

The encoder's matmuls are small (a few hundred rows): OpenBLAS's own threads cost more in hand-offs than
they save, and they fight our worker threads for the same cores. OpenBLAS keeps its thread count in a
process global, so `single_blas_thread()` lowers it while at least one caller is inside and restores it
when the last one leaves. Without a reachable OpenBLAS (MKL, Accelerate, a static build) it does nothing.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

# numpy >= 2 wheels bundle scipy-openblas with prefixed, 64-bit-int symbols; distro builds keep plain names.
_SET_NAMES = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)
_GET_NAMES = (
    "scipy_openblas_get_num_threads64_",
    "scipy_openblas_get_num_threads",
    "openblas_get_num_threads64_",
    "openblas_get_num_threads",
)


class _OpenBlasControl:
    def __init__(self, setter: Callable[[int], object], getter: Callable[[], int]) -> None:
        self._set = setter
        self._get = getter

    def get(self) -> int:
        return int(self._get())

    def set(self, n: int) -> None:
        self._set(n)


_lock = threading.Lock()
_control: _OpenBlasControl | None = None
_resolved = False
_depth = 0
_saved = 0


def _loaded_openblas_paths() -> list[str]:
    """Paths of OpenBLAS libraries numpy actually loaded (so we never load a second, unused copy)."""
    import numpy as np  # loads numpy's BLAS before we look for it

    paths: list[str] = []
    maps = Path("/proc/self/maps")
    if maps.exists():
        try:
            for line in maps.read_text().splitlines():
                part = line.split(maxsplit=5)
                if len(part) == 6 and "openblas" in Path(part[5]).name.lower() and part[5] not in paths:
                    paths.append(part[5])
        except OSError:
            pass
    if not paths:
        np_dir = Path(np.__file__).parent
        for folder in (np_dir.parent / "numpy.libs", np_dir / ".dylibs", np_dir / ".libs"):
            if folder.is_dir():
                paths.extend(str(p) for p in sorted(folder.iterdir()) if "openblas" in p.name.lower())
    return paths


def _resolve() -> _OpenBlasControl | None:
    for path in _loaded_openblas_paths():
        try:
            lib = ctypes.CDLL(path, mode=getattr(ctypes, "RTLD_NOLOAD", 0) | ctypes.RTLD_GLOBAL)
        except OSError:
            continue
        setter = next((getattr(lib, n) for n in _SET_NAMES if hasattr(lib, n)), None)
        getter = next((getattr(lib, n) for n in _GET_NAMES if hasattr(lib, n)), None)
        if setter is None or getter is None:
            continue
        setter.argtypes = [ctypes.c_int]
        setter.restype = None
        getter.argtypes = []
        getter.restype = ctypes.c_int
        return _OpenBlasControl(setter, getter)
    return None


def openblas_control() -> _OpenBlasControl | None:
    """The OpenBLAS thread knob numpy uses, or None when there is none to turn."""
    global _control, _resolved
    with _lock:
        if not _resolved:
            _resolved = True
            try:
                _control = _resolve()
            except Exception as exc:  # a broken lookup must never break embedding
                logging.getLogger(__name__).warning("cannot control BLAS threads: %s", exc)
                _control = None
        return _control


@contextmanager
def single_blas_thread() -> Iterator[None]:
    """Run the body with OpenBLAS at one thread; re-entrant and safe across threads."""
    global _depth, _saved
    control = openblas_control()
    if control is None:
        yield
        return
    with _lock:
        if _depth == 0:
            _saved = control.get()
            if _saved != 1:
                control.set(1)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved != 1:
                control.set(_saved)
