"""The REST reference from the OpenAPI document the app serves, and the metrics
reference from the Prometheus registry `/metrics` scrapes; both built in-process on an
empty controller in memory (nothing listens, nothing is written)."""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from costart.bootstrap import Settings, bootstrap
from costart.projections import Views
from costart.rest import Tokens, WatchHub, create_app, reference
from costart.rest.metrics import registry_for
from costart.service import Service
from docs.gen.markdown import GENERATED, cell, code, table


@contextmanager
def empty_service() -> Iterator[Any]:
    """A `Service` on an empty controller in memory, its views in a scratch directory
    (nothing listens, nothing is written elsewhere)."""
    with tempfile.TemporaryDirectory() as scratch:
        controller = bootstrap(Settings(store=None, cluster=None), clock=lambda: 0)
        hub = WatchHub.following(controller.read_events, controller.world)
        service = Service(controller, Views(Path(scratch) / "views"), watch=hub)
        try:
            yield service
        finally:
            service.close()


@cache
def openapi_document() -> dict[str, Any]:
    """The OpenAPI document `serve` answers at ``/schema/openapi.json``."""

    with empty_service() as service, warnings.catch_warnings():
        # The web framework's notes about its next major version are not the docs' business.
        warnings.simplefilter("ignore", DeprecationWarning)
        app = create_app(service, Tokens({}), service.watch)
        document: dict[str, Any] = app.openapi_schema.to_schema()
    return document


def _link(name: str) -> str:
    return f"[{name}](#{name.lower()})"


def _type(node: Any) -> str:
    return reference.type_text(node, _link, code)


def _operation(op: reference.Operation) -> str:
    lines = [f"### `{op.method.upper()} {op.path}`\n"]
    text = op.description or op.summary
    if text:
        lines.append(text.strip() + "\n")
    params = [
        (code(p.name), p.where, _type(p.schema), "yes" if p.required else "", p.description)
        for p in op.parameters
    ]
    if params:
        lines.append(table(("parameter", "in", "type", "required", "what it is"), params))
    if op.body is not None:
        types = ", ".join(code(t) for t in op.body.content_types)
        shown = _type(op.body.schema)
        if op.body.is_group_spec:
            shown = "a group spec: see the [spec reference](spec.md)"
        lines.append(f"Body ({types}): {shown}. {cell(op.body.description)}\n")
    answers = [(code(a.status), cell(a.description), _type(a.schema)) for a in op.answers]
    lines.append(table(("status", "meaning", "body"), answers))
    return "\n".join(lines)


def rest_page() -> str:
    doc = openapi_document()
    parts = [
        GENERATED,
        "# REST reference\n",
        "Every operation of `costart serve`, read from the OpenAPI document it serves at"
        " `/schema/openapi.json` (a page rendered for people at `/schema`). Every"
        " operation but `/healthz` and `/metrics` needs `Authorization: Bearer TOKEN`;"
        " errors answer `application/problem+json` with the field at fault.\n",
        "## Operations\n",
    ]
    parts += [_operation(op) for op in reference.operations(doc)]
    parts.append("## Schemas\n")
    for schema in reference.schemas(doc):
        parts.append(f"### {schema.name}\n")
        if schema.description:
            parts.append(schema.description.strip() + "\n")
        rows = [
            (code(f.name), _type(f.schema), "yes" if f.required else "", f.description)
            for f in schema.fields
        ]
        if rows:
            parts.append(table(("field", "type", "required", "what it is"), rows))
    return "\n".join(parts)


def metrics() -> list[tuple[str, str, list[str], str]]:
    """Every metric `/metrics` exposes: name, type, label names and help."""

    found = []
    with empty_service() as service:
        registry, _ = registry_for(lambda: service.views)
        for family in registry.collect():
            labels = sorted(
                {k for s in family.samples for k in s.labels if k != "le"}
                | set(getattr(family, "_labelnames", ()))  # declared, also with no sample yet
            )
            found.append((family.name, family.type, labels, family.documentation))
    return found


def metrics_page() -> str:
    suffix = {"counter": "_total", "histogram": "_bucket, _sum, _count"}
    rows = [
        (code(name), kind, ", ".join(labels), suffix.get(kind, ""), help_text)
        for name, kind, labels, help_text in metrics()
    ]
    return "\n".join(
        [
            GENERATED,
            "# Metrics reference\n",
            "What `GET /metrics` (Prometheus text, no token) exposes, read from its registry."
            " Gauges and counters are computed from the views on each scrape, counted from the"
            " log's events, so a replayed log gives the same numbers; histograms of group"
            " times use event times. The scheduling session's duration is the one wall-clock"
            " measure.\n",
            table(("metric", "type", "labels", "series suffix", "what it measures"), rows),
        ]
    )
