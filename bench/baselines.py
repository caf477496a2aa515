"""The fastest pure-Python accumulators we could write, to measure chunkcodec.accumulate against.

Each returns {runId: (text, reasoning, {toolCallId: args}, usage totals, finish reason)} for a log
of interleaved runs, the answer the benchmark checks every contender against first.
"""

from __future__ import annotations

import gc
import json
from typing import Any, Dict, Union

import msgspec


class _Id(msgspec.Struct):
    id: str
    text: str


class _Args(msgspec.Struct):
    toolCallId: str
    argsTextDelta: str


class _Out(msgspec.Struct):
    usage: Dict[str, Any] = {}


class _Fin(msgspec.Struct):
    stepResult: Dict[str, Any] = {}
    output: _Out = msgspec.field(default_factory=_Out)


class _Call(msgspec.Struct):
    toolCallId: str
    toolName: str = ""
    args: Any = None


class TextDelta(msgspec.Struct, tag="text-delta", tag_field="type"):
    payload: _Id
    runId: str = ""


class ReasoningDelta(msgspec.Struct, tag="reasoning-delta", tag_field="type"):
    payload: _Id
    runId: str = ""


class ToolCallDelta(msgspec.Struct, tag="tool-call-delta", tag_field="type"):
    payload: _Args
    runId: str = ""


class StepFinish(msgspec.Struct, tag="step-finish", tag_field="type"):
    payload: _Fin
    runId: str = ""


class Finish(msgspec.Struct, tag="finish", tag_field="type"):
    payload: _Fin
    runId: str = ""


class ToolCall(msgspec.Struct, tag="tool-call", tag_field="type"):
    payload: _Call
    runId: str = ""


def _other(tag: str) -> type:
    return msgspec.defstruct(tag.title().replace("-", ""), [("runId", str, "")], tag=tag, tag_field="type")


_OTHERS = [_other(t) for t in ("start", "step-start", "text-start", "text-end", "reasoning-start",
                               "reasoning-end", "tool-call-input-streaming-start",
                               "tool-call-input-streaming-end", "tool-result", "tool-error", "source",
                               "file", "error", "abort")]
Minimal = Union[tuple([TextDelta, ReasoningDelta, ToolCallDelta, StepFinish, Finish, ToolCall] + _OTHERS)]
decoder = msgspec.json.Decoder(Minimal)


class _Run:
    __slots__ = ("text", "reasoning", "args", "usage", "reason")

    def __init__(self) -> None:
        self.text: list = []
        self.reasoning: list = []
        self.args: dict = {}
        self.usage: dict = {}
        self.reason = None

    def answer(self) -> tuple:
        return ("".join(self.text), "".join(self.reasoning),
                {k: "".join(v) for k, v in self.args.items()}, self.usage, self.reason)


def _usage(run: _Run, usage: dict) -> None:
    for k in ("inputTokens", "outputTokens", "totalTokens"):
        v = usage.get(k)
        if v is not None:
            run.usage[k] = run.usage.get(k, 0) + v


def msgspec_accumulate(chunks) -> dict:
    """Typed minimal tagged union (what ``decoder`` gives), one pass."""
    runs: Dict[str, _Run] = {}
    for c in chunks:
        t = type(c)
        run = runs.get(c.runId)
        if run is None:
            run = runs[c.runId] = _Run()
        if t is TextDelta:
            run.text.append(c.payload.text)
        elif t is ToolCallDelta:
            p = c.payload
            run.args.setdefault(p.toolCallId, []).append(p.argsTextDelta)
        elif t is ReasoningDelta:
            run.reasoning.append(c.payload.text)
        elif t is StepFinish:
            _usage(run, c.payload.output.usage)
            run.reason = c.payload.stepResult.get("reason")
        elif t is Finish:
            run.reason = c.payload.stepResult.get("reason")
    return {k: r.answer() for k, r in runs.items()}


def msgspec_ndjson(data: bytes) -> dict:
    return msgspec_accumulate(decoder.decode_lines(data))


def msgspec_sse(data: bytes) -> dict:
    """The best pure-Python SSE path we know: split events on bytes, strip the field name."""
    dec = decoder.decode
    frames = []
    for ev in data.split(b"\n\n"):
        if ev.startswith(b"data: ") and ev != b"data: [DONE]":
            frames.append(dec(ev[6:]))
    return msgspec_accumulate(frames)


def json_accumulate(dicts) -> dict:
    runs: Dict[str, _Run] = {}
    for d in dicts:
        rid = d.get("runId", "")
        run = runs.get(rid)
        if run is None:
            run = runs[rid] = _Run()
        t = d["type"]
        p = d.get("payload")
        if t == "text-delta":
            run.text.append(p["text"])
        elif t == "tool-call-delta":
            run.args.setdefault(p["toolCallId"], []).append(p["argsTextDelta"])
        elif t == "reasoning-delta":
            run.reasoning.append(p["text"])
        elif t == "step-finish":
            _usage(run, p["output"]["usage"])
            run.reason = p["stepResult"].get("reason")
        elif t == "finish":
            run.reason = p["stepResult"].get("reason")
    return {k: r.answer() for k, r in runs.items()}


def json_ndjson(data: bytes) -> dict:
    return json_accumulate(json.loads(line) for line in data.split(b"\n") if line)


def json_ndjson_text(data: bytes) -> dict:
    """The same loop over the log decoded to text once, as a file opened in text mode gives it:
    json.loads of a str skips the decode it makes of each bytes line (about 6 % faster on the
    bench's log).  Split on "\n", never with splitlines(): a JSON string may hold a raw U+2028."""
    return json_accumulate(json.loads(line) for line in data.decode("utf-8").split("\n") if line)


def httpx_sse_json(pieces) -> dict:
    import httpx
    from httpx_sse import EventSource

    resp = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=iter(pieces))
    return json_accumulate(json.loads(ev.data) for ev in EventSource(resp).iter_sse() if ev.data != "[DONE]")


def msgspec_sse_live(pieces) -> dict:
    """msgspec_sse for a live consumer: each network read appended to what was left, the complete
    events split off and decoded as they arrive."""
    dec = decoder.decode
    frames = []
    buf = b""
    for piece in pieces:
        buf += piece
        *events, buf = buf.split(b"\n\n")
        for ev in events:
            if ev.startswith(b"data: ") and ev != b"data: [DONE]":
                frames.append(dec(ev[6:]))
    return msgspec_accumulate(frames)


def paused(fn):
    """fn with the garbage collector off while it runs, as chunkcodec.accumulate pauses it: a
    pure-Python accumulator can do the same, so the targets are measured against this too."""
    def run(*args):
        was = gc.isenabled()
        gc.disable()
        try:
            return fn(*args)
        finally:
            if was:
                gc.enable()
    return run


def chunkcodec_answer(runs) -> dict:
    """The same answer from chunkcodec RunOutputs (all steps' text, as the baselines join it)."""
    out = {}
    for r in runs:
        usage = {k: r.usage[k] for k in ("inputTokens", "outputTokens", "totalTokens") if k in r.usage}
        out[r.run_id] = ("".join(s.text for s in r.steps), r.reasoning_text or "", usage, r.finish_reason)
    return out


def baseline_answer(ans: dict) -> dict:
    return {k: (v[0], v[1], v[3], v[4]) for k, v in ans.items()}
