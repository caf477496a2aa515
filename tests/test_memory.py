"""Leak loops: decoding and encoding the same data over and over must not grow the process."""

import gc
import os
import resource

import pytest

from chunkcodec import DecodeError
from conftest import CORPUS

BODY = b"".join(p.read_bytes() for p in sorted((CORPUS / "wire").glob("*.sse")))
ERRORS = b'data: {"type":"text-delta","payload":{"id":"1","text":"\xff"}}\n\ndata: {bad\n\ndata: {"type":"x"'


def _rss_kb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


@pytest.mark.skipif("asan" in os.environ.get("LD_PRELOAD", ""),
                    reason="AddressSanitizer keeps freed memory in quarantine")
@pytest.mark.parametrize("what", ["decode", "encode", "errors", "frames", "accumulate"])
def test_rss_stays_flat(codec, what):
    enc = codec.Encoder("sse")
    chunks = list(codec.iter_chunks(BODY))

    def once():
        if what == "decode":
            list(codec.iter_chunks(BODY[i:i + 999] for i in range(0, len(BODY), 999)))
        elif what == "encode":
            [enc.encode(c) for c in chunks]
        elif what == "frames":
            list(codec.iter_frames(BODY))
        elif what == "accumulate":
            acc = codec.Accumulator()
            for i in range(0, len(BODY), 999):
                acc.feed(BODY[i:i + 999])
                view = acc.buffer("text")
            acc.close()
            acc.results()
            del view
        else:
            list(codec.iter_chunks(ERRORS, errors="keep"))
            with pytest.raises(DecodeError):
                list(codec.iter_chunks(ERRORS))

    for _ in range(50):
        once()
    gc.collect()
    before = _rss_kb()
    for _ in range(400):
        once()
    gc.collect()
    grown = _rss_kb() - before
    assert grown < 2048, f"RSS grew by {grown} KiB over 400 rounds"


LOG = b"".join(p.read_bytes().rstrip(b"\n") + b"\n" for p in sorted((CORPUS / "chunks").glob("*.jsonl")))


def _interleaved_log():
    from test_accumulate_rules import _bench_module
    gen = _bench_module("gen")
    return gen.framed(gen.interleaved(30, 12, seed=3), "ndjson")


@pytest.mark.parametrize("how", ["accumulate", "pop_finished", "closed accumulator"])
def test_accumulation_leaves_no_reference_cycle(codec, how):
    """Once its results are dropped, what accumulation built is freed by reference counting: a
    reference cycle (a run holding its accumulator, the decoder holding the accumulator as its
    sink, a buffer and its owner part) would leave every run of a log to the garbage collector,
    which the next full collection then pays for all at once.  It is also what lets accumulate()
    pause the collector (chunkcodec/_gc.py) without losing memory: every corpus stream, the wire
    captures and a log of interleaved runs, read out through to_mastra() too."""
    logs = [LOG, BODY, _interleaved_log()]
    for log in logs:        # (msgspec makes a cycle of its own the first time it meets a class)
        [r.to_mastra() for r in codec.accumulate(log)]
    gc.collect()
    gc.disable()
    try:
        if how == "accumulate":
            for log in logs:
                out = codec.accumulate(log)
                assert out
                for r in out:
                    r.to_mastra()
                del out
                assert gc.collect() == 0
            out = codec.accumulate(LOG)
        else:
            acc = codec.Accumulator("ndjson")
            acc.feed(LOG)
            out = list(acc.pop_finished()) if how == "pop_finished" else []
            acc.close()
            out += acc.pop_results() if how == "pop_finished" else acc.results().values()
            del acc
        assert len(out) > 20 and any(r.tool_calls for r in out) and any(r.reasoning for r in out)
        del out
        assert gc.collect() == 0
    finally:
        gc.enable()


@pytest.mark.parametrize("how", ["feed", "feed in pieces", "add", "strict error", "view held"])
def test_accumulator_dropped_mid_stream_leaves_no_reference_cycle(codec, how):
    """A service drops its accumulator without close() when the client goes away or a frame is
    bad: what it had built is freed at once, by reference counting, not left as cyclic garbage
    (the decoder holding the accumulator, a buffer holding the part writing at its end) for the
    next full collection.  Cut in the middle of the log, so parts, tool calls and runs are open."""
    half = LOG[:LOG.rfind(b"\n", 0, len(LOG) // 2) + 1]
    codec.accumulate(LOG)   # (msgspec makes a cycle of its own the first time it meets a class)
    gc.collect()
    gc.disable()
    try:
        acc = codec.Accumulator("ndjson")
        view = None
        if how == "feed":
            acc.feed(half)
        elif how == "feed in pieces":
            for i in range(0, len(half), 777):
                acc.feed(half[i:i + 777])
        elif how == "add":
            for c in codec.iter_chunks(half, "ndjson"):
                acc.add(c)
        elif how == "strict error":
            with pytest.raises(DecodeError):
                acc.feed(half + b'{"type":"text-delta","payload":{"id":"1","text":"\xff"}}\n')
        else:
            acc.feed(half)
            view = acc.buffer("text")
            held = bytes(view)
        assert acc.run_ids() and acc.result().text is not None
        del acc
        assert gc.collect() == 0
        if view is not None:
            assert bytes(view) == held and len(held) > 0
    finally:
        gc.enable()


def test_a_big_piece_is_not_kept_alive_for_its_cut_tail(codec):
    """The cut frame at the end of a piece: a small piece is kept by reference until the next one
    ends the frame (no copy), a big one is not kept alive for a few bytes of tail.  Either way the
    frame is whole once the next piece comes."""
    import sys
    frame = b'data: {"type":"text-delta","runId":"r","from":"AGENT","payload":{"id":"1","text":"hi"}}\n\n'
    for size, kept in ((16384, True), ((1 << 20) + 1000, False)):
        whole = frame * (size // len(frame) + 1)
        piece, rest = whole[:size], whole[size:]
        dec = codec.StreamDecoder("sse")
        before = sys.getrefcount(piece)
        n = len(dec.feed(piece))
        if codec.name == "native":
            assert (sys.getrefcount(piece) > before) is kept, size
        n += len(dec.feed(rest)) + len(dec.close())
        assert sys.getrefcount(piece) == before
        assert n == whole.count(b"\n\n")
