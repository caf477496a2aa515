"""chunkcodec against the baselines, on the same generated data, in one process.

    python bench/bench_codec.py [--runs 20] [--deltas 300] [--repeat 7] [--json out.json]

Every comparison first checks that both sides give the same answer, then times them (best and
median of --repeat runs after a warm-up) and prints a table with the ratio to the baseline.  The
machine is shared and noisy: read the ratios, not the absolute times.
"""

from __future__ import annotations

import argparse
import gc
import json
import pathlib
import random
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import msgspec  # noqa: E402

import chunkcodec  # noqa: E402
import gen  # noqa: E402
from chunkcodec._model import AnyChunk  # noqa: E402


def implementation() -> str:
    """Which chunkcodec path runs, and for the native one how it was built: "native,
    profile-guided (GNU 12.2.0)", "native (GNU 12.2.0)", "reference"."""
    if chunkcodec.IMPLEMENTATION != "native":
        return chunkcodec.IMPLEMENTATION
    try:
        from chunkcodec import _build
    except ImportError:          # (a copy not installed by CMakeLists.txt)
        return "native"
    return f"native{', profile-guided' if _build.PGO else ''} ({_build.COMPILER})"


def timeit_rounds(fns, repeat, shuffle=False):
    """Time every function once per round, rounds interleaved, so that a slow spell of the shared
    machine hits baseline and candidate alike.  Returns (best, median) per function.

    shuffle: each round in another order (the same orders every run: a fixed seed), so that no
    function always runs right after the same one.  What ran just before a call changes its time:
    accumulate() on the log takes 15-20 % longer right after the msgspec or json.loads loop (which
    make and free tens of thousands of objects and leave the caches to them) than right after
    itself, and in the tables' own order the same function always came after the same one."""
    for fn in fns:
        fn()  # warm-up
    times = [[] for _ in fns]
    order = list(range(len(fns)))
    rng = random.Random(20261127)
    for _ in range(repeat):
        if shuffle:
            rng.shuffle(order)
        for k in order:
            gc.collect()
            t0 = time.perf_counter()
            fns[k]()
            times[k].append(time.perf_counter() - t0)
    return [(min(t), statistics.median(t)) for t in times]


def httpx_response(pieces):
    import httpx
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=iter(pieces))


def cases(runs, deltas):
    """(group, name, function, baseline name or None, MB of input) rows, answers checked first."""
    frames = gen.frames(runs, deltas)
    nd = gen.framed(frames, "ndjson")
    sse = gen.framed(frames, "sse")
    pieces = [sse[i:i + 16384] for i in range(0, len(sse), 16384)]
    mb = len(nd) / 1e6
    ms_dec = msgspec.json.Decoder(AnyChunk)
    truth = [msgspec.to_builtins(c) for c in ms_dec.decode_lines(nd)]
    assert [msgspec.to_builtins(c) for c in chunkcodec.StreamDecoder("ndjson").feed(nd)] == truth
    assert [msgspec.to_builtins(c) for c in chunkcodec.iter_chunks(pieces)] == truth
    rows = [
        ("typed decode (NDJSON buffer)", "msgspec Decoder(union).decode_lines", lambda: ms_dec.decode_lines(nd), None, mb),
        ("typed decode (NDJSON buffer)", "chunkcodec StreamDecoder.feed", lambda: chunkcodec.StreamDecoder("ndjson").feed(nd),
         "msgspec Decoder(union).decode_lines", mb),
        ("typed decode (frame by frame)", "msgspec Decoder(union).decode", lambda: [ms_dec.decode(f) for f in frames], None, mb),
        ("typed decode (frame by frame)", "chunkcodec.decode", lambda: [chunkcodec.decode(f) for f in frames],
         "msgspec Decoder(union).decode", mb),
    ]
    deltas_only = [f for f in frames if b'-delta"' in f[:30]]
    ndd = gen.framed(deltas_only, "ndjson")
    assert [msgspec.to_builtins(c) for c in chunkcodec.StreamDecoder("ndjson").feed(ndd)] == \
        [msgspec.to_builtins(c) for c in ms_dec.decode_lines(ndd)]
    rows += [
        ("typed decode, delta chunks only", "msgspec Decoder(union).decode_lines", lambda: ms_dec.decode_lines(ndd), None, len(ndd) / 1e6),
        ("typed decode, delta chunks only", "chunkcodec StreamDecoder.feed", lambda: chunkcodec.StreamDecoder("ndjson").feed(ndd),
         "msgspec Decoder(union).decode_lines", len(ndd) / 1e6),
    ]
    try:
        from httpx_sse import EventSource
    except ImportError:
        EventSource = None
    if EventSource is not None:
        def sse_frames():
            return [e.data for e in EventSource(httpx_response(pieces)).iter_sse()]

        def sse_typed():
            return [ms_dec.decode(e.data) for e in EventSource(httpx_response(pieces)).iter_sse() if e.data != "[DONE]"]

        assert [msgspec.to_builtins(c) for c in sse_typed()] == truth
        assert sse_frames()[:-1] == [f.decode() for f in frames]
        assert list(chunkcodec.iter_frames(pieces)) == frames
        rows += [
            ("SSE framing, body in 16 KiB pieces", "httpx-sse EventSource.iter_sse", sse_frames, None, len(sse) / 1e6),
            ("SSE framing, body in 16 KiB pieces", "chunkcodec.iter_frames", lambda: list(chunkcodec.iter_frames(pieces)),
             "httpx-sse EventSource.iter_sse", len(sse) / 1e6),
            ("SSE body in 16 KiB pieces", "httpx-sse (framing only)", sse_frames, None, len(sse) / 1e6),
            ("SSE body in 16 KiB pieces", "httpx-sse + msgspec typed", sse_typed, None, len(sse) / 1e6),
            ("SSE body in 16 KiB pieces", "chunkcodec.iter_chunks (framing + typed)",
             lambda: list(chunkcodec.iter_chunks(pieces)), "httpx-sse (framing only)", len(sse) / 1e6),
            ("SSE body in 16 KiB pieces", "chunkcodec.iter_chunks vs the pipeline",
             lambda: list(chunkcodec.iter_chunks(pieces)), "httpx-sse + msgspec typed", len(sse) / 1e6),
        ]
    try:
        import orjson
    except ImportError:
        orjson = None
    dict_truth = [json.loads(f) for f in frames]
    assert list(chunkcodec.iter_dicts(nd)) == dict_truth
    rows += [
        ("drop-in dicts from NDJSON", "json.loads per line", lambda: [json.loads(x) for x in nd.splitlines()], None, mb),
        ("drop-in dicts from NDJSON", "chunkcodec.iter_dicts", lambda: list(chunkcodec.iter_dicts(nd)), "json.loads per line", mb),
    ]
    if orjson is not None:
        rows.append(("drop-in dicts from NDJSON", "orjson.loads per line", lambda: [orjson.loads(x) for x in nd.splitlines()],
                     "json.loads per line", mb))
    decoded = chunkcodec.StreamDecoder("ndjson").feed(nd)
    fresh = [msgspec.convert(msgspec.to_builtins(c), type(c)) for c in decoded]
    ms_enc = msgspec.json.Encoder()
    enc = chunkcodec.Encoder("sse")

    def ms_sse(chunks):
        return [b"data: " + ms_enc.encode(c) + b"\n\n" for c in chunks]

    def cc_sse(chunks):
        return [enc.encode(c) for c in chunks]

    def cc_into(chunks):
        buf = bytearray()
        for c in chunks:
            enc.encode_into(c, buf, -1)
        return buf

    def ms_into(chunks):
        buf = bytearray()
        for c in chunks:
            buf += b"data: "
            ms_enc.encode_into(c, buf, -1)
            buf += b"\n\n"
        return buf

    assert b"".join(cc_sse(decoded)) == sse[: -len(b"data: [DONE]\n\n")]
    assert bytes(cc_into(fresh)) == b"".join(cc_sse(fresh))
    assert [json.loads(f[6:]) for f in cc_sse(fresh)] == [json.loads(f[6:]) for f in ms_sse(fresh)]
    rows += [
        ("encode decoded chunks to SSE", "msgspec encode + framing", lambda: ms_sse(decoded), None, len(sse) / 1e6),
        ("encode decoded chunks to SSE", "chunkcodec Encoder.encode", lambda: cc_sse(decoded), "msgspec encode + framing", len(sse) / 1e6),
        ("encode decoded chunks to SSE", "msgspec encode_into one buffer", lambda: ms_into(decoded), None, len(sse) / 1e6),
        ("encode decoded chunks to SSE", "chunkcodec encode_into one buffer", lambda: cc_into(decoded),
         "msgspec encode_into one buffer", len(sse) / 1e6),
        ("encode chunks built in Python to SSE", "msgspec encode + framing", lambda: ms_sse(fresh), None, len(sse) / 1e6),
        ("encode chunks built in Python to SSE", "chunkcodec Encoder.encode", lambda: cc_sse(fresh), "msgspec encode + framing", len(sse) / 1e6),
    ]
    info = {"frames": len(frames), "ndjson_mb": round(mb, 2), "delta_frames": len(deltas_only),
            "delta_byte_share": round(len(ndd) / len(nd), 3), "implementation": implementation()}
    return rows, info


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20, help="agent runs in the generated stream")
    ap.add_argument("--deltas", type=int, default=300, help="text deltas per run")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", help="also write the results here")
    add_only_options(ap)
    args = ap.parse_args(argv)
    rows, info = cases(args.runs, args.deltas)
    if args.only:
        run_only(ap, rows, args.only, args.loops)
        return
    print(f"data: {info['frames']} frames, {info['ndjson_mb']} MB as NDJSON, {info['delta_frames']} delta "
          f"chunks ({info['delta_byte_share']:.0%} of the bytes); chunkcodec path: {info['implementation']}")
    run_table(rows, info, args.repeat, args.json)


def add_only_options(ap):
    """--only/--loops: what bench_instructions.py runs a bench script with."""
    ap.add_argument("--only", help="GROUP/NAME: run just this case --loops times, untimed (for "
                                   "bench_instructions.py)")
    ap.add_argument("--loops", type=int, default=1)


def run_only(ap, rows, only, loops):
    """Run the case GROUP/NAME `loops` times, untimed."""
    fns = [fn for grp, name, fn, _, _ in rows if f"{grp}/{name}" == only]
    if not fns:
        ap.error(f"no case {only!r}; cases: {[f'{r[0]}/{r[1]}' for r in rows]}")
    for _ in range(loops):
        fns[0]()


def baseline_of(costs, grp, base):
    """A row's baseline, measured earlier in the same run: (cost, name), or (None, None) when the
    row has none.  base: a row's name, or a tuple of names (ways of running the same baseline, the
    collector paused or not): the cheapest of them in this run, whichever it was."""
    if not base:
        return None, None
    names = (base,) if isinstance(base, str) else base
    return min((costs[(grp, b)], b) for b in names)


def vs(ratio, base, used):
    """The ratio column: against which baseline (the faster one of a tuple, and that it was)."""
    if isinstance(base, str):
        return f"{ratio:6.2f}x vs {used}"
    return f"{ratio:6.2f}x vs the faster baseline ({used})"


def run_table(rows, info, repeat, json_path=None, width=45, shuffle=True):
    """Time the rows in interleaved rounds (shuffled: timeit_rounds); print each with its ratio to
    its baseline row."""
    results, by_name = [], {}
    group = None
    timings = timeit_rounds([r[2] for r in rows], repeat, shuffle=shuffle)
    for (grp, name, fn, base, mb), (best, med) in zip(rows, timings):
        by_name[(grp, name)] = med
        base_med, used = baseline_of(by_name, grp, base)
        ratio = base_med / med if base else None
        results.append({"group": grp, "name": name, "best_s": best, "median_s": med, "MB_s": mb / med,
                        "baseline": used, "x_vs_baseline": ratio})
        if grp != group:
            print(f"\n{grp}")
            group = grp
        extra = vs(ratio, base, used) if base else ""
        print(f"  {name:{width}s} {med * 1e3:9.2f} ms {mb / med:8.1f} MB/s  {extra}")
    if json_path:
        pathlib.Path(json_path).write_text(json.dumps({"info": info, "results": results}, indent=1))


if __name__ == "__main__":
    main()
