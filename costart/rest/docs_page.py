"""The API's docs page at ``/schema``: rendered on the server from the OpenAPI document,
one self-contained HTML page (no scripts, nothing fetched), so it reads offline: every
operation with its parameters, body and answers, and every schema with its fields,
linked. The docs site's REST reference is written from the same reading
(`costart.rest.reference`). The machine-readable document stays at
``/schema/openapi.json``."""

from __future__ import annotations

import html
from typing import Any
from urllib.parse import quote

from litestar import Request
from litestar.openapi.plugins import OpenAPIRenderPlugin

from costart.rest import reference

_STYLE = """<style>
body { font-family: sans-serif; margin: 2em; max-width: 90em; color: #222; }
td.path { white-space: nowrap; }
code, td.path { font-family: monospace; }
table { border-collapse: collapse; width: 100%; margin-bottom: 1.5em; }
td, th { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
td.method { font-weight: bold; text-transform: uppercase; }
</style>"""


def _anchor(name: str) -> str:
    return f"schema-{quote(name, safe='')}"


def _link(name: str) -> str:
    return f'<a href="#{_anchor(name)}">{html.escape(name)}</a>'


def _literal(value: str) -> str:
    return f"<code>{html.escape(value)}</code>"


def _type(node: Any) -> str:
    return reference.type_text(node, _link, _literal)


def _operation_row(op: reference.Operation) -> str:
    params = "<br>".join(
        f"<code>{html.escape(p.name)}</code> ({html.escape(p.where)}"
        f"{', required' if p.required else ''}): {_type(p.schema)}"
        for p in op.parameters
    )
    if op.body is None:
        body = "-"
    elif op.body.is_group_spec:
        body = "a group spec (every field: <code>costart explain</code>)"
    else:
        body = _type(op.body.schema) or "-"
    # Statuses answering the same body share a line: "400, 401, 404: ProblemDetails".
    by_body: dict[str, list[str]] = {}
    for a in op.answers:
        by_body.setdefault(_type(a.schema) if a.schema else "", []).append(a.status)
    answers = "<br>".join(
        html.escape(", ".join(statuses)) + (f": {body}" if body else "")
        for body, statuses in by_body.items()
    )
    return (
        f'<tr><td class="method">{op.method}</td><td class="path">{html.escape(op.path)}</td>'
        f"<td>{html.escape(op.summary)}<br><small>{html.escape(op.description)}</small></td>"
        f"<td>{params or '-'}</td><td>{body}</td><td>{answers}</td>"
        f"<td>{'bearer token' if op.needs_token else 'none'}</td></tr>"
    )


def _schema_section(schema: reference.Schema) -> str:
    rows = "\n".join(
        f"<tr><td><code>{html.escape(f.name)}</code></td><td>{_type(f.schema)}</td>"
        f"<td>{'yes' if f.required else ''}</td><td>{html.escape(f.description)}</td></tr>"
        for f in schema.fields
    )
    table = (
        f"<table><tr><th>field</th><th>type</th><th>required</th><th>what it is</th></tr>\n"
        f"{rows}\n</table>"
        if rows
        else ""
    )
    return (
        f'<h3 id="{_anchor(schema.name)}">{html.escape(schema.name)}</h3>\n'
        f"<p>{html.escape(schema.description)}</p>\n{table}"
    )


class OfflineDocsPlugin(OpenAPIRenderPlugin):
    """Renders the operations as an HTML table; no assets from the internet."""

    def __init__(self, path: str = "/") -> None:
        super().__init__(path=path, favicon="", style=_STYLE)

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        info = openapi_schema.get("info", {})
        title = html.escape(f"{info.get('title', 'API')} {info.get('version', '')}")
        operations = "\n".join(_operation_row(op) for op in reference.operations(openapi_schema))
        schemas = "\n".join(_schema_section(s) for s in reference.schemas(openapi_schema))
        page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>{self.style}</head><body>
<h1>{title}</h1>
<p>Every operation needs <code>Authorization: Bearer TOKEN</code> unless marked otherwise.
The OpenAPI document: <a href="openapi.json">openapi.json</a>.</p>
<h2>Operations</h2>
<table><tr><th>method</th><th>path</th><th>what</th><th>parameters</th><th>body</th>
<th>responses</th><th>auth</th></tr>
{operations}
</table>
<h2>Schemas</h2>
{schemas}
</body></html>
"""
        return page.encode()
