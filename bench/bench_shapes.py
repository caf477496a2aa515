"""What the shape of the delta frames does to their cost: accumulate() and bulk.scan on logs that
differ only in how their deltas are written, each against the plain shape in the same run.

    python bench/bench_shapes.py [--runs 40] [--deltas 300] [--repeat 5] [--check R]

Every log is --runs runs interleaved delta by delta (the hard case for the caches: each delta is
for another run than the one before), --deltas deltas each, written as Mastra's converter writes
them ({"type","runId","from","payload":{"id","providerMetadata"?,"text"}}, compact), in NDJSON:

- plain: UUID runIds and a short part id, the shape of the other bench logs;
- shared suffix, shared prefix, shared ends: runIds that a producer numbers, alike but for their
  first bytes, their last bytes or a few bytes in the middle;
- long ids: OpenAI's item ids (rs_ and 48 hex digits) as the part id;
- providerMetadata: every delta carrying {"openai":{"itemId":...}}, with short and with long ids
  (providers that tag each delta, with an item id or a signature, send it on all of them);
- written again by Python: sorted keys (json.dumps's sort_keys), white space (its default ", "
  and ": "), and its defaults (those spaces and \\u escapes for every non-ASCII character);
- a key the schema does not know: a log's sequence number beside the type (a new one on every
  line), or a proxy's tag (the same on every line);
- the line ends and SSE fields around the JSON: CRLF line ends (a log written on Windows), SSE
  as Mastra's agent routes write it (`data: ` and a blank line), SSE with CRLF, with `data:` and
  no space, with id and event fields before the data line (a server that lets clients resume);
- a tab for white space: frames the delta loops leave to the general path, shown for what that
  costs (not checked).

Prints, for each log, nanoseconds per delta (best of --repeat) of accumulate() and of
bulk.scan(workers=1), and their ratio to the plain log's.  Every log's answer is checked before it
is timed: each run's text (or reasoning) from accumulate(), and each frame's text from the index.
--check R: exit 1 when a log of a shape the loops take costs more than R times the plain one (2R
for a shape they read whole every time; compare within one run: the machines are shared, absolute
figures move).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import chunkcodec
from chunkcodec import bulk

UUID = "%08x-9c1e-4a7b-8d2f-%012x"
ITEM = "rs_68c1f0a6d4e48190%032x"

#: name: (runId format, part id format, providerMetadata format or None, delta type, how written);
#: %-formats take the run's number
SHAPES = {
    "plain": (UUID, "txt-0", None, "text", "compact"),
    "shared suffix": ("%08x-1111-2222-3333-444455556666", "txt-0", None, "text", "compact"),
    "shared prefix": ("agent-run-2025-11-23-%06d", "txt-0", None, "text", "compact"),
    "shared ends": ("aaaaaaaa-bbbb-cc%06dcc-dddd-eeeeeeeeeeee", "txt-0", None, "text", "compact"),
    "long ids": (UUID, ITEM + ":0", None, "reasoning", "compact"),
    "providerMetadata": (UUID, "txt-0", '{"openai":{"itemId":"msg_%d"}}', "text", "compact"),
    "providerMetadata, long ids": (UUID, ITEM + ":0", '{"openai":{"itemId":"' + ITEM + '"}}', "reasoning",
                                   "compact"),
    "sorted keys": (UUID, "txt-0", None, "text", "sorted"),
    "white space": (UUID, "txt-0", None, "text", "spaced"),
    "json.dumps defaults": (UUID, "txt-0", None, "text", "python"),
    "sorted keys, providerMetadata": (UUID, "txt-0", '{"openai":{"itemId":"msg_%d"}}', "text", "sorted"),
    "a sequence number": (UUID, "txt-0", None, "text", "seq"),
    "a proxy's tag": (UUID, "txt-0", None, "text", "tag"),
    "CRLF line ends": (UUID, "txt-0", None, "text", "crlf"),
    "SSE": (UUID, "txt-0", None, "text", "sse"),
    "SSE, CRLF": (UUID, "txt-0", None, "text", "sse-crlf"),
    "SSE, data: and no space": (UUID, "txt-0", None, "text", "sse-nospace"),
    "SSE, id and event fields": (UUID, "txt-0", None, "text", "sse-fields"),
    "a tab for white space": (UUID, "txt-0", None, "text", "tab"),
}
GENERAL = {"a tab for white space"}    # not the loops': shown, not checked
#: taken by the loops, but read whole each time (no two frames alike but for their text: nothing
#: to keep): checked against twice --check
WHOLE = {"a sequence number"}


def _run_id(fmt: str, r: int) -> str:
    return fmt % ((r * 2654435761 % 2**32, r) if fmt == UUID else r)


def make_log(shape: str, runs: int, deltas: int) -> tuple[bytes, dict, list]:
    """The log, each run's expected text, and each line's delta text."""
    run_fmt, id_fmt, pm_fmt, kind, how = SHAPES[shape]
    lines, texts, want = [], [], {}
    for k in range(deltas):
        for r in range(runs):
            rid = _run_id(run_fmt, r)
            payload = {"id": id_fmt % r if "%" in id_fmt else id_fmt}
            if pm_fmt is not None:
                payload["providerMetadata"] = json.loads(pm_fmt % r)
            payload["text"] = text = " w%d é" % k
            d = {"type": kind + "-delta", "runId": rid, "from": "AGENT", "payload": payload}
            if how == "seq":
                d = {"type": d["type"], "seq": k * runs + r, **d}
            elif how == "tag":
                d = {"src": "proxy-1", **d}
            if how == "sorted":
                line = json.dumps(d, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
            elif how == "python":
                line = json.dumps(d)
            else:
                line = json.dumps(d, ensure_ascii=False, separators=(", ", ": ") if how == "spaced" else (",", ":"))
                if how == "tab":
                    line = line.replace('{"type"', '{\t"type"')
            lines.append(line)
            texts.append(text)
            want[rid] = want.get(rid, "") + text
    if how.startswith("sse"):
        pre, end = {"sse": ("data: ", "\n\n"), "sse-crlf": ("data: ", "\r\n\r\n"), "sse-nospace": ("data:", "\n\n"),
                    "sse-fields": ("id: %d\nevent: chunk\ndata: ", "\n\n")}[how]
        return "".join((pre % i if "%d" in pre else pre) + ln + end for i, ln in enumerate(lines)).encode(), want, texts
    end = "\r\n" if how == "crlf" else "\n"
    return (end.join(lines) + end).encode(), want, texts


def check(shape: str, data: bytes, want: dict, texts: list) -> None:
    reasoning = SHAPES[shape][3] == "reasoning"
    got = {r.run_id: (r.reasoning_text if reasoning else r.text) for r in chunkcodec.accumulate(data)}
    if got != want:
        raise SystemExit(f"{shape}: accumulate() gave other texts")
    ix = bulk.scan(data, workers=1)
    if len(ix) != len(texts) or any(ix.text(i) != t for i, t in enumerate(texts)):
        raise SystemExit(f"{shape}: bulk.scan gave other frames or texts")


def best(fn, data: bytes, repeat: int) -> float:
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(data)
        t = min(t, time.perf_counter() - t0)
    return t


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--deltas", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--check", type=float, default=None, metavar="R")
    args = ap.parse_args(argv)
    n = args.runs * args.deltas
    rows, bad = [], []
    for shape in SHAPES:
        data, want, texts = make_log(shape, args.runs, args.deltas)
        check(shape, data, want, texts)
        acc = best(chunkcodec.accumulate, data, args.repeat) / n * 1e9
        scan = best(lambda d: bulk.scan(d, workers=1), data, args.repeat) / n * 1e9
        rows.append((shape, len(data) / n, acc, scan))
    acc0, scan0 = rows[0][2], rows[0][3]
    print(f"{args.runs} runs interleaved delta by delta, {args.deltas} deltas each, NDJSON unless named; "
          f"best of {args.repeat}")
    print(f"{'shape':30} {'bytes/delta':>11} {'accumulate ns':>13} {'x plain':>7} {'scan ns':>8} {'x plain':>7}")
    for shape, size, acc, scan in rows:
        note = "  (general path)" if shape in GENERAL else "  (read whole)" if shape in WHOLE else ""
        print(f"{shape:30} {size:11.0f} {acc:13.0f} {acc / acc0:7.2f} {scan:8.0f} {scan / scan0:7.2f}{note}")
        limit = None if args.check is None or shape in GENERAL else args.check * (2 if shape in WHOLE else 1)
        if limit is not None and acc / acc0 > limit:
            bad.append(f"{shape}: accumulate {acc / acc0:.2f}x plain")
        if limit is not None and scan / scan0 > limit:
            bad.append(f"{shape}: scan {scan / scan0:.2f}x plain")
    for b in bad:
        print("over --check:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
