"""Mastra chunks <-> ailoop events.

The mapping, what is synthesized and what is lost each way, is the table in the README
("ailoop StreamChunk"); this module is that table as code.  Both directions keep per-run state,
so interleaved runs convert as separate runs.
"""

from __future__ import annotations

import uuid
from typing import Any, Iterable, Iterator, Optional

import msgspec
from msgspec import UNSET

from .. import chunks as M
from . import _types as T
from ._history import Assembler

__all__ = ["from_mastra", "to_mastra", "run_uuid", "step_uuid", "HISTORY_COMPACTED_TYPE"]

#: Namespace of the UUIDs made for Mastra runIds that are not UUIDs, and for step ids.
NAMESPACE = uuid.UUID("5d3c0f0e-8c1f-4a49-9d8e-2b6a3c1f7e10")
#: The Mastra ``data-*`` chunk that carries a HistoryCompacted event (ailoop -> Mastra -> ailoop).
HISTORY_COMPACTED_TYPE = "data-ailoop-history-compacted"

_REASON_TO_AILOOP = {"stop": "EndTurn", "tool-calls": "ToolUse", "length": "MaxTokens"}
_REASON_TO_MASTRA = {"EndTurn": "stop", "ToolUse": "tool-calls", "MaxTokens": "length",
                     "StopSequence": "stop"}
_MASTRA_REASONS = ("stop", "length", "content-filter", "tool-calls", "error", "other", "unknown")
_USAGE_KEYS = (("input_tokens", "inputTokens"), ("output_tokens", "outputTokens"),
               ("cached_input_tokens", "cachedInputTokens"),
               ("cache_creation_input_tokens", "cacheCreationInputTokens"),
               ("cache_creation_5m_tokens", "cacheCreationInputTokens5m"),
               ("cache_creation_1h_tokens", "cacheCreationInputTokens1h"))


def run_uuid(run_id: str) -> uuid.UUID:
    """A Mastra runId as a RunId: the UUID itself, or a name-based UUID (v5) for other strings."""
    try:
        return uuid.UUID(run_id)
    except (ValueError, TypeError, AttributeError):
        return uuid.uuid5(NAMESPACE, str(run_id))


def step_uuid(run: uuid.UUID, iteration: int) -> uuid.UUID:
    """The StepId made for step `iteration` of a run: stable, so conversions are repeatable."""
    return uuid.uuid5(run, f"step-{iteration}")


# ------------------------------------------------------------------------------------------------
# Mastra -> ailoop

def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= T.U64_MAX else 0


def usage_from_mastra(u: Any) -> T.Usage:
    if not isinstance(u, dict):
        return T.Usage()
    kw = {a: _int(u.get(m)) for a, m in _USAGE_KEYS}
    if isinstance(u.get("reasoningTokens"), int):
        kw["reasoning_tokens"] = _int(u["reasoningTokens"])
    return T.Usage(**kw)


def reason_from_mastra(step_result: Any) -> T.FinishReason:
    sr = step_result if isinstance(step_result, dict) else {}
    reason, raw = sr.get("reason"), sr.get("rawReason")
    if raw == "stop_sequence":
        return T.FinishReason("StopSequence")
    kind = _REASON_TO_AILOOP.get(reason)
    if kind is not None:
        return T.FinishReason(kind)
    return T.FinishReason("Other", reason if isinstance(reason, str) else "unknown")


def _tool_result_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    if result is UNSET:
        return ""
    return msgspec.json.encode(result).decode()


def _error_text(err: Any) -> str:
    if isinstance(err, str):
        return err
    if isinstance(err, dict):
        if isinstance(err.get("message"), str):
            return err["message"]
        cause = err.get("cause")
        if isinstance(cause, dict) and isinstance(cause.get("message"), str):
            return cause["message"]
    return _tool_result_text(err)


def _signature(pm: Any) -> Optional[str]:
    if isinstance(pm, dict):
        for v in pm.values():
            if isinstance(v, dict) and isinstance(v.get("signature"), str) and v["signature"]:
                return v["signature"]
    return None


def _redacted(pm: Any) -> Optional[str]:
    if isinstance(pm, dict):
        for v in pm.values():
            if isinstance(v, dict) and isinstance(v.get("redactedData"), str):
                return v["redactedData"]
    return None


class _RunIn:
    """One Mastra run being turned into events."""

    def __init__(self, run_id: uuid.UUID):
        self.run_id = run_id
        self.started = False
        self.iteration = -1
        self.step_id: Optional[uuid.UUID] = None
        self.in_step = False
        self.sigs: dict = {}            # reasoning id -> signature seen so far
        self.redacted: set = set()      # reasoning ids that were a redacted block
        self.calls_started: set = set()
        self.calls_finished: set = set()
        self.results: list = []         # ToolResults held until the step's TurnFinished
        self.history = Assembler()
        self.finished = False


def _events_from_mastra(chunks: Iterable[Any]) -> Iterator[Any]:
    runs: dict = {}
    current: Optional[_RunIn] = None

    def emit(run: _RunIn, ev: Any) -> Any:
        run.history.add(ev)
        return ev

    def ensure_step(run: _RunIn) -> Iterator[Any]:
        if not run.started:
            run.started = True
            yield emit(run, T.RunStarted(run.run_id))
        if not run.in_step:
            run.in_step = True
            run.iteration += 1
            run.step_id = step_uuid(run.run_id, run.iteration)
            yield emit(run, T.StepStarted(run.run_id, run.step_id, run.iteration))

    def end_step(run: _RunIn, turn: Optional[T.TurnFinished]) -> Iterator[Any]:
        if not run.in_step:
            return
        if turn is not None:
            yield emit(run, turn)
        for r in run.results:
            yield emit(run, r)
        run.results = []
        run.in_step = False
        # the engine appends the results' User message before StepFinished reports the history
        yield emit(run, T.StepFinished(run.run_id, run.step_id, run.iteration, list(run.history.close())))

    def finish_run(run: _RunIn, reason: T.FinishReason, usage: T.Usage) -> Iterator[Any]:
        if not run.started:
            run.started = True
            yield emit(run, T.RunStarted(run.run_id))
        yield from end_step(run, None)
        run.finished = True
        yield emit(run, T.RunFinished(run.run_id, reason, usage, run.history.close()))

    for chunk in chunks:
        tag = getattr(chunk, "type", None) or type(chunk).__struct_config__.tag
        rid = getattr(chunk, "runId", UNSET)
        if isinstance(rid, str):
            run = runs.get(rid)
            if run is None or (run.finished and tag == "start"):     # a new run, or the id reused
                run = runs[rid] = _RunIn(run_uuid(rid))
            elif run.finished:
                continue        # e.g. the finish Mastra sends after abort: the run has ended
            current = run
        elif current is None or current.finished:
            continue            # a chunk without runId and no open run: nothing to attach it to
        else:
            run = current
        p = getattr(chunk, "payload", UNSET)

        if tag == "start":
            if not run.started:
                run.started = True
                yield emit(run, T.RunStarted(run.run_id))
        elif tag == "step-start":
            if run.in_step:
                yield from end_step(run, None)
            yield from ensure_step(run)
        elif tag == "text-delta":
            if p.text:
                yield from ensure_step(run)
                yield emit(run, T.TextDelta(p.text))
        elif tag == "reasoning-start":
            yield from ensure_step(run)
            data = _redacted(p.providerMetadata)
            if data is not None:
                run.redacted.add(p.id)
                yield emit(run, T.RedactedReasoningBlock(data))
            else:
                run.sigs[p.id] = _signature(p.providerMetadata) or p.signature or None
        elif tag == "reasoning-delta":
            if p.id in run.redacted:
                continue
            sig = _signature(p.providerMetadata)
            if sig:
                run.sigs[p.id] = sig
            if p.text:
                yield from ensure_step(run)
                yield emit(run, T.ReasoningDelta(p.text))
        elif tag == "reasoning-signature":
            run.sigs[p.id] = p.signature
        elif tag == "reasoning-end":
            if p.id in run.redacted:
                run.redacted.discard(p.id)
                continue
            yield from ensure_step(run)
            sig = _signature(p.providerMetadata) or p.signature or run.sigs.get(p.id)
            run.sigs.pop(p.id, None)
            yield emit(run, T.ReasoningFinished(sig or None))
        elif tag == "redacted-reasoning":
            yield from ensure_step(run)
            data = p.data if isinstance(p.data, str) else _tool_result_text(p.data)
            yield emit(run, T.RedactedReasoningBlock(data))
        elif tag == "tool-call-input-streaming-start":
            yield from ensure_step(run)
            run.calls_started.add(p.toolCallId)
            yield emit(run, T.ToolCallStarted(p.toolCallId, p.toolName))
        elif tag == "tool-call-delta":
            yield from ensure_step(run)
            if p.toolCallId not in run.calls_started:
                run.calls_started.add(p.toolCallId)
                yield emit(run, T.ToolCallStarted(p.toolCallId, p.toolName or ""))
            yield emit(run, T.ToolCallArgsDelta(p.toolCallId, p.argsTextDelta))
        elif tag == "tool-call":
            yield from ensure_step(run)
            if p.toolCallId in run.calls_finished:
                continue        # a later tool-call for the same id: Mastra lists the first only
            if p.toolCallId not in run.calls_started:
                run.calls_started.add(p.toolCallId)
                yield emit(run, T.ToolCallStarted(p.toolCallId, p.toolName))
            run.calls_finished.add(p.toolCallId)
            yield emit(run, T.ToolCallFinished(p.toolCallId, p.toolName,
                                               {} if p.args is UNSET else p.args))
        elif tag in ("tool-result", "tool-error"):
            yield from ensure_step(run)
            if tag == "tool-result":
                content = T.ToolResultContent([T.TextContent(_tool_result_text(p.result))],
                                              p.isError is True)
            else:
                content = T.ToolResultContent([T.TextContent(_error_text(p.error))], True)
            run.results.append(T.ToolResult(run.run_id, run.step_id, p.toolCallId, content))
        elif tag == "step-finish":
            out = p.output if isinstance(p.output, dict) else {}
            turn = T.TurnFinished(reason_from_mastra(p.stepResult), usage_from_mastra(out.get("usage")))
            if not run.in_step:
                yield from ensure_step(run)
            yield from end_step(run, turn)
        elif tag == "finish":
            out = p.output if isinstance(p.output, dict) else {}
            yield from finish_run(run, reason_from_mastra(p.stepResult), usage_from_mastra(out.get("usage")))
        elif tag == "abort":
            yield from finish_run(run, T.FinishReason("Aborted", "cancelled by caller"), T.Usage())
        elif tag == HISTORY_COMPACTED_TYPE:
            d = chunk.data if isinstance(chunk.data, dict) else {}
            ev = msgspec.convert(d, T.HistoryCompacted)
            yield emit(run, ev)
        # everything else (sources, files, data-*, errors, tripwires, workflow and network
        # events, response metadata...) has no ailoop counterpart: see the README table.
    for run in runs.values():
        if not run.finished and run.started:
            yield from end_step(run, None)


def _chunk_source(source: Any) -> Iterable[Any]:
    import os
    if isinstance(source, (bytes, bytearray, memoryview, str, os.PathLike)) or hasattr(source, "read"):
        import chunkcodec
        return chunkcodec.iter_chunks(source)
    return source


def from_mastra(chunks: Any) -> list:
    """ailoop events for Mastra chunks (typed chunks, or bytes / a path / a file to decode).

    A run becomes RunStarted, then per step StepStarted, the provider events, TurnFinished (from
    step-finish), the ToolResults, StepFinished (with the messages so far, per ailoop's rules),
    and RunFinished from finish (or Aborted from abort).  Runs that never finish end without
    RunFinished, as an ailoop stream that ended in an error does.
    """
    return list(_events_from_mastra(_chunk_source(chunks)))


# ------------------------------------------------------------------------------------------------
# ailoop -> Mastra

def usage_to_mastra(u: T.Usage) -> dict:
    d = {"inputTokens": u.input_tokens, "outputTokens": u.output_tokens,
         "totalTokens": min(T.U64_MAX, u.input_tokens + u.output_tokens)}
    if u.reasoning_tokens is not UNSET:
        d["reasoningTokens"] = u.reasoning_tokens
    for a, m in _USAGE_KEYS[2:]:
        v = getattr(u, a)
        if v:
            d[m] = v
    return d


def reason_to_mastra(r: T.FinishReason) -> tuple[str, str]:
    """(reason, rawReason) of a FinishReason."""
    if r.kind == "Other":
        return (r.detail if r.detail in _MASTRA_REASONS else "other"), r.detail
    if r.kind == "StopSequence":
        return "stop", "stop_sequence"
    if r.kind == "Aborted":
        return "other", str(r.detail)
    m = _REASON_TO_MASTRA[r.kind]
    return m, m


def _result_value(text: str) -> Any:
    """A tool result's text back to Mastra's JSON value: parsed when it is JSON other than a
    string literal (what from_mastra wrote for a non-string result), else the text itself."""
    s = text.lstrip()
    if s[:1] not in ("", '"'):
        try:
            return msgspec.json.decode(text)
        except msgspec.DecodeError:
            pass
    return text


class _RunOut:
    def __init__(self, run_id: str):
        self.run_id = run_id
        self.text_id: Optional[str] = None
        self.reasoning_id: Optional[str] = None
        self.parts = 0
        self.tools: dict = {}           # call id -> (name, args)
        self.turn: Optional[T.TurnFinished] = None
        self.in_step = False


def _chunks_to_mastra(events: Iterable[Any], default_run: str) -> Iterator[Any]:
    runs: dict = {}
    cur: Optional[_RunOut] = None
    A = "AGENT"

    def run_for(run_id: Any) -> _RunOut:
        nonlocal cur
        key = str(run_id)
        r = runs.get(key)
        if r is None:
            r = runs[key] = _RunOut(key)
        cur = r
        return r

    def close_text(r: _RunOut) -> Iterator[Any]:
        if r.text_id is not None:
            yield M.TextEnd(runId=r.run_id, from_=A, payload=M.TextEndPayload(type="text-end", id=r.text_id))
            r.text_id = None

    def close_reasoning(r: _RunOut, sig: Optional[str]) -> Iterator[Any]:
        pm = {"anthropic": {"signature": sig}} if sig else UNSET
        if r.reasoning_id is None:
            r.parts += 1
            r.reasoning_id = f"r-{r.parts}"
            yield M.ReasoningStart(runId=r.run_id, from_=A, payload=M.ReasoningStartPayload(id=r.reasoning_id))
        yield M.ReasoningEnd(runId=r.run_id, from_=A,
                             payload=M.ReasoningEndPayload(id=r.reasoning_id, providerMetadata=pm))
        r.reasoning_id = None

    def step_start(r: _RunOut) -> Iterator[Any]:
        if not r.in_step:
            r.in_step = True
            yield M.StepStart(runId=r.run_id, from_=A, payload=M.StepStartPayload(request={}, warnings=[]))

    def step_finish(r: _RunOut) -> Iterator[Any]:
        if not r.in_step and r.turn is None:
            return
        yield from close_text(r)
        turn = r.turn or T.TurnFinished(T.FinishReason("EndTurn"), T.Usage())
        reason, raw = reason_to_mastra(turn.reason)
        r.turn = None
        r.in_step = False
        yield M.StepFinish(runId=r.run_id, from_=A, payload=M.StepFinishPayload(
            stepResult={"reason": reason, "rawReason": raw, "isContinued": turn.reason.kind == "ToolUse"},
            output={"usage": usage_to_mastra(turn.usage)}, metadata={}))

    for ev in events:
        cls = type(ev)
        run_id = getattr(ev, "run_id", None)
        r = run_for(run_id) if run_id is not None else (cur or run_for(default_run))
        rid = r.run_id
        if cls is T.RunStarted:
            yield M.Start(runId=rid, from_=A, payload=M.StartPayload())
        elif cls is T.StepStarted:
            if r.in_step:
                yield from step_finish(r)
            yield from step_start(r)
        elif cls is T.TextDelta:
            yield from step_start(r)
            if r.text_id is None:
                r.parts += 1
                r.text_id = f"t-{r.parts}"
                yield M.TextStart(runId=rid, from_=A, payload=M.TextStartPayload(id=r.text_id))
            yield M.TextDelta(runId=rid, from_=A, payload=M.TextDeltaPayload(id=r.text_id, text=ev.delta))
        elif cls is T.ReasoningDelta:
            yield from step_start(r)
            yield from close_text(r)
            if r.reasoning_id is None:
                r.parts += 1
                r.reasoning_id = f"r-{r.parts}"
                yield M.ReasoningStart(runId=rid, from_=A, payload=M.ReasoningStartPayload(id=r.reasoning_id))
            yield M.ReasoningDelta(runId=rid, from_=A,
                                   payload=M.ReasoningDeltaPayload(id=r.reasoning_id, text=ev.delta))
        elif cls is T.ReasoningFinished:
            yield from step_start(r)
            yield from close_text(r)
            yield from close_reasoning(r, ev.signature)
        elif cls is T.RedactedReasoningBlock:
            yield from step_start(r)
            yield from close_text(r)
            r.parts += 1
            pm = {"anthropic": {"redactedData": ev.data}}
            yield M.ReasoningStart(runId=rid, from_=A,
                                   payload=M.ReasoningStartPayload(id=f"r-{r.parts}", providerMetadata=pm))
            yield M.ReasoningEnd(runId=rid, from_=A,
                                 payload=M.ReasoningEndPayload(id=f"r-{r.parts}", providerMetadata=pm))
        elif cls is T.ToolCallStarted:
            yield from step_start(r)
            yield from close_text(r)
            r.tools[ev.id] = (ev.name, UNSET)
            yield M.ToolCallInputStreamingStart(runId=rid, from_=A, payload=M.ToolCallInputStreamingStartPayload(
                toolCallId=ev.id, toolName=ev.name))
        elif cls is T.ToolCallArgsDelta:
            yield from step_start(r)
            name = r.tools.get(ev.id, ("", UNSET))[0]
            yield M.ToolCallDelta(runId=rid, from_=A, payload=M.ToolCallDeltaPayload(
                argsTextDelta=ev.delta, toolCallId=ev.id, toolName=name or UNSET))
        elif cls in (T.ToolCallFinished, T.ToolCallMalformed):
            yield from step_start(r)
            args = ev.args if cls is T.ToolCallFinished else {}
            if ev.id in r.tools:
                yield M.ToolCallInputStreamingEnd(runId=rid, from_=A,
                                                  payload=M.ToolCallInputStreamingEndPayload(toolCallId=ev.id))
            r.tools[ev.id] = (ev.name, args)
            yield M.ToolCall(runId=rid, from_=A, payload=M.ToolCallPayload(
                toolCallId=ev.id, toolName=ev.name, args=args))
        elif cls is T.TurnFinished:
            yield from close_text(r)
            r.turn = ev
        elif cls is T.ToolResult:
            yield from close_text(r)
            name, args = r.tools.get(ev.call_id, ("", UNSET))
            text = ev.content.collect_text()
            if ev.content.is_error:
                yield M.ToolError(runId=rid, from_=A, payload=M.ToolErrorPayload(
                    error=text, args=args, toolCallId=ev.call_id, toolName=name))
            else:
                yield M.ToolResult(runId=rid, from_=A, payload=M.ToolResultPayload(
                    args=args, toolCallId=ev.call_id, toolName=name, result=_result_value(text)))
        elif cls is T.StepFinished:
            yield from step_finish(r)
        elif cls is T.RunFinished:
            yield from step_finish(r)
            if ev.reason.kind == "Aborted":
                yield M.Abort(runId=rid, from_=A, payload=M.AbortPayload())
            reason, raw = reason_to_mastra(ev.reason)
            yield M.Finish(runId=rid, from_=A, payload=M.FinishPayload(
                stepResult={"reason": reason, "rawReason": raw, "isContinued": False},
                output={"usage": usage_to_mastra(ev.usage)}, metadata={}))
        elif cls is T.HistoryCompacted:
            yield M.DataChunk(type=HISTORY_COMPACTED_TYPE, runId=rid, from_=A,
                              data=msgspec.to_builtins(ev))
        else:
            raise TypeError(f"expected an ailoop event, got {cls.__name__}")
    for r in runs.values():
        if r.in_step or r.turn is not None:
            yield from step_finish(r)


def to_mastra(events: Iterable[Any], run_id: Optional[str] = None) -> list:
    """Mastra chunks (typed, as chunkcodec decodes them) for ailoop events.

    Events without a run id (the provider events) belong to the run of the last lifecycle event;
    before any, to `run_id` (default: a new UUID).  Text, reasoning and tool-call parts get ids
    ``t-N``/``r-N``; TurnFinished becomes step-finish (at StepFinished, where Mastra puts it, after
    the tool results); RunFinished becomes finish, preceded by abort when the reason is Aborted.
    """
    return list(_chunks_to_mastra(events, run_id or str(uuid.uuid4())))
