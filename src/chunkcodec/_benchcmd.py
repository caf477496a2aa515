"""``chunkcodec bench FILE``: chunkcodec against the JSON libraries a Python user would otherwise
use, on the user's own file, in one run.

Decode: every frame to an object.  chunkcodec's dicts (iter_dicts, the drop-in) against the
obvious plain-Python loop with json.loads, orjson.loads and msgspec.json.decode (those installed),
each after the simplest correct split for the file's framing, like for like; chunkcodec's typed
chunks (iter_chunks), which validate every field, are shown too.  Accumulate: chunkcodec.accumulate
against each library's loop plus a dict of per-run text, the least an accumulator does.

Before any timing every contender's answer is checked against chunkcodec's: the same number of
chunks, and per run the same text-delta text.  A contender that disagrees is reported, not timed.
"""

from __future__ import annotations

import importlib
import json
import time
from typing import Any, Callable

import msgspec

from . import _reference, accumulate, iter_chunks, iter_dicts
from .bulk import _framing_of
from .chunks import TextDelta


def _split(data: bytes, framing: int) -> list:
    """The frames' JSON texts, split the plain-Python way."""
    if framing == _reference.SSE:
        out = []
        for event in data.replace(b"\r\n", b"\n").split(b"\n\n"):
            lines = [ln[5:].lstrip(b" ") for ln in event.split(b"\n") if ln.startswith(b"data:")]
            if lines and lines != [b"[DONE]"]:
                out.append(b"\n".join(lines))
        return out
    sep = b"\x1e" if framing == _reference.RS else b"\n"
    return [f for f in data.split(sep) if f.strip()]


def _loaders() -> dict:
    found: dict = {"json": json.loads}
    try:
        found["orjson"] = importlib.import_module("orjson").loads
    except ImportError:
        pass
    found["msgspec"] = msgspec.json.Decoder().decode
    return found


def _texts_of_dicts(objs: list) -> dict:
    texts: dict = {}
    for d in objs:
        if isinstance(d, dict) and d.get("type") == "text-delta":
            p = d.get("payload")
            if isinstance(p, dict) and isinstance(p.get("text"), str):
                rid = d.get("runId")
                texts[rid] = texts.get(rid, "") + p["text"]
    return texts


def _texts_of_chunks(chunks: list) -> dict:
    texts: dict = {}
    for c in chunks:
        if isinstance(c, TextDelta):
            texts[c.runId] = texts.get(c.runId, "") + c.payload.text
    return texts


def _texts_of_runs(runs: list) -> dict:
    return {r.run_id: "".join(p.get("text", "") for p in r.parts if p.get("type") == "text") for r in runs
            if any(p.get("type") == "text" for p in r.parts)}


def _best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


#: What ends a frame, per framing: where a sample of a longer input is cut.
_ENDS = {_reference.SSE: (b"\n\n", b"\r\n\r\n", b"\r\r"), _reference.RS: (b"\x1e",),
         _reference.NDJSON: (b"\n",)}


def cut_at_frame_end(data: bytes, limit: int, framing: str = "auto") -> bytes:
    """data[:limit] cut after its last whole frame: a sample of a longer input, measured as is.
    ValueError if not one frame ends in it."""
    code = _framing_of(data, framing)
    end = max(data.rfind(sep, 0, limit) + len(sep) if data.rfind(sep, 0, limit) >= 0 else 0
              for sep in _ENDS[code])
    if end == 0:
        raise ValueError(f"no frame ends in the first {limit:,} bytes: raise --max-mb")
    return data[:end]


def run(data: bytes, repeat: int = 3, framing: str = "auto", sample_of: str | None = None) -> dict:
    """Measure; returns the report as a dict (see ``format_report``).  framing: "auto", "sse",
    "rs" or "ndjson", for every contender; sample_of: what data is a sample of, for the report."""
    code = _framing_of(data, framing)
    name = _reference._NAMES[code]
    chunks = list(iter_chunks(data, name))
    want_n, want_text = len(chunks), _texts_of_chunks(chunks)
    runs = accumulate(data, name)
    rows: list = []
    size = len(data)

    def add(task: str, name: str, fn: Callable[[], Any], check: Callable[[Any], str | None]) -> None:
        problem = check(fn())
        if problem:
            rows.append({"task": task, "contender": name, "disagrees": problem})
            return
        t = _best(fn, repeat)
        rows.append({"task": task, "contender": name, "seconds": t, "MBps": size / t / 1e6, "chunks_per_s": want_n / t})

    def same_chunks(objs: list) -> str | None:
        if len(objs) != want_n:
            return f"{len(objs)} chunks, chunkcodec {want_n}"
        return None if _texts_of_dicts(objs) == want_text else "per-run text differs"

    def same_runs(texts: dict) -> str | None:
        return None if texts == want_text else "per-run text differs"

    add("decode", "chunkcodec", lambda: list(iter_dicts(data, name)), same_chunks)
    add("decode", "chunkcodec typed", lambda: list(iter_chunks(data, name)),
        lambda c: None if len(c) == want_n and _texts_of_chunks(c) == want_text else "differs")
    for lib, loads in _loaders().items():
        add("decode", lib, lambda loads=loads: [loads(f) for f in _split(data, code)], same_chunks)
    add("accumulate", "chunkcodec", lambda: accumulate(data, name), lambda r: same_runs(_texts_of_runs(r)))
    for lib, loads in _loaders().items():
        add("accumulate", lib, lambda loads=loads: _texts_of_dicts([loads(f) for f in _split(data, code)]),
            same_runs)
    for task, key, mine in (("decode", "chunkcodec_speedup", "chunkcodec"),
                            ("decode", "typed_speedup", "chunkcodec typed"),
                            ("accumulate", "chunkcodec_speedup", "chunkcodec")):
        ours = next(r for r in rows if r["task"] == task and r["contender"] == mine)
        for r in rows:
            if r["task"] == task and "seconds" in r and "seconds" in ours:
                r[key] = r["seconds"] / ours["seconds"]
    rep = {"bytes": size, "chunks": want_n, "runs": len(runs), "framing": name, "repeat": repeat, "results": rows}
    if sample_of is not None:
        rep["sample_of"] = sample_of
    return rep


def format_report(rep: dict) -> str:
    sample = f" ({rep['sample_of']})" if "sample_of" in rep else ""
    out = [f"{rep['bytes']:,} bytes{sample}, {rep['chunks']:,} chunks, {rep['runs']:,} runs, {rep['framing']}; "
           f"best of {rep['repeat']}", "",
           f"{'task':<11} {'contender':<17} {'MB/s':>9} {'chunks/s':>12} {'chunkcodec speed-up':>20} "
           f"{'typed speed-up':>15}"]
    for r in rep["results"]:
        if "disagrees" in r:
            out.append(f"{r['task']:<11} {r['contender']:<17} DISAGREES: {r['disagrees']}")
            continue
        ours = r["contender"].startswith("chunkcodec")
        ratio = "" if ours else f"{r['chunkcodec_speedup']:.2f}x"
        typed = "" if ours or "typed_speedup" not in r else f"{r['typed_speedup']:.2f}x"
        out.append(f"{r['task']:<11} {r['contender']:<17} {r['MBps']:>9.1f} {r['chunks_per_s']:>12,.0f} {ratio:>20} "
                   f"{typed:>15}")
    out.append("")
    out.append("decode: every frame to a dict (chunkcodec: iter_dicts); typed: chunkcodec's typed chunks, every "
               "field validated, against the same dict loops.\naccumulate: chunkcodec's whole RunOutput per run against a library's decode loop "
               "plus per-run text only.")
    return "\n".join(out)
