"""The spec reference and the cluster-file reference, from the document types and their
words (`costart.domain.spec_reference`, `costart.placement.cluster_fields`)."""

from __future__ import annotations

import msgspec

from costart.domain import limits
from costart.domain.spec_reference import SpecField, refusal, spec_fields
from costart.placement.cluster_fields import cluster_fields
from docs.gen.markdown import GENERATED, code, table

_SECTIONS = {
    "": "The group",
    "members": "Members",
    "members.run": "A member's run table",
    "placement": "Placement",
    "barrier": "The start barrier",
    "failure": "Failure policy",
    "success": "Success",
}


def _section(field: SpecField) -> str:
    if field.path.startswith("members.run"):
        return "members.run"
    top = field.path.split(".", 1)[0]
    return top if top in _SECTIONS else ""


def _field_block(field: SpecField) -> str:
    facts = [f"*{field.type}*"]
    if field.required:
        facts.append("**required**")
    elif field.default is not None:
        facts.append(f"default {code(field.default)}")
    if field.text.unit:
        facts.append(f"unit: {field.text.unit}")
    if field.text.limit:
        facts.append(f"limit: {field.text.limit}")
    lines = [f"### `{field.path}`", "", " · ".join(facts), "", field.text.what, ""]
    refused = refusal(field)
    if refused is not None:
        value, error = refused
        shown = msgspec.json.encode(value).decode()
        lines += [f"A bad value, `{field.name} = {shown}`, is refused: {code(error)}", ""]
    return "\n".join(lines)


def spec_page() -> str:
    fields = spec_fields()
    parts = [
        GENERATED,
        "# Spec reference\n",
        "A group spec is a TOML file (or the same document as JSON) that `costart submit`,"
        " `POST /v1/groups` and `Controller.submit` take. Every field is listed here with its"
        " type, default, unit, limit, what it does and the error a bad value gets (the"
        " parser's own words, produced when this page is built). The same words describe"
        " the OpenAPI submit body and are printed by `costart explain FIELD.PATH`.\n",
        f"A spec is at most {limits.MAX_SPEC_BYTES // 1024} KiB. Unknown fields are refused,"
        " naming the field. A list step of a path has no index here"
        " (`members.shape.gpu` is every member's); an error names the index"
        " (`members[1].shape.gpu`). Durations are strings such as `90s`, `15m` or `1h30m`.\n",
        "`costart validate FILE` checks a spec and names the first bad field; with"
        " `--cluster FILE` it also checks that the group can ever fit.\n",
    ]
    by_section: dict[str, list[SpecField]] = {}
    for field in fields:
        by_section.setdefault(_section(field), []).append(field)
    for key, title in _SECTIONS.items():
        parts.append(f"## {title}\n")
        parts += [_field_block(f) for f in by_section.get(key, [])]
    return "\n".join(parts)


def cluster_page() -> str:
    rows = [
        (
            code(path),
            type_name,
            "required" if required else (code(default) if default is not None else ""),
            words,
        )
        for path, type_name, required, default, words in cluster_fields()
    ]
    return "\n".join(
        [
            GENERATED,
            "# Cluster file reference\n",
            "The cluster file is the TOML model of the nodes the co-placement step places"
            " on: `costart serve --cluster FILE`, the CLI's global `--cluster FILE` (or"
            " `COSTART_CLUSTER`) and `Settings(cluster=...)`. Unknown fields and bad"
            " values are refused, naming the field. A node is given one by one (`[[nodes]]`)"
            " or as a grid (`[[generate]]`).\n",
            table(("field", "type", "default", "what it does"), rows),
        ]
    )
