"""Framings: SSE, RS, NDJSON, a JSON document, and auto-detection."""

import pytest

from util import decode_all

TD = b'{"type":"text-delta","runId":"r","from":"AGENT","payload":{"id":"1","text":"hi"}}'
TD2 = b'{"type":"text-delta","runId":"r","from":"AGENT","payload":{"id":"1","text":"there"}}'
ST = b'{"type":"start","runId":"r","from":"AGENT","payload":{"id":"a"}}'


def texts(items):
    return [i[1]["payload"].get("text", i[1]["type"]) if isinstance(i, tuple) else i for i in items]


SSE_CASES = [
    ("plain", b"data: " + TD + b"\n\ndata: " + TD2 + b"\n\ndata: [DONE]\n\n", ["hi", "there"]),
    ("no space after colon", b"data:" + TD + b"\n\n", ["hi"]),
    ("CRLF", b"data: " + TD + b"\r\n\r\ndata: " + TD2 + b"\r\n\r\n", ["hi", "there"]),
    ("mixed line ends", b"data: " + TD + b"\r\n\ndata: " + TD2 + b"\n\r\n", ["hi", "there"]),
    ("comments and keep-alives", b": connected\n\n:keep-alive\n\ndata: " + TD + b"\n\n: keepalive\n\n", ["hi"]),
    ("event and id ignored", b"event: message\nid: 7\nretry: 10\ndata: " + TD + b"\n\n", ["hi"]),
    ("multi-line data joined with LF", b'data: {"type":"text-delta","payload":\ndata: {"id":"1","text":"x"}}\n\n', ["x"]),
    ("leading blank lines", b"\n\n\r\ndata: " + TD + b"\n\n", ["hi"]),
    ("final event without blank line", b"data: " + TD + b"\n\ndata: " + TD2, ["hi", "there"]),
    ("final event with one LF", b"data: " + TD + b"\n", ["hi"]),
    ("data after [DONE] is kept", b"data: " + TD + b"\n\ndata: [DONE]\n\ndata: " + TD2 + b"\n\n", ["hi", "there"]),
    ("comment inside event", b": note\ndata: " + TD + b"\n\n", ["hi"]),
    ("U+2028 inside JSON", b'data: {"type":"text-delta","payload":{"id":"1","text":"a\xe2\x80\xa8b\xe2\x80\xa9c\xc2\x85"}}\n\n', ["a\u2028b\u2029c\x85"]),
]


@pytest.mark.parametrize("name,data,want", SSE_CASES, ids=[c[0] for c in SSE_CASES])
def test_sse(codec, name, data, want):
    assert texts(decode_all(codec, data, "sse")) == want
    assert texts(decode_all(codec, data, "auto")) == want
    for i in range(len(data) + 1):
        assert texts(decode_all(codec, data, "sse", splits=[i])) == want


RS_CASES = [
    ("plain", TD + b"\x1e" + TD2 + b"\x1e", ["hi", "there"]),
    ("keep-alive records", b"\x1e" + TD + b"\x1e\x1e \x1e" + TD2 + b"\x1e\x1e", ["hi", "there"]),
    ("final record unterminated", TD + b"\x1e" + TD2, ["hi", "there"]),
    ("stray SSE [DONE] trailer", TD + b"\x1e" + TD2 + b"\x1edata: [DONE]\n\n", ["hi", "there"]),
    ("newlines around records", TD + b"\n\x1e\n" + TD2 + b"\x1e", ["hi", "there"]),
]


@pytest.mark.parametrize("name,data,want", RS_CASES, ids=[c[0] for c in RS_CASES])
def test_rs(codec, name, data, want):
    assert texts(decode_all(codec, data, "rs")) == want
    if name != "newlines around records":  # auto sees the LF first and picks NDJSON
        assert texts(decode_all(codec, data, "auto")) == want
    for i in range(len(data) + 1):
        assert texts(decode_all(codec, data, "rs", splits=[i])) == want


NDJSON_CASES = [
    ("plain", TD + b"\n" + TD2 + b"\n", ["hi", "there"]),
    ("CRLF", TD + b"\r\n" + TD2 + b"\r\n", ["hi", "there"]),
    ("blank lines", b"\n" + TD + b"\n\n  \n" + TD2, ["hi", "there"]),
    ("BOM", b"\xef\xbb\xbf" + TD + b"\n", ["hi"]),
]


@pytest.mark.parametrize("name,data,want", NDJSON_CASES, ids=[c[0] for c in NDJSON_CASES])
def test_ndjson(codec, name, data, want):
    fr = "auto" if name == "BOM" else "ndjson"
    assert texts(decode_all(codec, data, fr)) == want
    assert texts(decode_all(codec, data, "auto")) == want
    for i in range(len(data) + 1):
        assert texts(decode_all(codec, data, fr, splits=[i])) == want


def test_json_document_array_and_object(codec):
    arr = b"[" + TD + b",\n " + TD2 + b"]"
    assert texts(decode_all(codec, arr, "json")) == ["hi", "there"]
    assert texts(decode_all(codec, arr, "auto")) == ["hi", "there"]
    pretty = b'{\n  "type": "start",\n  "payload": {"id": "a"}\n}\n'
    assert texts(decode_all(codec, pretty, "json")) == ["start"]


@pytest.mark.parametrize("data,framing", [
    (b"data: x", "sse"), (b": hello\n\n", "sse"), (b"event: x\n", "sse"), (TD + b"\x1e", "rs"),
    (b"\x1e" + TD, "rs"), (TD + b"\n", "ndjson"), (b"  \r\n" + TD + b"\n", "ndjson"), (b"[]", "json"),
    (TD, "ndjson"), (b"", "ndjson"),
])
def test_auto_detection(codec, data, framing):
    dec = codec.StreamDecoder("auto", errors="keep")
    dec.feed(data)
    dec.close()
    assert dec.framing == framing


def test_auto_waits_for_a_decision(codec):
    dec = codec.StreamDecoder()
    assert dec.feed(TD[:10]) == []
    assert dec.framing == "auto"
    assert len(dec.feed(TD[10:] + b"\x1e")) == 1
    assert dec.framing == "rs"


def test_sse_done_sets_flag_and_keeps_going(codec):
    dec = codec.StreamDecoder("sse")
    assert len(dec.feed(b"data: " + TD + b"\n\n")) == 1 and not dec.done
    assert dec.feed(b"data: [DONE]\n\n") == [] and dec.done
    assert dec.frame_index == 1


def test_frame_index_counts_frames_not_keepalives(codec):
    dec = codec.StreamDecoder("sse")
    dec.feed(b": ka\n\ndata: " + TD + b"\n\n: ka\n\ndata: " + TD2 + b"\n\n")
    assert dec.frame_index == 2


def test_input_types(codec):
    for data in (TD + b"\n", bytearray(TD + b"\n"), memoryview(TD + b"\n"), (TD + b"\n").decode()):
        assert texts(decode_all(codec, data, "ndjson")) == ["hi"]


def test_bad_arguments(codec):
    with pytest.raises(ValueError, match="framing must be one of"):
        codec.StreamDecoder("xml")
    with pytest.raises(ValueError, match="errors must be"):
        codec.StreamDecoder(errors="ignore")
    with pytest.raises(ValueError, match="max_frame_bytes"):
        codec.StreamDecoder(max_frame_bytes=0)
    with pytest.raises(TypeError, match="expected bytes"):
        codec.StreamDecoder().feed(12)
    dec = codec.StreamDecoder()
    dec.close()
    with pytest.raises(RuntimeError):
        dec.feed(b"x")


@pytest.mark.parametrize("head", [b"{" + b"x" * 30000, b" \r\n" * 10000, b"\xef\xbb\xbf" + b"\n" * 20000 + b"{" + b"y" * 20000])
def test_auto_detection_is_linear_when_fed_byte_by_byte(codec, head):
    """Detection looks at each byte once: a long undecided prefix fed a byte at a time must not
    make it quadratic (this would take minutes if it were)."""
    import time
    dec = codec.StreamDecoder(errors="keep")
    t0 = time.perf_counter()
    for i in range(len(head)):
        dec.feed(head[i:i + 1])
    assert dec.framing == "auto"
    out = dec.feed(b"\n" + TD + b"\n") + dec.close()
    assert time.perf_counter() - t0 < 20
    assert dec.framing == "ndjson" and out[-1].payload.text == "hi"


BIG = b'{"type":"data-big","runId":"r","from":"AGENT","data":{"x":"' + b"ab\\n" * 15000 + b'"}}'


def _outcome(codec, data, framing, splits=None, **opts):
    """decode_all's result, or the error it raised: its type and message."""
    try:
        return decode_all(codec, data, framing, splits=splits, **opts)
    except Exception as exc:  # noqa: BLE001 (compared, not swallowed)
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("framing,pre,sep", [("sse", b"data: ", b"\n\n"), ("sse", b"data: ", b"\r\n\r\n"),
                                             ("ndjson", b"", b"\n"), ("ndjson", b"", b"\r\n"), ("rs", b"", b"\x1e")])
def test_a_frame_through_many_pieces(codec, framing, pre, sep):
    """A frame that goes on through several pieces: those of 4 KiB and more are kept by reference
    and the frame is copied once, when a piece ends it; smaller ones are copied as they come.
    Whatever the cuts -- pieces over and under 4 KiB mixed, the terminator split between pieces,
    the frame past max_frame_bytes (its error kept or raised), the stream closed inside it -- the
    chunks, errors and their positions are those of the body fed whole."""
    body = b"".join(pre + f + sep for f in (TD, BIG, TD2, BIG, TD))
    end = body.index(sep, len(pre + TD + sep) + 100)                     # the first BIG's terminator
    cuts = [
        list(range(4096, len(body), 4096)),
        list(range(5000, len(body), 5000)),
        list(range(16384, len(body), 16384)),
        [10, 4200, 4201, 9000, 9001, 9002, 30000, 45000, 45001],          # small pieces between big ones
        [5000, 20000, end, end + 1, end + len(sep)],                     # the terminator on its own
        [5000, 20000, end + 1, end + 10000, end + 20000],                # ... split between pieces
        [5000, 10000, 15000, end - 1, end + len(sep) + 7],
    ]
    cuts = [sorted(set(c)) for c in cuts]
    for opts in ({}, {"max_frame_bytes": 30000}, {"max_frame_bytes": 30000, "errors": "keep"}, {"errors": "keep"}):
        whole = _outcome(codec, body, framing, **opts)
        for c in cuts:
            assert _outcome(codec, body, framing, c, **opts) == whole, (c, opts)
            short = body[:c[-2]]                                         # closed inside a frame
            assert _outcome(codec, short, framing, c[:-2], **opts) == _outcome(codec, short, framing, **opts), \
                (c, opts)
    assert [x[0] for x in decode_all(codec, body, framing, max_frame_bytes=30000, errors="keep")] == \
        ["TextDelta", "invalid", "TextDelta", "invalid", "TextDelta"]


def test_a_frame_past_max_frame_bytes_is_not_held_by_reference(codec):
    """The pieces a frame goes on through are kept by reference only while the frame is within
    max_frame_bytes: past it, the frame is an error at once (raised, or dropped as it comes, with
    errors="keep"), however large its pieces, not when its end comes."""
    from chunkcodec.errors import FrameTooLarge
    body = b"data: " + BIG                                              # no end yet
    pieces = [body[i:i + 8192] for i in range(0, len(body), 8192)]
    dec = codec.StreamDecoder("sse", max_frame_bytes=30000)
    with pytest.raises(FrameTooLarge):
        for piece in pieces[:5]:                                        # 40 KB, in pieces of 8 KB
            dec.feed(piece)
    dec = codec.StreamDecoder("sse", max_frame_bytes=30000, errors="keep")
    for piece in pieces:
        assert dec.feed(piece) == []
    out = dec.feed(b"\n\ndata: " + TD + b"\n\n") + dec.close()
    assert [type(c).__name__ for c in out] == ["InvalidFrame", "TextDelta"]
    assert len(out[0].raw) == 30000 and out[0].dropped == len(body) - 30000
