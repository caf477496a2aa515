"""ailoop (the Rust crate ``ailoop-core``) events in Python.

- Typed Structs for the 14 ``StreamChunk`` variants (plus the unreleased ``ToolCallMalformed``)
  and the types they carry: :class:`FinishReason`, :class:`Usage`, RunId/StepId (``uuid.UUID``),
  messages and their blocks.
- One JSON form, the one serde's default derive gives (``{"TextDelta":{"delta":"hi"}}``):
  :func:`decode`, :func:`encode`; framed streams of it (NDJSON, SSE, RS, or a JSON array) through
  the same framing core as Mastra chunks: :func:`iter_events`, :func:`encode_stream`.
- ailoop's own formats: conversation snapshots (:func:`load_snapshot`, :func:`dump_snapshot`)
  and JsonTracer logs (:func:`iter_trace`).
- :func:`from_mastra` / :func:`to_mastra` convert between Mastra chunks and events, and
  :func:`assemble` rebuilds the messages ailoop's engine appends to the history.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Iterable, Iterator

from .. import _api as _root_api  # the package attribute: the Api bound to _impl, not the module
from ..errors import DecodeError
from . import _trace
from ._convert import HISTORY_COMPACTED_TYPE, from_mastra, run_uuid, step_uuid, to_mastra
from ._history import Assembler, assemble
from ._json import (FrameDecoder as _FrameDecoder, decode_event as _decode_event, decode_message,
                    dump_snapshot, encode_event as _encode_event, encode_message, load_snapshot,
                    to_builtins)
from ._trace import *  # noqa: F401,F403
from ._types import *  # noqa: F401,F403
from ._types import __all__ as _type_names

_EVENTS = _FrameDecoder(_decode_event)
_TRACES = _FrameDecoder(_trace.decode_trace)


def decode(frame: Any) -> Any:
    """One event from its JSON text (bytes, bytearray, memoryview or str)."""
    if isinstance(frame, str):
        frame = frame.encode("utf-8", "surrogatepass")
    return _decode_event(frame)


class _Streams:
    """The framed-stream functions over one implementation (tests bind both)."""

    def __init__(self, api: Any):
        self.api = api

    def encode(self, event: Any, framing: str | None = None) -> bytes:
        body = _encode_event(event)
        return body if framing is None else self.api.impl.Encoder(framing).frame(body)

    def encode_stream(self, events: Iterable[Any], framing: str = "ndjson") -> Iterator[bytes]:
        enc = self.api.impl.Encoder(framing)
        for ev in events:
            yield enc.frame(_encode_event(ev))
        end = enc.end()
        if end:
            yield end

    def iter_events(self, source: Any, framing: str = "auto", **opts: Any) -> Iterator[Any]:
        return self.api._iter(source, framing, "chunks", _decoder=_EVENTS, **opts)

    def iter_trace(self, source: Any, framing: str = "ndjson", **opts: Any) -> Iterator[Any]:
        return self.api._iter(source, framing, "chunks", _decoder=_TRACES, **opts)

    def aiter_events(self, source: Any, framing: str = "auto", **opts: Any) -> AsyncIterator[Any]:
        return self.api.aiter_chunks(source, framing, _decoder=_EVENTS, **opts)


_streams = _Streams(_root_api)


def encode(event: Any, framing: str | None = None) -> bytes:
    """An event's JSON text; with framing ("ndjson", "sse" or "rs"), as one frame of it."""
    return _streams.encode(event, framing)


def encode_stream(events: Iterable[Any], framing: str = "ndjson") -> Iterator[bytes]:
    """A frame per event, then the framing's end marker (``data: [DONE]`` for SSE)."""
    return _streams.encode_stream(events, framing)


def iter_events(source: Any, framing: str = "auto", **opts: Any) -> Iterator[Any]:
    """Events from a framed stream: bytes or str, an os.PathLike, a file object, or an iterable
    of bytes; framing "auto", "ndjson", "sse", "rs" or "json" (one event or an array).  opts:
    ``errors="keep"`` yields an InvalidFrame for a bad frame and goes on; ``max_frame_bytes``."""
    return _streams.iter_events(source, framing, **opts)


def aiter_events(source: Any, framing: str = "auto", **opts: Any) -> AsyncIterator[Any]:
    """Events from an async iterable of bytes (e.g. ``response.aiter_bytes()``)."""
    return _streams.aiter_events(source, framing, **opts)


def iter_trace(source: Any, framing: str = "ndjson", **opts: Any) -> Iterator[Any]:
    """JsonTracer records (``{"schema":1,"ts_ms":..,"kind":..}`` lines) from the same sources."""
    return _streams.iter_trace(source, framing, **opts)


__all__ = list(_type_names) + list(_trace.__all__) + [
    "decode", "encode", "encode_stream", "iter_events", "aiter_events", "iter_trace",
    "decode_message", "encode_message", "load_snapshot", "dump_snapshot", "to_builtins",
    "from_mastra", "to_mastra", "assemble", "Assembler", "run_uuid", "step_uuid",
    "HISTORY_COMPACTED_TYPE", "DecodeError",
]
