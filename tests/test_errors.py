"""Bad input: the right exception class, a message that says what and where, never a crash or hang."""

import re

import pytest

import chunkcodec
from chunkcodec import (DecodeError, FrameTooLarge, InvalidFrame, TruncatedError, ValidationError)
from util import decode_all, outcome

TD = b'{"type":"text-delta","runId":"r","from":"AGENT","payload":{"id":"1","text":"hi"}}'

# (name, framing, stream, exception class, message regex, .pos, .frame_index); max_frame_bytes is 200
# except for the deep-nesting case, whose frame is large.
CASES = [
    ("invalid JSON", "sse", b"data: " + TD + b"\n\ndata: {\"type\" 1}\n\n", DecodeError,
     r"^Frame is malformed: expected ':' \(byte 103, frame 1\)", 103, 1),
    ("invalid UTF-8 in a hot delta", "ndjson", TD.replace(b"hi", b"h\xffi") + b"\n", DecodeError,
     r"^Frame is not valid UTF-8: invalid start byte \(byte 77, frame 0\)", 77, 0),
    ("truncated UTF-8 in a cold chunk", "rs", b'{"type":"start","payload":{"id":"\xe4\xb8"}}\x1e', DecodeError,
     r"^Frame is not valid UTF-8: invalid continuation byte \(byte 33, frame 0\)", 33, 0),
    # (what msgspec refuses is read again by json's rules, which take a lone surrogate escape; the
    # bytes must still be UTF-8: json.loads of bytes would take these, a lone surrogate as bytes)
    ("a lone surrogate as bytes beside a lone surrogate escape", "ndjson",
     b'{"type":"start","runId":"r","from":"\\ud800","payload":{"id":"a\xed\xb0\x80"}}\n', DecodeError,
     r"^Frame is not valid UTF-8: invalid continuation byte \(byte 62, frame 0\)", 62, 0),
    ("wrong field type", "ndjson", b'{"type":"tool-call-delta","payload":{"argsTextDelta":"x","toolCallId":5}}\n',
     ValidationError, r"^Expected `str`, got `int` - at `\$.payload.toolCallId` \(byte 0, frame 0\)", 0, 0),
    ("missing required field", "ndjson", b'{"type":"text-delta","payload":{"id":"1"}}\n', ValidationError,
     r"^Object missing required field `text` - at `\$.payload`", 0, 0),
    ("not an object", "ndjson", TD + b"\n[1,2]\n", ValidationError, r"^Expected `object`, got `array` \(byte 82, frame 1\)", 82, 1),
    ("type not a string", "ndjson", b'{"type":3}\n', ValidationError, r"^Expected `str`, got `int` - at `\$.type` \(byte 0, frame 0\)", 0, 0),
    ("raw control character", "ndjson", b'{"type":"text-delta","payload":{"id":"1","text":"a\x01"}}\n', DecodeError,
     r"^Frame is malformed: invalid character \(byte 50, frame 0\)", 50, 0),
    ("trailing garbage", "rs", TD + b"xyz\x1e", DecodeError, r"^Frame is malformed: trailing characters \(byte 82, frame 0\)", 82, 0),
    ("deep nesting", "ndjson", b'{"type":"raw","payload":' + b"[" * 100000 + b"]" * 100000 + b"}\n", DecodeError,
     r"^Frame nests too deeply \(byte 0, frame 0\)", 0, 0),
    ("stream cut mid-frame", "sse", b"data: " + TD + b"\n\ndata: {\"type\":\"text-del", TruncatedError,
     r"^Stream ended mid-frame \(sse\) \(byte 89, frame 1\): Frame is malformed: JSON ends", 89, 1),
    ("RS cut mid-record", "rs", TD + b"\x1e{\"type\":", TruncatedError, r"^Stream ended mid-frame \(rs\) \(byte 82, frame 1\)", 82, 1),
    ("frame too large", "ndjson", TD + b"\n" + b'{"type":"raw","payload":"' + b"x" * 300 + b'"}\n', FrameTooLarge,
     r"^Frame exceeds max_frame_bytes=200 \(byte 82, frame 1\)", 82, 1),
    ("frame too large, unterminated", "sse", b"data: " + b"x" * 1000, FrameTooLarge,
     r"^Frame exceeds max_frame_bytes=200 \(byte 0, frame 0\)", 0, 0),
]


def _max(name):
    return 10**7 if name == "deep nesting" else 200


@pytest.mark.parametrize("name,framing,data,exc,msg,pos,idx", CASES, ids=[c[0] for c in CASES])
def test_error_table(codec, name, framing, data, exc, msg, pos, idx):
    with pytest.raises(exc) as info:
        decode_all(codec, data, framing, max_frame_bytes=_max(name))
    assert re.search(msg, str(info.value)), str(info.value)
    assert info.value.pos == pos and info.value.frame_index == idx
    assert info.value.frame is None or len(info.value.frame) <= 200
    assert isinstance(info.value, ValueError)  # stdlib-compatible base
    # the same error whatever the piece boundaries
    if len(data) < 2000:
        for i in range(len(data) + 1):
            with pytest.raises(exc) as info2:
                decode_all(codec, data, framing, splits=[i], max_frame_bytes=_max(name))
            assert str(info2.value) == str(info.value), f"split at {i}"


@pytest.mark.parametrize("name,framing,data,exc,msg,pos,idx", CASES, ids=[c[0] for c in CASES])
def test_keep_mode_loses_nothing(codec, name, framing, data, exc, msg, pos, idx):
    """errors="keep": the bad frame comes back as InvalidFrame with its bytes, the rest decodes."""
    good_after = {"sse": b"data: " + TD + b"\n\n", "rs": TD + b"\x1e", "ndjson": TD + b"\n"}[framing]
    stream = data if exc is TruncatedError or name.endswith("unterminated") else data + good_after
    got = decode_all(codec, stream, framing, errors="keep", max_frame_bytes=_max(name))
    bad = [g for g in got if g[0] == "invalid"]
    assert len(bad) == 1
    _, raw, cls, message, frame_index, p, dropped = bad[0]
    assert cls == exc.__name__ and re.search(msg, message)
    assert frame_index == idx
    # InvalidFrame.pos is where its raw bytes start in the stream; the error's pos is in the message
    assert stream[p:p + len(raw)] == raw and raw
    assert (len(raw), dropped > 0) == ((200, True) if exc is FrameTooLarge else (len(raw), False))
    if stream is not data:
        assert got[-1][0] == "TextDelta"
    for i in range(0, len(stream) + 1, 11):
        assert decode_all(codec, stream, framing, splits=[i], errors="keep", max_frame_bytes=_max(name)) == got


def test_too_large_keep_reports_true_length(codec):
    frame = b'{"type":"raw","payload":"' + b"y" * 500 + b'"}'
    for framing, data in (("ndjson", frame + b"\n" + TD + b"\n"), ("rs", frame + b"\x1e" + TD),
                          ("sse", b"data: " + frame + b"\r\n\r\ndata: " + TD + b"\n\n")):
        whole = decode_all(codec, data, framing, errors="keep", max_frame_bytes=100)
        assert whole[0][0] == "invalid" and whole[1][0] == "TextDelta"
        # the frame's own bytes: the SSE event block keeps its "data: " and the CR of its line end
        flen = len(frame) + (len(b"data: \r") if framing == "sse" else 0)
        assert len(whole[0][1]) == 100 and whole[0][6] == flen - 100
        for splits in ([5], [150], [len(data) - 5], list(range(1, len(data)))):
            assert decode_all(codec, data, framing, errors="keep", max_frame_bytes=100, splits=splits) == whole


def test_chunks_before_an_error_are_not_lost(codec):
    data = b"data: " + TD + b"\n\ndata: {bad}\n\n"
    got = []
    with pytest.raises(DecodeError):
        for c in codec.iter_chunks(data):
            got.append(c)
    assert len(got) == 1
    dec = codec.StreamDecoder()
    with pytest.raises(DecodeError) as info:
        dec.feed(data)
    assert len(info.value.chunks) == 1


def test_invalid_frame_repr_and_eq():
    e = DecodeError("x")
    a = InvalidFrame(b"abc", e, 1, 2)
    assert a == InvalidFrame(b"abc", e, 1, 2) and "frame_index=1" in repr(a)


def test_error_hierarchy():
    assert issubclass(chunkcodec.ValidationError, chunkcodec.DecodeError)
    assert issubclass(chunkcodec.DecodeError, (chunkcodec.ChunkError, ValueError))
    assert issubclass(chunkcodec.EncodeError, (chunkcodec.ChunkError, TypeError))
    assert issubclass(FrameTooLarge, DecodeError) and issubclass(TruncatedError, DecodeError)


def test_paths_agree_on_errors(both):
    native, reference = both
    for _, framing, data, *_ in CASES:
        n = outcome(lambda: decode_all(native, data, framing, max_frame_bytes=200))
        r = outcome(lambda: decode_all(reference, data, framing, max_frame_bytes=200))
        assert n[0] == "err" and n[1] in {"DecodeError", "ValidationError", "FrameTooLarge", "TruncatedError"}
        assert n == r


def test_strict_decoder_stops_at_its_error(codec):
    """After a strict-mode error the rest of that piece was not looked at: going on would lose it,
    so the decoder refuses instead."""
    dec = codec.StreamDecoder("ndjson")
    with pytest.raises(DecodeError):
        dec.feed(b"{bad}\n" + TD + b"\n")
    with pytest.raises(RuntimeError, match="stopped at an error in strict mode"):
        dec.feed(TD + b"\n")
    assert dec.close() == []


def test_json_document_too_large(codec):
    doc = b"[" + b",".join([TD] * 10) + b"]"
    with pytest.raises(FrameTooLarge, match="max_frame_bytes=100 \\(byte 0, frame 0\\)"):
        decode_all(codec, doc, "json", max_frame_bytes=100)
    for splits in (None, [50], [150, 300], list(range(1, len(doc)))):
        got = decode_all(codec, doc, "json", errors="keep", max_frame_bytes=100, splits=splits)
        assert [(g[0], len(g[1]), g[2], g[6]) for g in got] == [("invalid", 100, "FrameTooLarge", len(doc) - 100)]


@pytest.mark.parametrize("escape", [b"", b',"k":"\\ud800"', b',"k":NaN'])
def test_bytes_that_are_not_utf8_are_refused_whatever_else_the_frame_holds(codec, escape):
    """A lone surrogate written as bytes is not UTF-8: every decoder refuses the frame, also when
    the frame holds something msgspec refuses and json's rules take (a lone surrogate escape, NaN),
    which has it read again by those rules (json.loads of bytes would take the bytes).  Before, such
    a frame was refused without that and taken with it (and the plain-Python bulk index failed on
    it: test_bulk's test_a_frame_that_is_not_utf8_is_corrupt_in_both_indexes)."""
    # (the escape before the bytes: msgspec reads in order, and refuses the bytes first otherwise)
    frame = b'{"type":"text-delta","runId":"r"' + escape + b',"payload":{"id":"1","text":"a\xed\xb0\x80"}}'
    for data in (frame + b"\n", TD + b"\n" + frame + b"\n"):
        got = list(codec.iter_dicts(data, "ndjson", errors="keep"))
        assert isinstance(got[-1], InvalidFrame) and "not valid UTF-8" in str(got[-1].error), got
        with pytest.raises(DecodeError, match="not valid UTF-8"):
            decode_all(codec, data, "ndjson")
