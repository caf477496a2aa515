"""Out of memory in the C core.  Every malloc, calloc and realloc of csrc/ goes through a countdown
(csrc/include/chunkcodec/alloc.h) that a test can arm to make the n-th one fail.  Each allocation
an operation makes is made to fail in turn, and each time the operation must raise MemoryError or
give the answer it gives with memory to spare: never a crash, a hang, or another answer.  (The
reference path allocates nothing in C: these tests are the native path's.)"""

import json
import os
import sys

import msgspec
import pytest

import chunkcodec
from chunkcodec import bulk
from conftest import _native

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import gen  # noqa: E402

pytestmark = pytest.mark.skipif(bool(os.environ.get("CHUNKCODEC_NO_EXTENSIONS")),
                                reason="the C core's allocations: the reference path makes none")

ARMED = 1 << 40


def _arm(after):
    """Arm (after >= 0) or disarm (after < 0) both extension modules' countdowns: each links its
    own copy of the core."""
    _native()
    from chunkcodec import _bulk, _core
    _core._alloc_arm(after)
    _bulk._alloc_arm(after)


def _allocations(op):
    """How many allocations op() makes in the C core (both modules), and its answer."""
    _native()
    from chunkcodec import _bulk, _core
    _arm(ARMED)
    try:
        want = op()
    finally:
        made = (ARMED - _core._alloc_arm(-1)) + (ARMED - _bulk._alloc_arm(-1))
    return made, want


def _each_failing(op, want, made, at_most=150):
    """op() with allocation k failing, for every k < made (a spread of them past at_most): each
    gives want or raises MemoryError.  Returns how many raised."""
    ks = list(range(made)) if made <= at_most else sorted(set(range(50)) | set(range(50, made, max(1, made // 100)))
                                                          | {made - 1})
    raised = 0
    for k in ks:
        _arm(k)
        try:
            got = op()
        except MemoryError:
            raised += 1
            continue
        finally:
            _arm(-1)
        assert got == want, f"allocation {k} of {made} failing changed the answer"
    return raised


def _long_ids_log(runs, deltas, seed):
    """A generated log in which half the runs have run ids of 150 bytes and more, and every part
    id is long: routes and kept heads held out of line (ext); a delta in three carries a
    providerMetadata (a route's copy of it, out of line too); a delta in five is written with
    sorted keys (a kept template)."""
    out = []
    for i, f in enumerate(gen.interleaved(runs, deltas, seed)):
        d = json.loads(f)
        rid = d.get("runId")
        if isinstance(rid, str) and int(rid[0], 16) % 2:
            d["runId"] = rid + "-" + "r" * 150
        p = d.get("payload")
        if d.get("type") in ("text-delta", "reasoning-delta", "text-start", "text-end", "reasoning-start",
                             "reasoning-end") and isinstance(p, dict) and "id" in p:
            p["id"] = "part-" + p["id"] + "-" + "i" * 40
            if d["type"].endswith("-delta") and i % 3 == 0:
                d["payload"] = {"id": p["id"], "providerMetadata": {"openai": {"itemId": "rs_" + "ab" * 24}},
                                "text": p["text"]}
        sort = d.get("type", "").endswith("-delta") and i % 5 == 0
        out.append(json.dumps(d, separators=(",", ":"), ensure_ascii=False, sort_keys=sort).encode())
    return out


def _view(runs):
    return [msgspec.to_builtins(r.to_mastra()) for r in runs]


def _columns(idx):
    return tuple(getattr(idx, c).tolist() for c in ("offset", "length", "type", "run", "text_off",
                                                       "text_len")) + (idx.run_ids, idx.framing)


@pytest.mark.parametrize("framing", ["ndjson", "sse"])
def test_accumulate_out_of_memory_at_each_allocation(framing):
    data = gen.framed(_long_ids_log(runs=40, deltas=12, seed=11), framing)
    pieces = [data[i:i + 4096] for i in range(0, len(data), 4096)]

    def op():
        return _view(chunkcodec.accumulate(pieces))

    made, want = _allocations(op)
    assert made >= 10          # the route table and its head cache, grown twice; ext keys and heads
    _each_failing(op, want, made)
    assert op() == want        # and nothing is left armed


def test_accumulate_out_of_memory_as_the_route_table_grows_past_512():
    """1,500 runs in flight grow the route table past 512 slots, to 2,048.  Each allocation
    failing in turn gives the same answer (a table that cannot grow stays as it is: it is a
    cache), or MemoryError for the first table (no decoder without one)."""
    from test_accumulate_rules import _runs_in_flight
    data = _runs_in_flight(1500, 12, seed=3)

    def op():
        return _view(chunkcodec.accumulate(data))

    made, want = _allocations(op)
    assert made >= 6           # the table and its heads at 16, 512 and 2,048 slots
    raised = _each_failing(op, want, made)
    assert raised >= 1         # the first table: no decoder without it
    assert op() == want


def test_an_accumulator_under_way_does_without_what_it_cannot_allocate():
    """Once an accumulator has its route table, what its C loop allocates is cache: routes for
    more runs and parts, run and part ids held out of line, kept frame heads.  Out of memory for
    any of it, feed() goes on without it and gives the same answer."""
    frames = _long_ids_log(runs=40, deltas=12, seed=5)
    first, second = gen.framed(frames[:20], "ndjson"), gen.framed(frames[20:], "ndjson")

    def op(k):
        """The answer with allocation k of the second feed failing (k < 0: none), and how many
        allocations that feed made."""
        acc = chunkcodec.Accumulator("ndjson")
        acc.feed(first)
        from chunkcodec import _core
        _core._alloc_arm(k if k >= 0 else ARMED)
        try:
            acc.feed(second)
        finally:
            left = _core._alloc_arm(-1)
        acc.close()
        return _view(acc.results().values()), ARMED - left

    want, made = op(-1)
    assert made >= 10
    for k in range(made):
        assert op(k)[0] == want, f"allocation {k} of {made} failing changed the answer"


@pytest.mark.parametrize("workers", [1, 2])
def test_scan_out_of_memory_at_each_allocation(workers, monkeypatch, tmp_path):
    # 600 runs: the run table grows past its first 1,024 slots; two threads: the range indexed from
    # its end down grows its own columns
    monkeypatch.setattr(bulk, "MIN_PART_BYTES", 1000)
    data = gen.framed(_long_ids_log(runs=600, deltas=2, seed=3), "ndjson")
    p = tmp_path / "log.ndjson"
    p.write_bytes(data)

    def op():
        return _columns(bulk.scan(p, workers=workers))

    made, want = _allocations(op)
    assert made >= 3
    raised = _each_failing(op, want, made)
    assert raised >= 1         # the run table itself: no index without it
    assert op() == want


def test_every_allocation_of_the_core_goes_through_the_countdown():
    import pathlib
    import re
    csrc = pathlib.Path(__file__).resolve().parents[1] / "csrc"
    if not csrc.is_dir():
        pytest.skip("no csrc/ beside the tests (an installed copy)")
    files = [f for f in csrc.rglob("*") if f.suffix in (".c", ".h") and f.name != "alloc.h"]
    assert len(files) >= 8
    raw = [(f.name, m.group(0)) for f in files
           for m in re.finditer(r"(?<![\w.])(malloc|calloc|realloc)\s*\(", f.read_text())]
    assert raw == [], "allocate with cc_malloc, cc_calloc or cc_realloc (alloc.h), which tests can make fail"
