"""`costart token new`: a fresh token and the tokens-file entry that holds only its hash."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from costart.cli.exits import EXIT_USAGE
from costart.rest.auth import new_token, token_hash

token_app = typer.Typer(
    no_args_is_help=True, rich_markup_mode=None, help="Make bearer tokens for `costart serve`."
)
ROLES = ("owner", "admin", "agent", "claims")


@token_app.command("new")
def new(
    user: Annotated[str, typer.Option(help="who the token stands for")],
    role: Annotated[str, typer.Option(help="owner | admin | agent | claims")] = "owner",
    node: Annotated[
        list[str] | None, typer.Option(help="a node an agent acts for (repeat for several)")
    ] = None,
) -> None:
    """Print the token (give it to its user, once) and, on stderr, the TOML entry for
    the tokens file: its SHA-256, so the file itself lets no one in."""
    if role not in ROLES:
        typer.echo(f"error: --role must be one of {', '.join(ROLES)} (got {role!r})", err=True)
        raise typer.Exit(EXIT_USAGE)
    nodes = sorted(node or [])
    if (role == "agent") != bool(nodes):
        typer.echo("error: an agent token needs --node, and only an agent's does", err=True)
        raise typer.Exit(EXIT_USAGE)
    token = new_token()
    # JSON strings are TOML basic strings: quotes and backslashes come out escaped.
    entry = [f'[tokens."{token_hash(token)}"]', f"user = {json.dumps(user)}", f'role = "{role}"']
    if nodes:
        entry.append(f"nodes = {json.dumps(nodes)}")
    typer.echo(token)
    typer.echo("\n".join(entry), err=True)
