"""Peak memory of chunkcodec.accumulate (or bulk.reconstruct) on a generated log of interleaved runs.

    python bench/bench_memory.py [--mb 1000] [--keep PATH] [--api accumulate|reconstruct]

Writes the log to a temporary file (never committed), then, in fresh processes, measures the
peak RSS of (a) importing chunkcodec and reading nothing, and (b) accumulating the file; in (b) it
also measures the RSS once accumulate() has returned, with every RunOutput alive: the memory the
reconstructed output itself takes as Python objects.  The check: peak <= that + 64 MB, i.e. on the
way to the result nothing grows with the size of the log beyond the result.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).parent))

CHILD = r"""
import json, os, resource, sys
import msgspec, chunkcodec
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
size, runs = 0, []
if sys.argv[1] != "-":
    path = __import__("pathlib").Path(sys.argv[1])
    if sys.argv[2] == "reconstruct":
        from chunkcodec import bulk
        runs = list(bulk.reconstruct(path))
    else:
        runs = chunkcodec.accumulate(path)
    size = sum(len(msgspec.json.encode(run)) for run in runs)
held = rss()   # the reconstructed output is alive here
print(json.dumps({"peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "output": size,
                  "held": held, "runs": len(runs)}))
"""


def write_log(path: pathlib.Path, mb: int) -> int:
    import gen
    written, seed = 0, 0
    with open(path, "wb") as f:
        while written < mb * 1_000_000:
            data = gen.framed(gen.interleaved(200, 300, seed=seed), "ndjson")
            f.write(data)
            written += len(data)
            seed += 1
    return written


def measure(arg: str, api: str = "accumulate") -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, arg, api], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=1000)
    ap.add_argument("--keep", help="write the log here and leave it")
    ap.add_argument("--api", default="accumulate", choices=["accumulate", "reconstruct"],
                    help="chunkcodec.accumulate, or chunkcodec.bulk.reconstruct (streamed, runs kept)")
    args = ap.parse_args()
    tmp = None
    if args.keep:
        path = pathlib.Path(args.keep)
    else:
        tmp = tempfile.NamedTemporaryFile(suffix=".ndjson", delete=False)
        path = pathlib.Path(tmp.name)
    try:
        size = write_log(path, args.mb)
        base = measure("-")
        got = measure(str(path), args.api)
    finally:
        if tmp is not None:
            os.unlink(path)
    limit = max(got["held"], base["peak"]) + 64 * 2**20
    print(f"{args.api}: log {size / 1e6:.0f} MB, {got['runs']} runs | output as JSON {got['output'] / 1e6:.1f} MB | "
          f"import-only peak RSS {base['peak'] / 1e6:.0f} MB | RSS holding the output {got['held'] / 1e6:.0f} MB | "
          f"peak RSS {got['peak'] / 1e6:.0f} MB | limit {limit / 1e6:.0f} MB")
    return 0 if got["peak"] <= limit else 1


if __name__ == "__main__":
    sys.exit(main())
