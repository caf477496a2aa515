"""Conformance against streams recorded from real Mastra 1.71 (tests/vectors/corpus)."""

import json

import msgspec
import pytest

from conftest import CORPUS
from util import decode_all

CHUNK_FILES = sorted((CORPUS / "chunks").glob("*.jsonl"))
WIRE = sorted(p for p in (CORPUS / "wire").iterdir() if p.suffix in (".sse", ".rs"))


def _lines(path):
    return [line for line in path.read_bytes().split(b"\n") if line]


def test_corpus_is_present():
    assert len(CHUNK_FILES) == 21 and len(WIRE) == 7


@pytest.mark.parametrize("path", CHUNK_FILES, ids=lambda p: p.stem)
def test_every_line_decodes_and_round_trips(codec, path):
    for line in _lines(path):
        chunk = codec.decode(line)
        assert msgspec.to_builtins(chunk) == json.loads(line)
        assert codec.loads(line) == json.loads(line)
        for framing, pre, post in (("sse", b"data: ", b"\n\n"), ("rs", b"", b"\x1e"),
                                   ("ndjson", b"", b"\n")):
            assert codec.encode(chunk, framing) == pre + line + post


@pytest.mark.parametrize("path", CHUNK_FILES, ids=lambda p: p.stem)
def test_fresh_chunks_encode_like_mastra(codec, path):
    """A chunk rebuilt from builtins (no raw bytes) still encodes to JSON.stringify's text,
    up to key order, which a Python-built object does not carry."""
    for line in _lines(path):
        chunk = codec.decode(line)
        fresh = msgspec.convert(msgspec.to_builtins(chunk), type(chunk))
        text = codec.encode(fresh, "ndjson")[:-1]
        assert json.loads(text) == json.loads(line)
        if b"." not in line and b"e+" not in line:
            assert sorted(text) == sorted(line)  # same bytes, maybe other key order


@pytest.mark.parametrize("path", CHUNK_FILES, ids=lambda p: p.stem)
def test_ndjson_file_decodes_as_stream(codec, path):
    data = path.read_bytes()
    got = list(codec.iter_dicts(data))
    assert got == [json.loads(line) for line in _lines(path)]


def _expected(path):
    stem = path.name.rsplit(".", 1)[0]
    return [json.loads(line) for line in _lines(path.with_name(stem + ".decoded.jsonl"))]


@pytest.mark.parametrize("path", WIRE, ids=lambda p: p.name)
@pytest.mark.parametrize("framing", ["auto", "explicit"])
def test_wire_body_decodes_to_client_result(codec, path, framing):
    fr = framing if framing == "auto" else ("sse" if path.suffix == ".sse" else "rs")
    body = path.read_bytes()
    expected = _expected(path)
    got = decode_all(codec, body, fr)
    assert [g[1] for g in got] == expected
    assert list(codec.iter_dicts(body, fr)) == expected


@pytest.mark.parametrize("path", WIRE, ids=lambda p: p.name)
def test_wire_split_at_every_byte(codec, path):
    body = path.read_bytes()
    whole = decode_all(codec, body)
    assert [g[1] for g in whole] == _expected(path)
    for i in range(len(body) + 1):
        assert decode_all(codec, body, splits=[i]) == whole, f"split at {i}"


@pytest.mark.parametrize("path", WIRE, ids=lambda p: p.name)
def test_wire_one_byte_at_a_time(codec, path):
    body = path.read_bytes()
    assert decode_all(codec, body, splits=range(1, len(body))) == decode_all(codec, body)


@pytest.mark.parametrize("path", WIRE, ids=lambda p: p.name)
def test_wire_reencodes_to_identical_body(codec, path):
    body = path.read_bytes()
    chunks = list(codec.iter_chunks(body))
    framing = "sse" if path.suffix == ".sse" else "rs"
    assert b"".join(codec.encode_stream(chunks, framing)) == body


def test_sse_done_is_recorded(codec):
    dec = codec.StreamDecoder("sse")
    dec.feed((CORPUS / "wire" / "agent_tripwire.sse").read_bytes())
    dec.close()
    assert dec.done
