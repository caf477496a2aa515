"""The C core's UTF-8 check (cc_utf8_valid), which the delta loops, the bulk indexer and the
step-start and finish readers rely on to take a frame only when the decoders would: it must say
"valid" exactly when Python's strict UTF-8 decoder does.  Where the CPU has AVX2 it checks 32 bytes
at a time from the byte pairs (and the bytes two and three before); CI runs this file again with
CHUNKCODEC_NO_AVX2=1 for the byte-at-a-time check.

Then the decoder of the accumulator's buffers (DeltaBuf.text; natively cc_utf8_measure and
cc_utf8_widen): the same str as bytes.decode("utf-8", "surrogatepass"), of the same kind (a str
made wider than its widest character would compare unequal to the same text)."""

import ctypes
import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import _native
from chunkcodec import _reference
from chunkcodec._results import join_surrogates


def _python(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


#: Bytes at every edge of UTF-8's table: ASCII, continuation bytes at the ends of their ranges,
#: the leads that need a particular second byte (E0, ED, F0, F4), those never allowed (C0, C1,
#: F5-FF).
EDGES = bytes([0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0,
               0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF])

#: Where a sequence goes in a 64-byte ASCII buffer: at the start, across the middle of a 32-byte
#: block (its two 16-byte halves are checked apart), across the edge of a block, cut off by the
#: end of the data.
PLACES = (0, 13, 14, 15, 16, 29, 30, 31, 32, 60, 61, 62, 63)


def _check(valid, seq: bytes) -> None:
    for at in PLACES:
        buf = bytearray(b"a" * 64)
        buf[at:at + len(seq)] = seq
        for data in (bytes(buf[:64]), bytes(buf[:at + len(seq)]), seq):
            assert valid(data) == _python(data), (data.hex(), at)


@pytest.fixture(scope="module")
def valid():
    return _native().utf8_valid


def test_every_pair_of_bytes(valid):
    for a in range(256):
        for b in range(0x40, 0x100, 3) if a < 0x80 else range(256):
            _check(valid, bytes([a, b]))


def test_sequences_of_edge_bytes_up_to_five_long(valid):
    for n in (3, 4):
        for seq in itertools.product(EDGES, repeat=n):
            data = bytes(seq)
            buf = b"a" * 31 + data + b"a" * 30           # across the edge of the first block
            assert valid(buf) == _python(buf), buf.hex()
            assert valid(data + b"abcdefgh") == _python(data + b"abcdefgh"), data.hex()
    rng = random.Random(3)
    for _ in range(20000):
        _check(valid, bytes(rng.choice(EDGES) for _ in range(5)))


@settings(max_examples=400, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=120), st.data())
def test_text_with_bytes_overwritten(valid, text, data):
    b = bytearray(text.encode("utf-8"))
    assert valid(bytes(b))
    for _ in range(data.draw(st.integers(0, 3))):
        if b:
            b[data.draw(st.integers(0, len(b) - 1))] = data.draw(st.integers(0, 255))
    for k in (0, 1, len(b) // 2):
        assert valid(bytes(b[k:])) == _python(bytes(b[k:]))


def test_long_ascii_runs_around_a_sequence_left_open(valid):
    """The check skips ASCII blocks, but not one right after a block that ends mid-sequence."""
    for lead in (b"\xc3", b"\xe3\x81", b"\xf0\x9f\x98"):
        for k in range(24, 40):
            data = b"x" * k + lead
            assert not valid(data + b"y" * (64 - len(data)) + b"z" * 64)
            assert not valid(data)
            assert valid(data[:k] + b"\xc3\xa9" + b"y" * 100)


# --- DeltaBuf.text ----------------------------------------------------------------------------

def _kind(s: str) -> tuple:
    """(kind, ascii) of a str as CPython stores it: the bits of PyASCIIObject.state, after its
    refcount, type, length and hash.  (sys.getsizeof will not do: it counts a UTF-8 copy the str
    may have cached.)"""
    word = ctypes.sizeof(ctypes.c_void_p)
    state = ctypes.c_uint32.from_address(id(s) + 4 * word)
    return (state.value >> 2) & 7, (state.value >> 6) & 1


def test_kind_reads_what_cpython_stores():
    assert _kind("abc") == (1, 1)
    assert _kind("caf\xe9") == (1, 0)
    assert _kind("\u4e16") == (2, 0)
    assert _kind("\U0001f600") == (4, 0)


def _same_str(got, want):
    assert type(got) is str and got == want
    assert _kind(got) == _kind(want), (got, want)        # the same kind (width): canonical


#: A character of each width CPython stores: ASCII, the rest of Latin-1, two bytes, four.
WIDTHS = ("a", "\x7f", "\x80", "\xe9", "\xff", "\u0100", "\u07ff", "\u0800", "\u4e16", "\uffff",
          "\U00010000", "\U0001f600", "\U0010ffff")


@pytest.mark.parametrize("by_c", [False, True], ids=["appended", "written-by-c"])
def test_text_of_every_width_at_every_place(by_c):
    """Bytes appended from Python are checked as they are decoded; bytes the C readers wrote (which
    check each string as they write it) are not checked again: both give Python's text."""
    def text(b, start=0, end=-1):
        return _native().utf8_text(b, start, end, by_c)
    for ch in WIDTHS:
        for other in ("", "\xe9", "\u4e16"):
            for at in range(0, 70):
                s = "x" * at + ch + other + "y" * (70 - at)
                b = s.encode()
                _same_str(text(b), s)
                k = len(("x" * at).encode())
                _same_str(text(b, k), s[at:])                       # from the character on
                _same_str(text(b, 0, k), s[:at])                    # up to it: ASCII only
                _same_str(text(b, k + len(ch.encode())), s[at + 1:])


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=200), st.data())
def test_text_matches_python(s, data):
    """Any text (lone surrogates too, as surrogatepass encodes them), any character-aligned
    range: the native decoder and the reference path's give what Python does."""
    b = s.encode("utf-8", "surrogatepass")
    cuts = sorted(data.draw(st.lists(st.integers(0, len(s)), min_size=2, max_size=2)))
    start = len(s[:cuts[0]].encode("utf-8", "surrogatepass"))
    end = len(s[:cuts[1]].encode("utf-8", "surrogatepass"))
    want = s[cuts[0]:cuts[1]]
    _same_str(_native().utf8_text(b, start, end), want)
    for impl in (_native(), _reference):
        buf = impl.DeltaBuf()
        buf.append(b)
        _same_str(buf.text(start, end), want)
        _same_str(buf.text(), s)


def test_text_ranges_are_clamped_on_both_paths():
    for impl in (_native(), _reference):
        buf = impl.DeltaBuf()
        assert buf.text() == ""
        buf.append("h\xe9llo \U0001f600".encode())
        assert buf.text(0, -1) == buf.text(0, 10**9) == buf.text(-5) == "h\xe9llo \U0001f600"
        assert buf.text(3, 3) == buf.text(5, 2) == ""
        assert buf.text(3) == "llo \U0001f600"


@pytest.mark.parametrize("by_c", [False, True], ids=["appended", "written-by-c"])
def test_text_not_whole_characters_is_an_error_as_in_python(by_c):
    """A range that cuts a character (no caller makes one) fails as Python's decoder does: the
    native decoder leaves text that is not well-formed to it, also in a buffer only the C readers
    wrote, where a range that starts or ends inside a character is checked after all."""
    b = "\xe9\U0001f600a\u4e16".encode()
    for start, end in ((1, 6), (0, 1), (2, 4), (0, 3), (3, 7), (6, 9), (7, 9), (8, 10), (2, 5)):
        with pytest.raises(UnicodeDecodeError):
            _native().utf8_text(b, start, end, by_c)


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=120), st.data())
def test_text_written_by_c_any_range(s, data):
    """Well-formed text written as the C readers write it: every range of it on character
    boundaries is Python's text, and every other range Python's error."""
    b = s.encode()
    start, end = sorted(data.draw(st.lists(st.integers(0, len(b)), min_size=2, max_size=2)))
    try:
        want = b[start:end].decode()
    except UnicodeDecodeError:
        with pytest.raises(UnicodeDecodeError):
            _native().utf8_text(b, start, end, True)
    else:
        _same_str(_native().utf8_text(b, start, end, True), want)


def test_text_written_by_c_takes_only_well_formed_bytes():
    with pytest.raises(ValueError):
        _native().utf8_text(b"\xed\xa0\x80", 0, -1, True)


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(blacklist_categories=()), max_size=40),
       st.text(st.characters(blacklist_categories=("Cs",)), max_size=60), st.data())
def test_text_after_python_bytes(py, s, data):
    """A buffer that append() wrote from Python first (an added chunk's text: lone surrogates too,
    as surrogatepass encodes them), then the C readers: a range of the C readers' bytes alone is
    taken without a check, any range that reaches into Python's is checked; both give Python's
    text (surrogates joined, as JavaScript's concatenation joins them), or Python's error."""
    before = py.encode("utf-8", "surrogatepass")
    b = before + s.encode()
    start, end = sorted(data.draw(st.lists(st.integers(0, len(b)), min_size=2, max_size=2)))
    _python_then_c(py, s, start, end)


def _python_then_c(py, s, start, end):
    before = py.encode("utf-8", "surrogatepass")
    b = before + s.encode()
    try:
        want = join_surrogates(b[start:end].decode("utf-8", "surrogatepass"))
    except UnicodeDecodeError:
        with pytest.raises(UnicodeDecodeError):
            _native().utf8_text(s.encode(), start, end, True, before)
    else:
        _same_str(_native().utf8_text(s.encode(), start, end, True, before), want)


def test_text_after_python_surrogates():
    """Surrogates that append() wrote (a pair, joined; a lone one, kept), then the C readers' text."""
    for start, end in ((0, 11), (0, 13), (1, 11), (4, 13), (11, 14), (11, 13), (10, 14)):
        _python_then_c("a\ud83d\ude00\ud800", "\xe9x", start, end)
    _python_then_c("\ud83d", "\xe9", 0, 5)
