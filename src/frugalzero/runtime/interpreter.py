"""A fresh Python interpreter that runs this installation's frugalzero, whatever is installed
elsewhere on the machine: the code this process imported goes first on its path, ahead of any
PYTHONPATH the caller had (which may hold the dependencies, so it is kept, not replaced)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import frugalzero


def own_code_env() -> dict[str, str]:
    """This process's environment with this frugalzero's source folder first on PYTHONPATH."""
    code = str(Path(frugalzero.__file__).resolve().parents[1])
    path = os.pathsep.join(filter(None, [code, os.environ.get("PYTHONPATH", "")]))
    return {**os.environ, "PYTHONPATH": path}


@contextmanager
def environment(values: Mapping[str, str]) -> Iterator[None]:
    """This process's environment (and so every process it starts) with ``values`` set for the
    block, each variable as it was afterwards (unset where it was unset)."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
