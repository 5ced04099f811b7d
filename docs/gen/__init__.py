"""The docs' generated pages and fragments, built from the code on every `make docs`.

`generated_pages` gives each reference page (path under ``docs/`` -> Markdown);
`fragment` gives the text a ``<!-- gen: NAME -->`` marker in a written page stands for
(a state diagram, an example kept in the README). `docs/gen/hooks.py` hands both to
MkDocs; the tests under ``tests/docs/`` read the same functions. Nothing here is
written by hand twice: every table is read from the types, tables, registries and
command definitions of ``costart``.
"""

from __future__ import annotations

from collections.abc import Callable

from docs.gen import cli_page, model_pages, service_pages, spec_pages
from docs.gen.readme import readme_block, readme_section

PAGES: dict[str, Callable[[], str]] = {
    "reference/spec.md": spec_pages.spec_page,
    "reference/cluster-file.md": spec_pages.cluster_page,
    "reference/cli.md": cli_page.cli_page,
    "reference/rest.md": service_pages.rest_page,
    "reference/metrics.md": service_pages.metrics_page,
    "reference/events.md": model_pages.events_page,
}


def generated_pages() -> dict[str, str]:
    """Every generated page: its path under ``docs/`` and its Markdown."""
    return {path: make() for path, make in PAGES.items()}


def fragment(name: str) -> str:
    """The Markdown a ``<!-- gen: NAME -->`` marker stands for; `KeyError` for a name
    nothing generates. ``readme:SECTION`` is the first fenced block of the README
    section whose heading is SECTION, ``readme-section:SECTION`` the whole section's
    text (the README keeps it; the docs show it)."""
    if name.startswith("readme:"):
        return readme_block(name.removeprefix("readme:"))
    if name.startswith("readme-section:"):
        return readme_section(name.removeprefix("readme-section:"))
    return {
        "group-states": lambda: model_pages.state_diagram("group"),
        "member-states": lambda: model_pages.state_diagram("member"),
        "pend-classes": model_pages.pend_classes,
        "failure-reasons": model_pages.failure_reasons,
    }[name]()
