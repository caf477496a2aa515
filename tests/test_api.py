"""Sources and module-level functions."""

import asyncio
import io
import json
import pathlib

import msgspec
import pytest

import chunkcodec
from conftest import CORPUS

BODY = (CORPUS / "wire" / "agent_tool_roundtrip.sse").read_bytes()
EXPECTED = [json.loads(x) for x in (CORPUS / "wire" / "agent_tool_roundtrip.decoded.jsonl").read_bytes().splitlines()]


def _types(chunks):
    return [c.type if hasattr(c, "type") else type(c).__struct_config__.tag for c in chunks]


def test_sources(codec, tmp_path):
    path = tmp_path / "s.sse"
    path.write_bytes(BODY)
    want = [e["type"] for e in EXPECTED]
    assert _types(codec.iter_chunks(BODY)) == want
    assert _types(codec.iter_chunks(io.BytesIO(BODY))) == want
    assert _types(codec.iter_chunks(pathlib.Path(path))) == want
    assert _types(codec.iter_chunks(BODY[i:i + 5] for i in range(0, len(BODY), 5))) == want
    assert _types(codec.iter_chunks(BODY.decode())) == want
    assert list(codec.iter_dicts(io.BytesIO(BODY), "sse")) == EXPECTED


def test_accumulate_takes_every_kind_of_source_alike(codec, tmp_path):
    """accumulate() of the same stream: bytes, str, a path, a file object, an iterator of pieces,
    a list or a tuple of pieces (fed by a compiled loop on the native path), typed chunks in a
    list or from an iterator, and a list that starts with typed chunks and goes on with bytes."""
    path = tmp_path / "s.sse"
    path.write_bytes(BODY)
    want = [msgspec.to_builtins(r) for r in codec.accumulate(BODY)]
    assert want and want[0]["tool_calls"]
    pieces = [BODY[i:i + 7] for i in range(0, len(BODY), 7)]
    chunks = list(codec.iter_chunks(BODY))
    events = BODY.split(b"\n\n")
    half = len(events) // 2
    assert len(list(codec.iter_chunks(b"\n\n".join(events[:half]) + b"\n\n"))) == half
    for source in (BODY.decode(), path, io.BytesIO(BODY), iter(pieces), pieces, tuple(pieces),
                   bytearray(BODY), memoryview(BODY), chunks, iter(chunks),
                   chunks[:half] + [b"\n\n".join(events[half:])]):
        got = [msgspec.to_builtins(r) for r in codec.accumulate(source)]
        assert got == want, type(source)
    with pytest.raises(TypeError):
        codec.accumulate([BODY[:10], 42])
    with pytest.raises(TypeError):
        codec.accumulate(iter([BODY[:10], 42]))


def test_async_source(codec):
    async def gen():
        for i in range(0, len(BODY), 100):
            await asyncio.sleep(0)
            yield BODY[i:i + 100]

    async def run():
        return [c async for c in codec.aiter_chunks(gen())]

    assert _types(asyncio.run(run())) == [e["type"] for e in EXPECTED]


def test_httpx_response_stream(codec):
    httpx = pytest.importorskip("httpx")

    def handler(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=iter([BODY[i:i + 37] for i in range(0, len(BODY), 37)]))

    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        with client.stream("POST", "http://agent.test/api/agents/a/stream") as response:
            chunks = list(codec.iter_chunks(response.iter_bytes()))
    assert _types(chunks) == [e["type"] for e in EXPECTED]


def test_loads_is_json_loads(codec):
    for doc in [b'{"a":1}', b"[1,2.5,null,true]", b'"\\ud800"', b"NaN", b'{"a":{"b":[]}}', b"123456789012345678901234567890"]:
        assert repr(codec.loads(doc)) == repr(json.loads(doc))


def test_public_api_is_complete():
    for name in ["StreamDecoder", "Encoder", "decode", "loads", "iter_chunks", "iter_dicts", "aiter_chunks",
                 "encode", "encode_stream", "raw_json", "TextDelta", "DecodeError", "InvalidFrame"]:
        assert name in chunkcodec.__all__ and hasattr(chunkcodec, name)
    assert chunkcodec.IMPLEMENTATION in ("native", "reference")


def test_iter_frames_is_the_framing_layer(codec):
    frames = list(codec.iter_frames(BODY[i:i + 7] for i in range(0, len(BODY), 7)))
    assert [json.loads(f) for f in frames] == EXPECTED
    assert all(type(f) is bytes for f in frames)
    multi = b'data: {"a":\ndata: 1}\n\n: c\n\ndata: [DONE]\n\n'
    assert list(codec.iter_frames(multi)) == [b'{"a":\n1}']
    assert list(codec.iter_frames(b"[1,2]", "json")) == [b"[1,2]"]
