"""The site builds with `mkdocs build --strict` (a warning fails it: a broken link or
anchor, a page outside the navigation), loads nothing from elsewhere, and its reference
pages cover everything the code defines."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
import typer
import yaml

from costart.domain import events as ev
from costart.domain.spec_reference import spec_fields
from costart.placement.cluster_fields import cluster_fields
from docs.gen import fragment, generated_pages
from docs.gen.cli_page import _commands, app
from docs.gen.hooks import MARKER, expand
from docs.gen.service_pages import metrics, openapi_document
from tests.docs.blocks import ROOT, pages

EXTERNAL_ASSET = re.compile(r'<(?:script|link|img)\b[^>]*\b(?:src|href)="(?:https?:)?//', re.I)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(  # noqa: PLW1510 (the exit code is asserted)
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return out


def test_the_site_builds_strict_with_every_page(site: Path) -> None:
    built = {p.relative_to(site).with_suffix(".md").as_posix() for p in site.rglob("*.html")}
    written = {p.relative_to(ROOT / "docs").as_posix() for p in pages()}
    assert written | set(generated_pages()) <= built


def test_nothing_is_loaded_from_elsewhere(site: Path) -> None:
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert not EXTERNAL_ASSET.search(text), page
        assert "fonts.googleapis" not in text and "<!-- gen:" not in text, page


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """The site's own link checks bite: its mkdocs.yml (less the hooks and the
    navigation) on two pages, one linking to a page and an anchor that do not exist."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    del config["hooks"], config["nav"]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [a](other.md#nowhere) and [b](gone.md).\n")
    (docs / "other.md").write_text("# Other\n")
    config["docs_dir"] = str(docs)
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    done = subprocess.run(  # noqa: PLW1510 (the exit code is asserted)
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "s")],
        cwd=tmp_path,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    assert "gone.md" in done.stderr and "#nowhere" in done.stderr


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return generated_pages()


def test_every_spec_field_has_its_entry(generated: dict[str, str]) -> None:
    page = generated["reference/spec.md"]
    headings = re.findall(r"^### `([^`]+)`$", page, re.MULTILINE)
    assert headings and sorted(headings) == sorted(f.path for f in spec_fields())
    for path, *_ in cluster_fields():
        assert f"`{path}`" in generated["reference/cluster-file.md"]


def test_every_command_operation_metric_and_event_is_listed(generated: dict[str, str]) -> None:
    got = generated

    for path, _ in _commands(typer.main.get_command(app), ["costart"]):
        assert f" {' '.join(path[1:])}\n" in got["reference/cli.md"], path
    for path, operations in openapi_document()["paths"].items():
        for method in operations:
            if method in {"get", "post", "put", "delete"}:
                assert f"### `{method.upper()} {path}`" in got["reference/rest.md"]
    for name, *_ in metrics():
        assert f"`{name}`" in got["reference/metrics.md"]
    classes = [
        e
        for e in vars(ev).values()
        if isinstance(e, type) and issubclass(e, ev.DomainEvent) and e is not ev.DomainEvent
    ]
    assert len(classes) >= 28
    for event in classes:
        assert f"### {event.__name__}\n" in got["reference/events.md"]
        assert (event.__doc__ or "").strip(), f"{event.__name__} says nothing of what it means"


def test_markers_expand_and_unknown_ones_fail() -> None:
    text = "a\n<!-- gen: group-states -->\nb\n"
    assert "RESERVING" in expand(text) and MARKER.search(expand(text)) is None
    assert "```python" in fragment("readme:Using it from a controller")
    with pytest.raises(KeyError):
        expand("<!-- gen: no-such-thing -->\n")
    for page in pages():
        expand(page.read_text(encoding="utf-8"))  # every marker of the docs names something


def test_the_readme_links_the_docs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.startswith("```\nmake demo\nmake test\n```\n")
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert "docs/index.md" in links
    assert all((ROOT / link).exists() for link in links)


def test_openapi_submit_body_is_the_spec_reference() -> None:
    body = openapi_document()["paths"]["/v1/groups"]["post"]["requestBody"]["content"]
    schema = body["application/json"]["schema"]
    assert msgspec.json.encode(schema).count(b'"description"') >= len(spec_fields())
