"""The API's docs page at ``/schema``: rendered on the server from the OpenAPI document,
one self-contained HTML page (no scripts, nothing fetched), so it reads offline. The
machine-readable document stays at ``/schema/openapi.json``."""

from __future__ import annotations

import html
from typing import Any

from litestar import Request
from litestar.openapi.plugins import OpenAPIRenderPlugin

_STYLE = """<style>
body { font-family: sans-serif; margin: 2em; max-width: 70em; color: #222; }
code, td.path { font-family: monospace; }
table { border-collapse: collapse; width: 100%; margin-bottom: 1.5em; }
td, th { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
td.method { font-weight: bold; text-transform: uppercase; }
</style>"""
_METHODS = ("get", "post", "put", "patch", "delete")


def _operation_rows(doc: dict[str, Any]) -> str:
    rows = []
    for path, item in sorted(doc.get("paths", {}).items()):
        for method in _METHODS:
            op = item.get(method)
            if op is None:
                continue
            params = ", ".join(f"{p.get('name')} ({p.get('in')})" for p in op.get("parameters", []))
            codes = ", ".join(sorted(op.get("responses", {})))
            auth = "none" if op.get("security") == [{}] else "bearer token"
            rows.append(
                f'<tr><td class="method">{method}</td><td class="path">{html.escape(path)}</td>'
                f"<td>{html.escape(op.get('summary', ''))}<br>"
                f"<small>{html.escape(op.get('description', ''))}</small></td>"
                f"<td>{html.escape(params) or '-'}</td><td>{codes}</td><td>{auth}</td></tr>"
            )
    return "\n".join(rows)


class OfflineDocsPlugin(OpenAPIRenderPlugin):
    """Renders the operations as an HTML table; no assets from the internet."""

    def __init__(self, path: str = "/") -> None:
        super().__init__(path=path, favicon="", style=_STYLE)

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        info = openapi_schema.get("info", {})
        title = html.escape(f"{info.get('title', 'API')} {info.get('version', '')}")
        page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>{self.style}</head><body>
<h1>{title}</h1>
<p>Every operation needs <code>Authorization: Bearer TOKEN</code> unless marked otherwise.
The OpenAPI document: <a href="openapi.json">openapi.json</a>.</p>
<table><tr><th>method</th><th>path</th><th>what</th><th>parameters</th><th>responses</th>
<th>auth</th></tr>
{_operation_rows(openapi_schema)}
</table></body></html>
"""
        return page.encode()
