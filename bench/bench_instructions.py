"""Repeatable ratios: CPU instructions per case, counted by valgrind's callgrind.

    python bench/bench_instructions.py [--loops 5] [--json out.json]
    python bench/bench_instructions.py --bench accumulate --match "NDJSON log"

Wall-clock time on a shared machine wanders by tens of percent between runs; the number of
instructions a case executes does not.  Each case of bench_codec.py (or of bench_accumulate.py
with --bench accumulate; --match keeps the groups whose name holds the text) runs in its own process under
callgrind, once with --loops 0 and once with --loops N; the difference divided by N is the cost
of the case.  Needs valgrind (Debian: apt-get install valgrind).  Each case costs two valgrind
runs of the whole script, so this takes 10-30 minutes; run it when a ratio matters.
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loops", type=int, default=5)
    ap.add_argument("--bench", choices=("codec", "accumulate"), default="codec")
    ap.add_argument("--match", default="", help="only the groups whose name holds this text")
    ap.add_argument("--runs", type=int, help="agent runs of data (default: 10 for codec, 40 for accumulate)")
    ap.add_argument("--deltas", type=int, default=300)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if not shutil.which("valgrind"):
        sys.exit("valgrind is not installed")
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
