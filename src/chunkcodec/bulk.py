"""Bulk processing of stream logs: a columnar index, per-run reconstruction and statistics.

``scan`` indexes a log without making a Python object per chunk: the C core walks an mmap of the
file with the GIL released, on several threads (ranges split on frame boundaries), and returns
numpy columns.  ``reconstruct`` and ``stats`` stream through files with the accumulator, or cut a
large plain file between processes (see "reconstruct on several processes" below).

Inputs everywhere: a path (str or os.PathLike), a directory (its files, sorted), a glob, ``-`` for
standard input, bytes; ``.gz`` and ``.zst`` files are decompressed (zstd needs the ``zstandard``
package: ``pip install 'chunkcodec[zstd]'``).  Plain files are mapped, not read, so ``scan`` works on
files larger than memory; compressed input and stdin are read into memory first.
"""

from __future__ import annotations

import contextlib
import glob as _glob
import gzip
import io
import mmap
import os
import re
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, Iterator

import msgspec

# (numpy is imported by the functions that make or read index columns, not here: reconstruct and
# the command line's cat and bench make none, and a command line run then starts without it)
from . import _reference
from ._gc import PAUSED
from ._jsonout import no_lone_surrogates, utf8_json
from ._model import _json_obj
from .chunks import TAGGED
from .errors import DecodeError

__all__ = ["Index", "scan", "reconstruct", "stats", "Stats", "iter_sources", "TYPE_NAMES",
           "CorruptRegion", "runs_to_arrow", "write_parquet", "RUN_COLUMNS", "grep", "Hit"]

#: Codes below the named types (csrc/include/chunkcodec/bulk.h).
_SPECIAL = ["<corrupt>", "<unknown>", "data-*", "<sse-multi>"]
_NAMED = sorted((t.encode() for t in TAGGED), key=lambda b: (len(b), b))
#: type code -> name: index.type_names[index.type[i]].
TYPE_NAMES = _SPECIAL + [b.decode() for b in _NAMED]
_CODE = {n: i for i, n in enumerate(TYPE_NAMES)}
CORRUPT, UNKNOWN, DATA, MULTI = 0, 1, 2, 3
_TOOL_OUTPUT = _CODE["tool-output"]
_DELTAS = {_CODE["text-delta"]: "text", _CODE["reasoning-delta"]: "text",
           _CODE["tool-call-delta"]: "argsTextDelta"}
#: A range smaller than this is not split further between threads.
MIN_PART_BYTES = 8 << 20
_FRAMINGS = {"sse": _reference.SSE, "rs": _reference.RS, "ndjson": _reference.NDJSON}

try:
    from . import _bulk
    _TYPES = _bulk.TypeTable(_NAMED, (0, _CODE["text-delta"], _CODE["reasoning-delta"],
                                      _CODE["tool-call-delta"]))
except ImportError:  # pragma: no cover - a build without the extension
    _bulk = None


class CorruptRegion(msgspec.Struct, frozen=True):
    """A frame that could not be read: where it is and why."""
    source: str
    offset: int
    length: int
    reason: str

    def __str__(self) -> str:
        return f"{self.source}: byte {self.offset}: {self.reason}"


# ------------------------------------------------------------------------------------------------
# Inputs

def _in_memory(source: Any) -> bool:
    """A log held in memory (bytes-like), which scan, reconstruct, stats and grep take as one input,
    as against a path."""
    return isinstance(source, (bytes, bytearray, memoryview))


def iter_sources(inputs: Any) -> Iterator[str]:
    """Expand paths, directories and globs into file names ('-' is standard input)."""
    if _in_memory(inputs):
        raise TypeError(f"a log in memory ({type(inputs).__name__}) is no path: scan, reconstruct, stats and "
                        "grep take it as it is; elsewhere, write it to a file")
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    for item in inputs:
        if _in_memory(item):
            raise TypeError(f"a log in memory ({type(item).__name__}) is an input on its own, not one "
                            "of a list of paths: pass it alone, or write it to a file")
        s = os.fspath(item)
        if s == "-":
            yield s
        elif os.path.isdir(s):
            for root, _, files in sorted(os.walk(s)):
                for f in sorted(files):
                    yield os.path.join(root, f)
        elif any(c in s for c in "*?[") and not os.path.exists(s):
            found = sorted(_glob.glob(s, recursive=True))
            if not found:
                raise FileNotFoundError(f"no file matches {s!r}")
            yield from (f for f in found if os.path.isfile(f))
        else:
            if not os.path.exists(s):
                raise FileNotFoundError(f"no such file: {s!r}")
            yield s


def _decompressor(path: str, head: bytes) -> Any:
    if head[:2] == b"\x1f\x8b":
        return gzip.open(path, "rb")
    if head[:4] == b"\x28\xb5\x2f\xfd":
        try:
            import zstandard
        except ImportError:
            raise RuntimeError(f"{path} is zstd-compressed: install the zstandard package "
                               f"(pip install 'chunkcodec[zstd]')") from None
        return zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)
    return None


def open_stream(path: str) -> Any:
    """A binary file object of the decompressed contents ('-': stdin)."""
    if path == "-":
        return sys.stdin.buffer
    with open(path, "rb") as f:
        head = f.read(4)
    d = _decompressor(path, head)
    return d if d is not None else open(path, "rb")


def _load(source: Any) -> tuple[Any, str, CorruptRegion | None]:
    """(buffer, name, cut) for scan: an mmap of a plain file, else the bytes in memory; cut is
    where a compressed input ends early (None when it is whole)."""
    if _in_memory(source):
        return source, "<bytes>", None
    path = os.fspath(source)
    if path == "-":
        return sys.stdin.buffer.read(), "<stdin>", None
    with open(path, "rb") as f:
        if _decompressor(path, f.read(4)) is None:
            if os.fstat(f.fileno()).st_size == 0:
                return b"", path, None
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), path, None
    cuts: list = []
    data = b"".join(_file_pieces(path, cuts, False))
    return data, path, (CorruptRegion(path, len(data), 0, cuts[0].reason) if cuts else None)


# ------------------------------------------------------------------------------------------------
# scan

class Index:
    """The columnar index of one log: a row per frame, numpy columns, no object per chunk.

    offset, length: where the frame's JSON text is (absolute byte offsets); type: a code,
    ``type_names[code]`` is the chunk type (``<corrupt>`` for a frame that is not a well-formed
    object, ``<unknown>`` for a type not in this version); run: index into ``run_ids`` (-1: no
    runId); text_off, text_len: for delta frames the span of the delta text, still JSON-escaped
    (-1 / 0 otherwise).
    """

    def __init__(self, cols: tuple, run_ids: list, buffer: Any, source: str, framing: str):
        self.offset, self.length, self.type, self.run, self.text_off, self.text_len = cols
        self.run_ids = run_ids
        self.type_names = TYPE_NAMES
        self.buffer = buffer
        self.source = source
        self.framing = framing
        #: a compressed input that ends early: where its data stops (None when whole)
        self.cut: CorruptRegion | None = None

    def __len__(self) -> int:
        return len(self.offset)

    def __repr__(self) -> str:
        return (f"<chunkcodec.bulk.Index {self.source!r}: {len(self)} frames, {len(self.run_ids)} runs, "
                f"{self.framing}>")

    @property
    def nbytes(self) -> int:
        return len(self.buffer)

    def frame(self, i: int) -> bytes:
        o, n = int(self.offset[i]), int(self.length[i])
        return bytes(self.buffer[o:o + n])

    def text(self, i: int) -> str | None:
        """The delta text of row i, decoded; None for a row that is not a delta."""
        o = int(self.text_off[i])
        if o < 0:
            return None
        raw = bytes(self.buffer[o:o + int(self.text_len[i])])
        return raw.decode("utf-8") if b"\\" not in raw else _json_obj(b'"' + raw + b'"')

    def type_counts(self) -> dict:
        import numpy as np
        counts = np.bincount(self.type, minlength=len(TYPE_NAMES))
        return {TYPE_NAMES[i]: int(c) for i, c in enumerate(counts) if c}

    def corrupt(self) -> list:
        """The frames that could not be read, as CorruptRegion."""
        import numpy as np
        rows = np.flatnonzero(self.type == CORRUPT)
        found = [CorruptRegion(self.source, int(self.offset[r]), int(self.length[r]),
                               "not a well-formed JSON object (cut short, or not JSON)") for r in rows]
        return found + ([self.cut] if self.cut is not None else [])

    def to_arrow(self) -> Any:
        """A pyarrow Table: offset, length, type (dictionary), run_id (dictionary), text_off,
        text_len.  Needs pyarrow (``pip install 'chunkcodec[arrow]'``)."""
        import numpy as np
        pa = _pyarrow()
        type_col = pa.DictionaryArray.from_arrays(pa.array(self.type.astype(np.int32)),
                                                  pa.array(TYPE_NAMES))
        runs = pa.array(self.run, mask=self.run < 0)
        try:
            ids = pa.array(self.run_ids, pa.string())
        except UnicodeEncodeError:  # a lone surrogate in a run id: U+FFFD (Arrow holds UTF-8)
            ids = pa.array(no_lone_surrogates(self.run_ids), pa.string())
        run_col = pa.DictionaryArray.from_arrays(runs, ids)
        return pa.table({"offset": self.offset, "length": self.length, "type": type_col,
                         "run_id": run_col, "text_off": self.text_off, "text_len": self.text_len})


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError:
        raise RuntimeError("Arrow export needs pyarrow: pip install 'chunkcodec[arrow]'") from None
    return pyarrow


def _framing_of(buf: Any, framing: str) -> int:
    if framing != "auto":
        if framing not in _FRAMINGS:
            raise ValueError(f"scan reads 'sse', 'rs' or 'ndjson' logs (or 'auto'), got {framing!r}")
        return _FRAMINGS[framing]
    fr, _ = _reference.detect_framing(bytes(buf[:65536]), True)
    if fr == _reference.JSON:
        raise ValueError("this looks like one JSON document, not a log of frames; use iter_chunks")
    return fr if fr != _reference.AUTO else _reference.NDJSON


def _decode_run_id(raw: bytes) -> str:
    """A runId as written (a JSON string's bytes) as a str.  The run of a frame that is not valid
    JSON (read structurally) may hold a bad escape or bad UTF-8: those are kept as written, with
    U+FFFD for the bad bytes, rather than fail the whole index."""
    if b"\\" in raw:
        try:
            return _json_obj(b'"' + raw + b'"')
        except (msgspec.DecodeError, UnicodeDecodeError):
            pass
    return raw.decode("utf-8", "replace")


def scan(source: Any, framing: str = "auto", workers: int | None = None) -> Index:
    """Index a log (see :class:`Index`).  workers: threads (default: the CPUs this process may
    use); the result does not depend on it."""
    buf, name, cut = _load(source)
    idx = _scan(buf, name, framing, workers)
    idx.cut = cut
    return idx


def _scan(buf: Any, name: str, framing: str, workers: int | None) -> Index:
    fr = _framing_of(buf, framing)
    if _bulk is None or os.environ.get("CHUNKCODEC_NO_EXTENSIONS"):
        cols, runs = _scan_reference(buf, fr)
        return Index(cols, runs, buf, name, _reference._NAMES[fr])
    n = len(buf)
    if workers is None:
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    parts = max(1, min(workers, n // MIN_PART_BYTES or 1))
    cuts = [0] + [_bulk.boundary(buf, n * k // parts, fr) for k in range(1, parts)] + [n]
    ranges = [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a] or [(0, 0)]
    if len(ranges) == 1:
        cols, runs = _bulk.scan_range(_TYPES, buf, ranges[0][0], ranges[0][1], fr)
        return Index(cols, _bulk.decode_run_ids(runs, _decode_run_id), buf, name, _reference._NAMES[fr])
    cols, runs = _scan_parallel(buf, fr, ranges)
    return Index(cols, runs, buf, name, _reference._NAMES[fr])


#: Rows and bytes a range is indexed in at a time by the parallel scan (about 2.5 MB of columns);
#: a thread that is done takes half of the largest range left if that has STEAL_BYTES or more.
#: The first range is indexed from its end down in pieces of BACK_PIECE_BYTES, whose rows stay in
#: the cache until they are copied into place.
PIECE_ROWS = 1 << 16
PIECE_BYTES = 8 << 20
STEAL_BYTES = 4 << 20
BACK_PIECE_BYTES = 128 << 10


class _Range:
    """A range of the parallel scan indexed from its start up: its scanner, the end of the piece
    being indexed (it is not cut before that), and its rows once done."""

    def __init__(self, buf: Any, a: int, b: int, fr: int) -> None:
        self.scan = _bulk.RangeScan(_TYPES, buf, a, b, fr)
        self.piece_end = a
        self.rows: int | None = None
        self.pieces: list = []          # (columns, row within the range), in order

    def left(self) -> int:
        """The bytes another thread may take: past the piece being indexed."""
        return self.scan.end - self.piece_end if self.rows is None else 0


class _Anchor:
    """The first range of the parallel scan, indexed from its end down (a BackScan), so that its
    rows end at row `top` of the merged columns, where the next range's rows start: neither range
    waits to know where its rows go, and neither is copied.  Its rows so far start at `bottom`;
    the piece being indexed starts at piece_lo (the range is not cut above that)."""

    def __init__(self, buf: Any, a: int, b: int, fr: int, top: int) -> None:
        self.scan = _bulk.BackScan(_TYPES, buf, a, b, fr)
        self.piece_lo = b
        self.top = self.bottom = top
        self.rows: int | None = None

    def left(self) -> int:
        """The bytes another thread may take: below the piece being indexed."""
        return self.piece_lo - self.scan.start if self.rows is None else 0


class _Layout:
    """The ranges of a parallel scan in file order, which grows when a thread that is done takes
    half of a range still being indexed; where each range's rows go in the merged columns; and
    the pieces a range indexed before it knew, which the threads that are done copy into place.

    The anchor (the first range, see _Anchor) fixes the places: a range after it knows where its
    rows start once the ranges between the anchor and it are done; a range cut from the anchor's
    lower part lies before it, and its rows go below the anchor's once those are all known."""

    def __init__(self, ranges: list, out: tuple) -> None:
        self.cond = threading.Condition()
        self.ranges = ranges
        self.out = out
        self.room = len(out[0])
        self.waiting: list = []        # (range, columns, row within the range)
        self.failed = False            # a thread raised: the others stop waiting

    def anchor(self) -> int:
        return next(i for i, q in enumerate(self.ranges) if isinstance(q, _Anchor))

    def _start(self, r: _Range) -> int | None:
        a = self.anchor()
        i = self.ranges.index(r)
        if i > a:
            at = self.ranges[a].top
            for q in self.ranges[a + 1:i]:
                if q.rows is None:
                    return None
                at += q.rows
            return at
        if self.ranges[a].rows is None:
            return None
        at = self.ranges[a].bottom
        for q in self.ranges[i:a]:
            if q.rows is None:
                return None
            at -= q.rows
        return at

    def next_piece(self, r: _Range) -> tuple:
        """(end of r's next piece, where r's rows start or None): r is not cut before that end."""
        with self.cond:
            r.piece_end = r.scan.piece_end(PIECE_BYTES)
            return r.piece_end, self._start(r)

    def next_back_piece(self, r: _Anchor) -> int:
        """The start of the anchor's next piece down: it is not cut above that."""
        with self.cond:
            r.piece_lo = r.scan.piece_start(PIECE_BYTES)
            return r.piece_lo

    def wait(self, r: _Range, cols: tuple, row: int) -> None:
        with self.cond:
            self.waiting.append((r, cols, row))

    def done(self, r: Any, rows: int) -> None:
        with self.cond:
            r.rows = rows
            self.cond.notify_all()

    def fail(self) -> None:
        with self.cond:
            self.failed = True
            self.cond.notify_all()

    def steal(self, buf: Any, fr: int) -> _Range | None:
        """A new range: half of what the largest range has left (the upper half of a range
        indexed up, the lower half of the anchor)."""
        with self.cond:
            best, left = None, STEAL_BYTES - 1
            for q in self.ranges:
                if q.left() > left:
                    best, left = q, q.left()
            if best is None:
                return None
            if isinstance(best, _Anchor):
                lo = best.scan.start
                cut = _bulk.boundary(buf, lo + left // 2, fr)
                if not lo < cut < best.piece_lo:
                    return None
                new = _Range(buf, lo, cut, fr)
                best.scan.start = cut
                self.ranges.insert(self.ranges.index(best), new)
                return new
            cut = _bulk.boundary(buf, best.piece_end + left // 2, fr)
            if not best.piece_end < cut < best.scan.end:
                return None
            new = _Range(buf, cut, best.scan.end, fr)
            best.scan.end = cut
            self.ranges.insert(self.ranges.index(best) + 1, new)
            return new

    def rest_of(self, r: _Anchor, buf: Any, fr: int) -> _Range:
        """The anchor done where its rows reached row 0: what it has left, as a range before it."""
        with self.cond:
            new = _Range(buf, r.scan.start, r.scan.end, fr)
            r.scan.start = r.scan.end
            self.ranges.insert(self.ranges.index(r), new)
            r.rows = r.top - r.bottom
            self.cond.notify_all()
            return new

    def copy_waiting(self) -> None:
        """Copy waiting pieces into place as their places become known, until none is left or
        every range is done (pieces outside the columns are then the caller's)."""
        while True:
            with self.cond:
                while True:
                    for i, (r, cols, row) in enumerate(self.waiting):
                        at = self._start(r)
                        if at is not None and 0 <= at + row and at + row + len(cols[0]) <= self.room:
                            del self.waiting[i]
                            break
                    else:
                        if not self.waiting or self.failed or all(q.rows is not None for q in self.ranges):
                            return
                        self.cond.wait()
                        continue
                    break
            _bulk.copy_rows(cols, self.out, at + row)


def _index_range(lay: _Layout, r: _Range) -> None:
    """Index one range piece by piece: straight into the merged columns once its place there is
    known, else into columns of its own (one allocation for the range: large ones get huge
    pages, so fewer page faults), left waiting to be copied."""
    import numpy as np
    out, room = lay.out, lay.room
    own: tuple = ()
    n = used = 0
    while True:
        limit, at = lay.next_piece(r)
        if r.scan.done:
            break
        direct = at is not None and at + n + PIECE_ROWS <= room
        if direct:
            cols = tuple(c[at + n:at + n + PIECE_ROWS] for c in out)
        else:
            if not own or used + PIECE_ROWS > len(own[0]):
                rows = (r.scan.end - r.scan.pos) // _bulk.ROW_GUESS + 16
                own = tuple(np.empty(max(PIECE_ROWS, rows), d) for d in _bulk.DTYPES)
                used = 0
            cols = tuple(c[used:used + PIECE_ROWS] for c in own)
        got = r.scan.fill(cols, limit)
        piece = tuple(c[:got] for c in cols)
        if not direct:
            used += got
            lay.wait(r, piece, n)
        r.pieces.append((piece, n))
        n += got
    lay.done(r, n)


def _index_back(lay: _Layout, r: _Anchor, buf: Any, fr: int) -> None:
    """Index the anchor from its end down, straight into the merged columns below its top row;
    should its rows reach row 0 (more than guessed), what is left becomes a range before it,
    indexed here into columns of its own (_merged then copies every row into new columns)."""
    while True:
        lo = lay.next_back_piece(r)
        if r.scan.done:
            break
        r.bottom -= r.scan.fill(lay.out, r.bottom, lo, BACK_PIECE_BYTES)
        if r.scan.end > lo:
            _index_range(lay, lay.rest_of(r, buf, fr))
            return
    lay.done(r, r.top - r.bottom)


def _scan_parallel(buf: Any, fr: int, ranges: list) -> tuple:
    """Index the ranges on a thread each, then (each thread on its own) halves of what the others
    have left.  The first range is the anchor (see _Anchor), its rows placed from a guess of its
    rows (48 bytes a frame) down, the next range's from there up, in columns with room for a
    guess of every range's rows (untouched pages cost nothing); see _index_range for the others.
    Last, the runs are renumbered in the order of their first appearance in the log."""
    import numpy as np
    top = (ranges[0][1] - ranges[0][0]) // _bulk.ROW_GUESS + 16
    room = top + sum((b - a) // _bulk.ROW_GUESS + 16 for a, b in ranges[1:])
    out = tuple(np.empty(room, d) for d in _bulk.DTYPES)
    lay = _Layout([_Anchor(buf, *ranges[0], fr, top)] + [_Range(buf, a, b, fr) for a, b in ranges[1:]], out)

    def work(r: Any) -> None:
        try:
            while r is not None:
                if isinstance(r, _Anchor):
                    _index_back(lay, r, buf, fr)
                else:
                    _index_range(lay, r)
                r = lay.steal(buf, fr)
            lay.copy_waiting()
        except BaseException:
            lay.fail()
            raise

    with ThreadPoolExecutor(len(ranges)) as ex:
        list(ex.map(work, list(lay.ranges)))
        return _merged(lay, ex, len(ranges))


def _merged(lay: _Layout, ex: ThreadPoolExecutor, threads: int) -> tuple:
    """The merged columns and run ids once every range is done: the pieces still waiting copied
    (every row into new columns if the rows went past either end of the guess), runs renumbered."""
    import numpy as np
    rs, out, a = lay.ranges, lay.out, lay.anchor()
    anchor = rs[a]
    starts = np.cumsum([0] + [r.rows for r in rs]).tolist()
    total = starts[-1]
    base = anchor.bottom - starts[a]         # the merged columns' row of the log's first row
    if base < 0 or base + total > lay.room:  # past either end: every row into new columns
        mine = [(tuple(c[i:min(i + PIECE_ROWS, anchor.top)] for c in out), starts[a] + i - anchor.bottom)
                for i in range(anchor.bottom, anchor.top, PIECE_ROWS)]
        todo = mine + [(cols, starts[k] + row) for k, r in enumerate(rs) if k != a for cols, row in r.pieces]
        out, base = tuple(np.empty(total, d) for d in _bulk.DTYPES), 0
    else:
        todo = [(cols, starts[rs.index(r)] + row) for r, cols, row in lay.waiting]
    list(ex.map(lambda p: _bulk.copy_rows(p[0], out, base + p[1]), todo))
    seen: dict = {}
    renum = []
    for k, r in enumerate(rs):
        if k == a:
            ids, inner = r.scan.run_order()
            order = np.array([seen.setdefault(i, len(seen)) for i in ids], dtype=np.int32)
            lut = np.full(len(inner), -1, dtype=np.int32)
            lut[inner >= 0] = order[inner[inner >= 0]]
        else:
            lut = np.array([seen.setdefault(i, len(seen)) for i in r.scan.run_ids()], dtype=np.int32)
        if not np.array_equal(lut, np.arange(len(lut), dtype=np.int32)):
            lo, hi = base + starts[k], base + starts[k + 1]
            step = -(-r.rows // threads) or 1
            renum += [(out[3][i:min(i + step, hi)], lut) for i in range(lo, hi, step)]
    list(ex.map(lambda p: _bulk.renumber(*p), renum))
    return tuple(c[base:base + total] for c in out), _bulk.decode_run_ids(list(seen), _decode_run_id)


#: "key": "string" (the string as written, escapes and all)
_MEMBER = {k: re.compile(rb'"%s"\s*:\s*("(?:[^"\\]|\\.)*")' % k.encode(), re.S) for k in set(_DELTAS.values())}


def _text_span(frame: bytes, key: str, value: str) -> tuple | None:
    """(offset, length) in frame of the string payload[key] as written, quotes excluded: the last
    `"key": "..."` whose string reads as value (the decoder's last key wins)."""
    found = None
    for m in _MEMBER[key].finditer(frame):
        if _json_obj(m.group(1)) == value:
            found = (m.start(1) + 1, len(m.group(1)) - 2)
    return found


# The structural reading of a frame's top level, as csrc/bulk.c's top_level does it, byte for
# byte: strings end at the first quote after an even run of backslashes, nested values are skipped
# by counting brackets (of either kind) outside strings, nothing else is checked.
_WS = b" \t\r\n"
_QUOTE_OR_BRACKET = re.compile(rb'["{}\[\]]')
_SCALAR = re.compile(rb'[^,} \n\r\t]*')
_NOT_IN_SCALAR = re.compile(rb'[{\["\]:]')
_CODE_RAW = {n.encode(): c for n, c in _CODE.items() if c >= len(_SPECIAL)}


def _skip_ws(p: bytes, i: int) -> int:
    n = len(p)
    while i < n and p[i] in _WS:
        i += 1
    return i


def _skip_str(p: bytes, i: int) -> int:
    """i is just past an opening quote: the index just past the closing one, or -1."""
    start = i
    while True:
        k = p.find(b'"', i)
        if k < 0:
            return -1
        j = k
        while j > start and p[j - 1] == 0x5C:
            j -= 1
        if (k - j) % 2 == 0:
            return k + 1
        i = k + 1


def _skip_container(p: bytes, i: int) -> int:
    """p[i] is '{' or '[': the index just past the matching bracket, or -1."""
    depth = 0
    while True:
        m = _QUOTE_OR_BRACKET.search(p, i)
        if m is None:
            return -1
        i = m.start()
        c = p[i]
        if c == 0x22:
            i = _skip_str(p, i + 1)
            if i < 0:
                return -1
            continue
        if c in b"{[":
            depth += 1
        else:
            if depth == 0:
                return -1
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1


def _top_level(p: bytes) -> tuple | None:
    """(raw "type" string, raw "runId" string), each None when there is no such string member
    (the last one wins), or None when the frame is not an object by bulk.c's structural rules."""
    n = len(p)
    i = _skip_ws(p, 0)
    if i >= n or p[i] != 0x7B or p.rstrip(_WS)[-1:] != b"}":
        return None
    i += 1
    typ = run = None
    while True:
        i = _skip_ws(p, i)
        if i >= n:
            return None
        if p[i] == 0x7D:
            return (typ, run) if _skip_ws(p, i + 1) == n else None
        if p[i] != 0x22:
            return None
        e = _skip_str(p, i + 1)
        if e < 0:
            return None
        key = p[i + 1:e - 1]
        i = _skip_ws(p, e)
        if i >= n or p[i] != 0x3A:
            return None
        i = _skip_ws(p, i + 1)
        if i >= n:
            return None
        c = p[i]
        if c == 0x22:
            e = _skip_str(p, i + 1)
            if e < 0:
                return None
            if key == b"type":
                typ = p[i + 1:e - 1]
            elif key == b"runId":
                run = p[i + 1:e - 1]
            i = e
        elif c == 0x7B or c == 0x5B:
            i = _skip_container(p, i)
            if i < 0:
                return None
        else:
            e = _SCALAR.match(p, i).end()
            if _NOT_IN_SCALAR.search(p, i, e):
                return None
            i = e
        i = _skip_ws(p, i)
        if i >= n:
            return None
        if p[i] == 0x2C:
            i += 1
            continue
        if p[i] == 0x7D:
            return (typ, run) if _skip_ws(p, i + 1) == n else None
        return None


def _code_of(raw: bytes | None) -> int:
    if raw is None:
        return UNKNOWN
    code = _CODE_RAW.get(raw)
    if code is not None:
        return code
    return DATA if len(raw) > 5 and raw.startswith(b"data-") else UNKNOWN


def _scan_reference(buf: Any, fr: int) -> tuple:
    """The plain-Python index, by the native index's rules: a frame's type and run are its
    top-level "type" and "runId" strings as written, read structurally (_top_level); a frame of
    a delta type must also be what the decoder reads (json.loads's rules), else it is corrupt, and
    its text span is found as _text_span finds it."""
    import numpy as np
    data = bytes(buf)
    frames, _ = _reference.split_frames(fr, data, True)
    off, ln, ty, rn, toff, tln = [], [], [], [], [], []
    runs: dict = {}
    for kind, start, length, _, _ in frames:
        if kind == _reference.DONE_KIND:
            continue
        frame = data[start:start + length]
        off.append(start)
        ln.append(length)
        t_off, t_len, run = -1, 0, -1
        top = None if kind == _reference.MULTI_KIND else _top_level(frame)
        if kind == _reference.MULTI_KIND:
            code = MULTI
        elif top is None:
            code = CORRUPT
        else:
            code, run_raw = _code_of(top[0]), top[1]
            key = _DELTAS.get(code)
            if key:
                try:
                    obj = _json_obj(frame)      # what the decoder reads: json.loads's rules
                except (msgspec.DecodeError, UnicodeDecodeError):
                    obj = None
                if not isinstance(obj, dict):
                    code, run_raw = CORRUPT, None
                else:
                    p = obj.get("payload")
                    if isinstance(p, dict) and isinstance(p.get(key), str):
                        span = _text_span(frame, key, p[key])
                        if span is not None:
                            t_off, t_len = start + span[0], span[1]
            if run_raw is not None:
                run = runs.setdefault(run_raw, len(runs))
        ty.append(code)
        rn.append(run)
        toff.append(t_off)
        tln.append(t_len)
    cols = (np.array(off, np.int64), np.array(ln, np.int64), np.array(ty, np.int16),
            np.array(rn, np.int32), np.array(toff, np.int64), np.array(tln, np.int64))
    return cols, [_decode_run_id(r) for r in runs]


# ------------------------------------------------------------------------------------------------
# reconstruct and stats

#: reconstruct and stats feed the accumulator this many bytes at a time and hand out the runs
#: finished after each piece; plain files are cut at multiples of it (from the file's start), so
#: that the runs come out in the same order on one core and on several.
RUN_PIECE_BYTES = 1 << 20
#: A plain file smaller than this is reconstructed on one core whatever `workers` says: starting
#: the processes (about 0.4 s: a fresh interpreter each, importing chunkcodec) and doing again the
#: runs that span their ranges would cost about what a second core saves on a smaller file.
MIN_PARALLEL_BYTES = 256 << 20
#: With workers, the files that are not split (smaller or compressed) go to the worker processes,
#: a file each, when there are two or more of them and they hold this much (on disk) in all.
MIN_FILES_PARALLEL_BYTES = 256 << 20


def _file_pieces(path: str, errors: list, strict: bool, progress: Any = None,
                 piece: int | None = None) -> Iterator[Any]:
    """The decompressed bytes of one input in pieces of `piece` (default RUN_PIECE_BYTES) bytes; a
    cut compressed stream is reported in errors (or raised when strict) after what came before it.
    progress(n) is told of each piece's size."""
    piece = piece or RUN_PIECE_BYTES
    f = open_stream(path)
    plain = isinstance(f, io.BufferedReader) and f is not sys.stdin.buffer
    # a plain file: whole pieces (the order of the runs handed out depends on where the pieces
    # end); else read1: one decompression step per call, so a member cut short loses nothing
    # before it
    read = f.read if plain else getattr(f, "read1", f.read)
    try:
        while True:
            try:
                data = read(piece)
            except (EOFError, OSError) as exc:
                region = CorruptRegion(path, -1, 0, f"compressed data ends early ({exc})")
                if strict:
                    raise DecodeError(str(region)) from None
                errors.append(region)
                return
            if not data:
                return
            if progress is not None:
                progress(len(data))
            yield data
    finally:
        if f is not sys.stdin.buffer:
            f.close()


def _buffer_pieces(buf: Any, progress: Any = None, size: int | None = None) -> Iterator[Any]:
    size = size or RUN_PIECE_BYTES
    view = memoryview(buf)
    for i in range(0, len(view), size):
        piece = view[i:i + size]
        if progress is not None:
            progress(len(piece))
        yield piece


def _order(run: Any) -> tuple:
    """Where a run comes among those handed out at the same time: by runId."""
    return (run.run_id is not None, run.run_id or "")


def _handed_out(runs: Iterator[Any]) -> list:
    """Runs popped from an accumulator, in reconstruct's order, without invalid_frames (reconstruct
    reports those as CorruptRegions, with their byte offsets in the file)."""
    out = sorted(runs, key=_order)
    for r in out:
        r.invalid_frames = []
    return out


def _runs(pieces: Iterable[Any], name: str, framing: str, strict: bool, errors: list) -> Iterator[Any]:
    """RunOutputs from a stream of pieces: after each piece the runs that ended in it (their
    finish or tripwire chunk came in it: pop_finished), by runId; at the end the others, by
    runId."""
    from . import Accumulator
    acc = Accumulator(framing, errors="strict" if strict else "keep")
    try:
        for piece in pieces:
            acc.feed(piece)
            yield from _handed_out(acc.pop_finished())
        acc.close()
    except DecodeError as exc:
        raise type(exc)(f"{name}: {exc}", exc.pos, exc.frame_index, exc.frame) from None
    errors.extend(CorruptRegion(name, inv.pos, len(inv.raw), str(inv.error)) for inv in acc.invalid_frames)
    yield from _handed_out(acc.pop_results())


def _workers(workers: int | None) -> int:
    if workers is None:
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers must be a positive int or None, got {workers!r}")
    return workers


def reconstruct(inputs: Any, framing: str = "auto", strict: bool = False, errors: list | None = None,
                progress: Any = None, workers: int | None = 1, apply: Any = None) -> Iterator[Any]:
    """One RunOutput per run (what the accumulator gives), or apply(run) when apply is given.

    With one worker (the default) the runs are streamed: a run is yielded when its finish chunk
    arrives, the rest at the end of its file, so memory is bounded by the runs in flight, not by
    the file.  workers=N (None: every CPU this process may use) reconstructs each plain file of
    MIN_PARALLEL_BYTES or more on N processes, which yields the same runs in the same order, but
    only once the whole file is done: what it yields for the file is held in memory meanwhile.
    The other files (smaller or compressed) go to the workers a file each, when there are two or
    more of them holding MIN_FILES_PARALLEL_BYTES in all; their results come back in the order of
    the files, at most workers + 1 files' worth held at once.  Stdin, and files too few or small
    to share, take the one-core path.  apply then runs in the worker processes (it must be
    picklable: a module-level function), and only what it returns comes back, which costs less
    than sending whole RunOutputs back to be rebuilt here.  (Like any code that starts processes,
    a script calling this with workers must guard its entry point with
    ``if __name__ == "__main__":``.)

    inputs may also be one log in memory (bytes, bytearray, memoryview), as for scan: its runs
    are reconstructed in this process, the way a file's are with one worker, and its
    CorruptRegions are named "<bytes>".

    The order: each file is fed in pieces of RUN_PIECE_BYTES; after each piece come the runs
    that ended in it (a finish chunk, or a tripwire one: Mastra sends nothing after it), by runId;
    at the end of the file the others, by runId.

    Lenient by default: a corrupt frame (a cut line, binary garbage) or a half-written gzip
    member is skipped and appended to `errors` as a CorruptRegion with file and byte offset;
    strict=True raises at the first one instead.  Every other run is still reconstructed.  (The
    RunOutputs' own invalid_frames stay empty: the CorruptRegions say where, in the file.)
    progress, when given, is called with the number of (decompressed) bytes of each piece read.
    """
    n = _workers(workers)
    errs = errors if errors is not None else []
    if _in_memory(inputs):
        runs = _runs(_buffer_pieces(inputs, progress), "<bytes>", framing, strict, errs)
        yield from (runs if apply is None else map(apply, runs))
        return
    jobs = _scheduled(iter_sources(inputs), n,
                      lambda ex, path: ex.submit(_file_runs, path, framing, strict, apply, RUN_PIECE_BYTES))
    for path, job, pool in jobs:
        name = "<stdin>" if path == "-" else path
        if job is not None:
            got = _unpickled(job.result())
            if got is not None:
                made, found, size = got
                if progress is not None:
                    progress(size)
                yield from made
                errs.extend(found)
                continue
            # (strict, and a bad frame: done again here, which raises as the one-process run does)
        elif pool is not None:
            got = _parallel_runs(path, framing, strict, errs, n, apply, progress, pool=pool)
            if got is not None:
                yield from got
                continue
        runs = _runs(_file_pieces(path, errs, strict, progress), name, framing, strict, errs)
        yield from (runs if apply is None else map(apply, runs))


def _splittable(path: str) -> bool:
    """A plain file of MIN_PARALLEL_BYTES or more."""
    if path == "-":
        return False
    with open(path, "rb") as f:
        return _decompressor(path, f.read(4)) is None and os.fstat(f.fileno()).st_size >= max(MIN_PARALLEL_BYTES, 1)


def _scheduled(paths: Iterable[str], workers: int, submit: Any) -> Iterator[tuple]:
    """(path, job, pool) for each input in order.  job: submit(pool, path), a future, when the file
    went to a worker process; None when this process takes it: stdin, a file to split between the
    processes (pool is given then), or every file with one worker or too little to share.  At
    most workers + 1 files are submitted and not yet handed on (their answers are what is held);
    the pool is shut down at the end, or when the caller stops early."""
    if workers <= 1:
        yield from ((path, None, None) for path in paths)
        return
    paths = list(paths)
    split = [_splittable(p) for p in paths]
    whole = [p for p, big in zip(paths, split) if not big and p != "-"]
    share = len(whole) > 1 and sum(os.path.getsize(p) for p in whole) >= max(MIN_FILES_PARALLEL_BYTES, 1)
    if not share and not any(split):
        yield from ((path, None, None) for path in paths)
        return
    import collections
    pool = _pool(workers)
    waiting: collections.deque = collections.deque()
    try:
        for path, big in zip(paths, split):
            if share and not big and path != "-":
                waiting.append((path, submit(pool, path), pool))
                if len(waiting) > workers:
                    yield waiting.popleft()
                continue
            while waiting:
                yield waiting.popleft()
            yield path, None, (pool if big else None)
        while waiting:
            yield waiting.popleft()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _file_runs(path: str, framing: str, strict: bool, fn: Any, piece: int) -> bytes:
    """A worker's job: reconstruct one whole file, read in pieces of `piece` bytes.  Gives, pickled,
    (fn(run) or run for each run, the file's CorruptRegions, the bytes read), or None when strict
    and a frame is bad."""
    size = [0]

    def count(k: int) -> None:
        size[0] += k

    def work() -> Any:
        found: list = []
        try:
            runs = _runs(_file_pieces(path, found, strict, count, piece), path, framing, strict, found)
            made = [r if fn is None else fn(r) for r in runs]
        except DecodeError:
            return None
        return made, found, size[0]
    return _answer(work)


def _answer(work: Any) -> bytes:
    """A worker's answer: work(), pickled, both with the garbage collector off."""
    import pickle
    return _without_gc(lambda: pickle.dumps(work(), pickle.HIGHEST_PROTOCOL))


def _without_gc(work: Any) -> Any:
    """work(), with the garbage collector off meanwhile (see _range_runs and _gc.py)."""
    with PAUSED:
        return work()


# ------------------------------------------------------------------------------------------------
# reconstruct on several processes
#
# The file is cut on frame boundaries into one range per worker, and each worker reconstructs its
# range on its own, handing runs out after each piece that ends at a multiple of RUN_PIECE_BYTES
# (from the file's start) and at the range's end.  A run id seen in one range only is that
# range's alone: the accumulator keeps no state between runs, and its pieces end where the
# one-core run's do, so its runs are the one-core run's, handed out after the same piece.  The
# exception is a chunk without runId: it joins the run current then, the run of the last chunk
# before it that named one.  A worker has that run unless the chunk comes before any in its range
# (the cuts are moved to a frame naming a runId) or after that run was handed out; a worker that
# met such a chunk says so, and the file takes the one-core path.  (A run that finishes in a range's last, short, piece is handed out early; if its id
# comes again after the range's end, before the one-core run would have handed it out, the id is
# in two ranges.)  A run id seen in several ranges is done again, over the bytes its frames lie in
# (which the workers tell), fed only the frames of such ids where the index can cut them out, and
# keeping only their runs.  Then every run is sorted by (the piece it was handed out after, its
# runId), which is the one-core order.  Bad frames are reported by the range they lie in, their
# byte and frame numbers moved to count from the file's start.

#: Handed out at the end of the file: after every piece.
_AT_END = 1 << 62
#: How much more of the file the calling process takes than each worker: the work (about 0.3 s)
#: it does while they start up.
_HEAD_START_BYTES = 64 << 20


def _boundary(buf: Any, pos: int, fr: int) -> int:
    """The first frame boundary at or after pos (just past a separator), or len(buf).  (Also
    chunkcodec.dask's, for its partitions.)"""
    n = len(buf)
    if pos <= 0:
        return 0
    if pos >= n:
        return n
    if _bulk is not None and not os.environ.get("CHUNKCODEC_NO_EXTENSIONS"):
        return _bulk.boundary(buf, pos, fr)
    if fr == _reference.SSE:
        ends = [i + len(t) for t in (b"\n\n", b"\n\r\n") if (i := buf.find(t, pos - 1)) >= 0]
        return min(ends) if ends else n
    sep = _reference._SUFFIX[fr]
    if buf[pos - 1:pos] == sep:
        return pos
    i = buf.find(sep, pos)
    return i + 1 if i >= 0 else n


def _range_runs(path: str, framing: str, fr: int, a: int, b: int, piece: int, strict: bool, only: Any,
                fn: Any, gather: bool = True, pickled: bool = True) -> Any:
    """A worker's job (pickled=False: the calling process's): reconstruct buf[a:b] of a plain
    file (a and b frame boundaries), handing runs out after each piece that ends at a multiple
    of `piece` and at b.  framing: what the accumulator is told (the first range: the caller's,
    maybe "auto"); fr: the file's framing.

    Gives (pickled) None when strict and a frame is bad, else (runs, spans, invalid, runless):
    - runs: (piece index or _AT_END, _order key, fn(run), or the run when fn is None);
    - spans: run id -> [start, end], the bytes the frames of its runs lie in;
    - invalid: ([(offset, length, reason, frame index)], frames in the range), the first three
      counted from a;
    - runless: the run ids that chunks without runId joined (None: a run of their own).

    only: keep just the runs of these ids, fed only their frames (and the tool-output frames,
    which may carry them nested) when the index can cut those out and gather is true; invalid
    is then empty.

    The garbage collector is off meanwhile: what is built here holds no reference cycle, and a
    collector walking the growing list of runs would cost a third of the time."""
    def work() -> Any:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return _reconstruct_range(buf, framing, fr, a, b, piece, strict, only, fn, gather)
    return _answer(work) if pickled else _without_gc(work)


def _reconstruct_range(buf: Any, framing: str, fr: int, a: int, b: int, piece: int, strict: bool, only: Any,
                       fn: Any, gather: bool = True) -> tuple | None:
    from . import Accumulator
    out: list = []
    # run id -> [start, end]: no frame of the id lies outside buf[start:end] (start: a frame
    # boundary before the piece where the id came first; end: the end of the last piece after
    # which a run of the id was in flight or handed out, or b)
    span: dict = {}

    def hand_out(at: int, runs: Iterator[Any]) -> list:
        kept = []
        for r in _handed_out(runs):
            if only is None or r.run_id in only:
                kept.append(r.run_id)
                out.append((at, _order(r), r if fn is None else fn(r)))
        return kept

    def seen(rids: Iterable[Any], start: int, end: int) -> None:
        for rid in rids:
            sp = span.get(rid)
            if sp is None:
                span[rid] = [start, end]
            else:
                sp[1] = end

    pieces = None if only is None or not gather else _gathered(buf, fr, a, b, piece, only)
    if pieces is None:
        pieces = _cut(buf, a, b, piece)
    else:
        framing = _reference._NAMES[fr]     # (frames cut out: no byte-order mark, no detection)
    acc = Accumulator(framing, errors="strict" if strict and only is None else "keep")
    acc._runless_into = set()       # (what ties this range to the one before: see _split_runs)
    last = a                                 # the last frame boundary in what was fed
    try:
        for cell, data in pieces:
            acc.feed(data)
            if cell is None:          # a frame the end of the file cut short: read at close()
                break
            kept = hand_out(cell, acc.pop_finished())
            if only is None:
                end = min(b, (cell + 1) * piece)
                seen(kept, last, end)
                seen(acc.run_ids(), last, end)
                last = _last_boundary(buf, max(a, end - len(data)), end, fr, last)
        dec = acc._decoder
        acc.close()
    except DecodeError:
        return None
    seen(hand_out(_AT_END, acc.pop_results()), last, b)
    bad = [] if only is not None else [(inv.pos, len(inv.raw), str(inv.error), inv.frame_index)
                                       for inv in acc.invalid_frames]
    return out, span, (bad, 0 if dec is None else dec.frame_index), acc._runless_into


def _last_boundary(buf: Any, lo: int, hi: int, fr: int, default: int) -> int:
    """The last frame boundary (a place just past a separator) in buf(lo:hi], else default.  (For
    SSE, one past a blank line: a place between events, which is all its callers need.)"""
    if fr == _reference.SSE:
        i, j = buf.rfind(b"\n\n", lo, hi), buf.rfind(b"\n\r\n", lo, hi)
        return max(default, i + 2 if i >= 0 else -1, j + 3 if j >= 0 else -1)
    i = buf.rfind(b"\x1e" if fr == _reference.RS else b"\n", lo, hi)
    return i + 1 if i >= 0 else default


def _cut(buf: Any, a: int, b: int, piece: int) -> Iterator[tuple]:
    """(piece index, bytes): buf[a:b] cut at the multiples of piece."""
    pos = a
    while pos < b:
        end = min(b, (pos // piece + 1) * piece)
        yield (end - 1) // piece, buf[pos:end]
        pos = end


#: Whether the runs done again are fed only their own frames (else the whole byte range again;
#: the tests turn it off to check that path on the native build).
_GATHER = True
#: What the last file reconstructed on several processes was cut into (for the tests): ranges,
#: [(start, end)]; redone, {(first range, last range): (start, end, how many run ids)}.
_last_parallel: dict = {}


def _gathered(buf: Any, fr: int, a: int, b: int, piece: int, only: set) -> list | None:
    """The frames in buf[a:b] of the runs in `only`, and every tool-output frame, as
    (piece index, bytes) by the piece each ends in, each frame framed anew on its own; the last
    as (None, bytes) when the file ends in the middle of it.  None when the index cannot give
    them (the plain-Python build, or an SSE event of several data lines)."""
    if _bulk is None or os.environ.get("CHUNKCODEC_NO_EXTENSIONS"):
        return None
    import numpy as np
    pre, post = _reference._PREFIX[fr], _reference._SUFFIX[fr]     # a frame as the encoder writes it
    glue = post + pre
    n = len(buf)
    view = np.frombuffer(buf, np.uint8)
    # the separator a frame's JSON text is most often followed by at once (else: look for it)
    sep = np.frombuffer(post, np.uint8)
    sc = _bulk.RangeScan(_TYPES, buf, a, b, fr)
    cols = tuple(np.empty(PIECE_ROWS, d) for d in _bulk.DTYPES)
    wanted = np.zeros(0, bool)
    out: list = []
    while True:
        limit = sc.piece_end(PIECE_BYTES)
        if sc.done:
            return out
        rows = sc.fill(cols, limit)
        keys = sc.run_ids()
        if len(keys) > len(wanted):
            more = [_decode_run_id(k) in only for k in keys[len(wanted):]]
            wanted = np.concatenate([wanted, np.array(more, bool)])
        off, ln, ty, rn = (c[:rows] for c in cols[:4])
        pick = ty == _TOOL_OUTPUT
        if len(wanted):
            pick |= (rn >= 0) & wanted[np.maximum(rn, 0)]
        sel = np.flatnonzero(pick)
        if not len(sel):
            continue
        if (ty[sel] == MULTI).any():
            return None
        o = off[sel]
        stop = o + ln[sel]
        end = stop + len(sep)
        at_once = end <= n
        for k, byte in enumerate(sep):
            at_once &= view[np.minimum(stop + k, n - 1)] == byte
        end = end.tolist()
        for i in np.flatnonzero(~at_once).tolist():
            end[i] = _bulk.boundary(buf, int(stop[i]), fr)
        o, stop = o.tolist(), stop.tolist()
        if end[-1] == n and _reference.find_end(fr, bytes(buf[max(0, stop[-1] - 2):stop[-1]]),
                                                bytes(buf[stop[-1]:n])) < 0:
            cut = (pre + buf[o[-1]:stop[-1]] + post)     # the file ends in the middle of it
            o, stop, end = o[:-1], stop[:-1], end[:-1]
        else:
            cut = None
        cells = (np.array(end, np.int64) - 1) // piece
        edges = [0, *(np.flatnonzero(np.diff(cells)) + 1).tolist(), len(end)]
        for i, j in zip(edges, edges[1:]):
            if i == j:
                continue
            cell = int(cells[i])
            data = pre + glue.join([buf[o[k]:stop[k]] for k in range(i, j)]) + post
            if out and out[-1][0] == cell:
                out[-1] = (cell, out[-1][1] + data)
            else:
                out.append((cell, data))
        if cut is not None:
            out.append((None, cut))


def _pool(workers: int) -> Any:
    """Worker processes, started fresh (spawn: no fork of a process that may run threads; they
    see this process's environment, CHUNKCODEC_NO_EXTENSIONS included)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


def _parallel_runs(path: str, framing: str, strict: bool, errors: list, workers: int, fn: Any,
                   progress: Any, meanwhile: Any = None, pool: Any = None) -> list | None:
    """reconstruct of one plain file on `workers` processes, as a list in the one-core order; None
    when the file takes the one-core path (compressed, stdin, small, not decided by its first
    64 KiB, a chunk without runId, or strict with a bad frame: the one-core run then raises).
    meanwhile: called while the workers work, when they do.  pool: worker processes to use (at
    least workers - 1 of them, idle), else a pool is started here."""
    if framing not in ("auto", "sse", "rs", "ndjson") or not _splittable(path):
        return None
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        return _split_runs(path, buf, framing, strict, errors, workers, fn, progress, meanwhile, pool)


def _split_runs(path: str, buf: Any, framing: str, strict: bool, errors: list, workers: int, fn: Any,
                progress: Any, meanwhile: Any, pool: Any) -> list | None:
    """_parallel_runs of a plain file large enough, mapped as buf."""
    n = len(buf)
    fr, _ = _reference.detect_framing(bytes(buf[:65536]), False)
    if framing != "auto":
        fr = _FRAMINGS[framing]
    if fr not in _FRAMINGS.values():
        return None
    # this process starts on its range at once, the others after starting up: it gets more
    head = min(_HEAD_START_BYTES, n // (2 * workers))
    share = (n - head) // workers
    cuts = sorted({0, n, *(_cut_before_run_id(buf, _boundary(buf, head + share * k, fr), fr)
                           for k in range(1, workers))})
    ranges = list(zip(cuts, cuts[1:]))
    if len(ranges) < 2:
        return None
    piece = RUN_PIECE_BYTES
    # (the first range starts the file: it detects the framing as the one-core run does)
    jobs = [(path, framing if a == 0 else _reference._NAMES[fr], fr, a, b, piece, strict, None, fn) for a, b in ranges]
    # this process does the first range, and the first of the runs done again, itself: its core
    # would wait otherwise, and what it makes needs no sending back
    with contextlib.nullcontext(pool) if pool is not None else _pool(len(ranges) - 1) as ex:
        running = [ex.submit(_range_runs, *job) for job in jobs[1:]]
        if meanwhile is not None:
            meanwhile()
        done = [_range_runs(*jobs[0], pickled=False)]
        for (a, b), job in zip(ranges, [None] + running):
            if job is not None:
                done.append(_unpickled(job.result()))
            if progress is not None:
                progress(b - a)
        # a chunk without runId joins the run current then: one a worker found none for (at the
        # start of its range, or after that run was handed out) ties it to what came before
        if any(d is None or None in d[3] for d in done):
            return None
        joined = set().union(*(d[3] for d in done))
        seen: dict = {}
        for k, d in enumerate(done):
            for rid in d[1]:
                seen.setdefault(rid, []).append(k)
        # the ids seen in several ranges, by the first and last of those ranges, are done again:
        # from where the first range met the first of them to where the last range last had one
        groups: dict = {}
        for rid, ks in seen.items():
            if len(ks) > 1:
                g = groups.setdefault((ks[0], ks[-1]), [n, 0, set()])
                g[0] = min(g[0], done[ks[0]][1][rid][0])
                g[1] = max(g[1], done[ks[-1]][1][rid][1])
                g[2].add(rid)
        # (fed only their frames unless chunks without runId joined them: those are fed the
        # frames between, for the runs they join are as in the one-core run)
        again = [(path, framing if start == 0 else _reference._NAMES[fr], fr, start,
                  min(ranges[j][1], _boundary(buf, end, fr)), piece, strict, ids, fn, _GATHER and not ids & joined)
                 for (i, j), (start, end, ids) in groups.items()]
        running = [ex.submit(_range_runs, *job) for job in again[1:]]
        redone = [_range_runs(*job, pickled=False) for job in again[:1]]
        redone += [_unpickled(job.result()) for job in running]
        # a run done again may be handed out where a piece ends and a chunk without runId come
        # next, with no run current then: the one-core run makes it a run of its own, which the
        # runs done again do not keep (they keep only their ids)
        if any(d is None or None in d[3] for d in redone):
            return None
    shared = {rid for _, _, ids in groups.values() for rid in ids}
    _last_parallel.update(ranges=ranges, redone={k: (a, b, len(ids)) for k, (a, b, ids) in groups.items()})
    runs = [r for d in done for r in d[0] if r[1][1] not in shared]
    runs += [r for d in redone for r in d[0]]
    runs.sort(key=lambda r: (r[0], r[1]))
    frames = 0
    for (a, _), d in zip(ranges, done):
        bad, count = d[2]
        errors.extend(CorruptRegion(path, a + pos, ln, _moved(why, frame, a, frames)) for pos, ln, why, frame in bad)
        frames += count
    return [r[2] for r in runs]


_WHERE = re.compile(r"\(byte (\d+), frame (\d+)\)")


def _moved(reason: str, frame: int, pos: int, frames: int) -> str:
    """A worker's error message, its "(byte B, frame F)" counted from the file's start, not from
    the range's (pos: where the range starts; frames: the frames before it)."""
    def where(m: Any) -> str:
        if int(m.group(2)) != frame:
            return m.group(0)
        return f"(byte {int(m.group(1)) + pos}, frame {frame + frames})"
    return _WHERE.sub(where, reason)


def _cut_before_run_id(buf: Any, pos: int, fr: int) -> int:
    """pos (a frame boundary), or a later one before which a range may start: where a frame that
    names a runId starts (a chunk without one joins the run current then, which a worker that
    starts with it does not know: the file would take the one-core path).  At most 1000 frames on."""
    n = len(buf)
    for _ in range(1000):
        if pos >= n:
            return n
        end = _boundary(buf, pos + 1, fr)
        if buf.find(b'"runId"', pos, end) >= 0:
            return pos
        pos = end
    return pos


def _unpickled(data: bytes) -> Any:
    """A worker's answer, unpickled with the garbage collector off (see _range_runs)."""
    import pickle
    return _without_gc(lambda: pickle.loads(data))


#: stats' finish_reasons key for the runs without one (no finish chunk: a run cut off, or still
#: going when the log was written), so that every key is a string, as JSON needs.
NO_FINISH_REASON = "(none)"


class Stats(msgspec.Struct):
    """What ``stats`` counts over one or more logs (finish_reasons counts the runs without a finish
    reason under NO_FINISH_REASON)."""
    bytes: int = 0
    frames: int = 0
    runs: int = 0
    chunk_types: dict = msgspec.field(default_factory=dict)
    finish_reasons: dict = msgspec.field(default_factory=dict)
    status: dict = msgspec.field(default_factory=dict)
    tokens: dict = msgspec.field(default_factory=dict)
    tool_calls: dict = msgspec.field(default_factory=dict)
    tool_errors: dict = msgspec.field(default_factory=dict)
    corrupt: list = msgspec.field(default_factory=list)


def _add(d: dict, k: Any, n: int = 1) -> None:
    d[k] = d.get(k, 0) + n


def _run_counts(run: Any) -> tuple:
    """What stats needs of a run (small: the parallel path sends these, not the runs, back)."""
    tokens = [(k, v) for k, v in (run.total_usage or {}).items() if isinstance(v, int) and not isinstance(v, bool)]
    reason = run.finish_reason if run.finish_reason is not None else NO_FINISH_REASON
    return (reason, run.status, tokens, [c.payload.toolName for c in run.tool_calls],
            [e.payload.toolName for e in run.tool_errors])


def stats(inputs: Any, framing: str = "auto", strict: bool = False, progress: Any = None,
          workers: int | None = None) -> Stats:
    """Counts per chunk type (from the index), runs, tokens summed over the runs' total usage,
    tool calls and tool errors per tool, finish reasons, status, bytes, and corrupt regions.
    progress: as for reconstruct.  workers: threads for the index and processes for the runs (as
    reconstruct's, files shared out the same way; default: every CPU this process may use); the
    counts do not depend on it.  inputs: as for reconstruct, a log in memory included (its runs
    are done in this process, its index on `workers` threads)."""
    n = _workers(workers)
    if _in_memory(inputs):
        return _stats_of(inputs, framing, strict, n, progress, None)
    st = Stats()
    jobs = _scheduled(iter_sources(inputs), n,
                      lambda ex, path: ex.submit(_file_stats, path, framing, strict, RUN_PIECE_BYTES))
    for path, job, pool in jobs:
        part = _unpickled(job.result()) if job is not None else None
        if part is not None:
            if progress is not None:
                progress(part.bytes)
        else:       # (this process's file; or strict and a bad frame: done again here, which raises)
            part = _stats_of(path, framing, strict, n if job is None else 1, progress, pool)
        _merge(st, part)
    return st


def _file_stats(path: str, framing: str, strict: bool, piece: int) -> bytes:
    """A worker's job: stats of one file (its runs handed out after pieces of `piece` bytes), pickled;
    None when strict and a frame is bad."""
    def work() -> Any:
        try:
            return _stats_of(path, framing, strict, 1, None, None, piece)
        except DecodeError:
            return None
    return _answer(work)


def _stats_of(path: Any, framing: str, strict: bool, n: int, progress: Any, pool: Any,
              piece: int | None = None) -> Stats:
    """stats of one input (a path, or a log in memory); the runs on n processes (pool: the workers
    to use, if any) for a file that is split, else handed out after pieces of `piece` bytes
    (default RUN_PIECE_BYTES)."""
    st = Stats()
    found: list = []
    got: list = []        # the index, made while the workers (if any) reconstruct the runs
    counts = None
    if n > 1 and not _in_memory(path):
        counts = _parallel_runs(path, framing, strict, found, n, _run_counts, progress,
                                lambda: got.append(scan(path, framing, workers=n)), pool=pool)
    idx = got[0] if got else scan(path, framing, workers=n)
    name = "<stdin>" if isinstance(path, str) and path == "-" else idx.source
    st.bytes += idx.nbytes
    st.frames += len(idx)
    for k, v in idx.type_counts().items():
        _add(st.chunk_types, k, v)
    if strict and idx.cut is not None:
        raise DecodeError(str(idx.cut))
    if counts is None:
        runs = _runs(_buffer_pieces(idx.buffer, progress, piece), name, idx.framing, strict, found)
        counts = map(_run_counts, runs)
    for reason, status, tokens, calls, errs in counts:
        st.runs += 1
        _add(st.finish_reasons, reason)
        _add(st.status, status)
        for k, v in tokens:
            _add(st.tokens, k, v)
        for t in calls:
            _add(st.tool_calls, t)
        for t in errs:
            _add(st.tool_errors, t)
    st.corrupt.extend(found + ([idx.cut] if idx.cut is not None else []))   # in byte order
    return st


def _merge(st: Stats, part: Stats) -> None:
    st.bytes += part.bytes
    st.frames += part.frames
    st.runs += part.runs
    for mine, theirs in ((st.chunk_types, part.chunk_types), (st.finish_reasons, part.finish_reasons),
                         (st.status, part.status), (st.tokens, part.tokens), (st.tool_calls, part.tool_calls),
                         (st.tool_errors, part.tool_errors)):
        for k, v in theirs.items():
            _add(mine, k, v)
    st.corrupt.extend(part.corrupt)


# ------------------------------------------------------------------------------------------------
# Arrow and Parquet for reconstructed runs

#: The usage counters that get a column of their own (from total_usage; missing -> null).
_TOKENS = (("input_tokens", "inputTokens"), ("output_tokens", "outputTokens"), ("total_tokens", "totalTokens"),
           ("reasoning_tokens", "reasoningTokens"), ("cached_input_tokens", "cachedInputTokens"))
#: The columns of runs_to_arrow, in order (values that are free-form JSON are JSON text).
RUN_COLUMNS = ("run_id", "status", "finish_reason", "text", "reasoning_text") + tuple(c for c, _ in _TOKENS) + (
    "steps", "tool_calls", "tool_results", "tool_errors", "error", "tripwire", "object", "total_usage")


def _json_text(value: Any) -> str | None:
    """value as JSON text, None (a null) for None and for an absent value (UNSET: a tool that
    returned nothing has no result)."""
    if value is None or value is msgspec.UNSET:
        return None
    return utf8_json(msgspec.to_builtins(value)).decode()


def _tool_rows(chunks: list, value: str) -> list:
    return [{"tool_call_id": c.payload.toolCallId, "tool_name": c.payload.toolName,
             value: _json_text(getattr(c.payload, value, None))} for c in chunks]


def _arrow_schema(pa: Any) -> Any:
    def tools(value: str) -> Any:
        return pa.list_(pa.struct([("tool_call_id", pa.string()), ("tool_name", pa.string()), (value, pa.string())]))
    return pa.schema([("run_id", pa.string()), ("status", pa.string()), ("finish_reason", pa.string()),
                      ("text", pa.string()), ("reasoning_text", pa.string())] +
                     [(c, pa.int64()) for c, _ in _TOKENS] +
                     [("steps", pa.int32()), ("tool_calls", tools("args")), ("tool_results", tools("result")),
                      ("tool_errors", tools("error")), ("error", pa.string()), ("tripwire", pa.string()),
                      ("object", pa.string()), ("total_usage", pa.string())])


def _run_row(r: Any) -> tuple:
    """A RunOutput's values for RUN_COLUMNS, in that order."""
    usage = r.total_usage or {}
    tokens = tuple(v if isinstance(v, int) and not isinstance(v, bool) else None
                   for v in (usage.get(key) for _, key in _TOKENS))
    return (r.run_id, r.status, r.finish_reason, r.text, r.reasoning_text) + tokens + (
        len(r.steps), _tool_rows(r.tool_calls, "args"), _tool_rows(r.tool_results, "result"),
        _tool_rows(r.tool_errors, "error"), _json_text(r.error), _json_text(r.tripwire), _json_text(r.object),
        _json_text(usage))


def _rows_table(rows: list) -> Any:
    """A pyarrow Table of _run_row tuples."""
    pa = _pyarrow()

    def table(rows: list) -> Any:
        cols = list(zip(*rows)) if rows else [()] * len(RUN_COLUMNS)
        return pa.Table.from_pydict({c: list(v) for c, v in zip(RUN_COLUMNS, cols)}, schema=_arrow_schema(pa))
    try:
        return table(rows)
    except UnicodeEncodeError:      # a lone surrogate in a text or an id: U+FFFD (Arrow holds UTF-8)
        return table([no_lone_surrogates(r) for r in rows])


def runs_to_arrow(runs: Iterable[Any]) -> Any:
    """A pyarrow Table with a row per RunOutput (from ``reconstruct`` or ``accumulate``): run_id,
    status, finish_reason, text, reasoning_text, the token counts of total_usage, the number of
    steps, tool calls/results/errors as lists of (tool_call_id, tool_name, JSON text), and error,
    tripwire, object and the whole total_usage as JSON text (DuckDB: ``json_extract``; Polars:
    ``str.json_decode``).  Needs pyarrow."""
    return _rows_table([_run_row(r) for r in runs])


def write_parquet(runs: Iterable[Any], where: Any, batch_runs: int = 4096) -> int:
    """Write runs to a Parquet file (a path or a binary file object) in row groups of
    batch_runs, so memory stays bounded by a batch however many runs stream through.  Returns
    the number of runs written."""
    return _write_rows(map(_run_row, runs), where, batch_runs)


def _write_rows(rows: Iterable[tuple], where: Any, batch_runs: int = 4096) -> int:
    """write_parquet of _run_row tuples (the parallel reconstruct makes these in its workers)."""
    _pyarrow()
    import pyarrow.parquet as pq
    n = 0
    with pq.ParquetWriter(where, _arrow_schema(_pyarrow())) as writer:
        batch: list = []
        for row in rows:
            batch.append(row)
            if len(batch) == batch_runs:
                writer.write_table(_rows_table(batch))
                n += len(batch)
                batch = []
        if batch or n == 0:
            writer.write_table(_rows_table(batch))
            n += len(batch)
    return n


# ------------------------------------------------------------------------------------------------
# grep

class Hit(msgspec.Struct, frozen=True):
    """A chunk grep found (match=True) or shows as context around one (match=False)."""
    source: str
    offset: int         # byte offset of the frame's JSON text
    type: str
    run_id: str | None
    frame: bytes        # the frame's JSON text, as in the log
    match: bool = True


def _type_matcher(types: Iterable[str]) -> Any:
    """Type codes for names or shell patterns (``tool-*``)."""
    import numpy as np
    import fnmatch
    codes = set()
    for t in types:
        found = [i for i, n in enumerate(TYPE_NAMES) if fnmatch.fnmatchcase(n, t)]
        if not found and t.startswith("data-"):
            found = [DATA]
        if not found:
            raise ValueError(f"no chunk type matches {t!r} (see chunkcodec.bulk.TYPE_NAMES)")
        codes.update(found)
    return np.array(sorted(codes), dtype=np.int16)


def grep(inputs: Any, pattern: str | bytes | None = None, types: Iterable[str] = (), run: str | None = None,
         context: int = 0, framing: str = "auto", ignore_case: bool = False) -> Iterator[Hit]:
    """The chunks of the logs that match every filter given: a chunk type (names or shell
    patterns such as ``tool-*``; ``data-*`` matches every data chunk), a run id (or a prefix of
    one), a regular expression searched in the frame's JSON text as written (so it sees tool
    names, arguments, errors; a delta's text matches only within one delta).  context=N also
    yields the N chunks before and after each match *in the same run* (match=False), which in an
    interleaved log is the context that means something.  Hits come in log order.  inputs: as for
    reconstruct (a log in memory's hits are named "<bytes>")."""
    import numpy as np
    codes = _type_matcher(types) if types else None
    rx = None
    if pattern is not None:
        pat = pattern.encode() if isinstance(pattern, str) else pattern
        rx = re.compile(pat, re.IGNORECASE if ignore_case else 0)
    for path in [inputs] if _in_memory(inputs) else iter_sources(inputs):
        idx = scan(path, framing)
        keep = np.ones(len(idx), dtype=bool)
        if codes is not None:
            keep &= np.isin(idx.type, codes)
        if run is not None:
            runs = [i for i, r in enumerate(idx.run_ids) if r.startswith(run)]
            keep &= np.isin(idx.run, np.array(runs, dtype=np.int32))
        if rx is not None:
            # one search over the whole log; a match belongs to the frame it starts in
            hit = np.zeros(len(idx), dtype=bool)
            starts = np.fromiter((m.start() for m in rx.finditer(idx.buffer)), dtype=np.int64)
            if len(starts):
                row = np.searchsorted(idx.offset, starts, side="right") - 1
                ok = (row >= 0) & (starts < idx.offset[np.maximum(row, 0)] + idx.length[np.maximum(row, 0)])
                hit[row[ok]] = True
            keep &= hit
        rows = np.flatnonzero(keep)
        show = dict.fromkeys(rows.tolist(), True)
        if context and len(rows):
            show = {}
            by_run: dict = {}
            for r in rows.tolist():
                k = int(idx.run[r])
                if k not in by_run:
                    by_run[k] = np.flatnonzero(idx.run == k)
                same = by_run[k]
                at = int(np.searchsorted(same, r))
                for c in same[max(0, at - context):at + context + 1].tolist():
                    show[c] = show.get(c, False) or c == r
        name = "<stdin>" if isinstance(path, str) and path == "-" else idx.source
        for r in sorted(show):
            k = int(idx.run[r])
            yield Hit(name, int(idx.offset[r]), TYPE_NAMES[int(idx.type[r])], idx.run_ids[k] if k >= 0 else None,
                      idx.frame(r), show[r])
