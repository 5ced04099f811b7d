"""A log written before pend reasons stored facts still decodes, replays and reads well."""

from __future__ import annotations

import uuid

import msgspec
from eventsourcing.utils import get_topic

from costart.display import reason_text
from costart.domain import events as ev
from costart.store.codec import canonical_encode, event_decoder

S = 10**9


def test_a_pend_reason_written_by_the_previous_release_decodes_and_displays() -> None:
    gid = uuid.UUID(int=7)
    reason = ev.PendReason("backoff", "backing off until t=2245433786222ns (attempt 2)")
    event = ev.PendReasonChanged(
        originator_id=gid, originator_version=3, group_id=gid, at_ns=2_000 * S, reason=reason
    )
    # The previous release's bytes: the same map without the fields added since.
    body = msgspec.to_builtins(event)
    # (Defaults are left out of the encoding already; the new fields hold defaults here.)
    assert "ahead" not in body["reason"] and "until_ns" not in body["reason"]
    body["reason"].pop("ahead", None)
    body["reason"].pop("until_ns", None)
    old_bytes = canonical_encode(body)
    decoded = event_decoder(get_topic(ev.PendReasonChanged)).decode(old_bytes)
    assert decoded == event
    assert decoded.reason.until_ns is None and decoded.reason.ahead == ()
    assert reason_text(decoded.reason, 2_000 * S) == (
        "backoff: backing off until t+37m25s (attempt 2)"
    )
