"""The `costart` command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from costart.cli.demo import run_demo
from costart.domain.errors import SpecError
from costart.domain.spec import SpecFormat, parse_spec
from costart.logs import configure_logging

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Co-start groups.")
SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
DEMO_SPEC = SCENARIOS / "rl-post-training.toml"

EXIT_INVALID = 3


@app.callback()
def _setup() -> None:
    configure_logging()


@app.command()
def demo(
    spec: Annotated[Path, typer.Option(help="group spec (TOML)")] = DEMO_SPEC,
) -> None:
    """Drive the RL post-training scenario through placement, the barrier and a failure."""
    run_demo(spec, Console(width=max(Console().width, 120)))


@app.command()
def validate(file: Path) -> None:
    """Check a group spec; print the first error with its field path."""
    fmt: SpecFormat = "json" if file.suffix == ".json" else "toml"
    try:
        spec = parse_spec(file.read_bytes(), fmt)
    except SpecError as error:
        typer.echo(f"invalid spec {file}: {error}", err=True)
        raise typer.Exit(EXIT_INVALID) from None
    typer.echo(f"{spec.name}: valid ({len(spec.members)} members)")


def main() -> None:
    app()
