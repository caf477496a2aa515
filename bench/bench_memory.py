"""Peak memory of chunkcodec.accumulate on a generated log of interleaved runs.

    python bench/bench_memory.py [--mb 1000] [--keep PATH]

Writes the log to a temporary file (never committed), then, in fresh processes, measures the
peak RSS of (a) importing chunkcodec and reading nothing, the constant, and (b) accumulating the
file.  Prints both with the size of what was reconstructed (the UTF-8 JSON of every RunOutput)
and checks that (b) <= (a) + 1.5 x output + 64 MB of slack (allocator, read buffers).
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
import json, resource, sys
import msgspec, chunkcodec
size = 0
if sys.argv[1] != "-":
    for run in chunkcodec.accumulate(__import__("pathlib").Path(sys.argv[1])):
        size += len(msgspec.json.encode(run))
print(json.dumps({"peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "output": size}))
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


def measure(arg: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, arg], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=1000)
    ap.add_argument("--keep", help="write the log here and leave it")
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
        got = measure(str(path))
    finally:
        if tmp is not None:
            os.unlink(path)
    limit = base["peak"] + 1.5 * got["output"] + 64 * 2**20
    print(f"log {size / 1e6:.0f} MB | output {got['output'] / 1e6:.1f} MB | "
          f"baseline RSS {base['peak'] / 1e6:.0f} MB | peak RSS {got['peak'] / 1e6:.0f} MB | "
          f"peak - baseline {(got['peak'] - base['peak']) / 1e6:.1f} MB | limit {limit / 1e6:.0f} MB")
    return 0 if got["peak"] <= limit else 1


if __name__ == "__main__":
    sys.exit(main())
