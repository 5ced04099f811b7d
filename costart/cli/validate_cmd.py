"""`costart validate`: check a group spec (and that it can ever fit a cluster file)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from costart.bootstrap import Settings, build_placement
from costart.cli.commands import read_spec_file
from costart.cli.exits import EXIT_INVALID, EXIT_USAGE, reported
from costart.domain.errors import SpecError
from costart.domain.spec import SpecFormat, parse_spec_warned
from costart.files import UnreadableFileError
from costart.placement import ClusterError, load_cluster, recommended_mode


def validate(
    file: Path,
    cluster: Annotated[
        Path | None,
        typer.Option(help="also check that the group can ever fit this cluster file"),
    ] = None,
) -> None:
    """Check a group spec; print the first error with its field path."""
    fmt: SpecFormat = "json" if file.suffix == ".json" else "toml"
    with reported():
        data = read_spec_file(file)
    try:
        step = build_placement(Settings(cluster=cluster)) if cluster is not None else None
    except (ClusterError, ValueError, UnreadableFileError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    try:
        spec, warnings = parse_spec_warned(data, fmt)
        if step is not None:
            step.check_feasible(spec)
    except SpecError as error:
        typer.echo(f"invalid spec {file}: {error}", err=True)
        raise typer.Exit(EXIT_INVALID) from None
    for warning in warnings:
        typer.echo(f"warning: {warning}", err=True)
    fits = f", fits {cluster}" if cluster is not None else ""
    typer.echo(f"{spec.name}: valid ({len(spec.members)} members{fits})")
    if cluster is not None:
        # The rule of ADR 0115, on the cluster file the spec was checked against (read
        # again: the placement step a setting names need not expose its cluster).
        chosen = recommended_mode(spec, load_cluster(cluster).build())
        differs = chosen.mode != spec.placement.mode
        asked = f" (the spec asks {spec.placement.mode})" if differs else ""
        typer.echo(f"recommended placement mode: {chosen.text()}{asked}")
