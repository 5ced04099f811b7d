"""Shell completion of group, member and node names (``costart --install-completion``).

Names come from where the command would look: ``--server`` (its REST API) or
``--store`` (the views), as given on the command line being completed or in the
environment. Completion never stands in the way of typing: each lookup is bounded
(`BOUND_S`) and any failure (no store, a server down, a bad token) completes nothing,
silently.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import typer

from costart.cli.names import RESOURCE_TYPES

BOUND_S: Final = 1.0


def _bounded(lookup: Callable[[], list[str]]) -> list[str]:
    """``lookup()``'s names, or none if it fails or takes longer than `BOUND_S` (it runs
    in a daemon thread, left behind when the shell's wait is over)."""
    found: list[str] = []

    def run() -> None:
        try:
            found.extend(lookup())
        except Exception:
            found.clear()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(BOUND_S)
    return [] if worker.is_alive() else list(found)


def _global(ctx: typer.Context) -> dict[str, Any]:
    return dict(ctx.find_root().params)


def _backend(options: dict[str, Any]) -> Any:
    """The backend the global options name, for reading names (None: none named)."""
    from costart.cli.backend import LocalBackend, RemoteBackend  # noqa: PLC0415
    from costart.cli.target import Target  # noqa: PLC0415

    if options.get("server"):
        backend = RemoteBackend(options["server"], options.get("token"), options.get("ca_file"))
        backend.reader.connection.timeout = BOUND_S
        return backend
    if options.get("store"):
        target = Target(store=options["store"], cluster=None)
        if target.store_dir is not None and not target.store_dir.is_dir():
            return None
        return LocalBackend(target.settings())
    return None


def _group_names(options: dict[str, Any]) -> list[str]:
    backend = _backend(options)
    if backend is None:
        return []
    try:
        return [g.name for g in backend.groups(None, None)]
    finally:
        backend.close()


def _member_names(options: dict[str, Any], group: str | None) -> list[str]:
    backend = _backend(options)
    if backend is None:
        return []
    try:
        return [f"{m.group}/{m.name}" for m in backend.members(group)]
    finally:
        backend.close()


def _strip_type(incomplete: str) -> tuple[str, str]:
    """(``TYPE/`` prefix as typed, the rest): ``group/gr`` completes as ``gr``."""
    prefix, sep, rest = incomplete.partition("/")
    if sep and prefix in RESOURCE_TYPES:
        return f"{prefix}/", rest
    return "", incomplete


def complete_group(ctx: typer.Context, incomplete: str) -> list[str]:
    """Group names starting with what is typed (``NAME`` or ``group/NAME``)."""
    typed, rest = _strip_type(incomplete)
    names = _bounded(lambda: _group_names(_global(ctx)))
    return [typed + n for n in names if n.startswith(rest)]


def complete_member(ctx: typer.Context, incomplete: str) -> list[str]:
    """``GROUP/MEMBER`` names starting with what is typed."""
    typed, rest = _strip_type(incomplete)
    group = rest.partition("/")[0] if "/" in rest else None
    names = _bounded(lambda: _member_names(_global(ctx), group))
    return [typed + n for n in names if n.startswith(rest)]


def _node_names(options: dict[str, Any]) -> list[str]:
    from costart.placement.cluster_file import load_cluster  # noqa: PLC0415

    cluster = options.get("cluster")
    return [n.name for n in load_cluster(Path(cluster)).nodes] if cluster else []


def complete_node(ctx: typer.Context, incomplete: str) -> list[str]:
    """Node names of the cluster file (``--cluster``) starting with what is typed."""
    return [n for n in _bounded(lambda: _node_names(_global(ctx))) if n.startswith(incomplete)]
