"""Bulk processing of stream logs: a columnar index, per-run reconstruction and statistics.

``scan`` indexes a log without making a Python object per chunk: the C core walks an mmap of the
file with the GIL released, on several threads (ranges split on frame boundaries), and returns
numpy columns.  ``reconstruct`` and ``stats`` stream through files with the accumulator.

Inputs everywhere: a path (str or os.PathLike), a directory (its files, sorted), a glob, ``-`` for
standard input, bytes; ``.gz`` and ``.zst`` files are decompressed (zstd needs the ``zstandard``
package: ``pip install 'chunkcodec[zstd]'``).  Plain files are mapped, not read, so ``scan`` works on
files larger than memory; compressed input and stdin are read into memory first.
"""

from __future__ import annotations

import glob as _glob
import gzip
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

def iter_sources(inputs: Any) -> Iterator[str]:
    """Expand paths, directories and globs into file names ('-' is standard input)."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    for item in inputs:
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
    if isinstance(source, (bytes, bytearray, memoryview)):
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
        run_col = pa.DictionaryArray.from_arrays(runs, pa.array(self.run_ids, pa.string()))
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
PIECE_ROWS = 1 << 16
PIECE_BYTES = 8 << 20
STEAL_BYTES = 4 << 20


class _Range:
    """One range of the parallel scan: its scanner, the end of the piece being indexed (it is
    not cut before that), and its rows once done."""

    def __init__(self, buf: Any, a: int, b: int, fr: int) -> None:
        self.scan = _bulk.RangeScan(_TYPES, buf, a, b, fr)
        self.piece_end = a
        self.rows: int | None = None
        self.pieces: list = []          # (columns, row within the range), in order


class _Layout:
    """The ranges of a parallel scan in file order, which grows when a thread that is done takes
    the second half of a range still being indexed; where each range's rows go in the merged
    columns, known once the ranges before it are done; and the pieces a range indexed before it
    knew, which the threads that are done copy into place."""

    def __init__(self, ranges: list, out: tuple) -> None:
        self.cond = threading.Condition()
        self.ranges = ranges
        self.out = out
        self.room = len(out[0])
        self.waiting: list = []        # (range, columns, row within the range)
        self.failed = False            # a thread raised: the others stop waiting

    def _start(self, r: _Range) -> int | None:
        at = 0
        for q in self.ranges:
            if q is r:
                return at
            if q.rows is None:
                return None
            at += q.rows
        raise AssertionError("a range not in the layout")

    def next_piece(self, r: _Range) -> tuple:
        """(end of r's next piece, where r's rows start or None): r is not cut before that end."""
        with self.cond:
            r.piece_end = r.scan.piece_end(PIECE_BYTES)
            return r.piece_end, self._start(r)

    def wait(self, r: _Range, cols: tuple, row: int) -> None:
        with self.cond:
            self.waiting.append((r, cols, row))

    def done(self, r: _Range, rows: int) -> None:
        with self.cond:
            r.rows = rows
            self.cond.notify_all()

    def fail(self) -> None:
        with self.cond:
            self.failed = True
            self.cond.notify_all()

    def steal(self, buf: Any, fr: int) -> _Range | None:
        """A new range: the second half of what the largest range has left past its piece."""
        with self.cond:
            best, left = None, STEAL_BYTES - 1
            for q in self.ranges:
                if q.rows is None and q.scan.end - q.piece_end > left:
                    best, left = q, q.scan.end - q.piece_end
            if best is None:
                return None
            cut = _bulk.boundary(buf, best.piece_end + left // 2, fr)
            if not best.piece_end < cut < best.scan.end:
                return None
            new = _Range(buf, cut, best.scan.end, fr)
            best.scan.end = cut
            self.ranges.insert(self.ranges.index(best) + 1, new)
            return new

    def copy_waiting(self) -> None:
        """Copy waiting pieces into place as their places become known, until none is left or
        every range is done (pieces past the columns' end are then the caller's)."""
        while True:
            with self.cond:
                while True:
                    for i, (r, cols, row) in enumerate(self.waiting):
                        at = self._start(r)
                        if at is not None and at + row + len(cols[0]) <= self.room:
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


def _scan_parallel(buf: Any, fr: int, ranges: list) -> tuple:
    """Index the ranges on a thread each, then (each thread on its own) halves of what the others
    have left.  The first range goes straight into the merged columns (address space sized by a
    guess of the rows: untouched pages cost nothing); see _index_range for the others.  Last, the
    runs are renumbered in the order of their first appearance in the log."""
    import numpy as np
    room = sum((b - a) // _bulk.ROW_GUESS + 16 for a, b in ranges)
    out = tuple(np.empty(room, d) for d in _bulk.DTYPES)
    lay = _Layout([_Range(buf, a, b, fr) for a, b in ranges], out)

    def work(r: _Range | None) -> None:
        try:
            while r is not None:
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
    (all of them into bigger columns if the rows outgrew the guess), runs renumbered."""
    import numpy as np
    rs, out = lay.ranges, lay.out
    starts = np.cumsum([0] + [r.rows for r in rs]).tolist()
    total = starts[-1]
    if total > lay.room:                 # more rows than guessed: bigger columns, every piece
        out = tuple(np.empty(total, d) for d in _bulk.DTYPES)      # copied there
        todo = [(cols, starts[k] + row) for k, r in enumerate(rs) for cols, row in r.pieces]
    else:
        todo = [(cols, starts[rs.index(r)] + row) for r, cols, row in lay.waiting]
    list(ex.map(lambda p: _bulk.copy_rows(p[0], out, p[1]), todo))
    seen: dict = {}
    renum = []
    for k, r in enumerate(rs):
        lut = np.array([seen.setdefault(i, len(seen)) for i in r.scan.run_ids()], dtype=np.int32)
        if not np.array_equal(lut, np.arange(len(lut), dtype=np.int32)):
            step = -(-r.rows // threads) or 1
            renum += [(out[3][i:min(i + step, starts[k + 1])], lut) for i in range(starts[k], starts[k + 1], step)]
    list(ex.map(lambda p: _bulk.renumber(*p), renum))
    return tuple(c[:total] for c in out), _bulk.decode_run_ids(list(seen), _decode_run_id)


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

def _file_pieces(path: str, errors: list, strict: bool, progress: Any = None) -> Iterator[Any]:
    """The decompressed bytes of one input in 1 MB pieces; a cut compressed stream is reported
    in errors (or raised when strict) after what came before it.  progress(n) is told of each
    piece's size."""
    f = open_stream(path)
    # read1: one decompression step per call, so a member cut short loses nothing before it
    read = getattr(f, "read1", f.read)
    try:
        while True:
            try:
                piece = read(1 << 20)
            except (EOFError, OSError) as exc:
                region = CorruptRegion(path, -1, 0, f"compressed data ends early ({exc})")
                if strict:
                    raise DecodeError(str(region)) from None
                errors.append(region)
                return
            if not piece:
                return
            if progress is not None:
                progress(len(piece))
            yield piece
    finally:
        if f is not sys.stdin.buffer:
            f.close()


def _buffer_pieces(buf: Any, progress: Any = None) -> Iterator[Any]:
    view = memoryview(buf)
    for i in range(0, len(view), 1 << 20):
        piece = view[i:i + (1 << 20)]
        if progress is not None:
            progress(len(piece))
        yield piece


def _runs(pieces: Iterable[Any], name: str, framing: str, strict: bool, errors: list) -> Iterator[Any]:
    """RunOutputs from a stream of pieces, each yielded as soon as its finish chunk arrived."""
    from . import Accumulator
    acc = Accumulator(framing, errors="strict" if strict else "keep")
    try:
        for piece in pieces:
            acc.feed(piece)
            yield from acc.pop_finished()
        acc.close()
    except DecodeError as exc:
        raise type(exc)(f"{name}: {exc}", exc.pos, exc.frame_index, exc.frame) from None
    errors.extend(CorruptRegion(name, inv.pos, len(inv.raw), str(inv.error)) for inv in acc.invalid_frames)
    yield from acc.pop_results()


def reconstruct(inputs: Any, framing: str = "auto", strict: bool = False,
                errors: list | None = None, progress: Any = None) -> Iterator[Any]:
    """One RunOutput per run (what the accumulator gives), streamed: a run is yielded when its
    finish chunk arrives, the rest at the end of its file, so memory is bounded by the runs in
    flight, not by the file.

    Lenient by default: a corrupt frame (a cut line, binary garbage) or a half-written gzip
    member is skipped and appended to `errors` as a CorruptRegion with file and byte offset;
    strict=True raises at the first one instead.  Every other run is still reconstructed.
    progress, when given, is called with the number of (decompressed) bytes of each piece read.
    """
    errs = errors if errors is not None else []
    for path in iter_sources(inputs):
        name = "<stdin>" if path == "-" else path
        yield from _runs(_file_pieces(path, errs, strict, progress), name, framing, strict, errs)


class Stats(msgspec.Struct):
    """What ``stats`` counts over one or more logs."""
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


def stats(inputs: Any, framing: str = "auto", strict: bool = False, progress: Any = None) -> Stats:
    """Counts per chunk type (from the index), runs, tokens summed over the runs' total usage,
    tool calls and tool errors per tool, finish reasons, status, bytes, and corrupt regions.
    progress: as for reconstruct."""
    st = Stats()
    for path in iter_sources(inputs):
        idx = scan(path, framing)
        name = idx.source if path != "-" else "<stdin>"
        st.bytes += idx.nbytes
        st.frames += len(idx)
        for k, v in idx.type_counts().items():
            _add(st.chunk_types, k, v)
        if strict and idx.cut is not None:
            raise DecodeError(str(idx.cut))
        found: list = []
        for run in _runs(_buffer_pieces(idx.buffer, progress), name, idx.framing, strict, found):
            st.runs += 1
            _add(st.finish_reasons, run.finish_reason)
            _add(st.status, run.status)
            for k, v in (run.total_usage or {}).items():
                if isinstance(v, int) and not isinstance(v, bool):
                    _add(st.tokens, k, v)
            for c in run.tool_calls:
                _add(st.tool_calls, c.payload.toolName)
            for e in run.tool_errors:
                _add(st.tool_errors, e.payload.toolName)
        st.corrupt.extend(found + ([idx.cut] if idx.cut is not None else []))   # in byte order
    return st


# ------------------------------------------------------------------------------------------------
# Arrow and Parquet for reconstructed runs

#: The usage counters that get a column of their own (from total_usage; missing -> null).
_TOKENS = (("input_tokens", "inputTokens"), ("output_tokens", "outputTokens"), ("total_tokens", "totalTokens"),
           ("reasoning_tokens", "reasoningTokens"), ("cached_input_tokens", "cachedInputTokens"))
#: The columns of runs_to_arrow, in order (values that are free-form JSON are JSON text).
RUN_COLUMNS = ("run_id", "status", "finish_reason", "text", "reasoning_text") + tuple(c for c, _ in _TOKENS) + (
    "steps", "tool_calls", "tool_results", "tool_errors", "error", "tripwire", "object", "total_usage")


def _json_text(value: Any) -> str | None:
    return None if value is None else msgspec.json.encode(msgspec.to_builtins(value)).decode()


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


def _run_rows(runs: Iterable[Any]) -> dict:
    cols: dict = {c: [] for c in RUN_COLUMNS}
    for r in runs:
        usage = r.total_usage or {}
        for c, v in (("run_id", r.run_id), ("status", r.status), ("finish_reason", r.finish_reason),
                     ("text", r.text), ("reasoning_text", r.reasoning_text), ("steps", len(r.steps)),
                     ("tool_calls", _tool_rows(r.tool_calls, "args")),
                     ("tool_results", _tool_rows(r.tool_results, "result")),
                     ("tool_errors", _tool_rows(r.tool_errors, "error")), ("error", _json_text(r.error)),
                     ("tripwire", _json_text(r.tripwire)), ("object", _json_text(r.object)),
                     ("total_usage", _json_text(usage))):
            cols[c].append(v)
        for c, key in _TOKENS:
            v = usage.get(key)
            cols[c].append(v if isinstance(v, int) and not isinstance(v, bool) else None)
    return cols


def runs_to_arrow(runs: Iterable[Any]) -> Any:
    """A pyarrow Table with a row per RunOutput (from ``reconstruct`` or ``accumulate``): run_id,
    status, finish_reason, text, reasoning_text, the token counts of total_usage, the number of
    steps, tool calls/results/errors as lists of (tool_call_id, tool_name, JSON text), and error,
    tripwire, object and the whole total_usage as JSON text (DuckDB: ``json_extract``; Polars:
    ``str.json_decode``).  Needs pyarrow."""
    pa = _pyarrow()
    schema = _arrow_schema(pa)
    return pa.Table.from_pydict(_run_rows(runs), schema=schema)


def write_parquet(runs: Iterable[Any], where: Any, batch_runs: int = 4096) -> int:
    """Write runs to a Parquet file (a path or a binary file object) in row groups of
    batch_runs, so memory stays bounded by a batch however many runs stream through.  Returns
    the number of runs written."""
    _pyarrow()
    import pyarrow.parquet as pq
    schema = _arrow_schema(_pyarrow())
    n = 0
    with pq.ParquetWriter(where, schema) as writer:
        batch: list = []
        for run in runs:
            batch.append(run)
            if len(batch) == batch_runs:
                writer.write_table(runs_to_arrow(batch))
                n += len(batch)
                batch = []
        if batch or n == 0:
            writer.write_table(runs_to_arrow(batch))
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
    interleaved log is the context that means something.  Hits come in log order."""
    import numpy as np
    codes = _type_matcher(types) if types else None
    rx = None
    if pattern is not None:
        pat = pattern.encode() if isinstance(pattern, str) else pattern
        rx = re.compile(pat, re.IGNORECASE if ignore_case else 0)
    for path in iter_sources(inputs):
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
        name = "<stdin>" if path == "-" else idx.source
        for r in sorted(show):
            k = int(idx.run[r])
            yield Hit(name, int(idx.offset[r]), TYPE_NAMES[int(idx.type[r])], idx.run_ids[k] if k >= 0 else None,
                      idx.frame(r), show[r])
