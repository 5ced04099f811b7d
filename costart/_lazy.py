"""Lazy re-exports for a package's public surface (PEP 562).

A package whose public names live in heavy modules (the simulator's plots, the REST
framework) lists them in ``__all__`` and resolves them on first use, so importing one
light module of the package (``costart.sim.ports``) does not import the heavy ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: ``exports`` maps each public
    name to the module that defines it (a submodule's own name maps to the submodule)."""

    def get(name: str) -> object:
        module_name = exports.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(module_name)
        return module if module_name == f"{package}.{name}" else getattr(module, name)

    def names() -> list[str]:
        return sorted(exports)

    return get, names
