"""The ``chunkcodec`` command line (also ``python -m chunkcodec``)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, BinaryIO

import msgspec

from . import Encoder, InvalidFrame, iter_chunks
from .errors import ChunkError

EPILOG = """examples:
  chunkcodec cat samples/agent_tool_roundtrip.sse --to pretty
  chunkcodec cat samples/workflow_stream.rs --to ndjson > workflow.ndjson
  curl -sN -X POST localhost:4111/api/agents/a/stream -d '{"messages":"hi"}' \\
      -H 'content-type: application/json' | chunkcodec cat - --to pretty
  chunkcodec cat log.ndjson --to sse --errors keep
  chunkcodec reconstruct samples/agent_tool_roundtrip.sse
  chunkcodec reconstruct 'logs/*.ndjson.gz' --format json > runs.ndjson
  chunkcodec stats logs/ --json

exit codes: 0 ok, 1 bad input (message on stderr), 2 usage error"""


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


def _reconstruct(args: argparse.Namespace, out: BinaryIO) -> int:
    from . import bulk
    errors: list = []
    for run in bulk.reconstruct(args.inputs, args.from_, strict=args.strict, errors=errors):
        if args.format == "json":
            out.write(msgspec.json.encode(run.to_mastra()) + b"\n")
            continue
        lines = [f"run {run.run_id}  status={run.status}  finish={run.finish_reason}  "
                 f"tokens={json.dumps({k: v for k, v in (run.total_usage or {}).items() if k != 'raw'}, separators=(',', ':'))}"]
        if run.reasoning_text:
            lines.append("  reasoning: " + json.dumps(run.reasoning_text, ensure_ascii=False))
        for c in run.tool_calls:
            lines.append(f"  tool-call {c.payload.toolName} {json.dumps(msgspec.to_builtins(c.payload.args))}")
        for r in run.tool_results:
            lines.append(f"  tool-result {r.payload.toolName} "
                         f"{json.dumps(msgspec.to_builtins(r.payload.result), ensure_ascii=False)[:200]}")
        for e in run.tool_errors:
            lines.append(f"  tool-error {e.payload.toolName}")
        lines.append("  text: " + json.dumps(run.text, ensure_ascii=False))
        out.write(("\n".join(lines) + "\n").encode("utf-8", "replace"))
    for e in errors:
        print(f"chunkcodec: skipped corrupt region: {e}", file=sys.stderr)
    return 1 if errors else 0


def _stats(args: argparse.Namespace, out: BinaryIO) -> int:
    from . import bulk
    st = bulk.stats(args.inputs, args.from_, strict=args.strict)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="chunkcodec", description="Decode, re-frame and inspect agent stream chunks.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    cat = sub.add_parser("cat", help="decode a stream file and re-frame or pretty-print it",
                         epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    cat.add_argument("file", help="stream file, or - for standard input")
    cat.add_argument("--from", dest="from_", default="auto",
                     choices=["auto", "sse", "rs", "ndjson", "json"], help="input framing (default: auto)")
    cat.add_argument("--to", default="ndjson", choices=["ndjson", "sse", "rs", "pretty"],
                     help="output framing, or pretty for a line per chunk (default: ndjson)")
    cat.add_argument("--errors", default="strict", choices=["strict", "keep"],
                     help="strict: stop at the first bad frame; keep: report it on stderr and go on")
    cat.add_argument("--max-frame-bytes", type=int, default=256 * 1024 * 1024)
    for name, fn, helptext in (("reconstruct", _reconstruct, "per run: text, reasoning, tool calls and "
                                "results, usage, finish reason"),
                               ("stats", _stats, "counts per chunk type, runs, tokens, tools, finish "
                                "reasons, bytes")):
        p = sub.add_parser(name, help=helptext, epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("inputs", nargs="+", help="files, directories, globs, or - for standard input "
                       "(.gz and .zst are decompressed)")
        p.add_argument("--from", dest="from_", default="auto", choices=["auto", "sse", "rs", "ndjson"])
        p.add_argument("--strict", action="store_true",
                       help="stop at the first corrupt frame (default: report it on stderr and skip it)")
        if name == "reconstruct":
            p.add_argument("--format", default="text", choices=["text", "json"],
                           help="text: a block per run; json: a line per run, Mastra's camelCase fields")
        else:
            p.add_argument("--json", action="store_true", help="machine-readable output")
        p.set_defaults(fn=fn)
    cat.set_defaults(fn=_cat)
    args = parser.parse_args(argv)
    out = sys.stdout.buffer
    try:
        return args.fn(args, out)
    except ChunkError as exc:
        out.flush()
        print(f"chunkcodec: error: {exc}", file=sys.stderr)
        return 1
    except (OSError, RuntimeError, ValueError) as exc:
        if isinstance(exc, BrokenPipeError):
            return 0
        print(f"chunkcodec: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
