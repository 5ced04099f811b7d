"""The one codec: canonical msgspec MessagePack for events, snapshots and records.

`canonical_encode` sorts map keys (``order="deterministic"``) so equal values always give
equal bytes, whatever the insertion order or ``PYTHONHASHSEED``. Decoders are built once
per type and reused. `MsgspecMapper` is the eventsourcing ``Mapper`` that stores our
msgspec events (ADR 0001, 0004).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, TypeVar, cast
from uuid import UUID

import msgspec
from eventsourcing.persistence import (
    Cipher,
    Compressor,
    Mapper,
    MapperDeserialisationError,
    StoredEvent,
    Transcoder,
)
from eventsourcing.utils import get_topic, resolve_topic

from costart.domain import events as ev
from costart.gc_pause import gc_paused as _gc_paused

T = TypeVar("T")

# The log services pause the collector while decoding or folding many kept objects
# (our states hold no reference cycles): `costart.gc_pause`.
gc_paused = _gc_paused

_ENCODER = msgspec.msgpack.Encoder(order="deterministic")


def canonical_encode(obj: Any) -> bytes:
    """Deterministic MessagePack bytes of ``obj``."""
    return _ENCODER.encode(obj)


@lru_cache(maxsize=256)
def decoder_for(type_: Any) -> msgspec.msgpack.Decoder[Any]:
    """A reused typed decoder for ``type_``."""
    return msgspec.msgpack.Decoder(type_)


def canonical_decode(data: bytes, type_: type[T]) -> T:
    return cast(T, decoder_for(cast(Any, type_)).decode(data))


_TOPIC_OF: dict[type[ev.DomainEvent], str] = {cls: get_topic(cls) for cls in ev.ALL_EVENTS}
_DECODER_OF_TOPIC: dict[str, msgspec.msgpack.Decoder[Any]] = {
    topic: msgspec.msgpack.Decoder(cls) for cls, topic in _TOPIC_OF.items()
}
_EVENT_DECODER: msgspec.msgpack.Decoder[ev.AnyEvent] = msgspec.msgpack.Decoder(ev.AnyEvent)


def event_decoder(topic: str) -> msgspec.msgpack.Decoder[Any]:
    """The reused decoder of stored event bodies of ``topic``."""
    decoder = _DECODER_OF_TOPIC.get(topic)
    if decoder is None:
        cls = resolve_topic(topic)  # a newer event class registered after import
        decoder = _DECODER_OF_TOPIC.setdefault(topic, msgspec.msgpack.Decoder(cls))
    return decoder


def decode_event(topic: str, state: bytes) -> ev.DomainEvent:
    """Decode one stored event body by its topic."""
    return cast(ev.DomainEvent, event_decoder(topic).decode(state))


def decode_any_event(state: bytes) -> ev.DomainEvent:
    """Decode an event body without its topic (the tag names the class)."""
    return cast(ev.DomainEvent, _EVENT_DECODER.decode(state))


class _NoTranscoder(Transcoder):
    """The library's Mapper wants a transcoder; ours encodes whole events with msgspec."""

    def encode(self, obj: Any) -> bytes:
        raise NotImplementedError("MsgspecMapper encodes events itself")

    def decode(self, data: bytes) -> Any:
        raise NotImplementedError("MsgspecMapper decodes events itself")


class MsgspecMapper(Mapper[UUID]):
    """Maps msgspec domain events to the library's ``StoredEvent`` and back.

    The stored ``state`` is the canonical encoding of the whole event (its id and version
    included), optionally compressed and encrypted by the library's cipher/compressor.
    """

    def __init__(
        self,
        transcoder: Transcoder | None = None,
        compressor: Compressor | None = None,
        cipher: Cipher | None = None,
    ) -> None:
        super().__init__(transcoder or _NoTranscoder(), compressor=compressor, cipher=cipher)

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        return self.to_stored_events((domain_event,))[0]

    def to_stored_events(self, domain_events: Sequence[Any]) -> list[StoredEvent]:
        """`to_stored_event` of each event, the per-write lookups made once."""
        compressor, cipher, encode = self.compressor, self.cipher, _ENCODER.encode
        stored = []
        for event in domain_events:
            topic = _TOPIC_OF.get(type(event))
            if topic is None:
                raise TypeError(f"not a costart domain event: {type(event).__name__}")
            state = encode(event)
            if compressor:
                state = compressor.compress(state)
            if cipher:
                state = cipher.encrypt(state)
            stored.append(StoredEvent(event.originator_id, event.originator_version, topic, state))
        return stored

    def decode_state(self, topic: str, state: bytes) -> ev.DomainEvent:
        """The event of a stored body (deciphered and decompressed when configured)."""
        if self.cipher:
            state = self.cipher.decrypt(state)
        if self.compressor:
            state = self.compressor.decompress(state)
        return decode_event(topic, state)

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        state = stored_event.state
        try:
            if self.cipher:
                state = self.cipher.decrypt(state)
            if self.compressor:
                state = self.compressor.decompress(state)
            return decode_event(stored_event.topic, state)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise MapperDeserialisationError(
                f"cannot decode event {stored_event.topic} of {stored_event.originator_id} "
                f"v{stored_event.originator_version}: {error}"
            ) from error
