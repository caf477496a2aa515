"""Repeatable ratios: CPU instructions per case, counted by valgrind's callgrind.

    python bench/bench_instructions.py [--loops 5] [--json out.json]
    python bench/bench_instructions.py --bench accumulate --match "NDJSON log"
    python bench/bench_instructions.py --split       # accumulate()'s feed and result building apart

Wall-clock time on a shared machine wanders by tens of percent between runs; the number of
instructions a case executes does not.  Each case of bench_codec.py (or of bench_accumulate.py
with --bench accumulate; --match keeps the groups whose name holds the text) runs in its own process under
callgrind, once with --loops 0 and once with --loops N; the difference divided by N is the cost
of the case.  Needs valgrind (Debian: apt-get install valgrind).  Each case costs two valgrind
runs of the whole script, so this takes 10-30 minutes; run it when a ratio matters.

--split counts accumulate()'s own instructions a call, its feed and its result building apart
(callgrind collecting only inside the compiled feed loop, then only inside the results' generator:
the native path's Cython functions), on the log and on the 300 short runs: what a change to the
accumulator costs, without the baselines (a few minutes; the README's and bench/HISTORY.md's
"feed + results" figures).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))

from bench_codec import baseline_of, vs  # noqa: E402


def instructions(script: str, case: str, loops: int, runs: int, deltas: int) -> int:
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
           str(HERE / f"bench_{script}.py"), "--only", case, "--loops", str(loops), "--runs", str(runs),
           "--deltas", str(deltas)]
    # One hash seed for both runs of a case: the difference of two runs of the whole script is
    # taken, and with a random seed each (dict and set layouts differ) that difference moved by
    # up to 13 % between runs of the same build.
    env = {**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}
    err = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stderr
    return int(re.search(r"refs:\s+([\d,]+)", err).group(1).replace(",", ""))


# A child for --split: the data, one warm-up call, then `calls` calls with a collection before each.
SPLIT_CHILD = r"""
import gc, sys
sys.path.insert(0, sys.argv[1])
import chunkcodec, gen
runs, deltas, calls = map(int, sys.argv[2:5])
data = gen.framed(gen.interleaved(runs, deltas), "ndjson")
chunkcodec.accumulate(data)
for _ in range(calls):
    gc.collect()
    chunkcodec.accumulate(data)
"""
#: The compiled functions each half runs in (Cython's names for AccumulatorBase._feed_all and for
#: the generator of pop_results).
SPLIT_PARTS = (("feed", "*AccumulatorBase_*_feed_all"), ("results", "*AccumulatorBase_*_pop"))


def split(calls: int) -> list:
    import chunkcodec
    if chunkcodec.IMPLEMENTATION != "native":
        sys.exit("--split counts the native path's compiled functions: build the extension")
    out = []
    for label, runs, deltas in (("the log (40 runs of 300 deltas)", 40, 300), ("300 short runs of 12 deltas", 300, 12)):
        row = {"data": label}
        for part, fn in SPLIT_PARTS:
            cmd = ["valgrind", "--tool=callgrind", f"--toggle-collect={fn}", "--callgrind-out-file=/dev/null",
                   sys.executable, "-c", SPLIT_CHILD, str(HERE), str(runs), str(deltas), str(calls)]
            env = {**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}
            err = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stderr
            row[part] = int(re.search(r"Collected\s*:\s*(\d+)", err).group(1)) / (calls + 1)
        print(f"  {label:35s} feed {row['feed'] / 1e6:8.3f} M  results {row['results'] / 1e6:7.3f} M instr a call",
              flush=True)
        out.append(row)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loops", type=int, default=5)
    ap.add_argument("--bench", choices=("codec", "accumulate"), default="codec")
    ap.add_argument("--match", default="", help="only the groups whose name holds this text")
    ap.add_argument("--runs", type=int, help="agent runs of data (default: 10 for codec, 40 for accumulate)")
    ap.add_argument("--deltas", type=int, default=300)
    ap.add_argument("--split", action="store_true", help="accumulate()'s feed and result building apart")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if not shutil.which("valgrind"):
        sys.exit("valgrind is not installed")
    if args.split:
        out = split(max(1, args.loops // 2))
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps({"split": out}, indent=1))
        return
    runs = args.runs or (10 if args.bench == "codec" else 40)
    module = __import__(f"bench_{args.bench}")
    rows, info = module.cases(runs, args.deltas)
    rows = [r for r in rows if args.match in r[0]]
    base_cost = {}
    out = []
    group = None
    for grp, name, _, base, _ in rows:
        case = f"{grp}/{name}"
        cost = (instructions(args.bench, case, args.loops, runs, args.deltas)
                - instructions(args.bench, case, 0, runs, args.deltas)) / args.loops
        base_cost[(grp, name)] = cost
        base_c, used = baseline_of(base_cost, grp, base)
        ratio = base_c / cost if base else None
        out.append({"group": grp, "name": name, "instructions": cost, "baseline": used, "x_vs_baseline": ratio})
        if grp != group:
            print(f"\n{grp}")
            group = grp
        extra = vs(ratio, base, used) if base else ""
        print(f"  {name:45s} {cost / 1e6:9.1f} M instr  {extra}", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"info": info, "results": out}, indent=1))


if __name__ == "__main__":
    main()
