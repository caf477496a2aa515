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
    args = parser.parse_args(argv)
    out = sys.stdout.buffer
    try:
        return _cat(args, out)
    except ChunkError as exc:
        out.flush()
        print(f"chunkcodec: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            return 0
        print(f"chunkcodec: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
