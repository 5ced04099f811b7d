"""What a change of the event encoding would do to replay's ratio against the raw baseline
(ADR 0150). Not a test: a measurement made before deciding on a schema change.

The raw baseline (`raw_baseline.raw_decode_fold`) decodes the log's event bodies as they
are: an encoding that is cheaper to decode is cheaper for it too, so only what replay
does and the baseline does not (the checksum over the record, the record envelope, the
fold) can raise the ratio. This script builds the benchmark's log (`bench_replay`'s
groups and tail), re-encodes each record's event in each candidate encoding, writes each
as a record with its checksum (`record_layout.encode_record`), and counts the
instructions (cachegrind, each part less its setup alone) of the parts that depend on
the bytes:

- ``checksum``: every record's BLAKE2b checked as `record_layout.scan_plain` checks it (ADR 0151 measured the plain scan; the store now checks in compiled code, ADR 0155);
- ``envelope``: every record's envelope decoded;
- ``raw``: the baseline's work over the bodies: one typed decode per event (a tagged
  union of the candidate's event types) and a dict store;
- ``view``: the record fold's decode of the bodies (ADR 0140, 0150): member events as
  views (id only, no group id, actor or note), a creation with its spec as bytes, a
  submission with its member specs as bytes, the rest whole.

With the full replay's and the baseline's own counts on the same log (``replay``,
``raw_full``), each candidate's ratio is projected as ``(raw_full - its raw saving) /
(replay - its checksum, envelope and view savings)``: the fold itself is taken as
unchanged (for ids as bytes that is generous: the World keys its maps by the id's
text). Candidates: ids as their 16 bytes; member events without their group's id;
creations without their spec (it is in the submission); events as arrays (no field
names). Writes ``bench/results/ab/replay-encodings.json``.

Run: python bench/replay_encodings.py [--groups N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Union

import msgspec
from bench_replay import instructions  # run from bench/: its sibling

from costart.domain import events as ev

CANDIDATES = {
    "current": (),
    "ids_as_bytes": ("bytes",),
    "ids_as_bytes+no_group_id": ("bytes", "nogroup"),
    "ids_as_bytes+no_group_id+no_creation_spec": ("bytes", "nogroup", "nospec"),
    "arrays+ids_as_bytes": ("array", "bytes"),
    "arrays+ids_as_bytes+no_group_id+no_creation_spec": ("array", "bytes", "nogroup", "nospec"),
}
PARTS = ("checksum", "envelope", "raw", "view")
NOT_FOLDED = ("actor", "group_id", "note")


def dropped(kind: type[ev.DomainEvent], traits: tuple[str, ...]) -> set[str]:
    """The fields candidate ``traits`` leave out of events of ``kind``."""
    out = set()
    if "nogroup" in traits and kind in ev.MEMBER_EVENTS:
        out.add("group_id")
    if "nospec" in traits and kind is ev.MemberCreated:
        out.add("spec")
    return out


def struct_like(cls: Any, traits: tuple[str, ...], drop: set[str], retyped: dict[str, Any]) -> Any:
    """``cls``'s fields less ``drop``, those in ``retyped`` as given, arrays if asked."""
    config = cls.__struct_config__
    fields = [
        (
            f.name,
            retyped.get(f.name, f.type),
            msgspec.field(default=f.default, default_factory=f.default_factory),
        )
        for f in msgspec.structs.fields(cls)
        if f.name not in drop
    ]
    return msgspec.defstruct(
        cls.__name__,
        fields,
        kw_only=True,
        tag_field=config.tag_field,
        tag=config.tag,
        frozen=True,
        gc=False,
        omit_defaults=config.omit_defaults,
        array_like="array" in traits,
    )


def view_type(kind: type[ev.DomainEvent], traits: tuple[str, ...]) -> Any:
    """How the record fold would read events of ``kind`` in candidate ``traits`` (the
    encoding as it is: as the record fold reads them)."""
    from eventsourcing.utils import get_topic

    from costart.domain.world import MEMBER_FOLDS
    from costart.eventlog.record_fold import _route_of, _SpecMembersBytes

    if not traits:
        return _route_of(get_topic(kind), True)[1].type

    id_type = bytes if "bytes" in traits else str
    drop = dropped(kind, traits)
    if kind is ev.GroupSubmitted:
        retyped = {"spec": _SpecMembersBytes, "member_ids": tuple[id_type, ...]}
        return struct_like(kind, traits, drop, retyped)
    if kind in MEMBER_FOLDS or kind is ev.MemberCreated:
        retyped = {"originator_id": id_type, "spec": msgspec.Raw}
        skipped = {"actor", "note"} if kind is ev.MemberCreated else set(NOT_FOLDED)
        if "array" in traits:  # an array's fields are read in order: skipped as Raw
            retyped.update(dict.fromkeys(skipped - drop, msgspec.Raw))
            if kind is ev.MemberCreated and "group_id" not in drop:
                retyped["group_id"] = id_type
            return struct_like(kind, traits, drop, retyped)
        if kind is ev.MemberCreated and "group_id" not in drop:
            retyped["group_id"] = id_type
        return struct_like(kind, traits, drop | skipped, retyped)
    return struct_like(kind, traits, drop, {})


# Run under valgrind (bench/ and the repository on the path). argv: the candidate's
# records (a file `main` wrote), the candidate, the part, and "1" (do it) or "0" (setup
# only: the records loaded, the decoders made).
DRIVER = """
import sys
from pathlib import Path
import msgspec
import replay_encodings as re_
from costart.domain import events as ev
from costart.domain.actors import CHECKED_LOG_BYTES
from costart.eventlog.codec import gc_paused
from costart.store.record_layout import _FRESH_HASH, _decode
records, candidate, part, go = sys.argv[1:]
traits = re_.CANDIDATES[candidate]
full = {k: re_.struct_like(k, traits, re_.dropped(k, traits), {}) for k in ev.ALL_EVENTS}
values, bodies, names = msgspec.msgpack.decode(Path(records).read_bytes())
by_name = {k.__name__: k for k in ev.ALL_EVENTS}
kinds = [by_name[n] for n in names]
union = msgspec.msgpack.Decoder(re_.union_of(tuple(full.values())))
views = {k: msgspec.msgpack.Decoder(re_.view_type(k, traits)) for k in set(kinds)}
if go == "1":
    with gc_paused():
        if part == "checksum":
            fresh = _FRESH_HASH.copy
            for value in values:
                hashed = fresh()
                hashed.update(value[:-16])
                if hashed.digest() != value[-16:]:
                    raise SystemExit("bad checksum")
        elif part == "envelope":
            for value in values:
                _decode(value)
        elif part == "raw":
            latest = {}
            decode = union.decode
            for body in bodies:
                event = decode(body)
                latest[event.originator_id] = event
        else:
            CHECKED_LOG_BYTES.on = True
            for body, kind in zip(bodies, kinds):
                views[kind].decode(body)
"""

# argv: the log, "replay" or "raw", "1" or "0": the full replay and the baseline as
# `bench_replay` counts them.
FULL_DRIVER = """
import sys
from pathlib import Path
import lmdb
from raw_baseline import raw_decode_fold
from costart.replay.rebuild import rebuild
from costart.store.replay_log import open_log
log, raw_path, run, go = sys.argv[1:]
raw = lmdb.open(raw_path, readonly=True, lock=False)
with open_log(Path(log)) as opened:
    if go == "1":
        rebuild(opened.source) if run == "replay" else raw_decode_fold(raw)
"""


def union_of(types: tuple[Any, ...]) -> Any:
    return Union[types]  # noqa: UP007 (a union made of a tuple of types)


def reencoded(
    recorder: Any, traits: tuple[str, ...], full: dict[Any, Any]
) -> tuple[list[bytes], list[bytes], list[type[ev.DomainEvent]]]:
    """Each record's event in candidate ``traits``: the records (with their checksums
    and chain), the bodies and the event kinds."""
    from costart.eventlog.codec import event_decoder
    from costart.store.record_layout import GENESIS, encode_record

    encoder = msgspec.msgpack.Encoder(
        order="deterministic", uuid_format="bytes" if "bytes" in traits else "canonical"
    )
    values, bodies, kinds = [], [], []
    prev = GENESIS
    for record in recorder.iter_records(1):
        event = event_decoder(record.topic).decode(record.state)
        kind = type(event)
        fields = msgspec.structs.asdict(event)
        for name in dropped(kind, traits):
            del fields[name]
        body = encoder.encode(full[kind](**fields))
        stored = (b"", record.originator_id, record.originator_version, record.topic, body)
        value, prev = encode_record(record.id, stored, prev)
        values.append(value)
        bodies.append(body)
        kinds.append(kind)
    return values, bodies, kinds


def main() -> None:
    from bench_replay import build_log, lifecycle_tail
    from raw_baseline import write_raw

    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=1000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="costart-bench-encodings-"))
    try:
        controller = build_log(work / "log", args.groups)
        lifecycle_tail(controller, args.groups, args.groups * 10)
        write_raw(
            work / "raw", (n.state for n in controller.recorder.iter_notifications(1)), b""
        ).close()
        events = controller.world.position
        recorder = controller.recorder
        sizes = {}
        for name, traits in CANDIDATES.items():
            full = {k: struct_like(k, traits, dropped(k, traits), {}) for k in ev.ALL_EVENTS}
            values, bodies, kinds = reencoded(recorder, traits, full)
            names = [kind.__name__ for kind in kinds]
            (work / f"{name}.records").write_bytes(msgspec.msgpack.encode((values, bodies, names)))
            sizes[name] = {
                "record_bytes": sum(map(len, values)),
                "body_bytes": sum(map(len, bodies)),
            }
        controller.close()
        log = str(work / "log")
        whole = {}
        for run in ("replay", "raw"):
            base = [log, str(work / "raw"), run]
            whole[run] = instructions(FULL_DRIVER, [*base, "1"]) - instructions(
                FULL_DRIVER, [*base, "0"]
            )
            print(f"  {run}: {whole[run] / 1e6:,.1f}M", flush=True)
        figures: dict[str, Any] = {}
        for name in CANDIDATES:
            records = str(work / f"{name}.records")
            setup = instructions(DRIVER, [records, name, "checksum", "0"])
            counts = {
                part: instructions(DRIVER, [records, name, part, "1"]) - setup for part in PARTS
            }
            figures[name] = {**sizes[name], **counts}
            print(f"  {name}: {figures[name]}", flush=True)
        now = figures["current"]
        for name, row in figures.items():
            raw = whole["raw"] - (now["raw"] - row["raw"])
            ours = whole["replay"] - sum(now[p] - row[p] for p in ("checksum", "envelope", "view"))
            row["projected_replay"] = ours
            row["projected_raw"] = raw
            row["projected_ratio"] = round(raw / ours, 3)
            print(
                f"  {name:50} projected {raw / 1e6:,.0f}M / {ours / 1e6:,.0f}M = {raw / ours:.3f}"
            )
        # Not a benchmark with targets: a one-off comparison, cited by its ADR.
        out = Path(__file__).resolve().parent / "results" / "ab" / "replay-encodings.json"
        result = {
            "groups": args.groups,
            "events": events,
            "replay": whole["replay"],
            "raw": whole["raw"],
            "ratio": round(whole["raw"] / whole["replay"], 3),
            "candidates": figures,
            "machine": {"cpus": os.cpu_count(), "load_average_1m": round(os.getloadavg()[0], 2)},
        }
        out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
        print(f"wrote {out}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
