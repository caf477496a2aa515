"""pytest-benchmark suite: `pytest bench/ --benchmark-enable` (disabled in the normal test run).

Each benchmark group times chunkcodec and its baseline on the same generated data; compare the
groups' rows, not absolute numbers (the machines are shared).  The standalone bench_codec.py
prints the ratios directly.
"""

import pathlib
import sys

import msgspec
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import chunkcodec  # noqa: E402
import gen  # noqa: E402
from chunkcodec._model import AnyChunk  # noqa: E402

FRAMES = gen.frames(10, 300)
ND = gen.framed(FRAMES, "ndjson")
SSE = gen.framed(FRAMES, "sse")
PIECES = [SSE[i:i + 16384] for i in range(0, len(SSE), 16384)]
MS = msgspec.json.Decoder(AnyChunk)
DECODED = chunkcodec.StreamDecoder("ndjson").feed(ND)
TRUTH = [msgspec.to_builtins(c) for c in MS.decode_lines(ND)]


@pytest.mark.benchmark(group="typed-decode")
def test_decode_msgspec(benchmark):
    assert [msgspec.to_builtins(c) for c in benchmark(MS.decode_lines, ND)] == TRUTH


@pytest.mark.benchmark(group="typed-decode")
def test_decode_chunkcodec(benchmark):
    assert [msgspec.to_builtins(c) for c in benchmark(lambda: chunkcodec.StreamDecoder("ndjson").feed(ND))] == TRUTH


@pytest.mark.benchmark(group="sse-framing")
def test_sse_httpx_sse(benchmark):
    httpx = pytest.importorskip("httpx")
    from httpx_sse import EventSource

    def run():
        resp = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=iter(PIECES))
        return [e.data for e in EventSource(resp).iter_sse()]

    assert len(benchmark(run)) == len(FRAMES) + 1


@pytest.mark.benchmark(group="sse-framing")
def test_sse_chunkcodec(benchmark):
    assert benchmark(lambda: list(chunkcodec.iter_frames(PIECES))) == FRAMES


@pytest.mark.benchmark(group="encode")
def test_encode_msgspec(benchmark):
    enc = msgspec.json.Encoder()
    benchmark(lambda: [b"data: " + enc.encode(c) + b"\n\n" for c in DECODED])


@pytest.mark.benchmark(group="encode")
def test_encode_chunkcodec(benchmark):
    enc = chunkcodec.Encoder("sse")
    out = benchmark(lambda: [enc.encode(c) for c in DECODED])
    assert b"".join(out) == SSE[: -len(b"data: [DONE]\n\n")]


@pytest.mark.benchmark(group="accumulate")
def test_accumulate_msgspec_baseline(benchmark):
    import baselines
    nd = gen.framed(gen.interleaved(10, 300), "ndjson")
    assert len(benchmark(baselines.msgspec_ndjson, nd)) == 10


@pytest.mark.benchmark(group="accumulate")
def test_accumulate_msgspec_baseline_collector_paused(benchmark):
    """The baseline the targets are read against (bench_accumulate.py): chunkcodec.accumulate
    pauses the garbage collector, and so can a pure-Python loop."""
    import baselines
    nd = gen.framed(gen.interleaved(10, 300), "ndjson")
    assert len(benchmark(baselines.paused(baselines.msgspec_ndjson), nd)) == 10


@pytest.mark.benchmark(group="accumulate")
def test_accumulate_chunkcodec(benchmark):
    import baselines
    nd = gen.framed(gen.interleaved(10, 300), "ndjson")
    runs = benchmark(chunkcodec.accumulate, nd)
    assert baselines.chunkcodec_answer(runs) == baselines.baseline_answer(baselines.msgspec_ndjson(nd))


def test_accumulate_breakdown_runs_and_its_shares_add_up():
    """bench_accumulate.py --breakdown (the README's "where the time goes"): a smoke run."""
    import bench_accumulate
    out = bench_accumulate.breakdown(runs=4, deltas=30, repeat=1)
    shares = [v for k, v in out.items() if "of the whole" not in k and "GB/s" not in k]
    assert len(shares) == 4 and abs(sum(shares) - 100) < 1


def test_cold_times_the_call_after_each_kind_of_work(capsys):
    """bench_accumulate.py --cold (the README's cold call): a row for each thing run before the
    call, each a time."""
    import bench_accumulate
    bench_accumulate.main(["--cold", "--runs", "2", "--deltas", "10", "--repeat", "1"])
    rows = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("accumulate()")]
    assert [ln.split("accumulate() ")[1].rsplit(None, 2)[0].strip() for ln in rows] == [
        "right after itself", "right after the json.loads loop", "right after reading 96 MB"]
    assert all(float(ln.rsplit(None, 2)[1]) > 0 for ln in rows)


def test_kinds_has_a_row_per_frame_type_with_its_count(capsys):
    """bench_accumulate.py --kinds (the cost of each kind of frame, bench/HISTORY.md): a row for every type
    in the log, its frames counted."""
    import collections
    import json
    import bench_accumulate
    rows = bench_accumulate.kinds(runs=3, deltas=10, repeat=1)
    want = collections.Counter(json.loads(f)["type"] for f in gen.interleaved(3, 10))
    assert {k: n for k, n, _, _ in rows} == dict(want)
    assert [r[3] for r in rows] == sorted((r[3] for r in rows), reverse=True)
    bench_accumulate.main(["--runs", "3", "--deltas", "10", "--kinds", "--repeat", "1"])
    assert capsys.readouterr().out.count("\n") == len(want) + 2


def test_only_runs_one_case_of_each_bench_script_as_bench_instructions_asks():
    """bench_instructions.py runs `bench_<name>.py --only GROUP/NAME --loops N` under valgrind: both
    scripts take it, and a wrong case name is an error, not a silent no-op."""
    import bench_accumulate
    import bench_codec
    bench_accumulate.main(["--runs", "2", "--deltas", "10", "--only",
                           "NDJSON log/chunkcodec.accumulate vs msgspec", "--loops", "2"])
    bench_codec.main(["--runs", "2", "--deltas", "10", "--only",
                      "typed decode, delta chunks only/chunkcodec StreamDecoder.feed", "--loops", "1"])
    with pytest.raises(SystemExit):
        bench_accumulate.main(["--runs", "2", "--deltas", "10", "--only", "no/such case"])


def test_loop_mode_times_every_contender_on_its_checked_answer(capsys):
    """bench_accumulate.py --loop (the README's loop figures): each group has the three rows, the
    chunkcodec one read against the faster of the two baselines (the collector paused or not)."""
    import bench_accumulate
    rows, info = bench_accumulate.loop_cases(runs=3, deltas=10, calls=2, keep=1)
    assert len(rows) == 9 and info["calls"] == 2
    assert {r[3] for r in rows if r[1] == "chunkcodec.accumulate"} == {bench_accumulate.MS_LOOP}
    bench_accumulate.main(["--runs", "3", "--deltas", "10", "--loop", "2", "--keep", "1", "--repeat", "1"])
    assert capsys.readouterr().out.count("x vs the faster baseline (msgspec minimal union") == 3


def test_a_row_is_read_against_the_faster_of_its_baselines():
    """A chunkcodec row whose baseline is timed two ways (the collector paused or not) divides by
    whichever was faster in that run, and says which; a single baseline is used as it is."""
    from bench_codec import baseline_of, vs
    costs = {("g", "plain"): 2.0, ("g", "paused"): 3.0, ("g", "other"): 1.0}
    assert baseline_of(costs, "g", ("plain", "paused")) == (2.0, "plain")
    costs[("g", "paused")] = 1.5
    assert baseline_of(costs, "g", ("plain", "paused")) == (1.5, "paused")
    assert baseline_of(costs, "g", "plain") == (2.0, "plain")
    assert baseline_of(costs, "g", None) == (None, None)
    assert vs(3.0, ("plain", "paused"), "paused") == "  3.00x vs the faster baseline (paused)"
    assert vs(3.0, "plain", "plain") == "  3.00x vs plain"


def test_shuffled_rounds_time_each_function_in_changing_orders(monkeypatch):
    """The tables' rounds run their functions in a shuffled order (no function always right after
    the same one): each is still timed once a round, and its times are its own."""
    import bench_codec
    calls, now = [], [0]
    monkeypatch.setattr(bench_codec.time, "perf_counter", lambda: now[0])

    def fn(k):
        calls.append(k)
        now[0] += k + 1          # (function k takes k + 1 ticks of the stubbed clock)

    fns = [lambda k=k: fn(k) for k in range(5)]
    out = bench_codec.timeit_rounds(fns, 8, shuffle=True)
    rounds = [calls[5 + 5 * r:10 + 5 * r] for r in range(8)]      # (after the warm-up round)
    assert calls[:5] == list(range(5)) and all(sorted(r) == list(range(5)) for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1 and {r[0] for r in rounds} != {0}
    assert out == [(k + 1, k + 1) for k in range(5)]
    calls.clear()
    bench_codec.timeit_rounds(fns, 3)
    assert calls == list(range(5)) * 4               # (unshuffled: the pairs --kinds relies on)


def test_every_target_row_names_both_ways_of_running_its_baseline():
    """The README's four targets are read against each baseline timed with the collector paused and
    not, so that pausing, which a pure-Python loop may do or not, is never chosen to suit us."""
    import bench_accumulate
    rows, _ = bench_accumulate.cases(runs=2, deltas=10, batches=3)    # (--batches 3: its group too)
    names = {(r[0], r[1]) for r in rows}
    assert {r[1] for r in rows if r[0].startswith("the log 3 times over")} == {
        "msgspec minimal union, decode_lines", "msgspec minimal union, collector paused", "json.loads loop",
        "json.loads loop, collector paused", "json.loads loop on decoded text",
        "json.loads loop on decoded text, collector paused", "chunkcodec.accumulate vs msgspec",
        "chunkcodec.accumulate vs json.loads"}
    assert not any("times over" in r[0] for r in bench_accumulate.cases(runs=2, deltas=10)[0])
    for grp, name, _, base, _ in rows:
        if name.startswith("chunkcodec.accumulate"):
            # (each way of writing the loop, timed with the collector paused and not)
            assert isinstance(base, tuple) and len(base) in (2, 4), name
            assert sum("collector paused" in b for b in base) == len(base) // 2, (name, base)
            assert all((grp, b) in names for b in base), (name, base)


def test_shapes_checks_each_logs_answer_before_timing_it(monkeypatch, capsys):
    """bench_shapes.py (the README's delta shapes): every shape is printed, and a contender that
    loses a delta is caught before anything is timed."""
    import bench_shapes
    assert bench_shapes.main(["--runs", "3", "--deltas", "5", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert all(shape in out for shape in bench_shapes.SHAPES)
    real = chunkcodec.accumulate
    monkeypatch.setattr(chunkcodec, "accumulate", lambda data: real(data[data.index(b"\n") + 1:]))
    with pytest.raises(SystemExit, match="accumulate"):
        bench_shapes.main(["--runs", "3", "--deltas", "5", "--repeat", "1"])
