"""Encoding: byte-identical to what Mastra (JavaScript's JSON.stringify) writes."""

import json
import shutil
import subprocess

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

import chunkcodec as cc
from chunkcodec import _jsonout

NUMBERS = [
    (1.0, b"1"), (-0.0, b"0"), (0.1, b"0.1"), (1e21, b"1e+21"), (1e20, b"100000000000000000000"),
    (1e16, b"10000000000000000"), (1.5e300, b"1.5e+300"), (5e-324, b"5e-324"), (1e-7, b"1e-7"),
    (1e-6, b"0.000001"), (123456789.0, b"123456789"), (-2.5, b"-2.5"), (0.000123, b"0.000123"),
    (1.7976931348623157e308, b"1.7976931348623157e+308"), (12, b"12"), (10**30, b"1" + b"0" * 30),
    (float("nan"), b"null"), (float("inf"), b"null"),
]


@pytest.mark.parametrize("value,js", NUMBERS, ids=[repr(v) for v, _ in NUMBERS])
def test_numbers_as_javascript_prints_them(codec, value, js):
    chunk = cc.Raw(payload={"v": value})
    assert codec.encode(chunk, "ndjson") == b'{"type":"raw","payload":{"v":' + js + b"}}\n"


def test_native_and_python_number_rewriters_agree():
    from chunkcodec import _core
    for tok in [b"1.0", b"-0.0", b"1e21", b"1E+5", b"0.001", b"2.5e-8", b"123.456", b"9007199254740993.0",
                b"1.5e300", b"5e-324", b"0.0", b"100", b"-1e-7", b"1.25e20", b"1.25e21"]:
        doc = b'{"a":[' + tok + b',"1.0"]}'
        assert _core.js_numbers(doc) == _jsonout.js_numbers(doc), tok


def test_strings_as_json_stringify_writes_them(codec):
    c = cc.TextDelta("r", "AGENT", payload=cc.TextDeltaPayload(id="1", text='"\\\b\f\n\r\t\x00\x1f\x7f\u2028\u2029é😀'))
    assert codec.encode(c, "ndjson") == (
        b'{"type":"text-delta","runId":"r","from":"AGENT","payload":{"id":"1","text":'
        b'"\\"\\\\\\b\\f\\n\\r\\t\\u0000\\u001f\x7f\xe2\x80\xa8\xe2\x80\xa9\xc3\xa9\xf0\x9f\x98\x80"}}\n')


def test_lone_surrogates_are_escaped(codec):
    c = cc.TextDelta(payload=cc.TextDeltaPayload(id="1", text="a\ud800b"))
    assert codec.encode(c, "ndjson") == b'{"type":"text-delta","payload":{"id":"1","text":"a\\ud800b"}}\n'


def test_hot_encoder_matches_general_encoder(codec):
    for c in [cc.TextDelta(payload=cc.TextDeltaPayload(id="1", text="x")),
              cc.ReasoningDelta(from_="AGENT", payload=cc.ReasoningDeltaPayload(id="r", text="")),
              cc.ToolCallDelta("r", payload=cc.ToolCallDeltaPayload(argsTextDelta='{"', toolCallId="c")),
              cc.ToolCallDelta("r", "AGENT", payload=cc.ToolCallDeltaPayload(argsTextDelta="", toolCallId="c", toolName="t")),
              cc.TextDelta(payload=cc.TextDeltaPayload(id="1", text="x", providerMetadata={"a": {"b": 1.0}})),
              cc.TextDelta(payload=cc.TextDeltaPayload(id="1", text="x"), metadata={"m": 1})]:
        assert codec.encode(c, "ndjson") == _jsonout.js_numbers(msgspec.json.encode(c)) + b"\n"


def test_encode_into_and_stream(codec):
    enc = codec.Encoder("sse")
    c = cc.TextDelta(payload=cc.TextDeltaPayload(id="1", text="x"))
    frame = enc.encode(c)
    buf = bytearray(b"HEAD")
    enc.encode_into(c, buf, -1)
    assert buf == b"HEAD" + frame
    enc.encode_into(c, buf, 2)
    assert buf == b"HE" + frame
    enc.encode_into(c, buf)
    assert buf == frame
    with pytest.raises(ValueError, match="past the end"):
        enc.encode_into(c, buf, len(buf) + 1)
    assert buf == frame
    assert b"".join(codec.encode_stream([c, c])) == frame * 2 + b"data: [DONE]\n\n"
    assert b"".join(codec.encode_stream([c], "rs")) == frame[6:-2] + b"\x1e"
    with pytest.raises(ValueError):
        codec.Encoder("json")


def test_unencodable_value_raises_encode_error(codec):
    with pytest.raises(cc.EncodeError):
        codec.encode(cc.Raw(payload={"x": object()}))


def test_dicts_encode_too(codec):
    assert codec.encode({"type": "start", "x": 1.0}, "ndjson") == b'{"type":"start","x":1}\n'


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | st.integers(-2**53, 2**53)
    | st.text(), lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(value=json_values, text=st.text())
def test_native_and_reference_encode_identically(both, value, text):
    native, reference = both
    chunks = [cc.Raw(payload=value), cc.TextDelta(payload=cc.TextDeltaPayload(id="i", text=text))]
    for c in chunks:
        for fr in ("sse", "rs", "ndjson"):
            assert native.encode(c, fr) == reference.encode(c, fr)
        assert _same_json(json.loads(native.encode(c, "ndjson")), msgspec.to_builtins(c))


def _same_json(a, b):
    """Equal as JavaScript would see them: 1e16 prints as an integer literal, still the same number."""
    if isinstance(a, (int, float)) and not isinstance(a, bool) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    return a == b and type(a) is type(b)


NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_against_real_json_stringify(both):
    """JavaScript's own JSON.stringify is the oracle for numbers and strings."""
    native, _ = both
    values = [1.0, -0.0, 0.1, 1e21, 1e-7, 123456789.0, 5e-324, 1.7976931348623157e308, 2.5e-8, 1e16,
              "\u2028\u2029", "\x00\x1f\x7f\"\\", "é😀", 0.000001, 1.25e20]
    # hand the values to node as exact JSON (repr round-trips) and let it stringify them
    src = json.dumps([{"type": "raw", "payload": v} for v in values])
    out = subprocess.run([NODE, "-e", "const a = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
                          "for (const x of a) process.stdout.write(JSON.stringify(x) + '\\n');"],
                         input=src.encode(), capture_output=True, check=True).stdout
    ours = b"".join(native.encode(cc.Raw(payload=v), "ndjson") for v in values)
    assert ours == out
