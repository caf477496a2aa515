# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Native side of chunkcodec.bulk: index a byte range of a log with the GIL released.

Layers: csrc/bulk.c does the work; this module only allocates the numpy columns, calls it without
the GIL (a range at once, piece by piece from its start up with RangeScan, or from its end down
with BackScan), copies and renumbers rows without the GIL, and turns run tables into bytes and
str.  chunkcodec.bulk (Python) splits files into ranges, runs them on threads and merges the run
tables.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int16_t, int32_t, int64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memchr, memcpy

from ._cdefs cimport (cc_alloc_arm, cc_backscan, cc_backscan_free, cc_backscan_init, cc_bulk_boundary,
                      cc_bulk_scan, cc_bulk_scan_back, cc_index, cc_runtab, cc_runtab_free, cc_runtab_init,
                      cc_typetab)

#: Rows asked for per call: enough for a range of small frames, grown in steps past it.
cdef Py_ssize_t MIN_ROWS = 4096
#: The smallest frame a range is expected to hold on average (delta frames are ~100+ bytes).
cdef Py_ssize_t BYTES_PER_ROW_GUESS = 48
ROW_GUESS = BYTES_PER_ROW_GUESS
#: The index columns' dtypes: offset, length, type, run, text_off, text_len.  (Names: numpy is
#: imported when columns are made, not with this module, so that the command line's reconstruct,
#: cat and bench, which make none, start without it.)
DTYPES = ("int64", "int64", "int16", "int32", "int64", "int64")


def _alloc_arm(long long after):
    """(A test hook.)  _core._alloc_arm for this module's copy of the C core."""
    return cc_alloc_arm(after)


cdef class TypeTable:
    """The known chunk type names for the C scanner, sorted by (length, bytes)."""
    cdef cc_typetab t
    cdef const char** _names
    cdef size_t* _lens
    cdef readonly list names

    def __cinit__(self, names, hot):
        self.names = [bytes(n) for n in names]
        n = len(self.names)
        self._names = <const char**>malloc(max(n, 1) * sizeof(char*))
        self._lens = <size_t*>malloc(max(n, 1) * sizeof(size_t))
        if self._names == NULL or self._lens == NULL:
            raise MemoryError()
        cdef bytes b
        for i in range(n):
            b = self.names[i]
            self._names[i] = b
            self._lens[i] = len(b)
        self.t.names = self._names
        self.t.lens = self._lens
        self.t.n = n
        for i in range(4):
            self.t.hot[i] = hot[i]

    def __dealloc__(self):
        free(self._names)
        free(self._lens)


def boundary(buf, Py_ssize_t pos, int framing):
    """The first frame boundary at or after pos."""
    cdef const unsigned char[::1] v = buf
    if v.shape[0] == 0:
        return 0
    return cc_bulk_boundary(framing, <const char*>&v[0], v.shape[0], pos)


cdef int _columns(tuple cols, cc_index* idx) except -1:
    """idx set to write into the six columns `cols` from row 0 (idx.n = 0)."""
    cdef int64_t[::1] off = cols[0], ln = cols[1], toff = cols[4], tln = cols[5]
    cdef int16_t[::1] ty = cols[2]
    cdef int32_t[::1] rn = cols[3]
    cdef Py_ssize_t cap = off.shape[0]
    if cap == 0 or ln.shape[0] < cap or ty.shape[0] < cap or rn.shape[0] < cap or toff.shape[0] < cap \
            or tln.shape[0] < cap:
        raise ValueError("columns empty or of different lengths")
    idx.offset = &off[0]
    idx.length = &ln[0]
    idx.type = &ty[0]
    idx.run = &rn[0]
    idx.text_off = &toff[0]
    idx.text_len = &tln[0]
    idx.cap = cap
    idx.n = 0
    return 0


cdef Py_ssize_t _fill(TypeTable types, const char* base, Py_ssize_t pos, Py_ssize_t end, int framing,
                      tuple cols, cc_runtab* runs, Py_ssize_t* rows) except -1:
    """Index buf[pos:end] into the six columns `cols` from row 0, as far as they have room, GIL
    released.  Returns the bytes consumed; *rows is set to the rows written."""
    cdef Py_ssize_t got
    cdef cc_index idx
    _columns(cols, &idx)
    with nogil:
        got = cc_bulk_scan(framing, base + pos, end - pos, 1, pos, &types.t, runs, &idx)
    if got < 0:
        raise MemoryError()
    rows[0] = idx.n
    return got


cdef list _run_ids(cc_runtab* runs):
    """The run table's keys as bytes, by run index (order of first appearance)."""
    run_ids = [None] * runs.n
    for i in range(runs.cap):
        if runs.ents[i].p != NULL:
            run_ids[runs.ents[i].idx] = PyBytes_FromStringAndSize(runs.ents[i].p, runs.ents[i].len)
    return run_ids


cdef const char* _base(const unsigned char[::1] v, Py_ssize_t start, Py_ssize_t end) except? NULL:
    if not 0 <= start <= end <= v.shape[0]:
        raise ValueError("range outside the buffer")
    return <const char*>&v[0] if v.shape[0] else NULL


def scan_range(TypeTable types, buf, Py_ssize_t start, Py_ssize_t end, int framing):
    """Index the frames in buf[start:end] (which starts and ends on frame boundaries).

    Returns (offset, length, type, run, text_off, text_len) numpy arrays and the list of runId
    byte strings in order of first appearance (run index i is runs[i]).
    """
    import numpy as np
    cdef RangeScan sc = RangeScan(types, buf, start, end, framing)
    parts = []
    while not sc.done:          # one allocation, sized by a guess; more only past the guess
        cols = tuple(np.empty(max(MIN_ROWS, (sc.end - sc.pos) // BYTES_PER_ROW_GUESS + 16), d) for d in DTYPES)
        rows = sc.fill(cols, sc.end)
        parts.append(tuple(c[:rows] for c in cols))
    if not parts:
        cols = tuple(np.empty(0, d) for d in DTYPES)
    elif len(parts) == 1:
        cols = parts[0]
    else:
        cols = tuple(np.concatenate(c) for c in zip(*parts))
    return cols, sc.run_ids()


cdef class _Ranged:
    """What both range scanners hold: the buffer, the framing and one run table for the range."""
    cdef TypeTable types
    cdef const unsigned char[::1] v
    cdef const char* base
    cdef int framing
    cdef cc_runtab runs

    def __cinit__(self, TypeTable types, buf, Py_ssize_t start, Py_ssize_t end, int framing):
        self.types = types
        self.v = buf
        self.base = _base(self.v, start, end)
        self.framing = framing
        if not cc_runtab_init(&self.runs, 1024):
            raise MemoryError()

    def __dealloc__(self):
        cc_runtab_free(&self.runs)

    def run_ids(self):
        """The run table's keys as bytes, by this range's run index."""
        return _run_ids(&self.runs)


cdef class RangeScan(_Ranged):
    """Index buf[start:end] a piece at a time, into columns the caller gives each time (its own,
    or a window of the merged columns once it knows where this range's rows go), with one run
    table across the pieces.  `end` may be lowered between pieces (another thread takes the
    rest)."""
    cdef readonly Py_ssize_t pos
    cdef public Py_ssize_t end

    def __cinit__(self, TypeTable types, buf, Py_ssize_t start, Py_ssize_t end, int framing):
        self.pos = start
        self.end = end

    @property
    def done(self):
        return self.pos >= self.end

    def piece_end(self, Py_ssize_t nbytes):
        """Where a piece of about nbytes from here ends: a frame boundary, at most end."""
        if self.end - self.pos <= nbytes:
            return self.end
        return min(self.end, <Py_ssize_t>cc_bulk_boundary(self.framing, <const char*>&self.v[0], self.v.shape[0],
                                                          self.pos + nbytes))

    def fill(self, tuple cols, Py_ssize_t limit):
        """Index the next frames before byte `limit` (a frame boundary) into cols from row 0, as
        many as they have room for: the rows written."""
        cdef Py_ssize_t got, rows
        if not self.pos <= limit <= self.end:
            raise ValueError("piece end outside the range")
        if self.pos == limit:
            return 0
        got = _fill(self.types, self.base, self.pos, limit, self.framing, cols, &self.runs, &rows)
        if got == 0:                       # never loop on a range that does not advance
            raise RuntimeError(f"the bulk scanner stopped at byte {self.pos} of a range ending at {limit}")
        self.pos += got
        return rows


cdef class BackScan(_Ranged):
    """Index buf[start:end] from the end down, a call at a time, into the merged columns just below
    a row (the range's rows then end at a row known from the start).  `start` may be raised
    between calls (another thread takes the lower part); `end` is the lowest byte indexed."""
    cdef public Py_ssize_t start
    cdef readonly Py_ssize_t end
    cdef cc_backscan back

    def __cinit__(self, TypeTable types, buf, Py_ssize_t start, Py_ssize_t end, int framing):
        cc_backscan_init(&self.back)
        self.start = start
        self.end = end

    def __dealloc__(self):
        cc_backscan_free(&self.back)

    @property
    def done(self):
        return self.start >= self.end

    def piece_start(self, Py_ssize_t nbytes):
        """Where a piece of about nbytes below end starts: a frame boundary, at least start."""
        cdef Py_ssize_t b
        if self.end - self.start <= nbytes:
            return self.start
        b = cc_bulk_boundary(self.framing, self.base, self.end, self.end - nbytes)
        return max(self.start, b) if b < self.end else self.start

    def fill(self, tuple out, Py_ssize_t bottom, Py_ssize_t limit, Py_ssize_t piece):
        """Index the frames from `limit` (a frame boundary) to end, from end down in pieces of
        about `piece` bytes, into the columns `out` just below row `bottom`, as long as they
        fit: the rows written (end is then limit, or above it when the next piece did not)."""
        cdef cc_index idx
        cdef size_t b = bottom
        cdef Py_ssize_t got
        if not self.start <= limit <= self.end:
            raise ValueError("piece start outside the range")
        if self.end == limit:
            return 0
        _columns(out, &idx)
        if not 0 <= bottom <= <Py_ssize_t>idx.cap or piece < 1:
            raise ValueError("row outside the merged columns, or an empty piece")
        with nogil:
            got = cc_bulk_scan_back(self.framing, self.base, limit, self.end, piece, &self.types.t,
                                    &self.runs, &self.back, &idx, &b)
        if got == -1:
            raise MemoryError()
        if got == -2:
            raise RuntimeError(f"the bulk scanner stopped in the range {limit}..{self.end}")
        self.end = got
        return bottom - <Py_ssize_t>b

    def run_order(self):
        """(the runIds as bytes in order of first appearance in the log, the int32 table from
        this scanner's run index to that order; -1 for a run no row holds)."""
        import numpy as np
        ids = _run_ids(&self.runs)
        lows = np.full(len(ids), np.iinfo(np.int64).max, dtype=np.int64)
        cdef int64_t[::1] lv = lows
        cdef Py_ssize_t n = min(<Py_ssize_t>self.runs.n, <Py_ssize_t>self.back.first_cap)
        if n:
            memcpy(&lv[0], self.back.first, n * sizeof(int64_t))
        order = np.argsort(lows, kind="stable")
        held = int(np.count_nonzero(lows != np.iinfo(np.int64).max))
        lut = np.full(len(ids), -1, dtype=np.int32)
        lut[order[:held]] = np.arange(held, dtype=np.int32)
        return [ids[i] for i in order[:held].tolist()], lut


def copy_rows(tuple cols, tuple out, Py_ssize_t at):
    """Copy one piece's columns into the merged columns `out` at row `at` as they are, GIL
    released (pieces are copied by several threads at once)."""
    cdef const int64_t[::1] off = cols[0], ln = cols[1], toff = cols[4], tln = cols[5]
    cdef const int16_t[::1] ty = cols[2]
    cdef const int32_t[::1] rn = cols[3]
    cdef int64_t[::1] o_off = out[0], o_ln = out[1], o_toff = out[4], o_tln = out[5]
    cdef int16_t[::1] o_ty = out[2]
    cdef int32_t[::1] o_rn = out[3]
    cdef Py_ssize_t n = off.shape[0]
    if at < 0 or at + n > o_off.shape[0] or ln.shape[0] != n or ty.shape[0] != n or rn.shape[0] != n \
            or toff.shape[0] != n or tln.shape[0] != n:
        raise ValueError("rows outside the merged columns, or columns of different lengths")
    if n == 0:
        return
    with nogil:
        memcpy(&o_off[at], &off[0], n * sizeof(int64_t))
        memcpy(&o_ln[at], &ln[0], n * sizeof(int64_t))
        memcpy(&o_ty[at], &ty[0], n * sizeof(int16_t))
        memcpy(&o_rn[at], &rn[0], n * sizeof(int32_t))
        memcpy(&o_toff[at], &toff[0], n * sizeof(int64_t))
        memcpy(&o_tln[at], &tln[0], n * sizeof(int64_t))


def renumber(int32_t[::1] run, const int32_t[::1] lut):
    """run[i] = lut[run[i]] in place (-1, no runId, stays -1), GIL released."""
    cdef Py_ssize_t i, n = run.shape[0], m = lut.shape[0]
    cdef int32_t r
    cdef bint bad = False
    with nogil:
        for i in range(n):
            r = run[i]
            if r >= m:
                bad = True
                break
            if r >= 0:
                run[i] = lut[r]
    if bad:
        raise ValueError("a run index outside the table")


def decode_run_ids(list raw, fallback):
    """The runIds as str: UTF-8 (bad bytes as U+FFFD) when they hold no backslash, else
    fallback(raw) (an escape to decode)."""
    cdef Py_ssize_t i, n = len(raw)
    cdef list out = [None] * n
    cdef bytes b
    for i in range(n):
        b = raw[i]
        if memchr(<const char*>b, ord("\\"), len(b)) != NULL:
            out[i] = fallback(b)
        else:
            out[i] = PyUnicode_DecodeUTF8(b, len(b), "replace")
    return out
