# cython: language_level=3, boundscheck=False, cdivision=True, initializedcheck=False
"""Native path: Cython glue between Python objects and the C core in csrc/.

Buffers in, Python objects out, C status -> exception.  It never parses JSON itself: the C scanner
takes the hot delta chunks, msgspec (through chunkcodec._model) takes everything else.  The framing
state machine mirrors chunkcodec._reference line for line; the differential tests hold them
together.
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_CheckExact, PyBytes_FromStringAndSize
from cpython.bytearray cimport (PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize,
                                PyByteArray_FromStringAndSize)
from cpython.buffer cimport PyBuffer_FillInfo
from cpython.list cimport PyList_GET_SIZE
from cpython.object cimport PyObject
from cpython.mem cimport PyMem_Calloc, PyMem_Free, PyMem_Malloc
from cpython.ref cimport Py_DECREF, Py_XDECREF
from cpython.unicode cimport PyUnicode_DecodeUTF8
from cpython.float cimport PyFloat_FromDouble
from libc.string cimport memcpy, memcmp, memchr, strlen
from libc.stdint cimport uint64_t

from chunkcodec._cdefs cimport *
from chunkcodec._accumc cimport AccumulatorBase as _Sink, response_ids as _response_ids
import sys
import weakref

import msgspec

from chunkcodec import _jsonout, _model
from chunkcodec._results import join_surrogates as _join_surrogates
# the accumulator's compiled copy (see _accum.py's docstring); the reference path has _accum itself
from chunkcodec import _accumc as _accum
from chunkcodec import chunks as _chunks
from chunkcodec.errors import DecodeError, InvalidFrame, as_truncated, frame_too_large

cdef extern from "Python.h":
    object PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)
    object PyUnicode_DecodeUTF8(const char* s, Py_ssize_t size, const char* errors)
    void* PyUnicode_DATA(object o)
    int PyUnicode_KIND(object o)
    bint PyUnicode_IS_ASCII(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    object PyObject_Vectorcall(object callable, PyObject** args, size_t nargsf, PyObject* kwnames)
    int PyObject_GenericSetDict(object o, object value, void* context) except -1
    PyObject** _PyObject_GetDictPtr(object o)

cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        Py_ssize_t offset
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member
    ctypedef PyObject* (*allocfunc)(void* tp, Py_ssize_t n)
    ctypedef struct _TypeObj "PyTypeObject":
        allocfunc tp_alloc
    int PyObject_GC_IsTracked(object o)
    void PyObject_GC_UnTrack(void* o)
    void Py_INCREF(object o)
    void Py_SET_SIZE(object o, Py_ssize_t size)

DEF FRAME_BATCH = 256
DEF NOGIL_BYTES = 65536
DEF SLACK = 2
#: A piece up to this size whose last frame is cut is kept by reference until the next piece, not
#: copied (a bigger one is not kept alive for the few bytes of its tail).
DEF TAIL_BY_REFERENCE = 1 << 20
# A piece a frame goes on through is kept by reference from this size on; a smaller one is copied
# (with what was kept), so that a frame in many small pieces is not a long list of them.
DEF _TAIL_PIECE_MIN = 4096

cdef dict _FRAMINGS = {"auto": CC_FRAMING_AUTO, "sse": CC_FRAMING_SSE, "rs": CC_FRAMING_RS,
                       "ndjson": CC_FRAMING_NDJSON, "json": CC_FRAMING_JSON}
cdef dict _NAMES = {v: k for k, v in _FRAMINGS.items()}

DEFAULT_MAX_FRAME_BYTES = 256 * 1024 * 1024
FRAMINGS = dict(_FRAMINGS)

# The classes the hot path builds, and the keyword names it builds them with.
cdef object _TextDelta = _chunks.TextDelta
cdef object _TextDeltaPayload = _chunks.TextDeltaPayload
cdef object _ReasoningDelta = _chunks.ReasoningDelta
cdef object _ReasoningDeltaPayload = _chunks.ReasoningDeltaPayload
cdef object _ToolCallDelta = _chunks.ToolCallDelta
cdef object _ToolCallDeltaPayload = _chunks.ToolCallDeltaPayload
cdef object _ToolCall = _chunks.ToolCall
cdef object _ToolCallPayload = _chunks.ToolCallPayload
cdef object _ToolResult = _chunks.ToolResult
cdef object _ToolResultPayload = _chunks.ToolResultPayload
cdef object _UNSET = msgspec.UNSET
# A feed at least this big makes an accumulating decoder's route table 512 slots at once (a log, most
# likely), not three growths on the way
cdef Py_ssize_t _BIG_FEED = 1 << 20
cdef tuple _KW_PAYLOAD = ("payload",)
cdef tuple _KW_ID_TEXT = ("id", "text")
cdef tuple _KW_TOOL3 = ("argsTextDelta", "toolCallId", "toolName")
cdef object _decode_frame = _model.decode_frame
cdef object _typed_decode = _model._typed.decode    # what _decode_frame tries first
cdef tuple _TYPED_MISS = (msgspec.MsgspecError, UnicodeDecodeError, RecursionError)


cdef inline object _decode_typed(object span, long long idx, long long pos):
    """_decode_frame(span, idx, pos) without a Python call for the usual frame: the typed
    decoder straight away; a frame it refuses (unknown keys, what only json.loads takes, an
    error) goes the whole way, which decodes it or raises the DecodeError."""
    try:
        return _typed_decode(span)
    except _TYPED_MISS:
        return _decode_frame(span, idx, pos)


# ------------------------------------------------------------------------------------------------
# Building the hot chunks.  msgspec's constructor validates and fills defaults through a generic
# vectorcall; for the three delta types, whose fields are all str, the structs are allocated and
# their slots written directly at the offsets their member descriptors publish.  A self-check at
# import compares the result with the constructor's; if msgspec ever lays structs out differently,
# the constructor is used instead.

cdef Py_ssize_t _slot(object cls, str name) except -1:
    for klass in cls.__mro__:
        d = klass.__dict__.get(name)
        if d is not None:
            if type(d).__name__ != "member_descriptor":
                raise TypeError(f"{cls.__name__}.{name} is not a slot")
            return (<PyMemberDescrObject*><PyObject*>d).d_member.offset
    raise TypeError(f"{cls.__name__} has no slot {name}")


cdef inline void _put_slot(object obj, Py_ssize_t off, object value):
    Py_INCREF(value)
    (<PyObject**>((<char*><PyObject*>obj) + off))[0] = <PyObject*>value


cdef inline object _get_slot(object obj, Py_ssize_t off):
    return <object>(<PyObject**>((<char*><PyObject*>obj) + off))[0]


cdef inline void _untrack(object obj):
    # A delta chunk holds only str values, UNSET and its payload (which holds only str values):
    # it cannot be part of a reference cycle, so the GC need not visit it -- as CPython does for
    # tuples of atoms and msgspec for structs of atoms.  (A frozen struct gets no attributes; a
    # __dict__ attached later only ever holds a RawSpan, which is not a GC object either.)
    if PyObject_GC_IsTracked(obj):
        PyObject_GC_UnTrack(<void*><PyObject*>obj)


cdef inline object _alloc(object cls):
    cdef PyObject* o = (<_TypeObj*><PyObject*>cls).tp_alloc(<void*><PyObject*>cls, 0)
    if o == NULL:
        raise MemoryError()
    obj = <object>o
    Py_DECREF(obj)   # <object> took a new reference; tp_alloc's own is the one we keep
    return obj


cdef Py_ssize_t C_RUN, C_FROM, TD_PAYLOAD, TD_META, RD_PAYLOAD, RD_META, TC_PAYLOAD, TC_META
cdef Py_ssize_t TP_ID, TP_PM, TP_TEXT, RP_ID, RP_PM, RP_TEXT, TCP_ARGS, TCP_ID, TCP_NAME, TCP_PM
cdef bint _DIRECT = False


def _layout():
    global C_RUN, C_FROM, TD_PAYLOAD, TD_META, RD_PAYLOAD, RD_META, TC_PAYLOAD, TC_META
    global TP_ID, TP_PM, TP_TEXT, RP_ID, RP_PM, RP_TEXT, TCP_ARGS, TCP_ID, TCP_NAME, TCP_PM
    for cls, fields in ((_TextDelta, ("runId", "from_", "payload", "metadata")),
                        (_ReasoningDelta, ("runId", "from_", "payload", "metadata")),
                        (_ToolCallDelta, ("runId", "from_", "payload", "metadata")),
                        (_TextDeltaPayload, ("id", "providerMetadata", "text")),
                        (_ReasoningDeltaPayload, ("id", "providerMetadata", "text")),
                        (_ToolCallDeltaPayload, ("argsTextDelta", "toolCallId", "toolName", "providerMetadata"))):
        if cls.__struct_fields__ != fields:
            raise TypeError(f"{cls.__name__} fields changed: {cls.__struct_fields__}")
    C_RUN, C_FROM = _slot(_TextDelta, "runId"), _slot(_TextDelta, "from_")
    if (_slot(_ReasoningDelta, "runId"), _slot(_ToolCallDelta, "from_")) != (C_RUN, C_FROM):
        raise TypeError("envelope slots differ")
    TD_PAYLOAD, TD_META = _slot(_TextDelta, "payload"), _slot(_TextDelta, "metadata")
    RD_PAYLOAD, RD_META = _slot(_ReasoningDelta, "payload"), _slot(_ReasoningDelta, "metadata")
    TC_PAYLOAD, TC_META = _slot(_ToolCallDelta, "payload"), _slot(_ToolCallDelta, "metadata")
    TP_ID, TP_PM, TP_TEXT = (_slot(_TextDeltaPayload, n) for n in ("id", "providerMetadata", "text"))
    RP_ID, RP_PM, RP_TEXT = (_slot(_ReasoningDeltaPayload, n) for n in ("id", "providerMetadata", "text"))
    TCP_ARGS, TCP_ID, TCP_NAME, TCP_PM = (_slot(_ToolCallDeltaPayload, n)
                                          for n in ("argsTextDelta", "toolCallId", "toolName", "providerMetadata"))
cdef object _loads_frame = _model.loads_frame


cdef inline int _framing_code(object framing) except -1:
    try:
        return _FRAMINGS[framing]
    except (KeyError, TypeError):
        raise ValueError(f"framing must be one of {sorted(_FRAMINGS)}, got {framing!r}") from None


cdef bytes _to_bytes(object data):
    if PyBytes_CheckExact(data):
        return <bytes>data
    if isinstance(data, bytes):
        return bytes(data)
    if isinstance(data, str):
        return (<str>data).encode("utf-8", "surrogatepass")
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"expected bytes, bytearray, memoryview or str, got {type(data).__name__}")


@cython.final
@cython.no_gc
@cython.freelist(64)
cdef class RawSpan:
    """Read-only view of the JSON text a chunk was decoded from (a slice of an input piece).

    Holding it keeps that piece alive, like msgspec.Raw; ``bytes(span)`` copies it out.  It only
    ever refers to a bytes object, so it cannot be part of a cycle and is not tracked by the GC
    (which also keeps the per-chunk dict that holds it untracked).
    """
    cdef bytes owner
    cdef Py_ssize_t start
    cdef Py_ssize_t length

    def __len__(self):
        return self.length

    def __bytes__(self):
        return PyBytes_FromStringAndSize(PyBytes_AS_STRING(self.owner) + self.start, self.length)

    def __getbuffer__(self, Py_buffer* view, int flags):
        PyBuffer_FillInfo(view, self, <void*>(PyBytes_AS_STRING(self.owner) + self.start),
                          self.length, 1, flags)

    def __releasebuffer__(self, Py_buffer* view):
        pass

    def __repr__(self):
        return f"RawSpan({bytes(self)[:60]!r}{'...' if self.length > 60 else ''})"


cdef inline RawSpan _span(bytes owner, Py_ssize_t start, Py_ssize_t length):
    cdef RawSpan s = RawSpan.__new__(RawSpan)
    s.owner = owner
    s.start = start
    s.length = length
    return s


cdef inline object _make_str(const cc_str_t* s):
    # The scanner measured the string (code points, largest one), so the str is allocated at its
    # final size and kind and filled in one pass: faster than PyUnicode_DecodeUTF8 on short text.
    cdef object u = PyUnicode_New(<Py_ssize_t>s.ncp, <Py_UCS4>s.maxchar)
    cc_str_decode(s, PyUnicode_KIND(u), PyUnicode_DATA(u))
    return u


cdef str _utf8_text(const char* p, Py_ssize_t n, bint known=False):
    """p[0..n) as text, measured first (cc_utf8_measure), then made at its final size and kind and
    filled (cc_utf8_widen): what PyUnicode_DecodeUTF8(p, n, "surrogatepass") gives, which widens
    the str as it meets wider characters; about twice as fast on a run's text with an emoji in it
    (1.5 us against 2.9 for 1.6 KB, from Python).  (Text that is not well-formed UTF-8 -- a lone
    surrogate, from a str added with Accumulator.add -- is left to CPython, and a high surrogate
    followed by a low one joined: _results.join_surrogates.)  known: p[0..n) is well-formed UTF-8
    already (DeltaBuf.text says when), so it is measured without the check."""
    cdef size_t ncp
    cdef uint32_t maxchar
    if n <= 0:
        return ""
    if known:
        cc_utf8_measure_known(p, <size_t>n, &ncp, &maxchar)
    elif not cc_utf8_measure(p, <size_t>n, &ncp, &maxchar):
        return _join_surrogates(PyUnicode_DecodeUTF8(p, n, "surrogatepass"))
    cdef object u = PyUnicode_New(<Py_ssize_t>ncp, <Py_UCS4>maxchar)
    cc_utf8_widen(p, <size_t>n, PyUnicode_KIND(u), ncp, PyUnicode_DATA(u))
    return u


def utf8_text(data, Py_ssize_t start=0, Py_ssize_t end=-1, bint by_c=False, before=b""):
    """(A test hook.)  (before + data)[start:end] as DeltaBuf.text decodes its buffer: before
    appended from Python, then data appended from Python too, or (by_c) written as the C readers
    write (append_str), which they do only with well-formed UTF-8 (ValueError for other bytes)."""
    cdef bytes b = bytes(data)
    cdef cc_str_t s
    buf = DeltaBuf()
    if before:
        buf.append(bytes(before))
    if not by_c:
        buf.append(b)
        return buf.text(start, end)
    if not cc_utf8_valid(PyBytes_AS_STRING(b), <size_t>PyBytes_GET_SIZE(b)):
        raise ValueError("the C readers write well-formed UTF-8 only")
    s.p = PyBytes_AS_STRING(b)
    s.len = <size_t>PyBytes_GET_SIZE(b)
    s.flags = 0
    buf.append_str(&s)
    return buf.text(start, end)


cdef inline void _set_raw(object chunk, object raw) except *:
    PyObject_GenericSetDict(chunk, {"_raw": raw}, NULL)


cdef object _decode_finish_light = _accum.decode_finish_light
cdef object _light_fields = _accum.light_fields
cdef tuple _FINISH_PREFIXES = _accum.FINISH_PREFIXES


cdef inline bint _finish_prefix(const char* p, Py_ssize_t n):
    """p[0..n) starts as Mastra starts a step-finish or finish frame (_FINISH_PREFIXES)."""
    if n <= 20 or p[0] != b'{' or (p[9] != b's' and p[9] != b'f'):
        return False
    for prefix in _FINISH_PREFIXES:
        if n >= PyBytes_GET_SIZE(prefix) and memcmp(p, PyBytes_AS_STRING(prefix), PyBytes_GET_SIZE(prefix)) == 0:
            return True
    return False


cdef inline const char* _plain_str_end(const char* p, const char* end) noexcept:
    """The closing quote of a string that starts at p and has no escape, within 64 bytes; else NULL."""
    cdef const char* q = p
    if end - p > 64:
        end = p + 64
    while q < end:
        if q[0] == b'"':
            return q
        if q[0] == b'\\':
            return NULL
        q += 1
    return NULL


DEF _START_ANY = 0       # (what _start_kind tells)
DEF _START_FINISH = 1
DEF _START_OTHER = 2

cdef inline int _start_kind(const char* p, Py_ssize_t n, int fr) noexcept:
    """How the frame at p starts (after `data: ` in SSE), from its first bytes as Mastra writes
    them: _START_FINISH as _finish_prefix says; _START_OTHER as a tool-call or tool-result frame
    (type first) or a step-start frame (runId, from, then type), types the C delta loop never takes
    (it would refuse a finish frame at once, and read the others through first); _START_ANY
    otherwise (a delta, an event the loop reads, anything else).  (Only a matter of speed: what the
    loop would take or refuse, the general path decides alike.)"""
    cdef const char* q
    if fr == CC_FRAMING_SSE:
        if n <= 6 or p[0] != b'd' or memcmp(p, b"data: ", 6) != 0:
            return _START_ANY
        p += 6
        n -= 6
    if n > 40 and memcmp(p, b'{"runId":"', 10) == 0:
        q = _plain_str_end(p + 10, p + n)                       # the runId's closing quote
        if q == NULL or p + n - q <= 10 or memcmp(q, b'","from":"', 10) != 0:
            return _START_ANY
        q = _plain_str_end(q + 10, p + n)                       # from's
        if q != NULL and p + n - q > 21 and memcmp(q, b'","type":"step-start"', 21) == 0:
            return _START_OTHER
        return _START_ANY
    if n <= 21 or memcmp(p, b'{"type":"', 9) != 0:
        return _START_ANY
    if (p[9] == b's' or p[9] == b'f') and _finish_prefix(p, n):
        return _START_FINISH
    if memcmp(p + 9, b'tool-call"', 10) == 0 or memcmp(p + 9, b'tool-result"', 12) == 0:
        return _START_OTHER
    return _START_ANY


cdef object _decode_any = msgspec.json.Decoder().decode
class _ReadInFull(Exception):
    """A frame the C readers leave to the light decoder (see _fields_of)."""


cdef tuple _SPAN_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, _ReadInFull)
cdef tuple _STEP_TRIP_REASONS = _accum.STEP_TRIP_REASONS


#: What _plain_value leaves to msgspec.
cdef object _NOT_PLAIN = object()


# The short strings _plain_value makes, by their bytes: usage and providerMetadata objects repeat a
# few keys in every frame, and finish frames a few values (a runId, a finish reason, a model id); a
# str made once costs less than one made each time (msgspec keeps such a cache of keys).  A slot
# per hash of the bytes; a new string takes the slot over.  (1024 slots: a log's runIds are such
# strings, and hundreds of runs may be in flight at once.)
DEF _STR_SLOTS = 1024
DEF _STR_BITS = 10
DEF _STR_MAX = 40
cdef struct _StrSlot:
    size_t len
    char bytes[_STR_MAX]
    PyObject* s
cdef _StrSlot _strs[_STR_SLOTS]


cdef object _short_str(const cc_str_t* cs):
    """The str cc_scan_str read: from the cache when it holds the same bytes (plain ASCII strings
    up to _STR_MAX bytes)."""
    cdef size_t n = cs.len, h
    cdef uint64_t a, b, c
    cdef _StrSlot* slot
    if cs.flags or cs.maxchar >= 0x80 or n > _STR_MAX or n == 0:
        return _make_str(cs)
    if n >= 8:
        # three words of it, where runIds differ (a UUID's first, middle and last bytes)
        memcpy(&a, cs.p, 8)
        memcpy(&b, cs.p + n - 8, 8)
        memcpy(&c, cs.p + (n >> 1) - 4, 8)
        h = <size_t>(((a * 0x9E3779B97F4A7C15ULL) ^ (b * 0xC2B2AE3D27D4EB4FULL) ^ (c * 0x165667B19E3779F9ULL)
                      ^ n) >> (64 - _STR_BITS))
    else:
        h = n * 31 + <unsigned char>cs.p[0] * 7 + <unsigned char>cs.p[n - 1] + <unsigned char>cs.p[n >> 1] * 131
    slot = &_strs[h & (_STR_SLOTS - 1)]
    if slot.s != NULL and slot.len == n and memcmp(slot.bytes, cs.p, n) == 0:
        return <object>slot.s
    u = _make_str(cs)
    Py_XDECREF(slot.s)
    Py_INCREF(u)
    slot.s = <PyObject*>u
    slot.len = n
    memcpy(slot.bytes, cs.p, n)
    return u


cdef object _plain_utf8(const char* p, size_t n):
    """The str of n bytes of well-formed UTF-8 with no escape at p: through _short_str's cache
    when they are ASCII and short enough."""
    cdef cc_str_t cs
    cdef size_t i
    if n == 0 or n > _STR_MAX:
        return PyUnicode_DecodeUTF8(p, <Py_ssize_t>n, NULL)
    for i in range(n):
        if <unsigned char>p[i] >= 0x80:
            return PyUnicode_DecodeUTF8(p, <Py_ssize_t>n, NULL)
    cs.p = p
    cs.len = n
    cs.ncp = n
    cs.maxchar = 0x7F
    cs.flags = 0
    return _short_str(&cs)


cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil


# The object keys _plain_value reads, by their bytes: usage, providerMetadata and tool arguments
# repeat a few keys in every frame.  A key whose bytes are those of a slot, then its closing quote,
# is that slot's str, without scanning it (cc_scan_str) or hashing it for _short_str: the slot's
# bytes are plain ASCII (no quote, backslash or control byte), so equal bytes are the same key.
# A slot (as _short_str's) per hash of the key's first eight bytes (those before its quote when it
# is shorter); a new key takes the slot over.
DEF _KEY_SLOTS = 512
DEF _KEY_BITS = 9
cdef _StrSlot _keys[_KEY_SLOTS]


_intern = sys.intern


cdef object _plain_key(const char* p, size_t n, size_t* close):
    """The str of the object key at p (just past its opening quote, n bytes there), *close the
    offset of its closing quote; None when cc_scan_str refuses it."""
    cdef uint64_t w = 0, q, m
    cdef size_t h = 0, k
    cdef _StrSlot* slot = NULL
    cdef cc_str_t cs
    if n >= 8:
        memcpy(&w, p, 8)
        q = w ^ 0x2222222222222222ULL               # a zero byte where p has a quote
        m = (q - 0x0101010101010101ULL) & ~q & 0x8080808080808080ULL   # (its lowest bit: the first)
        if m:
            w &= (1ULL << (__builtin_ctzll(m) & ~7)) - 1    # the key's bytes before its quote
        h = <size_t>((w * 0x9E3779B97F4A7C15ULL) >> (64 - _KEY_BITS))
        slot = &_keys[h]
        k = slot.len
        if slot.s != NULL and k < n and p[k] == b'"' and memcmp(p, slot.bytes, k) == 0:
            close[0] = k
            return <object>slot.s
    if cc_scan_str(p, n, close, &cs) != CC_OK:
        return None
    key = _short_str(&cs)
    if slot != NULL and cs.flags == 0 and cs.maxchar < 0x80 and cs.len <= _STR_MAX:
        # interned: the same object as the code's own literals ("inputTokens", "reason"...), so
        # that a dict lookup of a frame's key in a dict keyed by them finds it by identity
        key = _intern(key)
        Py_XDECREF(slot.s)
        Py_INCREF(key)
        slot.s = <PyObject*>key
        slot.len = cs.len
        memcpy(slot.bytes, cs.p, cs.len)
    return key


cdef extern from "Python.h":
    # (overflow_exception NULL: an overflow gives +-inf, no exception)
    double PyOS_string_to_double(const char* s, char** endptr, PyObject* overflow_exception) except? -1.0


# A float _plain_value makes itself has at most this many bytes (a double's shortest spelling
# has 24 at most); longer spellings, and those whose value is zero, subnormal or near the top of
# the range, are msgspec's to decide (its "Number out of range", its rounding there).
DEF _FLOAT_MAX = 40


cdef object _plain_float(const char* p, size_t i, size_t k, size_t n, size_t* at):
    """The JSON number at p[i..] whose integer part (a minus sign and digits, well-formed) ends at
    p[k] with a `.`, `e` or `E`, as msgspec decodes it: read by Python's correctly rounded
    strtod, which gives the double msgspec's parse gives (tests/test_plain_values.py compares
    them); at[0] moved past it.  _NOT_PLAIN when the rest is not JSON's grammar (msgspec's error
    then), or the value one msgspec might treat otherwise (see _FLOAT_MAX)."""
    cdef char buf[_FLOAT_MAX + 1]
    cdef char* end
    cdef size_t j = k, d
    cdef double x
    cdef bint nonzero = False
    for d in range(i, k):
        if b'1' <= p[d] <= b'9':
            nonzero = True
    if p[j] == b'.':
        j += 1
        d = j
        while j < n and b'0' <= p[j] <= b'9':
            if p[j] != b'0':
                nonzero = True
            j += 1
        if j == d:
            return _NOT_PLAIN                   # no digit after the point
    if j < n and (p[j] == b'e' or p[j] == b'E'):
        j += 1
        if j < n and (p[j] == b'+' or p[j] == b'-'):
            j += 1
        d = j
        while j < n and b'0' <= p[j] <= b'9':
            j += 1
        if j == d:
            return _NOT_PLAIN                   # no digit in the exponent
    if j - i > _FLOAT_MAX or not nonzero:
        return _NOT_PLAIN
    memcpy(buf, p + i, j - i)
    buf[j - i] = 0
    try:
        x = PyOS_string_to_double(buf, &end, NULL)
    except ValueError:              # (not a number to it: the grammar was checked, so not expected)
        return _NOT_PLAIN
    if end != buf + (j - i) or not (2.2250738585072014e-308 <= abs(x) <= 1e308):
        return _NOT_PLAIN
    at[0] = j
    return PyFloat_FromDouble(x)


cdef inline size_t _skip_ws(const char* p, size_t n, size_t i) noexcept:
    while i < n and (p[i] == b' ' or p[i] == b'\n' or p[i] == b'\r' or p[i] == b'\t'):
        i += 1
    return i


cdef object _plain_value(const char* p, size_t n, size_t* at, int depth=0):
    """The JSON value at p[at[0]] on (white space before it skipped), as msgspec decodes it (typed
    Any), at[0] moved past it; or _NOT_PLAIN for whatever msgspec should decide: an integer of
    more than 18 digits, a float _plain_float leaves to it, a string cc_scan_str refuses (bad
    UTF-8, a lone surrogate, a control byte), nesting past 64 levels, anything not JSON.  The
    finish, step-start and tool readers' values (usage, warnings, providerMetadata, a tool's args
    and result) are small objects of such values: made here, they cost no bytes copy, no call
    into msgspec and no decoder set-up."""
    cdef size_t i = _skip_ws(p, n, at[0]), close, k
    cdef cc_str_t cs
    cdef long long v
    cdef bint neg
    cdef char c
    cdef dict d
    cdef list lst
    if i >= n or depth > 64:
        return _NOT_PLAIN
    c = p[i]
    if c == b'"':
        if cc_scan_str(p + i + 1, n - i - 1, &close, &cs) != CC_OK:
            return _NOT_PLAIN
        at[0] = i + 2 + close
        return _short_str(&cs)
    if c == b'{':
        d = {}
        i = _skip_ws(p, n, i + 1)
        if i < n and p[i] == b'}':
            at[0] = i + 1
            return d
        while True:
            if i >= n or p[i] != b'"':
                return _NOT_PLAIN
            key = _plain_key(p + i + 1, n - i - 1, &close)
            if key is None:
                return _NOT_PLAIN
            i = _skip_ws(p, n, i + 2 + close)
            if i >= n or p[i] != b':':
                return _NOT_PLAIN
            at[0] = i + 1
            val = _plain_value(p, n, at, depth + 1)
            if val is _NOT_PLAIN:
                return val
            d[key] = val                       # (a duplicate key: the last value, as msgspec)
            i = _skip_ws(p, n, at[0])
            if i < n and p[i] == b',':
                i = _skip_ws(p, n, i + 1)
            elif i < n and p[i] == b'}':
                at[0] = i + 1
                return d
            else:
                return _NOT_PLAIN
    if c == b'[':
        lst = []
        i = _skip_ws(p, n, i + 1)
        if i < n and p[i] == b']':
            at[0] = i + 1
            return lst
        while True:
            at[0] = i
            val = _plain_value(p, n, at, depth + 1)
            if val is _NOT_PLAIN:
                return val
            lst.append(val)
            i = _skip_ws(p, n, at[0])
            if i < n and p[i] == b',':
                i += 1
            elif i < n and p[i] == b']':
                at[0] = i + 1
                return lst
            else:
                return _NOT_PLAIN
    if c == b'-' or b'0' <= c <= b'9':
        neg = c == b'-'
        k = i + neg
        v = 0
        while k < n and b'0' <= p[k] <= b'9':
            if k - i - neg >= 18:
                return _NOT_PLAIN
            v = v * 10 + (p[k] - 48)      # (48: the digit 0)
            k += 1
        if k == i + neg or (p[i + neg] == b'0' and k > i + neg + 1):
            return _NOT_PLAIN                  # no digit, or a leading zero
        if k < n and (p[k] == b'.' or p[k] == b'e' or p[k] == b'E'):
            return _plain_float(p, i, k, n, at)
        at[0] = k
        return -v if neg else v
    if n - i >= 4 and memcmp(p + i, b"true", 4) == 0:
        at[0] = i + 4
        return True
    if n - i >= 5 and memcmp(p + i, b"false", 5) == 0:
        at[0] = i + 5
        return False
    if n - i >= 4 and memcmp(p + i, b"null", 4) == 0:
        at[0] = i + 4
        return None
    return _NOT_PLAIN


cdef object _plain_span(cc_span_t s):
    """The value at a span (present) when _plain_value makes all of it, else _NOT_PLAIN."""
    cdef size_t at = 0
    v = _plain_value(s.p, s.len, &at)
    return v if v is _NOT_PLAIN or _skip_ws(s.p, s.len, at) == s.len else _NOT_PLAIN


cdef inline object _span_value(cc_span_t s):
    """The value at a span, as msgspec decodes it (typed Any); UNSET when absent.  Made here when
    _plain_value can (a string, a number, an object or array of such values), by msgspec
    otherwise."""
    if s.p == NULL:
        return _UNSET
    v = _plain_span(s)
    if v is not _NOT_PLAIN:
        return v
    return _decode_any(PyBytes_FromStringAndSize(s.p, <Py_ssize_t>s.len))


def plain_value(data):
    """(A test hook.)  What _span_value makes of the JSON value in data, and whether it made it
    without msgspec: (value, made_here)."""
    cdef bytes b = bytes(data)
    cdef cc_span_t s
    s.p = PyBytes_AS_STRING(b)
    s.len = <size_t>PyBytes_GET_SIZE(b)
    return _span_value(s), _plain_span(s) is not _NOT_PLAIN


cdef inline object _span_or_none(cc_span_t s):
    return None if s.p == NULL else _span_value(s)


cdef tuple _fields_of(cc_finish_t* f):
    """light_fields(decode_finish_light(frame)) for the frame cc_scan_finish read, without the
    light structs: the values at the spans it found (no spans are found in a null payload), decoded
    as msgspec decodes them (typed Any), then read as _accum.pick_finish reads them -- in the same
    steps, but from the keys of stepResult and metadata the C reader found, so that those two
    objects are not decoded whole (finish frames read both ways are compared by the tests)."""
    cdef object reason = None, warnings = None, resp_id = None, model_id = None
    cdef dict d
    run_id = _span_or_none(f.run_id)
    usage = _span_or_none(f.usage) if f.output == CC_FIN_OBJECT else None
    if f.step_result_object == CC_FIN_OBJECT:
        reason = _span_or_none(f.sr_reason)
        warnings = _span_or_none(f.sr_warnings)
    elif f.step_result_object == CC_FIN_DECODE:
        d = _span_value(f.step_result)
        reason, warnings = d.get("reason"), d.get("warnings")
    if reason in _STEP_TRIP_REASONS:
        # what Mastra reads of such a frame includes the last entry of output.steps, which this
        # reader skips: the light decoder reads the frame (rare: a processor's tripwire ended the
        # step, or had it tried again)
        raise _ReadInFull()
    pid = _span_value(f.id)
    if pid is not _UNSET and type(pid) is not str:
        raise _ReadInFull()     # (the chunk's payload types it a string: the decoders refuse it)
    # (metadata.providerMetadata ?? providerMetadata)
    pm = None
    if f.metadata_object == CC_FIN_OBJECT:
        pm = _span_or_none(f.md_provider_metadata)
        resp_id = _span_value(f.md_id)
        model_id = _span_or_none(f.md_model_id)
        if resp_id is _UNSET or type(model_id) is not str or not model_id:
            # (else response_ids gives these two as they are: the usual step-finish)
            resp_id, model_id = _response_ids(resp_id, pid, model_id, _span_or_none(f.md_model))
    elif f.metadata_object == CC_FIN_DECODE:
        d = _span_value(f.metadata)
        pm = d.get("providerMetadata")
        resp_id, model_id = _response_ids(d.get("id", _UNSET), pid, d.get("modelId"), d.get("model"))
    else:
        resp_id = model_id = ""         # (as pick_finish: no metadata object)
    if pm is None:
        pm = _span_or_none(f.provider_metadata)
    elif f.provider_metadata.p != NULL:
        # not read, but the light decoder decodes it: its UTF-8 and numbers must pass there too
        _span_value(f.provider_metadata)
    return (f.kind == CC_FIN_STEP_FINISH, run_id, reason, warnings, usage, resp_id, model_id, pm,
            _span_value(f.from_))


cdef object _read_finish(const char* p, Py_ssize_t n, object span, bint* taken=NULL, StreamDecoder dec=None,
                         bytes owner=None):
    """light_fields(decode_finish_light(span)) (p, n: its bytes), or None when that decoder refuses
    the frame; read in C when it can: the message history is checked, not decoded, and only the
    few values accumulation reads are.  *taken (when given) tells whether the C reader took it.
    dec: the accumulating decoder whose memos (_FinMemo) the reader may use and add to (p is in
    owner then), or None."""
    cdef cc_finish_t f
    cdef cc_fin_memo_fn lookup = NULL
    f.ck = NULL
    f.ck_cap = 0
    if dec is not None:
        lookup = _memo_lookup
        dec._ck_room(&f)
    if taken != NULL:
        taken[0] = True
    if cc_scan_finish_memo(p, <size_t>n, 0, &f, NULL, lookup, <void*>dec) == CC_OK:
        try:
            fields = _fields_of(&f)
        except _SPAN_ERRORS:
            pass        # msgspec refuses a value (out of range, bad UTF-8): the light decoder decides
        else:
            if dec is not None:
                dec._keep_memo(owner, p, &f, fields[1])
            return fields
    if taken != NULL:
        taken[0] = False
    light = _decode_finish_light(span)
    return None if light is None else _light_fields(light)


# The finish memos (_FinMemo) refer to the bytes their frames are in, without a copy (copying a
# step-finish frame costs more than reading its run's finish again): a buffer of at most
# _MEMO_OWNER_MAX bytes (a piece of a stream) may be kept across feed() calls, up to _MEMO_BYTES of
# them in all per decoder (counted once per memo: past it the memos are dropped); a bigger one (a
# whole log) is not counted, and its memos are dropped when the feed() that gave it returns.  A
# memo's places to go on from (its own copy) are counted whatever its buffer.
DEF _MEMO_OWNER_MAX = 1 << 20
DEF _MEMO_BYTES = 16 << 20
# The places to go on from (cc_fin_ck_t) a finish read keeps, at most: past them, a later frame
# goes on from the last one kept (each step of a Mastra run adds about a dozen).
DEF _FIN_CK_ROOM = 8192


@cython.final
cdef class _FinMemo:
    """A run's last step-finish frame as the finish reader read it: the members of its payload and
    output the reader skipped (their message history), for the run's finish frame, which repeats
    them, to be compared with instead of read again (cc_scan_finish_memo); owner: the bytes object
    m.p points into."""
    cdef object owner
    cdef Py_ssize_t charge
    cdef cc_fin_memo_t m
    cdef cc_fin_ck_t* ck         # m.ck: its places to go on from, its own copy (NULL: none)

    def __dealloc__(self):
        PyMem_Free(self.ck)


cdef const cc_fin_memo_t* _memo_lookup(void* ctx, const char* p, size_t n) noexcept:
    """cc_fin_memo_fn: the memo of the run whose runId's bytes are p[0..n), or NULL."""
    cdef StreamDecoder dec = <StreamDecoder>ctx
    if not dec._memos:
        return NULL
    try:
        m = dec._memos.get(_plain_utf8(p, n))
    except Exception:           # (a runId that is not UTF-8: the reader goes on without a memo)
        return NULL
    return NULL if m is None else &(<_FinMemo>m).m


cdef tuple _step_start_values(const char* p, Py_ssize_t n):
    """(runId, from, warnings) of a step-start frame read in C (its request and input messages
    checked, not decoded; UNSET where absent), or None when cc_scan_step_start leaves the frame to
    the typed decoder."""
    cdef cc_step_start_t s
    if cc_scan_step_start(p, <size_t>n, &s) != CC_OK:
        return None
    try:
        return _span_value(s.run_id), _span_value(s.from_), _span_value(s.warnings)
    except _SPAN_ERRORS:
        return None


cdef tuple _tool_values(const char* p, Py_ssize_t n):
    """(is a result, runId, from, the chunk, its toolCallId) of a tool-call or tool-result frame
    read in C, the chunk made of the values read as the typed decoder makes it (UNSET where
    absent), or None when cc_scan_tool leaves the frame to that decoder."""
    cdef cc_tool_t t
    if cc_scan_tool(p, <size_t>n, &t) != CC_OK:
        return None
    try:
        run_id = _span_value(t.run_id)
        from_ = _span_value(t.from_)
        call_id = _span_value(t.call_id)
        name = _span_value(t.name)
        args = _span_value(t.args)
        result = _span_value(t.result)
    except _SPAN_ERRORS:
        return None
    if t.kind == CC_TOOL_RESULT:
        chunk = _ToolResult(runId=run_id, from_=from_, payload=_ToolResultPayload(
            args=args, toolCallId=call_id, toolName=name, result=result))
    else:
        chunk = _ToolCall(runId=run_id, from_=from_, payload=_ToolCallPayload(
            toolCallId=call_id, toolName=name, args=args))
    return t.kind == CC_TOOL_RESULT, run_id, from_, chunk, call_id


def tool_chunk(data):
    """(A test hook.)  The chunk _tool_values makes of a frame, or None: what the native path
    reads from it without the decoder."""
    cdef bytes b = bytes(data)
    v = _tool_values(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b))
    return None if v is None else v[3]


def step_start_fields(data):
    """(A test hook.)  _step_start_values of a frame: what the native path reads from it."""
    cdef bytes b = bytes(data)
    return _step_start_values(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b))


def fast_isa():
    """Which 64-byte block reader the C delta loops use: "avx2", or "portable" (SSE2 on x86-64)
    when the CPU lacks AVX2 or CHUNKCODEC_NO_AVX2 is set.  (A test hook.)"""
    return "avx2" if cc_fast_avx2() else "portable"


def _alloc_arm(long long after):
    """(A test hook.)  Arm the C core's allocation countdown in this module (csrc alloc.h): the
    allocation after `after` more fails; after < 0 disarms.  Returns what was left before."""
    return cc_alloc_arm(after)


def utf8_valid(data):
    """(A test hook.)  Whether the C core takes data as well-formed UTF-8 (cc_utf8_valid: 32 bytes
    at a time where the CPU has AVX2, as fast_isa() says, and data is 8 bytes or more; else a
    sequence at a time)."""
    cdef bytes b = bytes(data)
    return cc_utf8_valid(PyBytes_AS_STRING(b), <size_t>PyBytes_GET_SIZE(b)) != 0


def finish_fields(data):
    """(what the native path reads from a step-finish/finish frame -- light_fields of
    decode_finish_light(data), None when that refuses it -- and whether the C reader took it)."""
    cdef bytes b = bytes(data)
    cdef bint taken
    fields = _read_finish(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), b, &taken)
    return fields, taken


cdef extern from "Python.h":
    ctypedef struct PyVarObject:
        Py_ssize_t ob_size
    ctypedef struct PyByteArrayObject:
        Py_ssize_t ob_alloc
        char* ob_bytes
        char* ob_start
        Py_ssize_t ob_exports


@cython.final
cdef class DeltaBuf:
    """A growing UTF-8 buffer an Accumulator appends deltas to; ``owner`` is the part writing at
    its end.  ``view()`` is a read-only memoryview of the bytes so far, without a copy; appending
    while a view is held moves the data to a new bytearray and leaves the view as it was.

    The C delta loop appends to ``data`` in place: ``d`` points at the bytearray's storage and at
    its length, and the bytearray keeps spare room behind its end for the loop to write into
    (``reserve``).  Setting ``owner`` bumps ``d.gen``, which drops the loop's routes to it."""
    cdef readonly bytearray data
    cdef object _owner
    cdef cc_dbuf d
    # The end of the last bytes append() wrote (0: none): bytes from Python (an added chunk's str,
    # encoded with surrogatepass) that no reader checked.  Every byte after it came from the C
    # readers, which check each string's UTF-8 as they write it (the delta loop, append_str).
    cdef Py_ssize_t _py_end

    def __init__(self):
        self.data = bytearray()
        self._owner = None
        self._py_end = 0
        self._bind()

    @property
    def owner(self):
        return self._owner

    @owner.setter
    def owner(self, value):
        self._owner = value
        self.d.gen += 1

    cdef void _bind(self):
        cdef PyByteArrayObject* o = <PyByteArrayObject*>self.data
        self.d.len = &(<PyVarObject*>self.data).ob_size
        if o.ob_alloc == 0:                      # bytearray() has no storage yet
            self.d.p = NULL
            self.d.cap = 0
        else:
            self.d.p = o.ob_start
            self.d.cap = <size_t>(o.ob_alloc - (o.ob_start - o.ob_bytes) - 1)

    cdef int reserve(self, size_t n) except -1:
        """Make room for n more bytes behind the end."""
        cdef Py_ssize_t size = PyByteArray_GET_SIZE(self.data)
        cdef Py_ssize_t want = size + <Py_ssize_t>n
        cdef bytearray fresh
        if self.d.p != NULL and <size_t>size + n <= self.d.cap:
            return 0
        # four times while small, doubling, a quarter more once large: few stops of the C loop
        # (each one for a realloc: 5 % of the time on a log's deltas with a double each time from
        # 64 bytes), and bounded slack (a run's text may be most of the memory reconstruct holds)
        grown = 4 * size if size < 16384 else 2 * size if size < 65536 else size + size // 4
        if want < grown:
            want = grown
        if want < 256:
            want = 256
        if (<PyByteArrayObject*>self.data).ob_exports > 0:
            # a view holds the storage: move to a new bytearray, the view keeps the old one
            fresh = PyByteArray_FromStringAndSize(NULL, want)
            memcpy(PyByteArray_AS_STRING(fresh), PyByteArray_AS_STRING(self.data), size)
            self.data = fresh
        else:
            PyByteArray_Resize(self.data, want)
        Py_SET_SIZE(self.data, size)
        PyByteArray_AS_STRING(self.data)[size] = 0
        self._bind()
        return 0

    def append(self, b):
        try:
            self.data += b
        except BufferError:
            self.data = bytearray(self.data)
            self.data += b
        self._py_end = PyByteArray_GET_SIZE(self.data)
        self._bind()

    def view(self):
        return memoryview(self.data).toreadonly()

    def __len__(self):
        """Its bytes so far (a slot: no attribute lookup, as len(buf.data) would take)."""
        return PyByteArray_GET_SIZE(self.data)

    def text(self, Py_ssize_t start=0, Py_ssize_t end=-1):
        """The bytes [start:end] as text; end -1 or past the end: to the end."""
        cdef Py_ssize_t n = PyByteArray_GET_SIZE(self.data)
        cdef const unsigned char* p = <const unsigned char*>PyByteArray_AS_STRING(self.data)
        if end < 0 or end > n:
            end = n
        if start < 0:
            start = 0
        # Bytes only the C readers wrote (those past _py_end) are strings of well-formed UTF-8 one
        # after the other, so any range of them that starts and ends on a character's first byte
        # (not a continuation byte, 0x80-0xBF) is well-formed too, and is not checked again (the
        # ranges asked for are deltas' ends; a range that is not is checked as any other)
        return _utf8_text(<const char*>p + start, end - start,
                          start >= end or (start >= self._py_end and (p[start] & 0xC0) != 0x80 and
                                           (end == n or (p[end] & 0xC0) != 0x80)))

    cdef int append_str(self, const cc_str_t* s) except -1:
        """Unescape a scanned JSON string straight onto the end of the buffer."""
        if not cc_dbuf_append(&self.d, s):
            self.reserve(s.len)
            cc_dbuf_append(&self.d, s)
        return 0


cdef inline int _extend(bytearray ba, const char* src, Py_ssize_t n) except -1:
    """ba += src[:n], copied once (a slice of the piece first would copy it twice)."""
    cdef Py_ssize_t size = PyByteArray_GET_SIZE(ba)
    if n > 0:
        PyByteArray_Resize(ba, size + n)
        memcpy(PyByteArray_AS_STRING(ba) + size, src, <size_t>n)
    return 0


cdef class StreamDecoder:
    """Incremental decoder: ``feed(data) -> list of chunks``, ``close() -> list``.

    framing: "auto" (detected from the first bytes), "sse", "rs", "ndjson" or "json".
    max_frame_bytes: a frame longer than this raises FrameTooLarge (or, with errors="keep",
    becomes an InvalidFrame holding its first max_frame_bytes bytes).
    errors: "strict" raises a DecodeError subclass at the first bad frame; "keep" yields an
    InvalidFrame (raw bytes + error) in its place and carries on.
    """
    cdef int _framing
    cdef Py_ssize_t _max
    cdef bint _keep
    cdef bint _dicts
    cdef bint _frames
    cdef bytearray _pending
    cdef bytes _tail_src       # or the pending bytes are _tail_src[_tail_off:], not yet copied,
    cdef Py_ssize_t _tail_off
    cdef list _tail_more       # then these pieces whole (a frame going on through them)
    cdef Py_ssize_t _tail_len  # the pending bytes so kept
    cdef long long _pending_pos
    cdef long long _offset
    cdef long long _index
    cdef object _skip          # [frame_pos, head, tail2, seen] while dropping an oversized frame
    cdef bint _closed
    cdef bint _auto_brace      # auto-detecting, and pending is a '{...' with no RS/LF yet
    cdef object _failed        # the message of the error that stopped a strict decoder
    cdef long long _json_dropped   # "json" framing in keep mode: bytes past the limit (-1: none)
    cdef public bint done
    cdef list _cache           # last (raw bytes, str) per hot string field
    # Accumulator mode (_sinkref): delta frames go straight into the sink's buffers.  The decoder
    # holds its accumulator weakly (a strong reference back would make a cycle, and an
    # accumulator dropped mid-stream would wait for the collector); _sink is the accumulator
    # itself only while one of its feed() or close() calls runs.
    cdef object _sinkref
    cdef _Sink _sink           # the accumulator (the compiled AccumulatorBase), during a call
    cdef list _spare           # the list _feed_call gives an accumulator while it stays empty
    cdef cc_routes* _routes    # (type, runId, id) -> DeltaBuf, for the C delta loop and _sink_hot
    cdef list _rkeep           # per route slot: (DeltaBuf, run) its route writes to, kept alive
    cdef object _cur_run       # the run the sink was last told is current
    cdef object _custom        # another format's frame decoder (chunkcodec.ailoop), or None
    cdef readonly long long _loop_frames   # (a test hook) delta frames the C loop appended itself
    cdef readonly long long _open_frames   # (a test hook) finish frames _finish_open read
    cdef readonly long long _loop_calls    # (a test hook) entries into the C delta loop
    cdef readonly long long _open_tries    # (a test hook) and those it began to read
    cdef readonly long long _typed_frames  # (a test hook) frames _sink_frame left to the typed decoder
    cdef Py_ssize_t _last_term     # _process_sink: where its buffer's last frame terminator is, or -1
    cdef dict _memos           # runId -> _FinMemo of its last step-finish, until its finish
    cdef readonly Py_ssize_t _memo_bytes   # (a test hook) what the memos are charged (_MEMO_BYTES)
    cdef bint _memo_big        # a memo refers to a buffer over _MEMO_OWNER_MAX bytes
    cdef readonly long long _memo_members  # (a test hook) finish members taken through a memo
    cdef readonly long long _rep_strings   # (a test hook) finish strings compared with one before
    cdef readonly long long _memo_resumed  # (a test hook) times the finish reader went on from a memo's place
    cdef cc_fin_ck_t* _ck                  # room for the finish reader's places (_FIN_CK_ROOM), or NULL

    def __init__(self, framing="auto", *, max_frame_bytes=DEFAULT_MAX_FRAME_BYTES,
                 errors="strict", _as_dicts=False, _as_frames=False, _sink=None, _decoder=None):
        self._framing = _framing_code(framing)
        if errors not in ("strict", "keep"):
            raise ValueError(f"errors must be 'strict' or 'keep', got {errors!r}")
        if not isinstance(max_frame_bytes, int) or max_frame_bytes < 1:
            raise ValueError(f"max_frame_bytes must be a positive int, got {max_frame_bytes!r}")
        self._max = max_frame_bytes
        self._keep = errors == "keep"
        self._dicts = bool(_as_dicts)
        self._frames = bool(_as_frames)
        self._pending = bytearray()
        self._pending_pos = 0
        self._offset = 0
        self._index = 0
        self._skip = None
        self._closed = False
        self._auto_brace = False
        self._failed = None
        self._json_dropped = -1
        self.done = False
        self._cache = [None] * (2 * CC_F_COUNT)
        self._sink = None
        if _sink is not None and not isinstance(_sink, _Sink):
            raise TypeError(f"_sink must be a chunkcodec accumulator, got {type(_sink).__name__}")
        self._sinkref = None if _sink is None else weakref.ref(_sink)
        self._spare = []
        if _sink is not None and self._routes == NULL:
            self._routes = <cc_routes*>PyMem_Calloc(1, sizeof(cc_routes))
            if self._routes == NULL:
                raise MemoryError()
            if not cc_routes_init(self._routes, CC_ROUTE_BITS_MIN):
                PyMem_Free(self._routes)
                self._routes = NULL
                raise MemoryError()
            self._rkeep = [None] * (1 << CC_ROUTE_BITS_MIN)
        self._cur_run = None
        self._custom = _decoder
        self._memos = {}

    def __dealloc__(self):
        if self._routes != NULL:
            cc_routes_free(self._routes)
            PyMem_Free(self._routes)
        PyMem_Free(self._ck)

    @property
    def framing(self):
        """The framing in use ("auto" until it has been detected)."""
        return _NAMES[self._framing]

    @property
    def _route_slots(self):
        """(For tests.)  The slots of an accumulating decoder's route table, else 0."""
        return 1 << self._routes.bits if self._routes != NULL else 0

    @property
    def _memo_runs(self):
        """(For tests.)  The runs whose last step-finish is kept as a finish memo."""
        return len(self._memos)

    @property
    def frame_index(self):
        return self._index

    # -- input ------------------------------------------------------------------------------
    def feed(self, data):
        """Decode the complete frames in data (plus what was kept from before); keep the tail."""
        return self._feed_call(data, None)

    cdef list _feed_call(self, object data, _Sink acc):
        """feed()'s work.  acc: the accumulator whose decoder this is, when it is the caller
        (_AccumulatorBase._decoder_feed: a C call, once per network read of a live stream; no method
        lookup, no argument parsing, no weak reference to follow); the list it gets back is then
        the decoder's spare one while empty, not to be kept."""
        if self._closed:
            raise RuntimeError("feed() after close()")
        if self._failed is not None:
            raise RuntimeError(f"the decoder stopped at an error in strict mode ({self._failed}); "
                               f"use errors='keep' to decode past bad frames")
        cdef bytes b = _to_bytes(data)
        cdef list out
        if acc is not None:
            out = self._spare
        else:
            out = []
            if self._sinkref is not None:
                acc = self._sinkref()
        cdef long long base = self._offset
        self._offset += PyBytes_GET_SIZE(b)
        self._sink = acc
        try:
            self._feed(b, 0, base, out)
        except DecodeError as exc:
            if out is self._spare:
                self._spare = []
            exc.chunks = out
            self._failed = str(exc)     # (not exc: its traceback holds the frames that hold us)
            raise
        finally:
            self._sink = None
            if self._memo_big:
                self._drop_big_memos()
        if out is self._spare and PyList_GET_SIZE(out):
            self._spare = []
        return out

    def _expect(self, Py_ssize_t nbytes):
        """(accumulate()'s hint.)  At least nbytes are coming, in pieces: a big input gets a
        512-slot route table now, as one big piece does (_process_sink), not growth by growth."""
        if nbytes >= _BIG_FEED and self._routes != NULL and self._routes.bits < CC_ROUTE_BITS_BIG:
            self._grow_routes(CC_ROUTE_BITS_BIG)

    cdef int _drop_big_memos(self) except -1:
        """At the end of a feed(): its buffer is the caller's (or a join of it), not to be kept."""
        for k in [k for k, m in self._memos.items() if PyBytes_GET_SIZE((<_FinMemo>m).owner) > _MEMO_OWNER_MAX]:
            self._memo_bytes -= (<_FinMemo>self._memos.pop(k)).charge
        self._memo_big = False
        return 0

    cdef _feed(self, bytes b, Py_ssize_t off, long long base, list out):
        cdef const char* p = PyBytes_AS_STRING(b)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(b)
        cdef Py_ssize_t end, consumed, k, t
        cdef size_t skip = 0
        cdef int fr
        cdef const void* rs
        cdef const void* lf
        cdef bytes buf, tail, src
        cdef char last2[2]
        cdef char* q
        if self._framing == CC_FRAMING_AUTO:
            if not self._pending:
                self._pending_pos = base
            if not self._pending and not self._auto_brace:
                # the common case, everything at once: detect on the new bytes, copy nothing
                fr = cc_detect_framing(p + off, n - off, 0, base == 0, &skip)
                if fr != CC_FRAMING_AUTO:
                    self._framing = fr
                    self._feed(b, off + <Py_ssize_t>skip, base + <long long>skip, out)
                    return
            if self._auto_brace:
                # pending is a '{...' with no 0x1E or LF yet: only the new bytes need a look
                rs = memchr(p + off, 0x1E, n - off)
                lf = memchr(p + off, 0x0A, n - off)
                if rs == NULL and lf == NULL:
                    fr = CC_FRAMING_AUTO
                elif lf == NULL or (rs != NULL and rs < lf):
                    fr = CC_FRAMING_RS
                else:
                    fr = CC_FRAMING_NDJSON
                self._pending += b[off:] if off else b
                skip = 0
            else:
                self._pending += b[off:] if off else b
                fr = cc_detect_framing(PyByteArray_AS_STRING(self._pending), PyByteArray_GET_SIZE(self._pending),
                                       0, self._pending_pos == 0, &skip)
            if fr == CC_FRAMING_AUTO:
                # drop the white space looked at (and a BOM) so it is never scanned again
                del self._pending[:skip]
                self._pending_pos += skip
                self._auto_brace = PyByteArray_GET_SIZE(self._pending) > 0 and \
                    PyByteArray_AS_STRING(self._pending)[0] == b'{'
                if PyByteArray_GET_SIZE(self._pending) > self._max + SLACK:
                    fr = CC_FRAMING_NDJSON
                else:
                    return
                skip = 0
            self._framing = fr
            buf = bytes(self._pending)[skip:]
            base = self._pending_pos + skip
            self._pending = bytearray()
            self._feed(buf, 0, base, out)
            return
        if self._framing == CC_FRAMING_JSON:
            if self._json_dropped >= 0:            # keep mode, past max_frame_bytes: count only
                self._json_dropped += n - off
                return
            if not self._pending:
                self._pending_pos = base
            self._pending += b[off:] if off else b
            if PyByteArray_GET_SIZE(self._pending) > self._max:
                if not self._keep:
                    raise frame_too_large(self._max, self._pending_pos, 0, bytes(self._pending[:200]))
                self._json_dropped = PyByteArray_GET_SIZE(self._pending) - self._max
                del self._pending[self._max:]
            return
        if self._skip is not None:
            tail = self._skip[2]
            end = cc_frame_find_end(self._framing, PyBytes_AS_STRING(tail), PyBytes_GET_SIZE(tail), p + off, n - off)
            if end < 0:
                self._skip[2] = (tail + b[max(off, n - 2):])[-2:]
                self._skip[3] += n - off
                return
            self._finish_skip(end, self._terminator_len(tail, p + off, end), out)
            off += end
            base += end
        if self._tail_src is not None:
            # The tail of the piece before (and the pieces the frame went on through), kept by
            # reference: when this piece ends the frame, the frame is copied once, from all of
            # them (the only frame copied).
            t = self._tail_last2(last2)
            end = cc_frame_find_end(self._framing, last2, t, p + off, n - off)
            if end < 0:
                if off == n:
                    return
                if off == 0 and _TAIL_PIECE_MIN <= n <= TAIL_BY_REFERENCE and \
                        self._tail_len + n <= self._max + SLACK:
                    if self._tail_more is None:
                        self._tail_more = []
                    self._tail_more.append(b)    # (bytes: it cannot change meanwhile)
                    self._tail_len += n
                    return
                self._keep_tail()                # the frame goes on: the bytes are kept as below
            else:
                buf = PyBytes_FromStringAndSize(NULL, self._tail_len + end)
                q = PyBytes_AS_STRING(buf)
                k = PyBytes_GET_SIZE(self._tail_src) - self._tail_off
                memcpy(q, PyBytes_AS_STRING(self._tail_src) + self._tail_off, k)
                if self._tail_more:
                    for src in self._tail_more:
                        memcpy(q + k, PyBytes_AS_STRING(src), PyBytes_GET_SIZE(src))
                        k += PyBytes_GET_SIZE(src)
                    self._tail_more = None
                memcpy(q + k, p + off, end)
                self._tail_src = None
                self._process(buf, 0, self._pending_pos, 0, out)
                off += end
                base += end
        if PyByteArray_GET_SIZE(self._pending):
            tail = bytes(self._pending[-2:])
            end = cc_frame_find_end(self._framing, PyBytes_AS_STRING(tail), PyBytes_GET_SIZE(tail), p + off, n - off)
            if end < 0:
                _extend(self._pending, p + off, n - off)
                self._check_pending()
                return
            # The one frame that spans pieces: the only one that is copied (once, into place).
            k = PyByteArray_GET_SIZE(self._pending)
            buf = PyBytes_FromStringAndSize(NULL, k + end)
            memcpy(PyBytes_AS_STRING(buf), PyByteArray_AS_STRING(self._pending), k)
            memcpy(PyBytes_AS_STRING(buf) + k, p + off, end)
            self._pending = bytearray()
            self._process(buf, 0, self._pending_pos, 0, out)
            off += end
            base += end
        consumed = self._process(b, off, base, 0, out)
        if off + consumed < n:
            self._pending_pos = base + consumed
            if n <= TAIL_BY_REFERENCE and n - off - consumed <= self._max + SLACK:
                self._tail_src = b              # (bytes: it cannot change meanwhile)
                self._tail_off = off + consumed
                self._tail_len = n - off - consumed
                return
            _extend(self._pending, p + off + consumed, n - off - consumed)
            self._check_pending()

    cdef int _keep_tail(self) except -1:
        """The bytes kept by reference, copied into _pending (which is empty then)."""
        if self._tail_src is not None:
            _extend(self._pending, PyBytes_AS_STRING(self._tail_src) + self._tail_off,
                    PyBytes_GET_SIZE(self._tail_src) - self._tail_off)
            if self._tail_more:
                for src in self._tail_more:
                    _extend(self._pending, PyBytes_AS_STRING(src), PyBytes_GET_SIZE(src))
            self._tail_src = None
            self._tail_more = None
        return 0

    cdef Py_ssize_t _tail_last2(self, char* last2) except -1:
        """The last two bytes kept by reference (fewer when there are fewer), into last2: what
        cc_frame_find_end looks back at.  (A piece kept after the first has 4 KiB and more: they
        are all in the last one then.)"""
        cdef bytes src = self._tail_more[-1] if self._tail_more else self._tail_src
        cdef Py_ssize_t lo = 0 if self._tail_more else self._tail_off
        cdef Py_ssize_t n = PyBytes_GET_SIZE(src)
        cdef Py_ssize_t t = 2 if n - lo >= 2 else n - lo
        memcpy(last2, PyBytes_AS_STRING(src) + n - t, <size_t>t)
        return t

    cdef int _terminator_len(self, bytes tail, const char* data, Py_ssize_t end) except -1:
        if self._framing != CC_FRAMING_SSE:
            return 1
        cdef char c
        if end >= 2:
            c = data[end - 2]
        elif end == 1 and PyBytes_GET_SIZE(tail) >= 1:
            c = PyBytes_AS_STRING(tail)[PyBytes_GET_SIZE(tail) - 1]
        else:
            c = 0
        return 3 if c == b'\r' else 2

    cdef _check_pending(self):
        if PyByteArray_GET_SIZE(self._pending) <= self._max + SLACK:
            return
        pos = self._pending_pos
        head = bytes(self._pending[:self._max])
        seen = PyByteArray_GET_SIZE(self._pending)
        tail2 = bytes(self._pending[-2:])
        self._pending = bytearray()
        if not self._keep:
            raise frame_too_large(self._max, pos, self._index, head)
        self._skip = [pos, head, tail2, seen]

    cdef _finish_skip(self, Py_ssize_t end, int term, list out):
        pos, head, _, seen = self._skip
        self._skip = None
        total = seen + end - term
        err = frame_too_large(self._max, pos, self._index, head)
        out.append(InvalidFrame(head, err, self._index, pos, dropped=max(0, total - len(head))))
        self._index += 1

    cdef Py_ssize_t _process(self, bytes b, Py_ssize_t off, long long base, bint final, list out) except -1:
        """Split and decode the frames of b[off:]; returns how many bytes were consumed."""
        if self._sink is not None:
            return self._process_sink(b, off, base, final, out)
        cdef cc_frame_t frames[FRAME_BATCH]
        cdef size_t nf = 0, c, i
        cdef Py_ssize_t total = 0
        cdef const char* p = PyBytes_AS_STRING(b) + off
        cdef Py_ssize_t n = PyBytes_GET_SIZE(b) - off
        cdef int fr = self._framing
        while True:
            if n - total > NOGIL_BYTES:
                with nogil:
                    c = cc_frame_split(fr, p + total, n - total, final, frames, FRAME_BATCH, &nf)
            else:
                c = cc_frame_split(fr, p + total, n - total, final, frames, FRAME_BATCH, &nf)
            for i in range(nf):
                self._emit(b, off + total, &frames[i], base + total, out)
            total += c
            if nf < FRAME_BATCH or total >= n:
                break
        return total

    cdef _emit(self, bytes b, Py_ssize_t boff, cc_frame_t* f, long long base, list out):
        cdef long long idx
        cdef bytes owner
        cdef Py_ssize_t start, length
        cdef cc_hot_t hot
        if f.kind == CC_FK_DONE:
            self.done = True
            return
        idx = self._index
        self._index += 1
        if f.blen > <size_t>self._max:
            err = frame_too_large(self._max, base + f.bstart, idx, b[boff + f.bstart:boff + f.bstart + 200])
            if not self._keep:
                raise err
            out.append(InvalidFrame(b[boff + f.bstart:boff + f.bstart + self._max], err, idx,
                                    base + f.bstart, dropped=f.blen - self._max))
            return
        if f.kind == CC_FK_SSE_MULTI:
            owner = PyBytes_FromStringAndSize(NULL, f.len)
            length = cc_sse_join_data(PyBytes_AS_STRING(b) + boff + f.start, f.len, PyBytes_AS_STRING(owner))
            start = 0
        else:
            owner = b
            start = boff + f.start
            length = f.len
        if self._frames:
            out.append(owner if start == 0 and length == PyBytes_GET_SIZE(owner)
                       else PyBytes_FromStringAndSize(PyBytes_AS_STRING(owner) + start, length))
            return
        if self._sink is not None:
            self._sink_frame(owner, start, length, idx, base + f.start, out)
            return
        if self._custom is not None:
            span = _span(owner, start, length)
            try:
                out.append(self._custom.decode_frame(span, idx, base + f.start))
            except DecodeError as exc:
                if not self._keep:
                    raise
                out.append(InvalidFrame(bytes(span), exc, idx, base + f.start))
            return
        if not self._dicts and cc_scan_hot(PyBytes_AS_STRING(owner) + start, length, &hot) == CC_OK:
            chunk = self._build_hot(&hot)
            if not hot.canonical:
                # A canonical frame is exactly what the encoder writes from the fields, so only
                # a non-canonical one needs its bytes kept to re-encode identically.
                _set_raw(chunk, _span(owner, start, length))
            out.append(chunk)
            return
        pos = base + f.start
        span = _span(owner, start, length)
        try:
            if self._dicts:
                out.append(_loads_frame(span, idx, pos))
            else:
                chunk = _decode_typed(span, idx, pos)
                _set_raw(chunk, span)
                out.append(chunk)
        except DecodeError as exc:
            if not self._keep:
                raise
            out.append(InvalidFrame(bytes(span), exc, idx, pos))

    cdef _sink_frame(self, bytes owner, Py_ssize_t start, Py_ssize_t length, long long idx,
                     long long pos, list out):
        """Accumulator mode: hand one frame to the sink, in order."""
        cdef cc_hot_t hot
        cdef tuple ss
        cdef const char* p = PyBytes_AS_STRING(owner) + start
        # (a step-finish/finish frame, the biggest of a log, is known by its first bytes: the hot
        # and step-start scanners, which would walk into it before refusing it, are not tried;
        # nor is the hot one first for a frame whose first bytes hold "step-start", "tool-call" or
        # "tool-result", which it would walk up to its payload before refusing.  Each reader
        # takes only its own types, so the order they are tried in changes nothing else.)
        cdef bint finish = _finish_prefix(p, length)
        cdef int hint = CC_HINT_NONE if finish else cc_frame_hint(p, length)
        if not finish and hint == CC_HINT_NONE and cc_scan_hot(p, length, &hot) == CC_OK:
            self._sink_hot(&hot)
            return
        self._cur_run = None
        if not finish:
            if hint == CC_HINT_STEP_START:   # (that reader wants the same "step-start" there)
                ss = _step_start_values(p, length)
                if ss is not None:
                    self._sink._step_start(ss[0], ss[1], ss[2])
                    return
            ss = _tool_values(p, length)
            if ss is not None:
                self._sink._tool_read(ss[0], ss[1], ss[2], ss[3], ss[4])
                return
            if hint != CC_HINT_NONE and cc_scan_hot(p, length, &hot) == CC_OK:
                self._sink_hot(&hot)      # (a delta whose text, say, is "tool-call")
                return
        span = _span(owner, start, length)
        if finish:
            fields = _read_finish(p, length, span, NULL, self, owner)
            if fields is not None:
                self._sink._finish_read(fields)
                return
        self._typed_frames += 1
        try:
            chunk = _decode_typed(span, idx, pos)
        except DecodeError as exc:
            if not self._keep:
                raise
            out.append(InvalidFrame(bytes(span), exc, idx, pos))
            return
        self._sink.add(chunk)

    cdef Py_ssize_t _process_sink(self, bytes b, Py_ssize_t off, long long base, bint final,
                                  list out) except -1:
        """Accumulator mode: the delta frames that come in a row go through the C loop, which
        appends them to their buffers in place; each other frame is split and handled alone."""
        cdef cc_frame_t frame
        cdef cc_accum_stop st
        cdef size_t nf = 0, c
        cdef Py_ssize_t total = 0
        cdef const char* p = PyBytes_AS_STRING(b) + off
        cdef Py_ssize_t n = PyBytes_GET_SIZE(b) - off
        cdef int fr = self._framing
        cdef tuple e
        cdef Py_ssize_t k
        cdef int kind
        # the last terminator byte of what is here: a step-finish/finish frame that starts after
        # it ends in a piece to come, and _finish_open leaves it (else it would be read up to the
        # end of this piece in vain, and again whole once the next has come)
        k = cc_last_byte(p, <size_t>n, 0x1E if fr == CC_FRAMING_RS else b'\n')
        self._last_term = off + k if k >= 0 else -1
        if n >= _BIG_FEED and self._routes.bits < CC_ROUTE_BITS_BIG:
            # a log, most likely, of many runs at once: a table for a few hundred routes now, not
            # three growths on the way (each moves the routes and forgets the kept heads)
            self._grow_routes(CC_ROUTE_BITS_BIG)
        while total < n:
            # A frame the delta loop never takes is not given to it: a finish frame goes straight to
            # its reader, and a tool-call, tool-result or step-start frame, which the loop would
            # read through (masks, escapes, UTF-8) before refusing it, is read once, by its own.
            # (The entry itself costs little: bench/HISTORY.md, stop 42.)
            kind = _start_kind(p + total, n - total, fr)
            if kind == _START_FINISH:
                c = self._finish_open(b, off + total, n - total)
                if c:
                    total += c
                    continue
            elif kind == _START_ANY:
                c = cc_accum_deltas(fr, p + total, n - total, <size_t>self._max, self._routes, &st)
                self._loop_calls += 1
                if st.frames:
                    self._index += st.frames
                    self._loop_frames += st.frames
                    total += c
                    e = <tuple>self._rkeep[st.last]
                    if e[1] is not self._cur_run:
                        self._sink._current = e[1]
                        self._cur_run = e[1]
                if st.full >= 0:
                    (<DeltaBuf>(<tuple>self._rkeep[st.full])[0]).reserve(st.need)
                    continue
                if st.event == CC_ACC_PM_DELTA or st.event == CC_ACC_NEW_ROUTE:
                    self._sink_delta(&st, b, off + total, base + total, out)
                    self._index += 1
                    total += <Py_ssize_t>st.event_bytes
                    continue
                if st.event:
                    self._sink_event(&st)
                    self._index += 1
                    total += <Py_ssize_t>st.event_bytes
                    continue
                if total >= n:
                    break
                # the frame the loop stopped at, after those it took: perhaps a finish frame
                c = self._finish_open(b, off + total, n - total)
                if c:
                    total += c
                    continue
            c = cc_frame_split(fr, p + total, n - total, final, &frame, 1, &nf)
            if nf:
                self._emit(b, off + total, &frame, base + total, out)
            if c == 0:
                break
            total += c
        return total

    cdef Py_ssize_t _finish_open(self, bytes b, Py_ssize_t at, Py_ssize_t avail) except -1:
        """A step-finish/finish frame at b[at:] (avail bytes on), read before its end is known:
        its length with its terminator, or 0 to leave it to the split and _sink_frame.  Those would
        look for its end first (memchr through the message history, 2 % of accumulate() on a log)
        and then read it; cc_scan_finish_open reads it once, and the terminator must follow its
        closing brace right away (LF or CRLF, 0x1E, or the blank line of an SSE `data: ` event;
        anything else, and frames past max_frame_bytes, go the general way)."""
        cdef const char* p = PyBytes_AS_STRING(b) + at
        cdef const char* q
        cdef Py_ssize_t j = 0, e, term = 1
        cdef size_t end
        cdef cc_finish_t f
        cdef int fr = self._framing
        if fr == CC_FRAMING_SSE:
            if avail < 6 or memcmp(p, b"data: ", 6) != 0:
                return 0
            j = 6
            term = 2
        elif fr != CC_FRAMING_NDJSON and fr != CC_FRAMING_RS:
            return 0
        q = p + j
        if not _finish_prefix(q, avail - j):
            return 0
        if at + j > self._last_term:
            return 0            # no terminator after it: its end is in a piece to come, read it then
        self._open_tries += 1
        self._ck_room(&f)
        if cc_scan_finish_memo(q, <size_t>(avail - j), 1, &f, &end, _memo_lookup, <void*>self) != CC_OK:
            return 0
        e = <Py_ssize_t>end
        if j + e + term > avail:
            return 0
        if fr == CC_FRAMING_SSE:
            if q[e] != b'\n' or q[e + 1] != b'\n':
                return 0
        elif fr == CC_FRAMING_RS:
            if q[e] != 0x1E:
                return 0
        elif q[e] == b'\r' and j + e + 2 <= avail and q[e + 1] == b'\n':
            term = 2                                # (a CRLF line end: the CR is not the frame's)
        elif q[e] != b'\n':
            return 0
        # what max_frame_bytes limits, as cc_frame_split measures it: the SSE event without its
        # blank line, the record, the line with its CR
        if j + e + (term - 1 if fr == CC_FRAMING_NDJSON else 0) > self._max:
            return 0
        try:
            fields = _fields_of(&f)
        except _SPAN_ERRORS:
            return 0            # msgspec refuses a value: the general path decides
        self._keep_memo(b, q, &f, fields[1])
        self._index += 1
        self._open_frames += 1
        self._cur_run = None
        self._sink._finish_read(fields)
        return j + e + term

    cdef inline void _ck_room(self, cc_finish_t* f) noexcept:
        """Room for the finish reader's places to go on from (cc_fin_ck_t), made at the first
        step-finish; none when there is no memory for it (the memos then are used whole only)."""
        if self._ck == NULL:
            self._ck = <cc_fin_ck_t*>PyMem_Malloc(_FIN_CK_ROOM * sizeof(cc_fin_ck_t))
        f.ck = self._ck
        f.ck_cap = _FIN_CK_ROOM if self._ck != NULL else 0

    cdef int _keep_memo(self, bytes owner, const char* q, cc_finish_t* f, object run_id) except -1:
        """After the C reader read a step-finish or finish frame (at q, in owner; run_id: its runId
        as read): keep what it skipped as its run's memo (a step-finish), or drop the run's memo
        (a finish: the run is done with it)."""
        cdef _FinMemo m
        cdef Py_ssize_t size = PyBytes_GET_SIZE(owner)
        self._memo_members += f.memo_members
        self._memo_resumed += f.memo_resumed
        self._rep_strings += f.rep_strings
        if type(run_id) is not str:
            return 0
        if f.kind == CC_FIN_FINISH or f.skipped.count == 0:
            if self._memos:
                old = self._memos.pop(run_id, None)
                if old is not None:
                    self._memo_bytes -= (<_FinMemo>old).charge
            return 0
        old = self._memos.get(run_id)
        if old is not None:
            self._memo_bytes -= (<_FinMemo>old).charge
        m = _FinMemo.__new__(_FinMemo)
        m.owner = owner
        m.charge = size if size <= _MEMO_OWNER_MAX else 0
        m.m = f.skipped
        m.m.p = q
        if f.ck_count:
            m.ck = <cc_fin_ck_t*>PyMem_Malloc(f.ck_count * sizeof(cc_fin_ck_t))
            if m.ck != NULL:
                memcpy(m.ck, f.ck, f.ck_count * sizeof(cc_fin_ck_t))
                m.charge += f.ck_count * sizeof(cc_fin_ck_t)     # (its own: charged for any owner)
        m.m.ck = m.ck
        if self._memo_bytes + m.charge > _MEMO_BYTES:
            self._memos.clear()
            self._memo_bytes = 0
        self._memos[run_id] = m
        self._memo_bytes += m.charge
        self._memo_big |= size > _MEMO_OWNER_MAX
        return 0

    cdef int _sink_event(self, cc_accum_stop* st) except -1:
        """A text-start, text-end, start or tool-call-input-streaming-start or -end the C loop
        read: straight to the sink, no decoder."""
        run_id = self._cached_utf8(st.run, st.run_len, CC_F_RUN_ID)
        from_ = self._cached_utf8(st.from_, st.from_len, CC_F_FROM)
        self._cur_run = None
        if st.event == CC_ACC_TEXT_START:
            self._sink._text_start(run_id, from_, self._cached_utf8(st.key, st.key_len, CC_F_ID))
        elif st.event == CC_ACC_START:
            self._sink._make_current(run_id, from_)
        elif st.event == CC_ACC_TOOL_INPUT_END:
            self._sink._tool_input_end(run_id, from_, _plain_utf8(st.key, st.key_len))
        elif st.event == CC_ACC_TOOL_INPUT_START:
            self._sink._tool_input_start(run_id, from_,
                                         self._cached_utf8(st.key, st.key_len, CC_F_TOOL_CALL_ID),
                                         self._cached_utf8(st.name, st.name_len, CC_F_TOOL_NAME))
        else:
            self._sink._text_end(run_id, from_, _plain_utf8(st.key, st.key_len))
        return 0

    cdef int _sink_delta(self, cc_accum_stop* st, bytes b, Py_ssize_t at, long long pos, list out) except -1:
        """A delta the C loop read for the caller to route (b[at:] is where its event starts, pos
        where in the stream), and stored a route for, so that the part's next deltas stay in the
        loop:
        - CC_ACC_PM_DELTA, a text or reasoning delta carrying providerMetadata that its route does
          not hold: its part takes the providerMetadata (_route_pm), and the route holds these
          bytes;
        - CC_ACC_NEW_ROUTE, a delta whose part has no route (the part's first delta, mostly):
          routed as _sink_hot routes a delta, without the frame's split and scan.  Among them
          deltas with keys the chunk's schema does not know (a log's sequence number, a proxy's
          tag) or a tool-call-delta with providerMetadata (those keys change nothing that adding
          the chunk would), where the general path would decode every such delta whole and store
          no route.
        Strings with escapes, or providerMetadata msgspec refuses after all, go the general way."""
        cdef cc_str_t text
        cdef tuple r
        cdef bint tool = st.type == CC_HOT_TOOL_CALL_DELTA
        cdef bint pm_delta = st.event == CC_ACC_PM_DELTA
        pm = name = None
        general = memchr(st.run, b'\\', st.run_len) != NULL or memchr(st.key, b'\\', st.key_len) != NULL or \
            (st.from_ != NULL and memchr(st.from_, b'\\', st.from_len) != NULL) or \
            (st.name != NULL and memchr(st.name, b'\\', st.name_len) != NULL)
        if pm_delta and not general:
            try:
                pm = _decode_any(PyBytes_FromStringAndSize(st.pm, <Py_ssize_t>st.pm_len))
            except _SPAN_ERRORS:
                pass
            general = pm is None        # (an object decodes to a dict)
        if general:
            self._cur_run = None
            self._sink_frame(b, at + <Py_ssize_t>st.frame_off, <Py_ssize_t>st.frame_len, self._index,
                             pos + <long long>st.frame_off, out)
            return 0
        run_id = self._cached_utf8(st.run, st.run_len, CC_F_RUN_ID)
        from_ = self._cached_utf8(st.from_, st.from_len, CC_F_FROM) if st.from_ != NULL else _UNSET
        key = self._cached_utf8(st.key, st.key_len, CC_F_TOOL_CALL_ID if tool else CC_F_ID)
        if pm_delta:
            buf, owner = self._sink._route_pm(st.type, run_id, from_, key, pm)
        else:
            if st.name != NULL:
                name = self._cached_utf8(st.name, st.name_len, CC_F_TOOL_NAME)
            buf, owner = self._sink._route(st.type, run_id, from_, key, name)
        r = (buf, self._sink._current)
        self._keep_route(cc_route_put(self._routes, st.type, st.run, st.run_len, st.key, st.key_len,
                                      &(<DeltaBuf>buf).d, tool and not owner.name, st.pm, st.pm_len), r)
        self._cur_run = r[1]
        text.p = st.text
        text.len = st.text_len
        text.flags = CC_STR_ESCAPED if memchr(st.text, b'\\', st.text_len) != NULL else 0
        (<DeltaBuf>buf).append_str(&text)
        return 0

    cdef int _sink_hot(self, cc_hot_t* h) except -1:
        # (type, runId, id) -> the buffer to append to, through the routes the sink gave, which the
        # C delta loop uses too: a hit costs a hash of the raw bytes and a compare, no object.
        cdef bint tool = h.type == CC_HOT_TOOL_CALL_DELTA
        cdef const cc_str_t* run = &h.f[CC_F_RUN_ID]
        cdef const cc_str_t* key = &h.f[CC_F_TOOL_CALL_ID] if tool else &h.f[CC_F_ID]
        cdef const cc_str_t* body = &h.f[CC_F_ARGS_TEXT_DELTA] if tool else &h.f[CC_F_TEXT]
        cdef Py_ssize_t slot
        cdef tuple r
        if run.p == NULL:
            # no runId: the chunk belongs to whichever run is current, so it is never cached
            r = self._route(h, tool)
            self._cur_run = None
            (<DeltaBuf>r[0]).append_str(body)
            return 0
        slot = cc_route_find(self._routes, h.type, run.p, run.len, key.p, key.len,
                             tool and h.f[CC_F_TOOL_NAME].p != NULL)
        if slot >= 0:
            r = <tuple>self._rkeep[slot]
        else:
            # a miss, a part that was closed or overtaken, or a tool call still without a name
            r = self._route(h, tool)
            slot = cc_route_put(self._routes, h.type, run.p, run.len, key.p, key.len, &(<DeltaBuf>r[0]).d,
                                tool and not r[1].name, NULL, 0)
            r = (r[0], r[2])
            self._keep_route(slot, r)
        if r[1] is not self._cur_run:
            self._sink._current = r[1]
            self._cur_run = r[1]
        (<DeltaBuf>r[0]).append_str(body)
        return 0

    cdef int _keep_route(self, Py_ssize_t slot, tuple r) except -1:
        """A route just stored in slot (-1: not stored): keep what it leads to, (buffer, run),
        alive beside it, and grow the table if a live route made way for it."""
        cdef unsigned bits
        if slot >= 0:
            self._rkeep[slot] = r
            bits = self._routes.bits
            if self._routes.evicted and bits < CC_ROUTE_BITS_MAX:
                if bits < CC_ROUTE_BITS_BIG:
                    self._grow_routes(min(bits + 2, <unsigned>CC_ROUTE_BITS_BIG))
                elif self._routes.evicted >= (1u << bits) >> 3:
                    # past 512, only when routes keep making way (hundreds of runs in flight at
                    # once), not for the odd set with a third route: growing for that forgot the
                    # kept heads of a 40-run log, 2 % more instructions a call
                    self._grow_routes(min(bits + 2, <unsigned>CC_ROUTE_BITS_MAX))
        return 0

    cdef int _grow_routes(self, unsigned bits) except -1:
        """Live routes made way for others (four times the slots, up to CC_ROUTE_BITS_BIG, then
        CC_ROUTE_BITS_MAX: _keep_route), or a big feed came (_BIG_FEED, CC_ROUTE_BITS_BIG):
        1 << bits slots, the live routes and what they keep alive
        moved along.  The table is a cache: out of memory, it stays as it is (and is tried again
        at the next route that has to make way)."""
        cdef Py_ssize_t i, old = len(self._rkeep)
        cdef Py_ssize_t* moved = <Py_ssize_t*>PyMem_Malloc(old * sizeof(Py_ssize_t))
        if moved == NULL or not cc_routes_grow(self._routes, bits, moved):
            PyMem_Free(moved)
            self._routes.evicted = 0
            return 0
        keep = [None] * (1 << bits)
        for i in range(old):
            if moved[i] >= 0:
                keep[moved[i]] = self._rkeep[i]
        PyMem_Free(moved)
        self._rkeep = keep
        return 0

    cdef tuple _route(self, cc_hot_t* h, bint tool):
        run_id = self._cached(&h.f[CC_F_RUN_ID], CC_F_RUN_ID) if h.f[CC_F_RUN_ID].p != NULL else None
        from_ = self._cached(&h.f[CC_F_FROM], CC_F_FROM) if h.f[CC_F_FROM].p != NULL else _UNSET
        if tool:
            key = self._cached(&h.f[CC_F_TOOL_CALL_ID], CC_F_TOOL_CALL_ID)
            name = self._cached(&h.f[CC_F_TOOL_NAME], CC_F_TOOL_NAME) if h.f[CC_F_TOOL_NAME].p != NULL else None
        else:
            key = self._cached(&h.f[CC_F_ID], CC_F_ID)
            name = None
        buf, owner = self._sink._route(h.type, run_id, from_, key, name)
        return (buf, owner, self._sink._current)

    cdef object _cached(self, const cc_str_t* s, int slot):
        """The str for a scanned id-like field, reusing the previous one when the bytes repeat."""
        if s.flags & CC_STR_ESCAPED:
            return _make_str(s)
        return self._cached_utf8(s.p, s.len, slot)

    cdef object _cached_utf8(self, const char* p, size_t n, int slot):
        """_cached for a string known to hold no escape (its bytes are its UTF-8).  Only `from`
        keeps a slot of its own here (one value in a stream, as a rule); a runId, a part's id, a
        toolCallId or a tool's name goes to the module's cache of short strings instead: runs
        interleave in a log, so one slot would miss, and there the finish and tool readers' values
        are the same str objects (a dict lookup by one finds it by identity, its hash already
        computed)."""
        cdef object raw
        cdef object val
        if slot != CC_F_FROM:
            return _plain_utf8(p, n)
        raw = self._cache[2 * slot]
        if raw is not None and PyBytes_GET_SIZE(raw) == <Py_ssize_t>n and memcmp(PyBytes_AS_STRING(raw), p, n) == 0:
            return self._cache[2 * slot + 1]
        val = PyUnicode_DecodeUTF8(p, <Py_ssize_t>n, NULL)
        self._cache[2 * slot] = PyBytes_FromStringAndSize(p, n)
        self._cache[2 * slot + 1] = val
        return val

    cdef object _build_hot(self, cc_hot_t* h):
        cdef object run_id = self._cached(&h.f[CC_F_RUN_ID], CC_F_RUN_ID) if h.f[CC_F_RUN_ID].p != NULL else _UNSET
        cdef object from_ = self._cached(&h.f[CC_F_FROM], CC_F_FROM) if h.f[CC_F_FROM].p != NULL else _UNSET
        cdef object a0, a1, a2
        if h.type == CC_HOT_TOOL_CALL_DELTA:
            a0 = _make_str(&h.f[CC_F_ARGS_TEXT_DELTA])
            a1 = self._cached(&h.f[CC_F_TOOL_CALL_ID], CC_F_TOOL_CALL_ID)
            a2 = self._cached(&h.f[CC_F_TOOL_NAME], CC_F_TOOL_NAME) if h.f[CC_F_TOOL_NAME].p != NULL else _UNSET
            return _tool_call_delta(run_id, from_, a0, a1, a2)
        a0 = self._cached(&h.f[CC_F_ID], CC_F_ID)
        a1 = _make_str(&h.f[CC_F_TEXT])
        return _text_like(h.type == CC_HOT_TEXT_DELTA, run_id, from_, a0, a1)

    # -- end --------------------------------------------------------------------------------
    def close(self):
        """Decode what is left; raises TruncatedError if the stream ended mid-frame."""
        if self._closed or self._failed is not None:
            self._closed = True
            return []
        self._closed = True
        cdef list out = []
        if self._sinkref is not None:
            self._sink = self._sinkref()
        try:
            self._close(out)
        except DecodeError as exc:
            exc.chunks = out
            raise
        finally:
            self._sink = None
            self._memos.clear()         # (no frame comes after)
            self._memo_bytes = 0
            self._memo_big = False
        return out

    cdef _close(self, list out):
        cdef size_t skip = 0
        cdef cc_frame_t frames[FRAME_BATCH]
        cdef size_t nf = 0, i, c
        cdef Py_ssize_t total = 0
        cdef bytes buf
        self._keep_tail()
        if self._framing == CC_FRAMING_AUTO:
            self._framing = cc_detect_framing(PyByteArray_AS_STRING(self._pending),
                                              PyByteArray_GET_SIZE(self._pending), 1,
                                              self._pending_pos == 0, &skip)
            del self._pending[:skip]
            self._pending_pos += skip
        if self._skip is not None:
            self._finish_skip(0, 0, out)
            return
        buf = bytes(self._pending)
        pos = self._pending_pos
        self._pending = bytearray()
        if self._framing == CC_FRAMING_JSON and self._json_dropped >= 0:
            out.append(InvalidFrame(buf, frame_too_large(self._max, pos, 0, buf[:200]), 0, pos,
                                    dropped=self._json_dropped))
            self._index += 1
            return
        if self._framing == CC_FRAMING_JSON:
            if self._frames:
                if buf.strip(b" \t\r\n"):
                    out.append(buf)
                    self._index += 1
                return
            if self._custom is not None:
                self._index += self._custom.decode_document(buf, pos, self._keep, out)
                return
            self._index += _model.decode_document(buf, pos, self._dicts, self._keep, out)
            return
        if not buf.strip(b" \t\r\n"):
            return
        while True:
            c = cc_frame_split(self._framing, PyBytes_AS_STRING(buf) + total,
                               PyBytes_GET_SIZE(buf) - total, 1, frames, FRAME_BATCH, &nf)
            for i in range(nf):
                n_before = len(out)
                try:
                    self._emit(buf, total, &frames[i], pos + total, out)
                except DecodeError as exc:
                    raise as_truncated(exc, _NAMES[self._framing], pos + total + frames[i].bstart,
                                       buf[total + frames[i].bstart:]) from None
                if len(out) > n_before and isinstance(out[-1], InvalidFrame):
                    inv = out[-1]
                    inv.error = as_truncated(inv.error, _NAMES[self._framing],
                                             pos + total + frames[i].bstart, buf[total + frames[i].bstart:])
            total += c
            if nf < FRAME_BATCH or total >= PyBytes_GET_SIZE(buf):
                break


# The compiled AccumulatorBase, whose feed() calls this module's decoder in C.  (No docstring: the
# public class takes the compiled one's, chunkcodec._api.)
cdef class _AccumulatorBase(_Sink):

    cdef object _decoder_feed(self, dec, data):
        if type(dec) is StreamDecoder:
            return (<StreamDecoder>dec)._feed_call(data, self)
        return dec.feed(data)


#: The accumulator the native path builds Accumulator on: _accum.py's, compiled (_accumc), with
#: its decoder's feed() as a C call.
AccumulatorBase = _AccumulatorBase


cdef inline object _envelope(object cls, Py_ssize_t payload_off, Py_ssize_t meta_off, object run_id,
                            object from_, object payload):
    """The chunk around a built payload: runId, from, payload, no metadata."""
    chunk = _alloc(cls)
    _put_slot(chunk, C_RUN, run_id)
    _put_slot(chunk, C_FROM, from_)
    _put_slot(chunk, payload_off, payload)
    _put_slot(chunk, meta_off, _UNSET)
    _untrack(chunk)
    return chunk


cdef object _text_like(bint text, object run_id, object from_, object id_, object body):
    cdef PyObject* args[3]
    if not _DIRECT:
        args[0] = <PyObject*>id_
        args[1] = <PyObject*>body
        payload = PyObject_Vectorcall(_TextDeltaPayload if text else _ReasoningDeltaPayload, args, 0,
                                      <PyObject*>_KW_ID_TEXT)
        args[0] = <PyObject*>run_id
        args[1] = <PyObject*>from_
        args[2] = <PyObject*>payload
        return PyObject_Vectorcall(_TextDelta if text else _ReasoningDelta, args, 2, <PyObject*>_KW_PAYLOAD)
    payload = _alloc(_TextDeltaPayload if text else _ReasoningDeltaPayload)
    _put_slot(payload, TP_ID if text else RP_ID, id_)
    _put_slot(payload, TP_PM if text else RP_PM, _UNSET)
    _put_slot(payload, TP_TEXT if text else RP_TEXT, body)
    _untrack(payload)
    if text:
        return _envelope(_TextDelta, TD_PAYLOAD, TD_META, run_id, from_, payload)
    return _envelope(_ReasoningDelta, RD_PAYLOAD, RD_META, run_id, from_, payload)


cdef object _tool_call_delta(object run_id, object from_, object args_, object call_id, object name):
    cdef PyObject* args[3]
    if not _DIRECT:
        args[0] = <PyObject*>args_
        args[1] = <PyObject*>call_id
        args[2] = <PyObject*>name
        payload = PyObject_Vectorcall(_ToolCallDeltaPayload, args, 0, <PyObject*>_KW_TOOL3)
        args[0] = <PyObject*>run_id
        args[1] = <PyObject*>from_
        args[2] = <PyObject*>payload
        return PyObject_Vectorcall(_ToolCallDelta, args, 2, <PyObject*>_KW_PAYLOAD)
    payload = _alloc(_ToolCallDeltaPayload)
    _put_slot(payload, TCP_ARGS, args_)
    _put_slot(payload, TCP_ID, call_id)
    _put_slot(payload, TCP_NAME, name)
    _put_slot(payload, TCP_PM, _UNSET)
    _untrack(payload)
    return _envelope(_ToolCallDelta, TC_PAYLOAD, TC_META, run_id, from_, payload)


def _direct():
    """True when the hot chunks are built by direct slot writes (else by their constructors)."""
    return _DIRECT


def _self_check():
    """Direct construction must give exactly what the constructors give."""
    global _DIRECT
    try:
        _layout()
        _DIRECT = True
        for text in (True, False):
            for r, f in (("r", "AGENT"), (_UNSET, _UNSET)):
                d = _text_like(text, r, f, "i", "t")
                ref = (_TextDelta if text else _ReasoningDelta)(
                    r, f, payload=(_TextDeltaPayload if text else _ReasoningDeltaPayload)(id="i", text="t"))
                if d != ref or repr(d) != repr(ref) or msgspec.to_builtins(d) != msgspec.to_builtins(ref):
                    raise TypeError("mismatch")
        d = _tool_call_delta("r", "AGENT", "{", "c", _UNSET)
        ref = _ToolCallDelta("r", "AGENT", payload=_ToolCallDeltaPayload(argsTextDelta="{", toolCallId="c"))
        if d != ref or msgspec.json.encode(d) != msgspec.json.encode(ref) or hash(d.payload) != hash(ref.payload):
            raise TypeError("mismatch")
    except Exception:
        _DIRECT = False
    return _DIRECT


_self_check()


cdef StreamDecoder _ONE = StreamDecoder()   # its id cache serves decode()


def decode(frame):
    """Decode one frame's JSON text to a typed chunk."""
    cdef bytes b = _to_bytes(frame)
    cdef cc_hot_t hot
    if cc_scan_hot(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), &hot) == CC_OK:
        chunk = _ONE._build_hot(&hot)
        if hot.canonical:
            return chunk
    else:
        chunk = _decode_typed(b, 0, 0)
    _set_raw(chunk, b)
    return chunk


def loads(frame):
    """Decode one frame's JSON text to exactly what ``json.loads`` returns."""
    return _loads_frame(_to_bytes(frame))


# ------------------------------------------------------------------------------------------------
# Encoding

cdef inline object _raw_of(object obj):
    """The raw JSON text attached to a decoded chunk, or None (without creating a __dict__)."""
    cdef PyObject** dp = _PyObject_GetDictPtr(obj)
    cdef PyObject* d
    if dp == NULL:
        return None
    d = dp[0]
    if d == NULL or type(<object>d) is not dict:
        return None
    return (<dict>d).get("_raw")


cdef bytes _numbers_c(bytes text):
    cdef const char* p = PyBytes_AS_STRING(text)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(text)
    if not cc_js_numbers_needed(p, n):
        return text
    cdef size_t m = cc_js_numbers(p, n, NULL)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, m)
    cc_js_numbers(p, n, PyBytes_AS_STRING(out))
    return out


def js_numbers(text):
    """Rewrite the floats of a compact JSON text the way JavaScript prints numbers."""
    return _numbers_c(_to_bytes(text))


cdef inline Py_ssize_t _esc_len(object s):
    if PyUnicode_IS_ASCII(s):
        return cc_js_escaped_len(<const char*>PyUnicode_DATA(s), PyUnicode_GET_LENGTH(s))
    return cc_js_escaped_len_ucs(PyUnicode_KIND(s), PyUnicode_DATA(s), PyUnicode_GET_LENGTH(s))


cdef inline Py_ssize_t _esc_write(object s, char* dst):
    if PyUnicode_IS_ASCII(s):
        return cc_js_escape(<const char*>PyUnicode_DATA(s), PyUnicode_GET_LENGTH(s), dst)
    return cc_js_escape_ucs(PyUnicode_KIND(s), PyUnicode_DATA(s), PyUnicode_GET_LENGTH(s), dst)


# The JSON of a delta chunk, piece by piece: tag, then ("key prefix", str value) pairs.  A value
# whose escaped form is cached (ids repeat on every chunk of a run) is copied from `pre`.
cdef struct _Hot:
    const char* tag
    Py_ssize_t taglen
    int n                  # number of (key, value) pairs
    int first_payload      # index of the first pair inside "payload":{...}
    const char* keys[5]
    Py_ssize_t keylens[5]
    PyObject* vals[5]
    Py_ssize_t vlens[5]
    const char* pre[5]     # escaped bytes when cached, else NULL
    PyObject* cache        # the Encoder's cache list: [str, escaped bytes] per id-like slot

cdef const char* _K_RUN = b',"runId":"'
cdef const char* _K_FROM = b',"from":"'
cdef const char* _K_PAYLOAD = b',"payload":{'


cdef inline bint _hot_add(_Hot* h, const char* key, Py_ssize_t keylen, object val, int slot=-1) except -1:
    """Add a field; slot >= 0 names a cache entry for id-like values that repeat."""
    cdef list cache
    cdef bytes esc
    if val is _UNSET:
        return True
    if type(val) is not str:
        return False
    h.keys[h.n] = key
    h.keylens[h.n] = keylen
    h.vals[h.n] = <PyObject*>val
    h.pre[h.n] = NULL
    if slot >= 0:
        cache = <list>h.cache
        if cache[2 * slot] is not val:
            esc = PyBytes_FromStringAndSize(NULL, _esc_len(val))
            _esc_write(val, PyBytes_AS_STRING(esc))
            cache[2 * slot] = val
            cache[2 * slot + 1] = esc
        esc = <bytes>cache[2 * slot + 1]
        h.pre[h.n] = PyBytes_AS_STRING(esc)
        h.vlens[h.n] = PyBytes_GET_SIZE(esc)
    else:
        h.vlens[h.n] = _esc_len(val)
    h.n += 1
    return True


cdef Py_ssize_t _hot_prepare(object chunk, _Hot* h) except -2:
    """Length of the JSON text of a plain delta chunk, or -1 when it is not one (a field that is
    not a str, providerMetadata or metadata set, a subclass with extra fields...)."""
    cdef object t = type(chunk)
    cdef object payload
    cdef Py_ssize_t total
    cdef int i
    if not _DIRECT:
        return -1
    h.n = 0
    if t is _TextDelta or t is _ReasoningDelta:
        text = t is _TextDelta
        if _get_slot(chunk, TD_META if text else RD_META) is not _UNSET:
            return -1
        payload = _get_slot(chunk, TD_PAYLOAD if text else RD_PAYLOAD)
        if type(payload) is not (_TextDeltaPayload if text else _ReasoningDeltaPayload) or \
                _get_slot(payload, TP_PM if text else RP_PM) is not _UNSET:
            return -1
        h.tag = b'{"type":"text-delta"' if text else b'{"type":"reasoning-delta"'
        if not (_hot_add(h, _K_RUN, 10, _get_slot(chunk, C_RUN), 0) and _hot_add(h, _K_FROM, 9, _get_slot(chunk, C_FROM), 1)):
            return -1
        h.first_payload = h.n
        if not (_hot_add(h, b'"id":"', 6, _get_slot(payload, TP_ID if text else RP_ID), 2) and
                _hot_add(h, b'"text":"', 8, _get_slot(payload, TP_TEXT if text else RP_TEXT))):
            return -1
    elif t is _ToolCallDelta:
        if _get_slot(chunk, TC_META) is not _UNSET:
            return -1
        payload = _get_slot(chunk, TC_PAYLOAD)
        if type(payload) is not _ToolCallDeltaPayload or _get_slot(payload, TCP_PM) is not _UNSET:
            return -1
        h.tag = b'{"type":"tool-call-delta"'
        if not (_hot_add(h, _K_RUN, 10, _get_slot(chunk, C_RUN), 0) and _hot_add(h, _K_FROM, 9, _get_slot(chunk, C_FROM), 1)):
            return -1
        h.first_payload = h.n
        if not (_hot_add(h, b'"argsTextDelta":"', 17, _get_slot(payload, TCP_ARGS)) and
                _hot_add(h, b'"toolCallId":"', 14, _get_slot(payload, TCP_ID), 3) and
                _hot_add(h, b'"toolName":"', 12, _get_slot(payload, TCP_NAME), 4)):
            return -1
    else:
        return -1
    h.taglen = <Py_ssize_t>strlen(h.tag)
    total = h.taglen + 12 + 2                       # tag, ,"payload":{ and }}
    for i in range(h.n):
        total += h.keylens[i] + h.vlens[i] + 1      # key prefix, value, closing quote
        if i > h.first_payload:
            total += 1                              # comma between payload fields
    return total


cdef void _hot_write(_Hot* h, char* w):
    cdef Py_ssize_t pos = h.taglen
    cdef int i
    memcpy(w, h.tag, h.taglen)
    for i in range(h.n):
        if i == h.first_payload:
            memcpy(w + pos, _K_PAYLOAD, 12)
            pos += 12
        elif i > h.first_payload:
            w[pos] = b','
            pos += 1
        memcpy(w + pos, h.keys[i], h.keylens[i])
        pos += h.keylens[i]
        if h.pre[i] != NULL:
            memcpy(w + pos, h.pre[i], h.vlens[i])
            pos += h.vlens[i]
        else:
            pos += _esc_write(<object>h.vals[i], w + pos)
        w[pos] = b'"'
        pos += 1
    if h.first_payload == h.n:
        memcpy(w + pos, _K_PAYLOAD, 12)
        pos += 12
    w[pos] = b'}'
    w[pos + 1] = b'}'


cdef class Encoder:
    """Chunks -> framed bytes, exactly as Mastra's server writes them.

    A chunk decoded by chunkcodec and not replaced since re-encodes to its original bytes: its
    kept JSON text is copied (or, for delta chunks that were already in JSON.stringify's exact
    form, written again from the fields, which gives the same bytes); a chunk built in Python is
    written as JSON.stringify would write it.
    """
    cdef int _fr
    cdef bytes _prefix
    cdef bytes _suffix
    cdef list _cache
    cdef readonly str framing

    def __init__(self, framing="sse"):
        self._cache = [None] * 10
        fr = _framing_code(framing)
        if fr not in (CC_FRAMING_SSE, CC_FRAMING_RS, CC_FRAMING_NDJSON):
            raise ValueError(f"encoding framing must be 'sse', 'rs' or 'ndjson', got {framing!r}")
        self._fr = fr
        self.framing = framing
        self._prefix = b"data: " if fr == CC_FRAMING_SSE else b""
        self._suffix = b"\n\n" if fr == CC_FRAMING_SSE else (b"\x1e" if fr == CC_FRAMING_RS else b"\n")

    def end(self):
        """The end-of-stream marker of this framing (``data: [DONE]\\n\\n`` for SSE, else empty)."""
        return b"data: [DONE]\n\n" if self._fr == CC_FRAMING_SSE else b""

    def frame(self, body):
        """Already-encoded JSON text (bytes-like, one line) as one frame of this framing."""
        cdef const unsigned char[::1] v = body
        cdef Py_ssize_t n = v.shape[0], pl = PyBytes_GET_SIZE(self._prefix)
        cdef Py_ssize_t sl = PyBytes_GET_SIZE(self._suffix)
        cdef bytes out = PyBytes_FromStringAndSize(NULL, pl + n + sl)
        cdef char* w = PyBytes_AS_STRING(out)
        memcpy(w, PyBytes_AS_STRING(self._prefix), pl)
        if n:
            memcpy(w + pl, &v[0], n)
        memcpy(w + pl + n, PyBytes_AS_STRING(self._suffix), sl)
        return out

    def encode(self, chunk):
        """One framed chunk as bytes."""
        cdef bytes out
        cdef char* w
        cdef Py_ssize_t n, pl = PyBytes_GET_SIZE(self._prefix), sl = PyBytes_GET_SIZE(self._suffix)
        cdef const char* src
        cdef _Hot h
        cdef object body = self._body(chunk, &h, &src, &n)
        out = PyBytes_FromStringAndSize(NULL, pl + n + sl)
        w = PyBytes_AS_STRING(out)
        self._emit_into(w, &h, src, n)
        return out

    def encode_into(self, chunk, bytearray buffer, Py_ssize_t offset=0):
        """Write the framed chunk into buffer at offset (-1: at the end); the buffer ends after it."""
        cdef Py_ssize_t n, pl = PyBytes_GET_SIZE(self._prefix), sl = PyBytes_GET_SIZE(self._suffix)
        cdef const char* src
        cdef _Hot h
        if offset < 0:
            offset = PyByteArray_GET_SIZE(buffer)
        elif offset > PyByteArray_GET_SIZE(buffer):
            raise ValueError("offset is past the end of the buffer")
        cdef object body = self._body(chunk, &h, &src, &n)
        PyByteArray_Resize(buffer, offset + pl + n + sl)
        self._emit_into(PyByteArray_AS_STRING(buffer) + offset, &h, src, n)

    cdef object _body(self, object chunk, _Hot* h, const char** src, Py_ssize_t* n):
        """Find the JSON text: kept bytes (src), a delta chunk to write (h, src NULL), or freshly
        encoded bytes (returned, src into them).  n is its length."""
        cdef object raw = _raw_of(chunk)
        cdef bytes text
        if raw is not None:
            if type(raw) is RawSpan:
                src[0] = PyBytes_AS_STRING((<RawSpan>raw).owner) + (<RawSpan>raw).start
                n[0] = (<RawSpan>raw).length
            else:
                src[0] = PyBytes_AS_STRING(<bytes>raw)
                n[0] = PyBytes_GET_SIZE(<bytes>raw)
            return raw
        h.cache = <PyObject*>self._cache
        n[0] = _hot_prepare(chunk, h)
        if n[0] >= 0:
            src[0] = NULL
            return None
        try:
            text = _numbers_c(msgspec.json.encode(chunk))
        except (UnicodeEncodeError, TypeError, ValueError, msgspec.EncodeError):
            # lone surrogates (written as \\udxxx), or a value that cannot be encoded (EncodeError)
            text = _jsonout.encode_general(chunk, _numbers_c)
        src[0] = PyBytes_AS_STRING(text)
        n[0] = PyBytes_GET_SIZE(text)
        return text

    cdef void _emit_into(self, char* w, _Hot* h, const char* src, Py_ssize_t n):
        cdef Py_ssize_t pl = PyBytes_GET_SIZE(self._prefix), sl = PyBytes_GET_SIZE(self._suffix)
        memcpy(w, PyBytes_AS_STRING(self._prefix), pl)
        if src == NULL:
            _hot_write(h, w + pl)
        else:
            memcpy(w + pl, src, n)
        memcpy(w + pl + n, PyBytes_AS_STRING(self._suffix), sl)


cdef Encoder _NDJSON = Encoder("ndjson")


def to_json(chunk):
    """The JSON text encode() writes for chunk (for a decoded chunk: the bytes it came from)."""
    return _NDJSON.encode(chunk)[:-1]
