"""The plain-Python reference path: the same API as the native ``_core``, over msgspec only.

It is the oracle the native path is tested against and the fallback where the extension cannot be
built; ``CHUNKCODEC_NO_EXTENSIONS=1`` selects it.  The framing rules are those of ``csrc/frame.c``,
written again in the most direct Python so that a disagreement shows up in the differential tests.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from . import _accum, _jsonout, _model
from .errors import DecodeError, InvalidFrame, as_truncated, frame_too_large

__all__ = ["StreamDecoder", "Encoder", "decode", "loads", "FRAMINGS", "DEFAULT_MAX_FRAME_BYTES"]

AUTO, SSE, RS, NDJSON, JSON = range(5)
FRAMINGS = {"auto": AUTO, "sse": SSE, "rs": RS, "ndjson": NDJSON, "json": JSON}
_NAMES = {v: k for k, v in FRAMINGS.items()}
DEFAULT_MAX_FRAME_BYTES = 256 * 1024 * 1024
#: bytes of a terminator that a pending SSE tail may already hold (the "\n\r" of "\n\r\n")
_SLACK = 2
_WS = b" \t\r\n"

JSON_KIND, MULTI_KIND, DONE_KIND = 0, 1, 2


def _framing_code(framing: str) -> int:
    try:
        return FRAMINGS[framing]
    except (KeyError, TypeError):
        raise ValueError(f"framing must be one of {sorted(FRAMINGS)}, got {framing!r}") from None


def _to_bytes(data: Any) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode("utf-8", "surrogatepass")
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"expected bytes, bytearray, memoryview or str, got {type(data).__name__}")


# ------------------------------------------------------------------------------------------------
# Framing (mirrors csrc/frame.c)

def _sse_data_lines(block: bytes) -> list[bytes]:
    out = []
    for line in block.split(b"\n"):
        if line.endswith(b"\r"):
            line = line[:-1]
        if line == b"data":
            out.append(b"")
        elif line.startswith(b"data:"):
            v = line[5:]
            out.append(v[1:] if v.startswith(b" ") else v)
    return out


def _sse_event_end(buf: bytes, i: int) -> tuple[int, int] | None:
    j = i
    n = len(buf)
    while True:
        k = buf.find(b"\n", j)
        if k < 0:
            return None
        if k + 1 < n and buf[k + 1] == 0x0A:
            return k - i, k + 2
        if k + 2 < n and buf[k + 1] == 0x0D and buf[k + 2] == 0x0A:
            return k - i, k + 3
        if k + 1 >= n or (buf[k + 1] == 0x0D and k + 2 >= n):
            return None
        j = k + 1


def split_frames(framing: int, buf: bytes, final: bool) -> tuple[list[tuple], int]:
    """Complete frames at the front of buf: ([(kind, start, len, bstart, blen)], consumed)."""
    out: list[tuple] = []
    i, n = 0, len(buf)
    while i < n:
        if framing == SSE:
            if buf[i] == 0x0A:
                i += 1
                continue
            if buf[i] == 0x0D and i + 1 < n and buf[i + 1] == 0x0A:
                i += 2
                continue
            end = _sse_event_end(buf, i)
            if end is None:
                if not final:
                    break
                if not buf[i:].strip(_WS):
                    i = n
                    break
                end = (n - i, n)
            blk, nxt = end
            block = buf[i:i + blk]
            lines = _sse_data_lines(block)
            if len(lines) == 1:
                # where the single data value starts inside the block
                start = _sse_single_data_start(buf, i, blk)
                kind = DONE_KIND if lines[0] == b"[DONE]" else JSON_KIND
                out.append((kind, start, len(lines[0]), i, blk))
            elif lines:
                out.append((MULTI_KIND, i, blk, i, blk))
            i = nxt
        else:
            sep = b"\x1e" if framing == RS else b"\n"
            e = buf.find(sep, i)
            if e >= 0:
                rl, nxt = e - i, e + 1
            else:
                if not final:
                    break
                rl, nxt = n - i, n
            rec = buf[i:i + rl]
            stripped = rec.strip(_WS)
            if stripped:
                if framing == RS and stripped == b"data: [DONE]":
                    out.append((DONE_KIND, i + rec.index(stripped), 12, i, rl))
                else:
                    ln = rl - 1 if framing == NDJSON and rec.endswith(b"\r") else rl
                    out.append((JSON_KIND, i, ln, i, rl))
            i = nxt
    return out, i


def _sse_single_data_start(buf: bytes, i: int, blk: int) -> int:
    p, end = i, i + blk
    while p < end:
        nl = buf.find(b"\n", p, end)
        le = nl if nl >= 0 else end
        ll = le - p
        if ll and buf[p + ll - 1] == 0x0D:
            ll -= 1
        line = buf[p:p + ll]
        if line == b"data":
            return p + 4
        if line.startswith(b"data:"):
            return p + 6 if line[5:6] == b" " else p + 5
        p = nl + 1 if nl >= 0 else end
    raise AssertionError("no data line")  # pragma: no cover


def find_end(framing: int, tail: bytes, data: bytes) -> int:
    """Offset just past the first terminator in data, tail being the bytes before it."""
    if framing != SSE:
        e = data.find(b"\x1e" if framing == RS else b"\n")
        return e + 1 if e >= 0 else -1
    t = tail[-2:]
    w = t + data[:2]
    for k in range(len(t)):
        if w[k] != 0x0A:
            continue
        if k + 1 < len(w) and w[k + 1] == 0x0A and k + 1 >= len(t):
            return k + 2 - len(t)
        if k + 2 < len(w) and w[k + 1] == 0x0D and w[k + 2] == 0x0A and k + 2 >= len(t):
            return k + 3 - len(t)
    m = re.search(rb"\n\r?\n", data)
    return m.end() if m else -1


def detect_framing(buf: bytes, final: bool, bom: bool = True) -> tuple[int, int]:
    """(framing or AUTO when undecided, bytes to drop: a BOM at the stream start and white space;
    undecided after a '{', up to the '{')."""
    i = 0
    if bom and buf[:3] == b"\xef\xbb\xbf":
        i = 3
    elif bom and not final and 0 < len(buf) < 3 and buf[0] == 0xEF:
        return AUTO, 0
    while i < len(buf) and buf[i] in _WS:
        i += 1
    if i == len(buf):
        return (NDJSON if final else AUTO), i
    c = buf[i]
    if c == 0x3A or 0x61 <= c <= 0x7A or 0x41 <= c <= 0x5A:
        return SSE, i
    if c == 0x1E:
        return RS, i
    if c == 0x5B:
        return JSON, i
    if c != 0x7B:
        return NDJSON, i
    for b in buf[i:]:
        if b == 0x1E:
            return RS, i
        if b == 0x0A:
            return NDJSON, i
    return (NDJSON if final else AUTO), i


# ------------------------------------------------------------------------------------------------
# Decoding

class StreamDecoder:
    """Incremental decoder: ``feed(bytes) -> list``, ``close() -> list``.

    See the native ``chunkcodec.StreamDecoder`` for the contract; this is its reference.
    """

    def __init__(self, framing: str = "auto", *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
                 errors: str = "strict", _as_dicts: bool = False, _as_frames: bool = False,
                 _sink: Any = None, _decoder: Any = None):
        self._framing = _framing_code(framing)
        # an Accumulator's decoder: step-finish/finish frames get the light decoder.  (A flag, not
        # the accumulator: a reference back would make a cycle that outlives a dropped accumulator.)
        self._sink = _sink is not None
        self._custom = _decoder   # another format's frame decoder (chunkcodec.ailoop), or None
        if errors not in ("strict", "keep"):
            raise ValueError(f"errors must be 'strict' or 'keep', got {errors!r}")
        if not isinstance(max_frame_bytes, int) or max_frame_bytes < 1:
            raise ValueError(f"max_frame_bytes must be a positive int, got {max_frame_bytes!r}")
        self._max = max_frame_bytes
        self._keep = errors == "keep"
        self._dicts = _as_dicts
        self._frames = _as_frames
        self._pending = bytearray()
        self._pending_pos = 0
        self._offset = 0          # bytes fed so far
        self._index = 0           # frames seen so far
        self._skip: list | None = None   # [frame_pos, head, tail2, seen] while dropping an oversized frame
        self.done = False         # an end marker ([DONE]) was seen
        self._auto_brace = False  # auto-detecting, and pending is a '{...' with no RS/LF yet
        self._failed: str | None = None   # the message of the error that stopped a strict decoder
        self._json_dropped: int | None = None     # "json" framing in keep mode: bytes past the limit
        self._closed = False

    @property
    def framing(self) -> str:
        """The framing in use ("auto" until it has been detected)."""
        return _NAMES[self._framing]

    @property
    def frame_index(self) -> int:
        return self._index

    # -- input --------------------------------------------------------------------------------
    def feed(self, data: Any) -> list:
        if self._closed:
            raise RuntimeError("feed() after close()")
        if self._failed is not None:
            raise RuntimeError(f"the decoder stopped at an error in strict mode ({self._failed}); "
                               f"use errors='keep' to decode past bad frames")
        data = _to_bytes(data)
        out: list = []
        base = self._offset
        self._offset += len(data)
        try:
            self._feed(data, base, out)
        except DecodeError as exc:
            exc.chunks = out  # type: ignore[attr-defined]
            self._failed = str(exc)     # (not exc: its traceback holds the frames that hold us)
            raise
        return out

    def _feed(self, data: bytes, base: int, out: list) -> None:
        if self._framing == AUTO:
            if not self._pending:
                self._pending_pos = base
            if self._auto_brace:
                # pending is a '{...' with no 0x1E or LF yet: only the new bytes need a look
                rs, lf = data.find(b"\x1e"), data.find(b"\n")
                fr = AUTO if rs < 0 and lf < 0 else RS if lf < 0 or 0 <= rs < lf else NDJSON
                self._pending += data
                skip = 0
            else:
                self._pending += data
                fr, skip = detect_framing(bytes(self._pending), False, self._pending_pos == 0)
            if fr == AUTO:
                # drop the white space looked at (and a BOM) so it is never scanned again
                del self._pending[:skip]
                self._pending_pos += skip
                self._auto_brace = bool(self._pending) and self._pending[0] == 0x7B
                if len(self._pending) > self._max + _SLACK:
                    fr = NDJSON
                else:
                    return
                skip = 0
            self._framing = fr
            buf = bytes(self._pending)[skip:]
            pos = self._pending_pos + skip
            self._pending.clear()
            self._feed(buf, pos, out)
            return
        if self._framing == JSON:
            if self._json_dropped is not None:      # keep mode, past max_frame_bytes: count only
                self._json_dropped += len(data)
                return
            if not self._pending:
                self._pending_pos = base
            self._pending += data
            if len(self._pending) > self._max:
                if not self._keep:
                    raise frame_too_large(self._max, self._pending_pos, 0, bytes(self._pending[:200]))
                self._json_dropped = len(self._pending) - self._max
                del self._pending[self._max:]
            return
        if self._skip is not None:
            end = find_end(self._framing, self._skip[2], data)
            if end < 0:
                self._skip[2] = (self._skip[2] + data)[-2:]
                self._skip[3] += len(data)
                return
            self._finish_skip(end, _terminator_len(self._framing, self._skip[2], data, end), out)
            data, base = data[end:], base + end
        if self._pending:
            end = find_end(self._framing, bytes(self._pending[-2:]), data)
            if end < 0:
                self._pending += data
                self._check_pending(out)
                return
            buf = bytes(self._pending) + data[:end]
            pos = self._pending_pos
            self._pending.clear()
            self._process(buf, pos, False, out)
            data, base = data[end:], base + end
        consumed = self._process(data, base, False, out)
        if consumed < len(data):
            self._pending += data[consumed:]
            self._pending_pos = base + consumed
            self._check_pending(out)

    def _check_pending(self, out: list) -> None:
        if len(self._pending) <= self._max + _SLACK:
            return
        pos, head = self._pending_pos, bytes(self._pending[: self._max])
        seen = len(self._pending)
        tail2 = bytes(self._pending[-2:])
        self._pending.clear()
        # Skip leading blank lines the same way the splitter would before the frame starts.
        if not self._keep:
            raise frame_too_large(self._max, pos, self._index, head)
        self._skip = [pos, head, tail2, seen]

    def _finish_skip(self, end: int, term: int, out: list) -> None:
        pos, head, _, seen = self._skip
        self._skip = None
        total = seen + end - term   # the frame's own length excludes its terminator
        err = frame_too_large(self._max, pos, self._index, head)
        out.append(InvalidFrame(head, err, self._index, pos, dropped=max(0, total - len(head))))
        self._index += 1

    def _process(self, buf: bytes, base: int, final: bool, out: list) -> int:
        frames, consumed = split_frames(self._framing, buf, final)
        for kind, start, ln, bstart, blen in frames:
            self._emit(buf, kind, start, ln, bstart, blen, base, out)
        return consumed

    def _emit(self, buf: bytes, kind: int, start: int, ln: int, bstart: int, blen: int,
              base: int, out: list) -> None:
        if kind == DONE_KIND:
            self.done = True
            return
        idx = self._index
        self._index += 1
        if blen > self._max:
            err = frame_too_large(self._max, base + bstart, idx, buf[bstart:bstart + 200])
            if not self._keep:
                raise err
            out.append(InvalidFrame(buf[bstart:bstart + self._max], err, idx, base + bstart,
                                    dropped=blen - self._max))
            return
        if kind == MULTI_KIND:
            frame = b"\n".join(_sse_data_lines(buf[start:start + ln]))
        else:
            frame = buf[start:start + ln]
        pos = base + start
        if self._frames:
            out.append(frame)
            return
        if self._custom is not None:
            try:
                out.append(self._custom.decode_frame(frame, idx, pos))
            except DecodeError as exc:
                if not self._keep:
                    raise
                out.append(InvalidFrame(frame, exc, idx, pos))
            return
        if self._sink and frame.startswith(_accum.FINISH_PREFIXES):
            light = _accum.decode_finish_light(frame)
            if light is not None:
                out.append(light)
                return
        try:
            if self._dicts:
                out.append(_model.loads_frame(frame, idx, pos))
            else:
                out.append(_model.set_raw(_model.decode_frame(frame, idx, pos), frame))
        except DecodeError as exc:
            if not self._keep:
                raise
            out.append(InvalidFrame(frame, exc, idx, pos))

    # -- end ----------------------------------------------------------------------------------
    def close(self) -> list:
        """Decode what is left; raises TruncatedError if the stream ended mid-frame."""
        if self._closed or self._failed is not None:
            self._closed = True
            return []
        self._closed = True
        out: list = []
        try:
            self._close(out)
        except DecodeError as exc:
            exc.chunks = out  # type: ignore[attr-defined]
            raise
        return out

    def _close(self, out: list) -> None:
        if self._framing == AUTO:
            fr, skip = detect_framing(bytes(self._pending), True, self._pending_pos == 0)
            self._framing = fr
            del self._pending[:skip]
            self._pending_pos += skip
        if self._skip is not None:
            self._finish_skip(0, 0, out)
            return
        buf = bytes(self._pending)
        pos = self._pending_pos
        self._pending.clear()
        if self._framing == JSON and self._json_dropped is not None:
            out.append(InvalidFrame(buf, frame_too_large(self._max, pos, 0, buf[:200]), 0, pos,
                                    dropped=self._json_dropped))
            self._index += 1
            return
        if self._framing == JSON:
            if self._frames:
                if buf.strip(_WS):
                    out.append(buf)
                    self._index += 1
                return
            if self._custom is not None:
                self._index += self._custom.decode_document(buf, pos, self._keep, out)
                return
            self._index += _model.decode_document(buf, pos, self._dicts, self._keep, out)
            return
        if not buf.strip(_WS):
            return
        frames, _ = split_frames(self._framing, buf, True)
        for kind, start, ln, bstart, blen in frames:
            n_before = len(out)
            try:
                self._emit(buf, kind, start, ln, bstart, blen, pos, out)
            except DecodeError as exc:
                raise as_truncated(exc, _NAMES[self._framing], pos + bstart, buf[bstart:]) from None
            if len(out) > n_before and isinstance(out[-1], InvalidFrame):
                inv = out[-1]
                inv.error = as_truncated(inv.error, _NAMES[self._framing], pos + bstart, buf[bstart:])


def _terminator_len(framing: int, tail: bytes, data: bytes, end: int) -> int:
    """Length of the terminator that ends at data[end] (2 or 3 for an SSE blank line, else 1)."""
    if framing != SSE:
        return 1
    seq = tail[-2:] + data[:end]
    return 3 if seq[-2:-1] == b"\r" else 2


def decode(frame: Any) -> Any:
    """Decode one frame's JSON text to a typed chunk."""
    frame = _to_bytes(frame)
    return _model.set_raw(_model.decode_frame(frame), frame)


def loads(frame: Any) -> Any:
    """Decode one frame's JSON text to exactly what ``json.loads`` returns."""
    return _model.loads_frame(_to_bytes(frame))


# ------------------------------------------------------------------------------------------------
# Encoding


def to_json(obj: Any) -> bytes:
    """JSON text of a chunk (or any msgspec-encodable value) as JSON.stringify writes it."""
    raw = _model.raw_json(obj) if isinstance(obj, msgspec.Struct) else None
    if raw is not None:
        return raw
    return _jsonout.encode_general(obj, _jsonout.js_numbers)


_PREFIX = {SSE: b"data: ", RS: b"", NDJSON: b""}
_SUFFIX = {SSE: b"\n\n", RS: b"\x1e", NDJSON: b"\n"}
_DONE = {SSE: b"data: [DONE]\n\n", RS: b"", NDJSON: b""}


class Encoder:
    """Chunks -> framed bytes, exactly as Mastra's server writes them."""

    def __init__(self, framing: str = "sse"):
        fr = _framing_code(framing)
        if fr not in (SSE, RS, NDJSON):
            raise ValueError(f"encoding framing must be 'sse', 'rs' or 'ndjson', got {framing!r}")
        self._fr = fr
        self.framing = framing

    def encode(self, chunk: Any) -> bytes:
        return _PREFIX[self._fr] + to_json(chunk) + _SUFFIX[self._fr]

    def frame(self, body: Any) -> bytes:
        """Already-encoded JSON text (bytes-like, one line) as one frame of this framing."""
        return _PREFIX[self._fr] + bytes(body) + _SUFFIX[self._fr]

    def encode_into(self, chunk: Any, buffer: bytearray, offset: int = 0) -> None:
        """Write the framed chunk into buffer at offset (-1: at the end); the buffer ends after it."""
        if offset < 0:
            offset = len(buffer)
        elif offset > len(buffer):
            raise ValueError("offset is past the end of the buffer")
        frame = self.encode(chunk)
        del buffer[offset:]
        buffer.extend(frame)

    def end(self) -> bytes:
        """The end-of-stream marker of this framing (``data: [DONE]\\n\\n`` for SSE, else empty)."""
        return _DONE[self._fr]


#: The accumulator the reference path builds Accumulator on: _accum as it is, plain Python.
AccumulatorBase = _accum.AccumulatorBase


class DeltaBuf:
    """A growing UTF-8 buffer an Accumulator appends deltas to; ``owner`` is the part writing at
    its end.  ``view()`` is a read-only memoryview of the bytes so far, without a copy; appending
    while a view is held moves the data to a new bytearray and leaves the view as it was."""

    __slots__ = ("data", "owner")

    def __init__(self) -> None:
        self.data = bytearray()
        self.owner: Any = None

    def append(self, b: bytes) -> None:
        try:
            self.data += b
        except BufferError:
            self.data = bytearray(self.data)
            self.data += b

    def view(self) -> memoryview:
        return memoryview(self.data).toreadonly()

    def __len__(self) -> int:
        """Its bytes so far."""
        return len(self.data)

    def text(self, start: int = 0, end: int = -1) -> str:
        """The bytes [start:end] as text; end -1 or past the end: to the end."""
        n = len(self.data)
        return _accum._utf8(self.data, max(start, 0), n if end < 0 or end > n else end)
