"""The ``chunkcodec`` command line (also ``python -m chunkcodec``)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any, BinaryIO

import msgspec

from . import Encoder, InvalidFrame, iter_chunks
from ._jsonout import utf8_json
from .errors import ChunkError

EXAMPLES = {
    "cat": """  chunkcodec cat samples/agent_tool_roundtrip.sse --to pretty
  chunkcodec cat samples/workflow_stream.rs --to ndjson > workflow.ndjson
  curl -sN -X POST localhost:4111/api/agents/a/stream -d '{"messages":"hi"}' \\
      -H 'content-type: application/json' | chunkcodec cat - --to pretty
  chunkcodec cat log.ndjson --to sse --errors keep""",
    "reconstruct": """  chunkcodec reconstruct samples/agent_runs.ndjson
  chunkcodec reconstruct 'logs/*.ndjson.gz' --format json > runs.ndjson
  chunkcodec reconstruct logs/ --format parquet -o runs.parquet
  chunkcodec reconstruct big.ndjson -j 4 --format json > runs.ndjson   # on 4 processes
  duckdb -c "select status, count(*) from 'runs.parquet' group by 1\"""",
    "stats": """  chunkcodec stats samples/agent_runs.ndjson
  chunkcodec stats logs/ --json | jq .tokens
  zstdcat big.ndjson.zst | chunkcodec stats -""",
    "grep": """  chunkcodec grep --type 'tool-*' samples/agent_runs.ndjson
  chunkcodec grep -e 'exploded' -C 2 samples/agent_runs.ndjson
  chunkcodec grep --run 050c8579 --type tool-error --json logs/ > failures.ndjson
  chunkcodec grep -c --type finish logs/""",
    "bench": """  chunkcodec bench samples/agent_runs.ndjson
  chunkcodec bench my_capture.sse --repeat 5 --json
  chunkcodec bench huge.ndjson.zst --max-mb 64     # the whole frames in its first 64 MB""",
}
EPILOG = "examples:\n" + "\n".join(EXAMPLES.values()) + """

exit codes: 0 ok, 1 bad input (message on stderr), 2 usage error; grep: 0 matched, 1 nothing matched,
2 error"""


def _epilog(name: str) -> str:
    codes = ("exit codes: 0 something matched, 1 nothing matched, 2 bad input or usage error" if name == "grep"
             else "exit codes: 0 ok, 1 bad input (message on stderr), 2 usage error")
    return f"examples:\n{EXAMPLES[name]}\n\n{codes}"


class _Progress:
    """A progress bar on standard error (tqdm) for long work: only when standard error is a
    terminal, tqdm is installed (``pip install 'chunkcodec[cli]'``) and --quiet was not given."""

    def __init__(self, args: argparse.Namespace, desc: str) -> None:
        self.bar = None
        if getattr(args, "quiet", False) or not sys.stderr.isatty():
            return
        try:
            from tqdm import tqdm
        except ImportError:
            return
        from . import bulk
        total: int | None = 0
        try:
            for path in bulk.iter_sources(args.inputs):
                if path != "-":
                    with open(path, "rb") as f:
                        packed = bulk._decompressor(path, f.read(4)) is not None
                if path == "-" or packed:
                    total = None            # decompressed size unknown: a rate, no percentage
                    break
                total += os.path.getsize(path)
        except OSError:
            total = None
        self.bar = tqdm(total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1024, leave=False,
                        file=sys.stderr, dynamic_ncols=True)

    def __call__(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _summary(chunk: Any) -> str:
    d = msgspec.to_builtins(chunk)
    p = d.get("payload")
    if isinstance(p, dict):
        for key in ("text", "argsTextDelta"):
            if isinstance(p.get(key), str):
                return json.dumps(p[key], ensure_ascii=False)
        if "error" in p:
            err = p["error"]
            return "error: " + (err.get("message", "") if isinstance(err, dict) else str(err))
        if "toolName" in p:
            return f"{p.get('toolName')} {p.get('toolCallId', '')}"
        if isinstance(p.get("stepResult"), dict):
            return f"reason={p['stepResult'].get('reason')}"
    body = {k: v for k, v in d.items() if k not in ("type", "runId", "from")}
    s = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return s if len(s) <= 100 else s[:97] + "..."


def _cat(args: argparse.Namespace, out: BinaryIO) -> int:
    src: Any = sys.stdin.buffer if args.file == "-" else open(args.file, "rb")
    bad = 0
    try:
        enc = None if args.to == "pretty" else Encoder(args.to)
        for i, chunk in enumerate(iter_chunks(src, args.from_, errors=args.errors,
                                              max_frame_bytes=args.max_frame_bytes)):
            if isinstance(chunk, InvalidFrame):
                bad += 1
                print(f"chunkcodec: skipped bad frame {chunk.frame_index} at byte {chunk.pos}: "
                      f"{chunk.error}", file=sys.stderr)
                continue
            if enc is None:
                type_ = getattr(chunk, "type", None) or type(chunk).__struct_config__.tag
                out.write(f"{i:>5}  {type_:<32} {_summary(chunk)}\n".encode("utf-8", "replace"))
            else:
                out.write(enc.encode(chunk))
        if enc is not None:
            out.write(enc.end())
    finally:
        if src is not sys.stdin.buffer:
            src.close()
    return 1 if bad else 0


def _js(value: Any) -> str:
    """A value of a chunk as JSON text for the text format; an absent one (UNSET: a tool that
    returned nothing has no result) as JavaScript's undefined."""
    if value is msgspec.UNSET:
        return "undefined"
    return json.dumps(msgspec.to_builtins(value), ensure_ascii=False)


def _name(chunk: Any) -> str:
    name = getattr(chunk.payload, "toolName", msgspec.UNSET)
    return name if isinstance(name, str) else "-"


def _run_text(run: Any) -> str:
    usage = {k: v for k, v in (run.total_usage or {}).items() if k != "raw"}
    lines = [f"run {run.run_id}  status={run.status}  finish={run.finish_reason}  "
             f"tokens={json.dumps(usage, separators=(',', ':'))}"]
    if run.error is not None:
        err = run.error.get("message", run.error) if isinstance(run.error, dict) else run.error
        lines.append("  error: " + _js(err))
    if run.tripwire is not None:
        lines.append("  tripwire: " + _js(run.tripwire)[:200])
    if run.reasoning_text:
        lines.append("  reasoning: " + json.dumps(run.reasoning_text, ensure_ascii=False))
    for c in run.tool_calls:
        lines.append(f"  tool-call {_name(c)} {_js(c.payload.args)}")
    for r in run.tool_results:
        lines.append(f"  tool-result {_name(r)} {_js(getattr(r.payload, 'result', msgspec.UNSET))[:200]}")
    for e in run.tool_errors:
        lines.append(f"  tool-error {_name(e)}")
    if run.object is not None:
        lines.append("  object: " + _js(run.object)[:200])
    lines.append("  text: " + json.dumps(run.text, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def _output(args: argparse.Namespace, out: BinaryIO) -> BinaryIO:
    return out if args.output in (None, "-") else open(args.output, "wb")


def _run_json(run: Any) -> bytes:
    return utf8_json(run.to_mastra()) + b"\n"


def _run_block(run: Any) -> bytes:
    return _run_text(run).encode("utf-8", "replace")


def _reconstruct(args: argparse.Namespace, out: BinaryIO) -> int:
    from . import bulk
    errors: list = []
    bar = _Progress(args, "reconstruct")
    # each run made into what is written in the workers (on the parallel path): only that comes back
    apply = {"json": _run_json, "text": _run_block, "parquet": bulk._run_row}[args.format]
    made = bulk.reconstruct(args.inputs, args.from_, strict=args.strict, errors=errors, progress=bar,
                            workers=args.workers, apply=apply)
    dest = _output(args, out)
    try:
        if args.format == "parquet":
            if dest is out and out.isatty():
                raise ValueError("Parquet is binary: give -o FILE (or pipe the output)")
            bulk._write_rows(made, dest)
        else:
            for data in made:
                dest.write(data)
    finally:
        bar.close()
        if dest is not out:
            dest.close()
    for e in errors:
        print(f"chunkcodec: skipped corrupt region: {e}", file=sys.stderr)
    return 1 if errors else 0


def _grep(args: argparse.Namespace, out: BinaryIO) -> int:
    from . import bulk
    if args.pattern is None and not args.type and args.run is None:
        raise ValueError("give -e PATTERN, --type or --run")
    count = 0
    for hit in bulk.grep(args.inputs, args.pattern, args.type, args.run, 0 if args.count else args.context,
                         args.from_, args.ignore_case):
        if hit.match:
            count += 1
        if args.count:
            continue
        if args.json:
            out.write(hit.frame + b"\n")
            continue
        mark = ":" if hit.match else "-"
        frame = hit.frame if len(hit.frame) <= 160 else hit.frame[:157] + b"..."
        out.write(f"{hit.source}{mark}{hit.offset}{mark} {hit.type} {hit.run_id or '-'} ".encode() + frame + b"\n")
    if args.count:
        out.write(f"{count}\n".encode())
    return 0 if count else 1


def _bench(args: argparse.Namespace, out: BinaryIO) -> int:
    from . import _benchcmd, bulk
    limit = int(args.max_mb * 1e6)
    pieces: list = []
    size, more = 0, False
    for p in bulk.iter_sources(args.inputs):        # read no more than the sample needs
        for piece in bulk._file_pieces(p, [], True):
            pieces.append(piece)
            size += len(piece)
            if size > limit:
                more = True
                break
        if more:
            break
    data = b"".join(pieces)
    del pieces
    sample_of = None
    if more:
        data = _benchcmd.cut_at_frame_end(data, limit, args.from_)
        sample_of = f"a sample: the whole frames in the input's first {args.max_mb:g} MB"
    rep = _benchcmd.run(data, args.repeat, args.from_, sample_of)
    out.write((json.dumps(rep, indent=1) if args.json else _benchcmd.format_report(rep)).encode() + b"\n")
    return 1 if any("disagrees" in r for r in rep["results"]) else 0


def _stats(args: argparse.Namespace, out: BinaryIO) -> int:
    from . import bulk
    bar = _Progress(args, "stats")
    try:
        st = bulk.stats(args.inputs, args.from_, strict=args.strict, progress=bar, workers=args.workers)
    finally:
        bar.close()
    if args.json:
        out.write(msgspec.json.encode(st) + b"\n")
    else:
        rows = [f"bytes      {st.bytes:,}", f"frames     {st.frames:,}", f"runs       {st.runs:,}"]
        for title, d in (("chunk types", st.chunk_types), ("finish reasons", st.finish_reasons),
                         ("status", st.status), ("tokens", st.tokens), ("tool calls", st.tool_calls),
                         ("tool errors", st.tool_errors)):
            rows.append(f"{title}:")
            rows += [f"  {k:<40} {v:>12,}" for k, v in sorted(d.items(), key=lambda kv: (-kv[1], str(kv[0])))]
        out.write(("\n".join(rows) + "\n").encode())
    for e in st.corrupt:
        print(f"chunkcodec: corrupt region: {e}", file=sys.stderr)
    return 1 if st.corrupt else 0


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="chunkcodec", description="Decode, re-frame and inspect agent stream chunks.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    def command(name: str, fn: Any, helptext: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=helptext, description=helptext, epilog=_epilog(name),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.set_defaults(fn=fn)
        return p

    def inputs(p: argparse.ArgumentParser, what: str = "files") -> None:
        p.add_argument("inputs", nargs="+", metavar="FILE", help=f"{what}: files, directories, globs, or - for "
                       "standard input (.gz and .zst are decompressed)")
        p.add_argument("--from", dest="from_", default="auto", choices=["auto", "sse", "rs", "ndjson"],
                       help="input framing (default: auto)")

    cat = command("cat", _cat, "decode a stream file and re-frame or pretty-print it")
    cat.add_argument("file", help="stream file, or - for standard input")
    cat.add_argument("--from", dest="from_", default="auto",
                     choices=["auto", "sse", "rs", "ndjson", "json"], help="input framing (default: auto)")
    cat.add_argument("--to", default="ndjson", choices=["ndjson", "sse", "rs", "pretty"],
                     help="output framing, or pretty for a line per chunk (default: ndjson)")
    cat.add_argument("--errors", default="strict", choices=["strict", "keep"],
                     help="strict: stop at the first bad frame; keep: report it on stderr and go on")
    cat.add_argument("--max-frame-bytes", type=int, default=256 * 1024 * 1024)

    rec = command("reconstruct", _reconstruct, "per run: text, reasoning, tool calls with args and results, "
                  "usage, finish reason, error")
    stats = command("stats", _stats, "counts per chunk type, runs, tokens, tool calls and errors per tool, "
                    "finish reasons, bytes, corrupt regions")
    for p in (rec, stats):
        inputs(p, "logs")
        p.add_argument("--strict", action="store_true",
                       help="stop at the first corrupt frame (default: report it on stderr and skip it)")
        p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    rec.add_argument("--format", default="text", choices=["text", "json", "parquet"],
                     help="text: a block per run; json: a line per run, Mastra's camelCase fields; "
                     "parquet: a row per run (needs pyarrow)")
    rec.add_argument("-o", "--output", help="write here instead of standard output")
    rec.add_argument("-j", "--workers", type=_count, default=1, metavar="N",
                     help="processes for each plain file of 256 MB or more, same output (default: 1, which "
                     "streams with memory bounded by the runs in flight; with more, a file's output is held "
                     "until the file is done)")
    stats.add_argument("-j", "--workers", type=_count, default=None, metavar="N",
                       help="threads and processes for each plain file of 256 MB or more, same counts "
                       "(default: every CPU)")
    stats.add_argument("--json", action="store_true", help="machine-readable output")

    grep = command("grep", _grep, "chunks matching a chunk type, a run id and/or a pattern, with context "
                   "from the same run")
    inputs(grep, "logs")
    grep.add_argument("-e", "--regexp", dest="pattern", metavar="PATTERN",
                      help="regular expression searched in each chunk's JSON text (Python re syntax)")
    grep.add_argument("-t", "--type", action="append", default=[], metavar="TYPE",
                      help="chunk type or shell pattern (tool-*, data-*); repeat for several")
    grep.add_argument("-r", "--run", metavar="ID", help="run id, or a prefix of one")
    grep.add_argument("-C", "--context", type=int, default=0, metavar="N",
                      help="also show N chunks before and after each match in the same run")
    grep.add_argument("-i", "--ignore-case", action="store_true")
    grep.add_argument("-c", "--count", action="store_true", help="print only the number of matches")
    grep.add_argument("--json", action="store_true", help="print the matching chunks as NDJSON")

    bench = command("bench", _bench, "decode and accumulate throughput of chunkcodec on your file against "
                    "json, orjson and msgspec (those installed), checked for agreement first")
    inputs(bench, "streams or logs (read into memory)")
    bench.add_argument("--repeat", type=int, default=3, help="best of this many runs (default: 3)")
    bench.add_argument("--max-mb", type=_positive, default=256, metavar="MB",
                       help="measure at most this many MB of input, cut after its last whole frame "
                       "(default: 256; every contender holds its decoded chunks in memory)")
    bench.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    out = sys.stdout.buffer
    failed = 2 if args.command == "grep" else 1      # grep's 1 means "nothing matched"
    try:
        return args.fn(args, out)
    except ChunkError as exc:
        out.flush()
        print(f"chunkcodec: error: {exc}", file=sys.stderr)
        return failed
    except (OSError, RuntimeError, ValueError, re.error) as exc:
        if isinstance(exc, BrokenPipeError):
            return 0
        print(f"chunkcodec: error: {exc}", file=sys.stderr)
        return failed


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
