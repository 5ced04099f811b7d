"""The event mapper: a write's events mapped together equal each mapped alone, and
decode back to themselves, with and without the library's compressor and cipher."""

from __future__ import annotations

import pytest
from eventsourcing.cipher import AESCipher
from eventsourcing.compressor import ZlibCompressor
from eventsourcing.utils import Environment

from costart.domain import lifecycle
from costart.domain.world import World
from costart.eventlog.codec import MsgspecMapper
from tests.builders import a_group


def _cipher() -> AESCipher:
    return AESCipher(Environment(env={AESCipher.CIPHER_KEY: AESCipher.create_key(16)}))


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("encrypt", [False, True])
def test_a_write_maps_as_its_events_one_by_one(compress: bool, encrypt: bool) -> None:
    mapper = MsgspecMapper(
        compressor=ZlibCompressor() if compress else None,
        cipher=_cipher() if encrypt else None,
    )
    spec = a_group("g").with_member("a").with_member("b").build()
    events = lifecycle.submit(World(), spec, 7).pending_events
    stored = mapper.to_stored_events(events)
    assert [mapper.to_domain_event(s) for s in stored] == events
    if not encrypt:  # the cipher's nonce differs per call
        assert stored == [mapper.to_stored_event(e) for e in events]
    plain = MsgspecMapper().to_stored_events(events)
    assert [(s.originator_id, s.originator_version, s.topic) for s in stored] == [
        (s.originator_id, s.originator_version, s.topic) for s in plain
    ]
    assert (stored == plain) is not (compress or encrypt)


def test_only_costart_events_map() -> None:
    with pytest.raises(TypeError):
        MsgspecMapper().to_stored_events([object()])
