"""The exception hierarchy, and the one place where low-level failures become exceptions.

Every decoding failure is a :class:`DecodeError` that says what went wrong and where: ``.pos`` is the
absolute byte offset in the stream, ``.frame_index`` the 0-based index of the frame, ``.frame`` the
offending frame's bytes cut to a readable length.
"""

from __future__ import annotations

import re

__all__ = [
    "ChunkError",
    "DecodeError",
    "ValidationError",
    "FrameTooLarge",
    "TruncatedError",
    "EncodeError",
    "InvalidFrame",
]

#: How many bytes of an offending frame an exception keeps and shows.
FRAME_EXCERPT = 200


class ChunkError(Exception):
    """Base class of every chunkcodec error."""


class DecodeError(ChunkError, ValueError):
    """Input bytes could not be decoded: bad framing, bad UTF-8, bad JSON."""

    def __init__(self, msg: str, pos: int | None = None, frame_index: int | None = None,
                 frame: bytes | None = None):
        super().__init__(msg)
        self.pos = pos
        self.frame_index = frame_index
        self.frame = frame


class ValidationError(DecodeError):
    """The JSON is well formed but does not match the chunk schema (message ends with the path)."""


class FrameTooLarge(DecodeError):
    """A frame grew past ``max_frame_bytes`` before its terminator arrived."""


class TruncatedError(DecodeError):
    """The stream ended in the middle of a frame."""


class EncodeError(ChunkError, TypeError):
    """A value cannot be encoded as Mastra writes it."""


class InvalidFrame:
    """What ``errors="keep"`` yields for a frame that failed to decode: the raw bytes and the error.

    ``raw`` holds every byte of the frame (for :class:`FrameTooLarge`, the first ``max_frame_bytes``
    bytes and ``dropped`` says how many more were skipped).
    """

    __slots__ = ("raw", "error", "frame_index", "pos", "dropped")

    def __init__(self, raw: bytes, error: DecodeError, frame_index: int, pos: int, dropped: int = 0):
        self.raw = raw
        self.error = error
        self.frame_index = frame_index
        self.pos = pos
        self.dropped = dropped

    def __repr__(self) -> str:
        return (f"InvalidFrame(frame_index={self.frame_index}, pos={self.pos}, "
                f"raw={_excerpt(self.raw)!r}, error={self.error!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InvalidFrame):
            return NotImplemented
        return (self.raw, type(self.error), str(self.error), self.frame_index, self.pos,
                self.dropped) == (other.raw, type(other.error), str(other.error),
                                  other.frame_index, other.pos, other.dropped)

    __hash__ = None  # type: ignore[assignment]


def _excerpt(frame: bytes, at: int | None = None, width: int = 60) -> bytes:
    """The part of a frame worth showing: around `at` when given, else its start."""
    frame = bytes(frame)
    if len(frame) <= width:
        return frame
    if at is None:
        return frame[:width] + b"..."
    lo = max(0, min(at - width // 2, len(frame) - width))
    return (b"..." if lo else b"") + frame[lo:lo + width] + (b"..." if lo + width < len(frame) else b"")


def _where(pos: int, frame_index: int) -> str:
    return f"(byte {pos}, frame {frame_index})"


_BYTE_RE = re.compile(r"\s*\(byte (\d+)\)$")


def from_msgspec(exc: BaseException, frame: bytes, frame_index: int, frame_pos: int) -> DecodeError:
    """Turn an exception raised while decoding one frame into our exception.

    Both the native and the reference path come through here, so their messages are identical.
    """
    frame = bytes(frame)
    cut = frame[:FRAME_EXCERPT]
    import msgspec  # local: keep this module importable without side effects

    if isinstance(exc, msgspec.ValidationError):
        msg = str(exc)
        return ValidationError(f"{msg} {_where(frame_pos, frame_index)}", frame_pos, frame_index, cut)
    if isinstance(exc, UnicodeDecodeError):
        try:
            frame.decode("utf-8")
            rel, reason = 0, exc.reason
        except UnicodeDecodeError as e:
            rel, reason = e.start, e.reason
        pos = frame_pos + rel
        return DecodeError(f"Frame is not valid UTF-8: {reason} {_where(pos, frame_index)}: "
                           f"{_excerpt(frame, rel)!r}", pos, frame_index, cut)
    if isinstance(exc, RecursionError):
        return DecodeError(f"Frame nests too deeply {_where(frame_pos, frame_index)}: "
                           f"{_excerpt(frame)!r}", frame_pos, frame_index, cut)
    msg = str(exc)
    if msg == "Input data was truncated":
        pos = frame_pos + len(frame)
        return DecodeError(f"Frame is malformed: JSON ends before the value is complete "
                           f"{_where(pos, frame_index)}: {_excerpt(frame, len(frame))!r}",
                           pos, frame_index, cut)
    m = _BYTE_RE.search(msg)
    rel = int(m.group(1)) if m else 0
    detail = _BYTE_RE.sub("", msg)
    detail = detail.replace("JSON is malformed: ", "")
    pos = frame_pos + rel
    return DecodeError(f"Frame is malformed: {detail} {_where(pos, frame_index)}: "
                       f"{_excerpt(frame, rel)!r}", pos, frame_index, cut)


def frame_too_large(limit: int, frame_pos: int, frame_index: int, head: bytes) -> FrameTooLarge:
    return FrameTooLarge(f"Frame exceeds max_frame_bytes={limit} {_where(frame_pos, frame_index)}: "
                         f"{_excerpt(head)!r}", frame_pos, frame_index, bytes(head[:FRAME_EXCERPT]))


def truncated(framing: str, frame_pos: int, frame_index: int, tail: bytes,
              cause: DecodeError | None = None) -> TruncatedError:
    why = f": {cause}" if cause is not None else ""
    return TruncatedError(f"Stream ended mid-frame ({framing}) {_where(frame_pos, frame_index)}"
                          f"{why}", frame_pos, frame_index, bytes(tail[:FRAME_EXCERPT]))


def as_truncated(exc: DecodeError, framing: str, pos: int, tail: bytes) -> DecodeError:
    """At close, a last frame whose JSON stops early means the stream was cut mid-frame."""
    if "JSON ends before the value is complete" in str(exc):
        return truncated(framing, pos, exc.frame_index or 0, tail, exc)
    return exc

