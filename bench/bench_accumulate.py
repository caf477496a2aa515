"""chunkcodec.accumulate against the fastest pure-Python accumulators, on one generated log.

    python bench/bench_accumulate.py [--runs 40] [--deltas 300] [--repeat 7] [--json out.json]
    python bench/bench_accumulate.py --breakdown     # where chunkcodec.accumulate spends its time
    python bench/bench_accumulate.py --kinds         # what each kind of frame costs it
    python bench/bench_accumulate.py --cold          # a call right after itself and after other work
    python bench/bench_accumulate.py --loop 20       # 20 calls in a row, the collector left to itself
    python bench/bench_accumulate.py --batches 10    # and the log ten times over (26 MB), as a log miner reads
    python bench/bench_instructions.py --bench accumulate   # the same table in CPU instructions

The log interleaves --runs agent runs frame by frame (bench/gen.py: Mastra-shaped runs whose
step-finish/finish frames carry the message history, about 38% of the bytes).  Every contender
must first give the same answer per run (text, reasoning, usage totals, finish reason); then all
are timed in interleaved rounds, each round in another order (bench_codec.timeit_rounds), and the
table gives each chunkcodec row's ratio to its baseline, measured in the same run.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import pathlib
import random
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import baselines as B  # noqa: E402
import chunkcodec  # noqa: E402
import gen  # noqa: E402
from bench_codec import add_only_options, implementation, run_only, run_table, timeit_rounds  # noqa: E402


# The baselines of the chunkcodec rows: each one timed with the garbage collector left alone and
# paused (the json.loads loop written both over bytes lines and over the decoded text, too); a
# row's ratio is to the fastest of them in that run (bench_codec.baseline_of).
MS_ND = ("msgspec minimal union, decode_lines", "msgspec minimal union, collector paused")
JSON_ND = ("json.loads loop", "json.loads loop, collector paused", "json.loads loop on decoded text",
           "json.loads loop on decoded text, collector paused")
MS_SSE = ("split on b'\\n\\n' + msgspec minimal union", "the same, collector paused")
HTTPX_SSE = ("httpx-sse + json.loads", "httpx-sse + json.loads, collector paused")
MS_LOOP = ("msgspec minimal union", "msgspec minimal union, collector paused")


def _one_stream(pieces: list):
    """One Accumulator fed one stream, piece by piece (a whole body: one piece)."""
    acc = chunkcodec.Accumulator()
    for piece in pieces:
        acc.feed(piece)
    acc.close()
    return acc.result()


def cases(runs: int, deltas: int, batches: int = 0):
    frames = gen.interleaved(runs, deltas)
    nd = gen.framed(frames, "ndjson")
    sse = gen.framed(frames, "sse")
    pieces = [sse[i:i + 16384] for i in range(0, len(sse), 16384)]
    truth = B.baseline_answer(B.msgspec_ndjson(nd))
    assert B.baseline_answer(B.json_ndjson(nd)) == truth
    assert B.baseline_answer(B.json_ndjson_text(nd)) == truth
    assert B.baseline_answer(B.msgspec_sse(sse)) == truth
    assert B.chunkcodec_answer(chunkcodec.accumulate(nd)) == truth
    assert B.chunkcodec_answer(chunkcodec.accumulate(pieces)) == truth
    mb, smb = len(nd) / 1e6, len(sse) / 1e6
    # chunkcodec.accumulate pauses the garbage collector while it works (chunkcodec/_gc.py); a
    # pure-Python loop can too, so each baseline is timed both ways ("collector paused": usually
    # the faster, by 7-15 % for the msgspec loops on the log, but not in every run for the SSE
    # one) and each chunkcodec row divides by whichever was faster in this run (MS_ND etc.).
    ms_nd_paused, json_nd_paused = B.paused(B.msgspec_ndjson), B.paused(B.json_ndjson)
    json_text_paused = B.paused(B.json_ndjson_text)
    rows = [
        ("NDJSON log", "msgspec minimal union, decode_lines", lambda: B.msgspec_ndjson(nd), None, mb),
        ("NDJSON log", "msgspec minimal union, collector paused", lambda: ms_nd_paused(nd), None, mb),
        ("NDJSON log", "json.loads loop", lambda: B.json_ndjson(nd), None, mb),
        ("NDJSON log", "json.loads loop, collector paused", lambda: json_nd_paused(nd), None, mb),
        ("NDJSON log", "json.loads loop on decoded text", lambda: B.json_ndjson_text(nd), None, mb),
        ("NDJSON log", "json.loads loop on decoded text, collector paused", lambda: json_text_paused(nd),
         None, mb),
        ("NDJSON log", "chunkcodec.accumulate vs msgspec", lambda: chunkcodec.accumulate(nd), MS_ND, mb),
        ("NDJSON log", "chunkcodec.accumulate vs json.loads", lambda: chunkcodec.accumulate(nd), JSON_ND, mb),
    ]
    def ms_group(group, data, with_json=False):
        """A group of an NDJSON log: the msgspec loop both ways, and accumulate() against them
        (with_json: the json.loads loop too, and accumulate() read against it as well)."""
        mb = len(data) / 1e6
        rows = [(group, "msgspec minimal union, decode_lines", lambda: B.msgspec_ndjson(data), None, mb),
                (group, "msgspec minimal union, collector paused", lambda: ms_nd_paused(data), None, mb)]
        if not with_json:
            return rows + [(group, "chunkcodec.accumulate", lambda: chunkcodec.accumulate(data), MS_ND, mb)]
        return rows + [
            (group, "json.loads loop", lambda: B.json_ndjson(data), None, mb),
            (group, "json.loads loop, collector paused", lambda: json_nd_paused(data), None, mb),
            (group, "json.loads loop on decoded text", lambda: B.json_ndjson_text(data), None, mb),
            (group, "json.loads loop on decoded text, collector paused", lambda: json_text_paused(data),
             None, mb),
            (group, "chunkcodec.accumulate vs msgspec", lambda: chunkcodec.accumulate(data), MS_ND, mb),
            (group, "chunkcodec.accumulate vs json.loads", lambda: chunkcodec.accumulate(data), JSON_ND, mb)]

    # The same log with only its delta frames: where the C path does all the work.
    dl = gen.framed([f for f in frames if b'-delta"' in f[:30]], "ndjson")
    want = {k: v[0] for k, v in B.msgspec_ndjson(dl).items()}
    assert {r.run_id: r.text for r in chunkcodec.accumulate(dl)} == want
    rows += ms_group("delta frames only (NDJSON)", dl)
    # Short runs: 300 of 12 deltas each, where the per-frame and per-run costs of the non-delta
    # chunks and the RunOutputs outweigh the deltas (chunkcodec is slower than msgspec here).
    short = gen.framed(gen.interleaved(300, 12), "ndjson")
    assert B.chunkcodec_answer(chunkcodec.accumulate(short)) == B.baseline_answer(B.msgspec_ndjson(short))
    rows += ms_group("300 short runs, 12 deltas each (NDJSON)", short)
    # Many runs in flight: 200 runs of the log's shape, all open at once (a busy service's log), so
    # that the parts being written outnumber a 512-slot route table.
    many = gen.framed(gen.interleaved(200, deltas), "ndjson")
    assert B.chunkcodec_answer(chunkcodec.accumulate(many)) == B.baseline_answer(B.msgspec_ndjson(many))
    rows += ms_group("200 runs in flight at once (NDJSON)", many)
    # Long runs: 10 of 20 steps, each step-finish frame carrying the run's history so far, so those
    # frames are 93 % of the bytes and each repeats most of the one before (gen.long_run_frames).
    long = gen.framed(gen.interleaved(10, 60, 7, steps=20), "ndjson")
    assert B.chunkcodec_answer(chunkcodec.accumulate(long)) == B.baseline_answer(B.msgspec_ndjson(long))
    rows += ms_group("10 long runs, 20 steps each (NDJSON)", long)
    # --batches N: the log N times over, N batches of --runs runs, each batch interleaved as the log
    # is and written after the one before (a long log of a server that handles that many runs at
    # a time).  Whether the ratios of the log's rows, single calls on 2.6 MB timed right after
    # other loops, hold for a call N times as long, as a log miner's is.  Not in the table by
    # default: its loops (the json.loads one takes some 0.4 s on ten batches) leave the caches
    # to the rows after them otherwise than the table's own do, and the README's sittings are read
    # without them.
    if batches:
        data = gen.framed([f for k in range(batches) for f in gen.interleaved(runs, deltas, seed=100 + k)], "ndjson")
        out = chunkcodec.accumulate(data)
        assert len(out) == batches * runs and B.chunkcodec_answer(out) == B.baseline_answer(B.msgspec_ndjson(data))
        rows += ms_group(f"the log {batches} times over: {batches} batches of {runs} runs (NDJSON)", data,
                         with_json=True)
    # One stream at a time, as a service consuming agents sees them: each of 300 short runs is an
    # SSE body of its own, read by an Accumulator of its own (what a stream costs to set up counts).
    bodies = [gen.framed(gen.run_frames(random.Random(k), 12), "sse") for k in range(300)]
    assert [B.chunkcodec_answer([_one_stream([b])]) for b in bodies] == [B.baseline_answer(B.msgspec_sse(b))
                                                                      for b in bodies]
    bmb = sum(map(len, bodies)) / 1e6
    rows += [
        ("300 short streams, an Accumulator each (SSE)", "split on b'\\n\\n' + msgspec minimal union",
         lambda: [B.msgspec_sse(b) for b in bodies], None, bmb),
        ("300 short streams, an Accumulator each (SSE)", "chunkcodec.Accumulator",
         lambda: [_one_stream([b]) for b in bodies], "split on b'\\n\\n' + msgspec minimal union", bmb),
    ]
    # Live: 100 streams of 60 deltas, each fed one event at a time, as an HTTP client reading a
    # stream as it is produced receives it (each feed's own cost counts).
    live = [[ev + b"\n\n" for ev in gen.framed(gen.run_frames(random.Random(1000 + k), 60), "sse").split(b"\n\n")
             if ev] for k in range(100)]
    assert [B.chunkcodec_answer([_one_stream(evs)]) for evs in live] == \
        [B.baseline_answer(B.msgspec_sse_live(evs)) for evs in live]
    lmb = sum(len(ev) for evs in live for ev in evs) / 1e6
    rows += [
        ("100 live streams, fed an event at a time (SSE)", "split what arrived + msgspec minimal union",
         lambda: [B.msgspec_sse_live(evs) for evs in live], None, lmb),
        ("100 live streams, fed an event at a time (SSE)", "chunkcodec.Accumulator",
         lambda: [_one_stream(evs) for evs in live], "split what arrived + msgspec minimal union", lmb),
    ]
    ms_sse_paused, httpx_paused = B.paused(B.msgspec_sse), B.paused(B.httpx_sse_json)
    rows += [
        ("SSE body in 16 KiB pieces", "split on b'\\n\\n' + msgspec minimal union", lambda: B.msgspec_sse(sse), None, smb),
        ("SSE body in 16 KiB pieces", "the same, collector paused", lambda: ms_sse_paused(sse), None, smb),
    ]
    try:
        import httpx_sse  # noqa: F401
        assert B.baseline_answer(B.httpx_sse_json(pieces)) == truth
        rows.append(("SSE body in 16 KiB pieces", "httpx-sse + json.loads", lambda: B.httpx_sse_json(pieces), None, smb))
        rows.append(("SSE body in 16 KiB pieces", "httpx-sse + json.loads, collector paused",
                     lambda: httpx_paused(pieces), None, smb))
    except ImportError:
        pass
    rows += [
        ("SSE body in 16 KiB pieces", "chunkcodec.accumulate vs best pure Python",
         lambda: chunkcodec.accumulate(pieces), MS_SSE, smb),
    ]
    if any(r[1] == "httpx-sse + json.loads" for r in rows):
        rows.append(("SSE body in 16 KiB pieces", "chunkcodec.accumulate vs httpx-sse",
                     lambda: chunkcodec.accumulate(pieces), HTTPX_SSE, smb))
    return rows, {"frames": len(frames), "runs": runs, "ndjson_mb": round(mb, 2),
                  "implementation": implementation()}


def loop_cases(runs: int, deltas: int, calls: int, keep: int):
    """Rows for --loop: each contender called `calls` times in a row on the same input, the last
    `keep` results kept alive, the garbage collector left to itself in between (timeit_rounds
    collects only before each round).  This is how a service or a log miner calls accumulate, and
    where pausing the collector pays: the young collections walk the run state being built, the
    full ones everything kept.  A row's time is for the whole loop."""
    frames = gen.interleaved(runs, deltas)
    nd = gen.framed(frames, "ndjson")
    sse = gen.framed(frames, "sse")
    pieces = [sse[i:i + 16384] for i in range(0, len(sse), 16384)]
    short = gen.framed(gen.interleaved(300, 12), "ndjson")
    for data in (nd, short):
        assert B.chunkcodec_answer(chunkcodec.accumulate(data)) == B.baseline_answer(B.msgspec_ndjson(data))
    assert B.chunkcodec_answer(chunkcodec.accumulate(pieces)) == B.baseline_answer(B.msgspec_sse(sse))

    def looped(fn, arg):
        def run():
            kept = collections.deque(maxlen=keep)
            for _ in range(calls):
                kept.append(fn(arg))
        return run

    rows = []
    for group, base_fn, base_arg, arg in (("NDJSON log", B.msgspec_ndjson, nd, nd),
                                          ("SSE body in 16 KiB pieces", B.msgspec_sse, sse, pieces),
                                          ("300 short runs, 12 deltas each (NDJSON)", B.msgspec_ndjson, short, short)):
        group = f"{group}, {calls} calls in a row keeping the last {keep} results"
        mb = calls * len(base_arg) / 1e6
        rows += [(group, "msgspec minimal union", looped(base_fn, base_arg), None, mb),
                 (group, "msgspec minimal union, collector paused", looped(B.paused(base_fn), base_arg), None, mb),
                 (group, "chunkcodec.accumulate", looped(chunkcodec.accumulate, arg), MS_LOOP, mb)]
    return rows, {"runs": runs, "calls": calls, "keep": keep, "implementation": implementation()}


def breakdown(runs: int, deltas: int, repeat: int) -> dict:
    """Shares of accumulate's time on the log, found by leaving frame kinds out (medians of
    interleaved rounds): the delta frames, the step-finish/finish frames, the other non-delta
    frames, building the RunOutputs; then the garbage collector's share (the whole log timed with
    it off) and the rates at which msgspec's light reader and the path's own reader (the C one on
    the native path) take the big frames."""
    from chunkcodec import _accum
    frames = gen.interleaved(runs, deltas)
    big = lambda f: f.startswith(_accum.FINISH_PREFIXES)  # noqa: E731
    delta = lambda f: b'-delta"' in f[:30]  # noqa: E731
    logs = {"all": frames, "no big": [f for f in frames if not big(f)], "deltas": [f for f in frames if delta(f)]}
    data = {k: gen.framed(v, "ndjson") for k, v in logs.items()}

    def feed(d):
        acc = chunkcodec.Accumulator("ndjson")
        acc.feed(d)
        acc.close()
        return acc

    accs = {k: feed(d) for k, d in data.items()}
    big_frames = [f for f in frames if big(f)]

    def light_one(f):
        return _accum.light_fields(_accum.decode_finish_light(f))

    if chunkcodec.IMPLEMENTATION == "native":
        from chunkcodec._core import finish_fields as own_one
    else:
        own_one = light_one

    def light():
        for f in big_frames:
            light_one(f)

    def native():
        for f in big_frames:
            own_one(f)

    def gc_off():
        gc.disable()
        try:
            chunkcodec.accumulate(data["all"])
        finally:
            gc.enable()

    fns = [lambda d=d: feed(d) for d in data.values()] + [accs["all"].results, lambda: chunkcodec.accumulate(data["all"]),
                                                          gc_off, light, native]
    med = [m for _, m in timeit_rounds(fns, repeat)]
    feed_all, feed_nobig, feed_deltas, results, whole, whole_nogc, light_s, native_s = med
    parts = {"delta frames (opening each part included)": feed_deltas,
             "step-finish/finish frames": feed_all - feed_nobig,
             "other non-delta frames": feed_nobig - feed_deltas,
             "building the RunOutputs": results}
    total = sum(parts.values())
    out = {k: round(100 * v / total, 1) for k, v in parts.items()}
    out["garbage collector, of the whole"] = round(100 * (whole - whole_nogc) / whole, 1)
    nbytes = sum(map(len, big_frames))
    out["msgspec light reader on the big frames, GB/s"] = round(nbytes / light_s / 1e9, 2)
    out["the path's own reader (C on the native path), GB/s"] = round(nbytes / native_s / 1e9, 2)
    return out


def cold(runs: int, deltas: int, repeat: int) -> dict:
    """What the table's calls pay for coming right after other work: accumulate() of the log timed
    right after itself, right after the json.loads loop (as in the table's rounds), and right after
    reading a 96 MB buffer and nothing else (the caches emptied, Python's allocator left as it
    was); medians of `repeat` rounds, in ms."""
    nd = gen.framed(gen.interleaved(runs, deltas), "ndjson")
    json_text = B.paused(B.json_ndjson_text)
    flush = bytes(96 << 20)
    before = {"right after itself": lambda: chunkcodec.accumulate(nd),
              "right after the json.loads loop": lambda: json_text(nd),
              "right after reading 96 MB": lambda: flush.count(b"\xff")}
    times: dict = {k: [] for k in before}
    for _ in range(repeat):
        for k, f in before.items():
            f()
            gc.collect()
            t = time.perf_counter()
            chunkcodec.accumulate(nd)
            times[k].append(time.perf_counter() - t)
    return {k: round(statistics.median(v) * 1e3, 3) for k, v in times.items()}


def kinds(runs: int, deltas: int, repeat: int) -> list:
    """What each kind of frame costs accumulate on the log: the log timed whole and without the
    frames of that kind, in pairs (medians of interleaved rounds), and the difference per frame.
    Rows (type, frames, ns a frame, % of the whole), dearest first.  Leaving a kind out changes
    what the others do (without its text-start a part opens at its first delta; without the
    step-finish frames a RunOutput has no steps to build), so a row is what leaving that kind out
    saves, not an exact share, and the rows need not add up to the whole."""
    frames = gen.interleaved(runs, deltas)
    types = [json.loads(f)["type"] for f in frames]
    counts = collections.Counter(types)
    logs = [gen.framed(frames, "ndjson")]
    logs += [gen.framed([f for f, t in zip(frames, types) if t != k], "ndjson") for k in counts]
    # each log without a type is timed right after the whole log, and read against that timing:
    # a slow spell of the shared machine then hits both sides of a row alike
    fns = []
    for d in logs[1:]:
        fns += [lambda: chunkcodec.accumulate(logs[0]), lambda d=d: chunkcodec.accumulate(d)]
    med = [m for _, m in timeit_rounds(fns, repeat)]
    rows = [(k, n, (w - m) / n * 1e9, 100 * (w - m) / w)
            for (k, n), w, m in zip(counts.items(), med[0::2], med[1::2])]
    return sorted(rows, key=lambda r: -r[3])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--deltas", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json")
    ap.add_argument("--breakdown", action="store_true", help="where accumulate's time goes, instead of the table")
    ap.add_argument("--kinds", action="store_true", help="instead of the table: what each kind of frame costs "
                                                         "accumulate (see kinds)")
    ap.add_argument("--cold", action="store_true", help="instead of the table: accumulate() right after "
                                                        "itself and right after other work (see cold)")
    ap.add_argument("--loop", type=int, metavar="CALLS",
                    help="instead of the table: each contender called CALLS times in a row, the last "
                         "--keep results kept, the collector left to itself (see loop_cases)")
    ap.add_argument("--keep", type=int, default=3)
    ap.add_argument("--batches", type=int, default=0, metavar="N",
                    help="add a group: the log N times over, in N batches of --runs runs (see cases)")
    ap.add_argument("--fixed-order", action="store_true",
                    help="each round in the rows' own order, as until stop 54 (see timeit_rounds)")
    add_only_options(ap)
    args = ap.parse_args(argv)
    if args.breakdown:
        for k, v in breakdown(args.runs, args.deltas, args.repeat).items():
            print(f"  {k:50s} {v:6}{'' if 'GB/s' in k else ' %'}")
        return
    if args.cold:
        print(f"data: {args.runs} interleaved runs of {args.deltas} deltas; chunkcodec path: {implementation()}")
        for k, v in cold(args.runs, args.deltas, args.repeat).items():
            print(f"  accumulate() {k:34s} {v:8.3f} ms")
        return
    if args.kinds:
        print(f"data: {args.runs} interleaved runs of {args.deltas} deltas; chunkcodec path: {implementation()}")
        print(f"  {'frame type':34s} {'frames':>7s} {'ns a frame':>11s} {'% of the whole':>15s}")
        for k, n, ns, share in kinds(args.runs, args.deltas, args.repeat):
            print(f"  {k:34s} {n:7d} {ns:11.0f} {share:15.1f}")
        return
    if args.loop:
        rows, info = loop_cases(args.runs, args.deltas, args.loop, args.keep)
        print(f"data: {info['runs']} interleaved runs; each row: {info['calls']} calls, ms for all of them; "
              f"chunkcodec path: {info['implementation']}")
        run_table(rows, info, args.repeat, args.json, width=50, shuffle=not args.fixed_order)
        return
    rows, info = cases(args.runs, args.deltas, args.batches)
    if args.only:
        run_only(ap, rows, args.only, args.loops)
        return
    print(f"data: {info['runs']} interleaved runs, {info['frames']} frames, {info['ndjson_mb']} MB as NDJSON; "
          f"chunkcodec path: {info['implementation']}")
    run_table(rows, info, args.repeat, args.json, width=50, shuffle=not args.fixed_order)


if __name__ == "__main__":
    main()
