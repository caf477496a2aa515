"""The training run of the profile-guided build (CMakeLists.txt, CHUNKCODEC_PGO).

CMake calls it once the instrumented modules (-fprofile-generate) are built:

    python tools/pgo_train.py --source SRC --modules DIR --stage DIR --data DIR

It puts the package's Python files (SRC/src/chunkcodec) and the instrumented modules (--modules)
together in --stage and runs the workload below there in a child process.  GCC writes the counts
when that process exits, into the directory the modules were compiled for (--data, which is
emptied first), each under the name CMakeLists.txt gives its source in both builds.

The workload is what the library is for, in about the proportions its users run it: logs of many
interleaved runs (bench/gen.py, Mastra-shaped) accumulated as NDJSON, as SSE in pieces and as RS;
short runs; one Accumulator per stream, fed whole and an event at a time, with partial_args and
result() along the way; typed decoding and re-encoding; the bulk indexer (chunkcodec.bulk: scan on
one thread and two, stats, reconstruct, grep); the streams recorded from real Mastra
(tests/vectors/corpus) and the bundled sample log.  It fails (and so the build does) if the
native modules do not load or a count file is missing, rather than build without a profile.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

#: The counts that must be there after the run, by the names CMakeLists.txt gives the sources
#: (others may be missing: -fprofile-partial-training compiles what the workload never ran as
#: without a profile).
_REQUIRED = ("csrc-accum.c.gcda", "csrc-scan.c.gcda", "csrc-frame.c.gcda", "csrc-bulk.c.gcda", "_core.c.gcda",
             "_accumc.c.gcda", "_bulk.c.gcda")


def _stage(source: pathlib.Path, modules: pathlib.Path, stage: pathlib.Path) -> None:
    pkg = stage / "chunkcodec"
    shutil.rmtree(stage, ignore_errors=True)
    shutil.copytree(source / "src" / "chunkcodec", pkg,
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.c", "*.pyx", "*.pxd", "__pycache__"))
    built = [m for m in modules.iterdir() if m.name.startswith("_") and m.suffix in (".so", ".pyd")]
    if not built:
        raise SystemExit(f"pgo_train: no instrumented module in {modules}")
    for m in built:
        shutil.copy2(m, pkg / m.name)


def _check(data: pathlib.Path) -> list:
    found = sorted(data.rglob("*.gcda"))
    names = [str(f.relative_to(data)) for f in found]
    missing = [r for r in _REQUIRED if not any(f.name == r for f in found)]
    if missing:
        raise SystemExit(f"pgo_train: no counts for {missing} in {data} (found {names})")
    return names


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True, type=pathlib.Path)
    ap.add_argument("--workload", action="store_true", help=argparse.SUPPRESS)
    workload_only = "--workload" in sys.argv[1:]
    ap.add_argument("--modules", required=not workload_only, type=pathlib.Path)
    ap.add_argument("--stage", required=not workload_only, type=pathlib.Path)
    ap.add_argument("--data", required=not workload_only, type=pathlib.Path)
    args = ap.parse_args()
    if args.workload:
        workload(args.source)
        return
    _stage(args.source, args.modules, args.stage)
    shutil.rmtree(args.data, ignore_errors=True)
    args.data.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHUNKCODEC_")}
    # (first on the path; what was there stays: pip's isolated build environment is found that way)
    env["PYTHONPATH"] = os.pathsep.join([str(args.stage)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["PYTHONHASHSEED"] = "0"
    subprocess.run([sys.executable, __file__, "--workload", "--source", str(args.source)],
                   env=env, cwd=str(args.stage), check=True)
    names = _check(args.data)
    (args.data / "trained.stamp").write_text("\n".join(names) + "\n")
    print(f"pgo_train: counts for {len(names)} objects in {args.data}")


def _gen(source: pathlib.Path):
    spec = importlib.util.spec_from_file_location("chunkcodec_pgo_gen", source / "bench" / "gen.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen


def _pieces(data: bytes, size: int) -> list:
    return [data[i:i + size] for i in range(0, len(data), size)]


def workload(source: pathlib.Path) -> None:
    import chunkcodec
    import chunkcodec._accumc
    import chunkcodec._bulk
    from chunkcodec import bulk

    here = os.getcwd()
    if chunkcodec.IMPLEMENTATION != "native" or not all(
            m.__file__.startswith(here) for m in (chunkcodec, chunkcodec._core, chunkcodec._accumc,
                                                  chunkcodec._bulk)):
        raise SystemExit(f"pgo_train: the staged native build did not load ({chunkcodec.__file__}, "
                         f"{chunkcodec.IMPLEMENTATION})")
    gen = _gen(source)
    frames = gen.interleaved(40, 300)
    nd, sse, rs = (gen.framed(frames, f) for f in ("ndjson", "sse", "rs"))
    sse_pieces = _pieces(sse, 16384)
    short = gen.framed(gen.interleaved(300, 12, seed=3), "ndjson")
    for _ in range(10):
        chunkcodec.accumulate(nd)
        chunkcodec.accumulate(sse_pieces)
    for _ in range(3):
        chunkcodec.accumulate(rs)
        chunkcodec.accumulate(short)
    # one Accumulator per stream: fed whole, in pieces, an event at a time (a live UI), asked for
    # partial tool arguments and the result on the way
    for seed in range(20):
        run = gen.frames(1, 120, seed=seed)
        body = gen.framed(run, "sse")
        for pieces in ([body], _pieces(body, 4096), [b"data: " + f + b"\n\n" for f in run]):
            acc = chunkcodec.Accumulator()
            for k, piece in enumerate(pieces):
                acc.feed(piece)
                if k % 16 == 0:
                    for rid in acc.run_ids():
                        for call in acc.result(rid).tool_calls:
                            acc.partial_args(call.payload.toolCallId)
            acc.close()
            acc.result().to_mastra()
    # typed chunks: decoded, added, encoded again
    for _ in range(2):
        chunks = list(chunkcodec.iter_chunks(nd, "ndjson"))
        acc = chunkcodec.Accumulator()
        for c in chunks[:4000]:
            acc.add(c)
        acc.results()
        enc = chunkcodec.Encoder("sse")
        for c in chunks[:4000]:
            enc.encode(c)
        list(chunkcodec.iter_dicts(_pieces(gen.framed(frames[:3000], "sse"), 16384)))
    # what real Mastra sent
    corpus = source / "tests" / "vectors" / "corpus"
    recorded = sorted((corpus / "chunks").glob("*.jsonl")) + sorted((corpus / "wire").glob("*.sse")) + \
        sorted((corpus / "wire").glob("*.rs"))
    for _ in range(5):
        for p in recorded:
            data = p.read_bytes()
            for r in chunkcodec.accumulate(data):
                r.to_mastra()
            list(chunkcodec.iter_chunks(data))
    # the bulk indexer: one thread, and two on a log long enough to be cut in two (bulk.MIN_PART_BYTES)
    big = nd * (2 * bulk.MIN_PART_BYTES // len(nd) + 1)
    for _ in range(3):
        for data in (nd, sse, rs):
            idx = bulk.scan(data, workers=1)
            idx.type_counts()
        bulk.scan(big, workers=2)
    for data in (nd, sse):
        bulk.stats(data)
        for r in bulk.reconstruct(data):
            r.to_mastra()
        list(bulk.grep(data, pattern="weather", types=["tool-*"]))
    sample = source / "samples" / "agent_runs.ndjson"
    if sample.exists():
        for _ in range(5):
            chunkcodec.accumulate(sample.read_bytes())


if __name__ == "__main__":
    main()
