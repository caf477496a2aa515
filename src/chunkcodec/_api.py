"""Source adapters and module-level functions, written once over either implementation.

``impl`` is the native ``_core`` or ``_reference``: both expose StreamDecoder, Encoder, decode and
loads.  Everything here only moves bytes between a source and a decoder.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, AsyncIterator, Iterable, Iterator

from ._gc import PAUSED
from ._results import RunOutput
from .chunks import BaseChunk
from .errors import DecodeError

__all__ = ["Api"]

#: How much a file-like source is asked for per read.
READ_SIZE = 256 * 1024

#: accumulate() pauses the garbage collector (_gc.py) around each piece of at least this many
#: bytes that it gets from a caller's iterator or file object (never around the caller's code);
#: a smaller piece does not make enough objects to trigger a collection, so pausing would only
#: cost the switching.
PAUSE_BYTES = 64 * 1024


def _pieces(source: Any) -> Iterator[Any]:
    """bytes-like / str -> one piece; path -> file reads; file object -> reads; iterable -> items."""
    if isinstance(source, (bytes, bytearray, memoryview, str)):
        yield source
        return
    if isinstance(source, os.PathLike):
        with open(source, "rb") as f:
            yield from _pieces(f)
        return
    read = getattr(source, "read", None)
    if read is not None:
        while True:
            piece = read(READ_SIZE)
            if not piece:
                return
            yield piece
    else:
        yield from source


async def _apieces(source: Any) -> AsyncIterator[Any]:
    if hasattr(source, "__aiter__"):
        async for piece in source:
            yield piece
        return
    read = getattr(source, "read", None)
    if read is not None:
        while True:
            piece = await read(READ_SIZE)
            if not piece:
                return
            yield piece
        return
    for piece in _pieces(source):
        yield piece


def _drain(call: Any) -> tuple[list, BaseException | None]:
    """Run a feed()/close() call; on a decode error, return what it decoded before the error."""
    try:
        return call(), None
    except DecodeError as exc:
        return getattr(exc, "chunks", []), exc


class Api:
    """The public functions bound to one implementation."""

    def __init__(self, impl: Any):
        self.impl = impl
        self.StreamDecoder = impl.StreamDecoder
        self.Encoder = impl.Encoder
        self.decode = impl.decode
        self.loads = impl.loads
        # (each implementation has its accumulator: _accum as it is, or its compiled copy _accumc)
        self.Accumulator = type("Accumulator", (impl.AccumulatorBase,), {
            "_Buf": impl.DeltaBuf, "_impl": impl, "__module__": "chunkcodec",
            "__doc__": next(c.__doc__ for c in impl.AccumulatorBase.__mro__ if c.__doc__)})

    def _iter(self, source: Any, framing: str, mode: str, **opts: Any) -> Iterator[Any]:
        dec = self.impl.StreamDecoder(framing, _as_dicts=mode == "dicts", _as_frames=mode == "frames", **opts)
        for piece in _pieces(source):
            items, exc = _drain(lambda: dec.feed(piece))
            yield from items
            if exc is not None:
                raise exc
        items, exc = _drain(dec.close)
        yield from items
        if exc is not None:
            raise exc

    def iter_chunks(self, source: Any, framing: str = "auto", **opts: Any) -> Iterator[Any]:
        """Typed chunks from bytes or str (the data itself), an os.PathLike (a file to read), a file
        object, or any iterable of bytes."""
        return self._iter(source, framing, "chunks", **opts)

    def iter_dicts(self, source: Any, framing: str = "auto", **opts: Any) -> Iterator[Any]:
        """What ``json.loads`` gives for each frame, from the same sources as iter_chunks."""
        return self._iter(source, framing, "dicts", **opts)

    def iter_frames(self, source: Any, framing: str = "auto", **opts: Any) -> Iterator[bytes]:
        """The JSON text of each frame as bytes, undecoded: the framing layer alone, for callers
        with a JSON parser of their own.  SSE comments, keep-alives and ``[DONE]`` are dropped;
        the JSON is not checked, so a stream cut mid-frame shows up as a last frame that does
        not parse."""
        return self._iter(source, framing, "frames", **opts)

    async def aiter_chunks(self, source: Any, framing: str = "auto", **opts: Any) -> AsyncIterator[Any]:
        """Typed chunks from an async iterable of bytes (e.g. ``response.aiter_bytes()``)."""
        dec = self.impl.StreamDecoder(framing, **opts)
        async for piece in _apieces(source):
            items, exc = _drain(lambda: dec.feed(piece))
            for item in items:
                yield item
            if exc is not None:
                raise exc
        items, exc = _drain(dec.close)
        for item in items:
            yield item
        if exc is not None:
            raise exc

    def encode(self, chunk: Any, framing: str = "sse") -> bytes:
        """One chunk as one frame of the framing."""
        return self.impl.Encoder(framing).encode(chunk)

    def encode_stream(self, chunks: Iterable[Any], framing: str = "sse") -> Iterator[bytes]:
        """A frame per chunk, then the end marker (``data: [DONE]\\n\\n`` for SSE)."""
        enc = self.impl.Encoder(framing)
        for chunk in chunks:
            yield enc.encode(chunk)
        end = enc.end()
        if end:
            yield end



    def accumulate(self, source: Any, framing: str = "auto", **opts: Any) -> list[RunOutput]:
        """One RunOutput per run in a stream or log where runs may be interleaved (demultiplexed
        by ``runId``), in the order the runs first appear.  source: what iter_chunks takes, or an
        iterable of typed chunks."""
        acc = self.Accumulator(framing, **opts)
        # The garbage collector is paused (_gc.py) while this package works: throughout for data,
        # a path or a list or tuple (no code of the caller's runs in between), else around each
        # big piece and the end, so that a caller's iterator or file object runs as usual.
        whole = isinstance(source, (bytes, bytearray, memoryview, str, list, tuple, os.PathLike))
        with PAUSED if whole else contextlib.nullcontext():
            if whole:
                # (a compiled loop on the native path; a list or tuple walked as it is)
                acc._feed_all(source if isinstance(source, (list, tuple)) else _pieces(source))
            else:
                for piece in _pieces(source):
                    if isinstance(piece, BaseChunk):
                        acc.add(piece)
                    elif len(piece) < PAUSE_BYTES:
                        acc.feed(piece)
                    else:
                        with PAUSED:
                            acc.feed(piece)
            with PAUSED:
                acc.close()
                return list(acc.pop_results())
