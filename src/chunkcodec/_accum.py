"""Reassembling agent runs from chunks, the way Mastra's ``MastraModelOutput`` resolves them.

One source for both paths.  The reference path imports this module as it is.  The native path
runs the same source compiled by Cython as ``chunkcodec._accumc`` (CMakeLists.txt), where
``_accumc.pxd`` makes the per-run classes (``_Part``, ``_ToolArgs``, ``_PendingCall``, ``_Step``,
``_Run``) and the per-result ``_Memo`` cdef classes with typed fields and their hot methods cpdef,
and ``_run_of`` and ``_other`` C functions: the same rules, 14-21 % fewer instructions (README,
"How it is built").  What else differs is only how delta text reaches the buffers and leaves
them: the reference path (and ``Accumulator.add``) appends ``str.encode()``d text; the native
``feed`` unescapes delta frames in C straight into the same kind of ``bytearray`` buffers and calls
back here only when a delta starts a new part (see ``_route``) or for the other chunks; and each
impl's ``DeltaBuf.text`` makes the str (the native one in C).  (So this module must stay valid
for Cython's pure-Python mode: an attribute of those classes is declared in the .pxd as well as in
``__slots__``.)

Buffers.  Every run has one UTF-8 buffer for text and one for reasoning, in arrival order (which
is what Mastra's ``text``/``reasoningText`` join), plus one per tool call for its argument JSON.  A
step is a range of the run buffers; a part (one ``payload.id`` from its first delta to its
``*-end``) is a list of ranges.  A buffer's ``owner`` is the part that is writing at its end, so a
delta for the owner is a plain append: nothing else has to be updated.

The rules, and where Mastra's documentation is silent or its behaviour surprising, are in the
README ("Accumulation") and in ``../shared/spec/mastra-format.md`` section 3.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Iterator, List, Optional

import msgspec
from msgspec import UNSET

from . import chunks as _c
from ._model import convert_item
from ._results import (PartialJSON, RunOutput, StepResult, _builtins, _complete_utf8, join_surrogates,
                       parse_args)
from .errors import DecodeError, InvalidFrame

__all__ = ["RunOutput", "StepResult", "AccumulatorBase", "PartialJSON"]

_PRIMARY = ("inputTokens", "outputTokens", "totalTokens")
_DETAIL = ("reasoningTokens", "cachedInputTokens", "cacheCreationInputTokens",
           "cacheCreationInputTokens5m", "cacheCreationInputTokens1h")
_DETAIL_SET = frozenset(_DETAIL)
_USAGE_KEYS = _PRIMARY + _DETAIL


def _v(x: Any) -> Any:
    return None if x is UNSET else x


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


#: Ranges up to this many bytes are sliced (copied) before decoding; longer ones are decoded
#: straight from the buffer.  A copy of a few KB costs less than the memoryview set-up (about
#: 1 us against 0.3), and most of a run's ranges are short; a copy of megabytes would not be.
_COPY_MAX = 1 << 16


def _utf8(buf: bytearray, start: int, end: int) -> str:
    """buf[start:end] as text (end <= len(buf)): the reference path's DeltaBuf.text (the native
    one decodes in C, at the str's final size and kind).  Surrogates (from a str with lone ones
    given to add(), written with surrogatepass) are joined where a high one meets a low one, as
    JavaScript's concatenation of the deltas joins them (join_surrogates)."""
    if end <= start:
        return ""
    if end - start <= _COPY_MAX:
        s = buf[start:end].decode("utf-8", "surrogatepass")
    else:
        with memoryview(buf) as view:       # a memoryview slice copies nothing
            s = str(view[start:end], "utf-8", "surrogatepass")
    return join_surrogates(s) if _SURROGATE_BYTES.search(buf, start, end) else s


#: A surrogate's bytes as surrogatepass writes them (not UTF-8: only a str given to add() has them).
_SURROGATE_BYTES = re.compile(rb"\xed[\xa0-\xbf]")


#: How many ranges _Memo looks through in order before it keeps the rest in a dict.
_MEMO_LIST = 8


class _Memo:
    """The decoder of one result(): each byte range of a buffer is decoded once (a run's text,
    its steps' texts and its parts' texts are mostly the same ranges)."""

    __slots__ = ("memo", "more")

    def __init__(self) -> None:
        # (buffer, start, end, text) for the first _MEMO_LIST ranges, looked through in order (a
        # dict keyed by a tuple made and hashed on every call costs more than that walk, for the
        # handful of ranges a run has); the ranges after them in `more`, keyed by (id(buffer),
        # start, end), so that a run of thousands of parts is not looked through for each
        self.memo: list = []
        self.more: Optional[dict] = None

    def get(self, buf: Any, start: int = 0, end: int = -1) -> str:
        """A delta buffer's bytes [start:end] as text (its ``text()``: on the native path decoded
        in C, on the reference path by ``_utf8``); end -1 or past the buffer: to its end."""
        n = len(buf)
        if end < 0 or end > n:
            end = n
        if end <= start:
            return ""
        for e in self.memo:
            if e[0] is buf and e[1] == start and e[2] == end:
                return e[3]
        more = self.more
        if more is not None:
            s = more.get((id(buf), start, end))
            if s is not None:
                return s
        s = buf.text(start, end)
        if len(self.memo) < _MEMO_LIST:
            self.memo.append((buf, start, end, s))
        else:
            if more is None:
                more = self.more = {}
            more[(id(buf), start, end)] = s    # (the buffers outlive the memo: ids stay theirs)
        return s


# --------------------------------------------------------------------------------------------
# Per-run state

class _Part:
    """A text or reasoning part: one ``payload.id`` from its first delta to its ``*-end``."""

    __slots__ = ("kind", "id", "buf", "segs", "tail", "pm", "redacted", "listed")

    def __init__(self, kind: str, id_: Any, buf: Any, pm: Any) -> None:
        self.kind = kind
        self.id = id_
        self.buf = buf
        self.segs: list = []
        self.tail = -1          # start of the range it is writing at the end of buf, or -1
        self.pm = pm
        self.redacted = False
        self.listed = False     # has its place in the message parts

    def set_pm(self, pm: Any) -> None:
        """A delta's providerMetadata (last seen wins).  (The native delta loop takes a delta
        whose providerMetadata is the one its route stored with the part's last; a part still
        writing at its buffer's end re-takes it here, which on the native path drops the routes to
        the buffer: one set on any other path is then the one a later delta is compared with.)"""
        self.pm = pm
        if self.buf.owner is self:
            self.buf.owner = self

    def seal(self) -> None:
        if self.tail >= 0:
            end = len(self.buf)
            if end > self.tail:
                self.segs.append((self.tail, end))
            self.tail = -1
        if self.buf.owner is self:
            self.buf.owner = None

    def take(self) -> None:
        """Make this part the writer at the end of its buffer."""
        owner = self.buf.owner
        if owner is self:
            return
        if owner is not None:
            owner.seal()
        self.buf.owner = self
        self.tail = len(self.buf)

    def text(self, dec: _Memo) -> str:
        buf, segs = self.buf, self.segs
        if not segs:                   # (the usual part: one range, still open or sealed)
            return dec.get(buf, self.tail) if self.tail >= 0 else ""
        if len(segs) == 1 and self.tail < 0:
            return dec.get(buf, segs[0][0], segs[0][1])
        out = [dec.get(buf, a, b) for a, b in segs]
        if self.tail >= 0:
            out.append(dec.get(buf, self.tail))
        return "".join(out)


class _ToolArgs:
    __slots__ = ("id", "name", "buf", "start", "parser", "fed")

    def __init__(self, id_: str, name: Any, buf: Any, start: Any) -> None:
        self.id = id_
        self.name = name
        self.buf = buf
        self.start = start      # the tool-call-input-streaming-start payload (or None)
        self.parser: Optional[PartialJSON] = None
        self.fed = 0            # bytes of buf the parser has seen


class _PendingCall:
    """The tool-call Mastra makes at tool-call-input-streaming-end, until a tool-call chunk takes
    its place (as one nearly always does): what it is made from, as it stood then.  make() builds
    it, when a result() needs it."""

    __slots__ = ("ta", "end", "name", "start")

    def __init__(self, ta: _ToolArgs) -> None:
        self.ta = ta
        self.end = len(ta.buf)      # (argument deltas arriving later are not its own)
        self.name = ta.name
        self.start = ta.start

    def make(self, run: "_Run") -> Any:
        kw: Dict[str, Any] = {"toolCallId": self.ta.id, "toolName": self.name or "",
                              "args": parse_args(self.ta.buf.text(0, self.end))}
        s = self.start
        if s is not None:
            for k in ("providerExecuted", "providerMetadata", "dynamic", "title"):
                val = getattr(s, k, UNSET)
                if val is not UNSET:
                    kw[k] = val
        return _c.ToolCall(runId=run.run_id if run.run_id is not None else UNSET, from_=run.from_,
                           payload=_c.ToolCallPayload(**kw))


class _Step:
    __slots__ = ("index", "t0", "r0", "t1", "r1", "tool_call_ids", "tool_result_ids", "sources",
                 "files", "warnings", "reason", "usage", "pm", "resp_id", "model_id")

    def __init__(self, index: int, t0: int, r0: int, warnings: Any) -> None:
        self.index = index
        self.t0, self.r0 = t0, r0
        self.t1 = self.r1 = -1
        self.tool_call_ids: list = []
        self.tool_result_ids: list = []
        self.sources: list = []
        self.files: list = []
        self.warnings = warnings if isinstance(warnings, list) else []
        self.reason = None
        self.usage: dict = {}
        self.pm = None
        self.resp_id = self.model_id = None


class _Run:
    __slots__ = ("new_buf", "all_tool_args", "run_id", "from_", "text", "rbuf", "open_text", "open_reasoning",
                 "text_pm", "reasoning", "saw_reasoning", "seq", "steps", "cur", "tool_calls", "pending", "tool_args",
                 "tool_results", "tool_errors", "sources", "files", "any_tool", "u", "u_dead", "u_raw",
                 "u_steps", "finish_usage", "finish_reason", "terminal", "status", "finished", "error",
                 "tripwire", "object", "suspend_payload", "pm")

    def __init__(self, acc: "AccumulatorBase", run_id: Optional[str], from_: Any) -> None:
        # (no reference back to acc: a run that holds its accumulator makes a reference cycle, and
        # every run of every log would wait for the garbage collector to be freed)
        Buf = self.new_buf = acc._Buf
        self.all_tool_args = acc._tool_args
        self.run_id = run_id
        self.from_ = from_ if isinstance(from_, str) else "AGENT"
        self.text = Buf()
        self.rbuf = Buf()
        self.open_text: Dict[Any, _Part] = {}
        self.open_reasoning: Dict[Any, _Part] = {}
        self.text_pm: Dict[Any, Any] = {}
        self.reasoning: List[_Part] = []
        self.saw_reasoning = False
        self.seq: list = []            # message parts in stream order: (kind, value)
        self.steps: List[_Step] = []
        self.cur: Optional[_Step] = None
        self.tool_calls: Dict[str, Any] = {}   # toolCallId -> the chunk, or a _PendingCall
        self.pending = False                   # tool_calls holds a _PendingCall
        self.tool_args: Dict[str, _ToolArgs] = {}
        self.tool_results: list = []
        self.tool_errors: list = []
        self.sources: list = []
        self.files: list = []
        self.any_tool = False
        self.u: Dict[str, Any] = {}
        self.u_dead: set = set()
        self.u_raw: Any = UNSET
        self.u_steps = 0
        self.finish_usage: Any = UNSET
        self.finish_reason: Optional[str] = None
        self.terminal: Optional[str] = None   # error | abort | tripwire | suspended
        self.status = "running"
        self.finished = False     # a finish chunk arrived: nothing more is expected
        self.error: Optional[dict] = None
        self.tripwire: Optional[dict] = None
        self.object: Any = None
        self.suspend_payload: Optional[dict] = None
        self.pm: Any = None

    def release(self) -> None:
        """No buffer of the run keeps a writer: the part writing at the end of one is sealed, as
        when another part takes over (a later delta for it starts a new range).  Then no decoder
        route leads to the run, and a buffer and its owner no longer make a reference cycle.
        Done when the input ends, and when a run is handed out and dropped (the same runId
        arriving again then starts a new run)."""
        for buf in (self.text, self.rbuf):
            if buf.owner is not None:
                buf.owner.seal()
        for ta in self.tool_args.values():
            ta.buf.owner = None

    # -- steps -------------------------------------------------------------------------------
    def step(self) -> _Step:
        if self.cur is None:
            self.cur = _Step(len(self.steps), len(self.text), len(self.rbuf), None)
        return self.cur

    def step_start(self, warnings: Any) -> None:
        if self.cur is not None and self.cur.t1 < 0 and (
                len(self.text) > self.cur.t0 or len(self.rbuf) > self.cur.r0
                or self.cur.tool_call_ids or self.cur.sources or self.cur.files):
            return  # a step-start inside a step that already has content: keep the step
        self.cur = _Step(len(self.steps), len(self.text), len(self.rbuf), warnings)

    def step_finish(self, reason: Any, warnings: Any, usage: Any, resp_id: Any, model_id: Any,
                    pm: Any) -> None:
        st = self.step()
        st.t1, st.r1 = len(self.text), len(self.rbuf)
        st.reason = reason if isinstance(reason, str) else None
        if isinstance(warnings, list):
            st.warnings = warnings
        st.usage = usage if isinstance(usage, dict) else {}
        st.resp_id = resp_id if isinstance(resp_id, str) else None
        st.model_id = model_id if isinstance(model_id, str) else None
        st.pm = pm if isinstance(pm, dict) else None
        self.steps.append(st)
        self.cur = None
        self._add_usage(st.usage)
        if self.terminal is None and st.reason is not None:
            self.finish_reason = st.reason
        if st.pm is not None:
            self.pm = st.pm

    def _add_usage(self, usage: dict) -> None:
        self.u_steps += 1
        u, dead = self.u, self.u_dead
        for k in _PRIMARY:
            if k in dead:
                continue
            v = usage.get(k)
            if type(v) is int or type(v) is float or _num(v):
                u[k] = u.get(k, 0) + v
            else:
                dead.add(k)
                u.pop(k, None)
        # the detail counters, in any order (usage() puts them in Mastra's): a walk of the few
        # keys there are, not a lookup of each of the five (nor a call of isdisjoint, which
        # compiled is a generic method call, a quarter of this method's time)
        for k, v in usage.items():
            if k in _DETAIL_SET and v is not None and _num(v):
                u[k] = u.get(k, 0) + v
        self.u_raw = usage.get("raw", UNSET)

    def finish_frame(self, step: bool, f: tuple) -> None:
        """A step-finish (step) or finish frame, its fields as pick_finish gives them."""
        if step:    # (the arguments one by one: a call with *f goes through Python on the native path)
            self.step_finish(f[0], f[1], f[2], f[3], f[4], f[5])
        else:
            self.finish(f[0], f[2], f[5])

    def finish(self, reason: Any, usage: Any, pm: Any) -> None:
        self.finished = True
        if isinstance(usage, dict):
            self.finish_usage = usage
        if isinstance(pm, dict):
            self.pm = pm
        if self.terminal is None:
            self.status = "success"
            if isinstance(reason, str):
                self.finish_reason = reason

    def usage(self) -> Dict[str, Any]:
        if self.terminal is not None:
            return {}
        if self.u_steps == 0 and isinstance(self.finish_usage, dict):
            return dict(self.finish_usage)
        u = self.u
        # the totals are always first and in order (a total missing from the first step is
        # dead); detail counters are in the order they first appeared, so they are put in order
        out = dict(u) if _DETAIL_SET.isdisjoint(u) else {k: u[k] for k in _USAGE_KEYS if k in u}
        if self.u_raw is not UNSET:
            out["raw"] = self.u_raw
        return out

    def total_usage(self, usage: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """(usage: what usage() gives now, when the caller has it)"""
        if self.terminal == "tripwire":
            return {}
        if self.terminal is not None:
            return {"totalTokens": 0}
        out = self.usage() if usage is None else dict(usage)
        if "totalTokens" not in out and _num(out.get("inputTokens")) and _num(out.get("outputTokens")):
            out["totalTokens"] = out["inputTokens"] + out["outputTokens"]
            # keep Mastra's key order: totals before details
            out = {k: out[k] for k in _USAGE_KEYS + ("raw",) if k in out}
        return out

    def terminate(self, kind: str, status: Optional[str], reason: str) -> None:
        if self.terminal is None:
            self.terminal = kind
            self.finish_reason = reason
            if status is not None:
                self.status = status

    # -- text and reasoning ------------------------------------------------------------------
    def text_part(self, id_: Any, pm: Any) -> _Part:
        """The open text part for id, opened on its first delta."""
        part = self.open_text.get(id_)
        if part is None:
            stashed = self.text_pm.pop(id_, UNSET)
            part = _Part("text", id_, self.text, stashed if pm is UNSET else pm)
            self.open_text[id_] = part
            self.seq.append(("span", part))
            part.listed = True
            self.step()
        elif pm is not UNSET:
            part.set_pm(pm)
        part.take()
        return part

    def end_text(self, id_: Any, pm: Any) -> None:
        part = self.open_text.pop(id_, None)
        if part is not None:
            if pm is not UNSET:
                part.pm = pm
            part.seal()
        self.text_pm.pop(id_, None)

    def reasoning_part(self, id_: Any, pm: Any, start: bool) -> _Part:
        part = self.open_reasoning.get(id_)
        if part is None or start:
            if part is not None:
                part.seal()
            part = _Part("reasoning", id_, self.rbuf, pm)
            self.open_reasoning[id_] = part
            self.reasoning.append(part)
            self.step()
        elif pm is not UNSET:
            part.set_pm(pm)
        return part

    def reasoning_delta(self, id_: Any, pm: Any) -> _Part:
        part = self.reasoning_part(id_, pm, False)
        self.saw_reasoning = True
        if not part.listed:
            self.seq.append(("span", part))
            part.listed = True
        part.take()
        return part

    # -- tools -------------------------------------------------------------------------------
    def tool_args_for(self, call_id: str, name: Any, start: Any) -> _ToolArgs:
        ta = self.tool_args.get(call_id)
        if ta is None:
            ta = _ToolArgs(call_id, name, self.new_buf(), start)
            self.tool_args[call_id] = ta
            self.all_tool_args[call_id] = ta
            self.step()
        elif start is not None:
            ta.start = start
        if not ta.name and isinstance(name, str):
            ta.name = name
        return ta

    def tool_call(self, chunk: Any, call_id: str) -> None:
        if call_id not in self.tool_calls:
            self.seq.append(("tool", call_id))
        self.tool_calls[call_id] = chunk
        st = self.step()
        if call_id not in st.tool_call_ids:
            st.tool_call_ids.append(call_id)
        self.any_tool = True

    def tool_result(self, chunk: Any, call_id: Any) -> None:
        self.tool_results.append(chunk)
        st = self.step()
        st.tool_result_ids.append(call_id)
        self.any_tool = True

    def input_end(self, call_id: str) -> None:
        """tool-call-input-streaming-end: the call Mastra makes there, unless one came."""
        ta = self.tool_args.get(call_id)
        if ta is not None and call_id not in self.tool_calls:
            self.tool_call(_PendingCall(ta), call_id)
            self.pending = True

    def calls(self) -> Dict[str, Any]:
        """tool_calls, with the pending calls made."""
        calls = self.tool_calls
        if self.pending:
            for k, c in list(calls.items()):
                if type(c) is _PendingCall:
                    calls[k] = c.make(self)
            self.pending = False
        return calls

    # -- output ------------------------------------------------------------------------------
    def result(self) -> RunOutput:
        # (called once per run by accumulate(): written for speed)
        done = self.steps
        last = self.cur if self.cur is not None else (done[-1] if done else None)
        dec = _Memo()
        tbuf, rbuf = self.text, self.rbuf
        if self.any_tool and last is not None:
            text = dec.get(tbuf, last.t0, last.t1)
        else:
            text = dec.get(tbuf)
        steps = []
        calls, results = self.calls(), self.tool_results
        for st in done:
            ids, rids = st.tool_call_ids, st.tool_result_ids
            steps.append(StepResult(
                step_type="initial" if st.index == 0 else "tool-result",
                text=dec.get(tbuf, st.t0, st.t1),
                # (a step without reasoning, the usual one: no call)
                reasoning_text=dec.get(rbuf, st.r0, st.r1) if st.r1 < 0 or st.r1 > st.r0 else "",
                finish_reason=st.reason, usage=st.usage,
                tool_calls=[calls[i] for i in ids if i in calls] if ids else [],
                tool_results=[c for c in results if _call_id(c) in rids] if rids else [],
                sources=st.sources[:], files=st.files[:], warnings=st.warnings,
                provider_metadata=st.pm, response_id=st.resp_id, response_model_id=st.model_id))
        usage = self.usage()
        return RunOutput(
            run_id=self.run_id, text=text,
            reasoning_text=dec.get(rbuf) if self.saw_reasoning else None,
            reasoning=[self._reasoning_entry(p, dec) for p in self.reasoning] if self.reasoning else [],
            tool_calls=list(calls.values()), tool_results=results[:], tool_errors=self.tool_errors[:],
            usage=usage, total_usage=self.total_usage(usage), finish_reason=self.finish_reason,
            object=self.object, sources=self.sources[:], files=self.files[:],
            warnings=done[-1].warnings if done else [], provider_metadata=self.pm, steps=steps,
            error=self.error, tripwire=self.tripwire, status=self.status,
            suspend_payload=self.suspend_payload, parts=self._parts(dec), invalid_frames=[])

    def _reasoning_entry(self, p: _Part, dec: _Memo) -> dict:
        payload: Dict[str, Any] = {"id": p.id}
        if p.pm is not UNSET and p.pm is not None:
            payload["providerMetadata"] = p.pm
        payload["text"] = p.text(dec)
        d: Dict[str, Any] = {"type": "reasoning"}
        if self.run_id is not None:
            d["runId"] = self.run_id
        d["from"] = self.from_
        d["payload"] = payload
        return d

    def _parts(self, dec: _Memo) -> List[dict]:
        """The parts of the message Mastra persists (``buildMessagesFromChunks``)."""
        results = {}
        for c in self.tool_results:
            r = _v(c.payload.result)
            if r is not None:
                results[c.payload.toolCallId] = c
        errors = {c.payload.toolCallId: c for c in self.tool_errors
                  if isinstance(getattr(c.payload, "toolCallId", None), str)}
        out: List[dict] = []
        after_tool = False
        for kind, v in self.seq:
            if kind == "span":
                part = v        # (a _Part: typed in the .pxd, so its fields are read directly)
                t = part.text(dec)
                pm = _v(part.pm)
                if part.kind == "text":
                    if not t and pm is None:
                        continue
                    if after_tool:
                        out.append({"type": "step-start"})
                        after_tool = False
                    d = {"type": "text", "text": t}
                else:
                    detail = {"type": "redacted", "data": ""} if part.redacted else {"type": "text", "text": t}
                    d = {"type": "reasoning", "reasoning": t, "details": [detail]}
                if pm is not None:
                    d["providerMetadata"] = pm
                out.append(d)
            elif kind == "tool":
                c = self.tool_calls.get(v)
                if c is None:
                    continue
                p = c.payload
                inv: Dict[str, Any] = {"state": "call", "toolCallId": v, "toolName": p.toolName,
                                       "args": _v(p.args) if p.args is not UNSET else {}}
                if v in results:
                    inv["state"] = "result"
                    inv["result"] = results[v].payload.result
                if v in errors:
                    inv["state"] = "output-error"
                    inv["errorText"] = _error_text(_v(errors[v].payload.error))
                d = {"type": "tool-invocation", "toolInvocation": inv}
                for src, dst in (("providerMetadata", "providerMetadata"),
                                 ("providerExecuted", "providerExecuted"), ("title", "title")):
                    val = getattr(p, src, UNSET)
                    if val is not UNSET:
                        d[dst] = val
                out.append(d)
                after_tool = True
            elif kind == "source":
                p = _builtins(v.payload)
                src = {"sourceType": p.get("sourceType", "url"), "id": p.get("id"), "url": p.get("url"),
                       "title": p.get("title")}
                if "providerMetadata" in p:
                    src["providerMetadata"] = p["providerMetadata"]
                out.append({"type": "source", "source": src})
            elif kind == "file":
                p = _builtins(v.payload)
                d = {"type": "file", "data": p.get("data"), "mimeType": p.get("mimeType")}
                if "providerMetadata" in p:
                    d["providerMetadata"] = p["providerMetadata"]
                out.append(d)
            elif kind == "data":
                out.append({"type": v.type, "data": _v(v.data)})
        return out


def _call_id(c: Any) -> Any:
    return getattr(c.payload, "toolCallId", None)


def _error_text(e: Any) -> str:
    if isinstance(e, dict):
        return str(e.get("message", e))
    return str(e)


def _error_value(e: Any) -> dict:
    """``getErrorFromUnknown(payload.error)`` reduced to what serializes: ``{name, message}``."""
    if isinstance(e, dict):
        name = e.get("name")
        msg = e.get("message")
        return {"name": name if isinstance(name, str) else "Error",
                "message": msg if isinstance(msg, str) else json.dumps(e, ensure_ascii=False)}
    if isinstance(e, str):
        return {"name": "Error", "message": e}
    return {"name": "Error", "message": "Unknown error" if e is None else json.dumps(e)}


# --------------------------------------------------------------------------------------------
# Big frames: step-finish and finish

class _MinOutput(msgspec.Struct):
    usage: Any = UNSET


class _MinOutputPayload(msgspec.Struct):
    stepResult: Any = UNSET
    metadata: Any = UNSET
    output: Optional[_MinOutput] = None
    providerMetadata: Any = UNSET


class _MinFinish(msgspec.Struct):
    type: str
    runId: Any = UNSET
    from_: Any = msgspec.field(name="from", default=UNSET)
    payload: Optional[_MinOutputPayload] = None


_min_decoder = msgspec.json.Decoder(_MinFinish)

#: How frames of these types start when Mastra writes them: the cue for the light decoder.
FINISH_PREFIXES = (b'{"type":"step-finish","runId":', b'{"type":"finish","runId":')


def decode_finish_light(data: Any) -> Any:
    """The few fields of a step-finish/finish frame accumulation needs, skipping the message
    history they carry; None when the frame is not of the expected shape (the caller then
    decodes it fully, which gives the proper error or the chunk)."""
    try:
        return _min_decoder.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
        return None


def pick_finish(sr: Any, md: Any, usage: Any, pm: Any) -> tuple:
    """(reason, warnings, usage, resp_id, model_id, pm) from a step-finish/finish payload's
    stepResult, metadata, output.usage and providerMetadata (UNSET where absent), for typed and
    light payloads.  (The native C reader finds the keys of stepResult and metadata itself and
    reads them in the same steps: _core._fields_of; the tests compare the two on edge cases and
    corrupted frames.)"""
    # (called for every step-finish and finish: written for speed; UNSET and None are alike)
    if isinstance(sr, dict):
        reason, warnings = sr.get("reason"), sr.get("warnings")
    else:
        reason = warnings = None
    if usage is UNSET:
        usage = None
    if not isinstance(md, dict):
        return reason, warnings, usage, None, None, None if pm is UNSET else pm
    if pm is None or pm is UNSET:
        pm = md.get("providerMetadata")
    return reason, warnings, usage, md.get("id"), md.get("modelId"), pm


def _finish_fields(payload: Any) -> tuple:
    """pick_finish of a payload (typed or light)."""
    out = getattr(payload, "output", UNSET)
    if isinstance(out, dict):
        usage = out.get("usage")
    elif out is not None and out is not UNSET:
        usage = out.usage
    else:
        usage = None
    return pick_finish(getattr(payload, "stepResult", UNSET), getattr(payload, "metadata", UNSET), usage,
                       getattr(payload, "providerMetadata", UNSET))


def light_fields(m: Any) -> tuple:
    """What accumulation reads from a light step-finish/finish (decode_finish_light's struct):
    (is step-finish, runId or None, reason, warnings, usage, response id, model id,
    providerMetadata, from or UNSET).  (from: for the run the frame may be the first of, as the
    typed chunk's would be: a log that starts in the middle of a run.)"""
    return ((m.type == "step-finish", None if m.runId is UNSET else m.runId) + _finish_fields(m.payload)
            + (m.from_,))


# --------------------------------------------------------------------------------------------
# The accumulator

_DELTAS = (_c.TextDelta, _c.ReasoningDelta, _c.ToolCallDelta)
_OTHER = object()
#: class -> what add() does with its instances: a delta class (subclasses, made for frames with
#: unknown keys, map to their base), _OTHER for the other chunks, InvalidFrame, or None (refused).
_KINDS: Dict[type, Any] = {c: c for c in _DELTAS}
_KINDS_MAX = 4096
#: _OTHER chunk class -> its tag, for the classes whose tag is fixed (not DataChunk and
#: UnknownChunk, whose chunks carry their own "type"); kept beside _KINDS, by _kind_of.
_TAGS: Dict[type, str] = {}


def _kind_of(t: type) -> Any:
    kind = next((c for c in _DELTAS if issubclass(t, c)), None)
    if kind is None:
        kind = _OTHER if issubclass(t, _c.BaseChunk) else InvalidFrame if issubclass(t, InvalidFrame) else None
    if kind is not None:
        if len(_KINDS) >= _KINDS_MAX:       # classes made for unknown keys come and go
            _KINDS.clear()
            _KINDS.update((c, c) for c in _DELTAS)
            _TAGS.clear()
        _KINDS[t] = kind
        if kind is _OTHER and "type" not in t.__struct_fields__:
            _TAGS[t] = t.__struct_config__.tag
    return kind


def _run_of(acc: "AccumulatorBase", run_id: Any, from_: Any) -> _Run:
    """The run a chunk belongs to (made at its first chunk); one without runId belongs to the
    current run.  (A function, not a method: on the native path a C call.)"""
    if run_id is UNSET or run_id is None:
        run = acc._current
        if run is None:
            run = acc._current = acc._runs[None] = _Run(acc, None, from_)
            acc._main = acc._main or run
        if acc._runless_into is not None:
            acc._runless_into.add(run.run_id)
        return run
    run = acc._runs.get(run_id)
    if run is None:
        run = acc._runs[run_id] = _Run(acc, run_id, from_)
        if acc._main is None or acc._main.run_id is None and not acc._main.seq:
            acc._main = run
    acc._current = run
    return run


def _other(acc: "AccumulatorBase", chunk: Any) -> None:
    """A chunk other than a delta: to its handler (_HANDLERS, by tag), with its run.  (A
    function, not a method: on the native path a C call.)"""
    cls = type(chunk)
    tag = _TAGS.get(cls)         # (the classes with a fixed tag: no DataChunk among them)
    t = tag or getattr(chunk, "type", None) or cls.__struct_config__.tag
    run = _run_of(acc, getattr(chunk, "runId", UNSET), getattr(chunk, "from_", UNSET))
    handle = _HANDLERS.get(t)
    if handle is not None:
        handle(acc, run, chunk, getattr(chunk, "payload", UNSET))
    elif tag is None and isinstance(chunk, _c.DataChunk):
        if chunk.transient is not True:
            run.seq.append(("data", chunk))


class AccumulatorBase:
    """Reassembles runs from a stream of chunks.

    ``add(chunk)`` takes typed chunks; ``feed(data)`` takes framed bytes (SSE, RS or NDJSON, any
    split) and is the fast path; ``close()`` ends the input.  ``result()`` gives the main run's
    :class:`RunOutput` at any moment; ``results()`` every run, demultiplexed by ``runId``.
    """

    # (compiled as a cdef class with these fields: _accumc.pxd; __dict__ for what a subclass or a
    # caller adds, __weakref__ for the decoder, which holds its accumulator weakly)
    __slots__ = ("_framing", "_errors", "_max", "_current", "_main", "_decoder", "_runs", "_tool_args",
                 "_runless_into", "_closed", "invalid_frames", "__dict__", "__weakref__")

    _Buf: Any = None            # the impl's delta buffer class: .data (bytearray), .owner
    _impl: Any = None

    def __init__(self, framing: str = "auto", *, errors: str = "strict",
                 max_frame_bytes: Optional[int] = None) -> None:
        if errors not in ("strict", "keep"):
            raise ValueError(f"errors must be 'strict' or 'keep', got {errors!r}")
        self._framing = framing
        self._errors = errors
        self._max = max_frame_bytes
        self._runs: Dict[Any, _Run] = {}
        self._current: Optional[_Run] = None
        self._main: Optional[_Run] = None
        #: the runIds of the runs that chunks without runId joined (None: a run of their own, made
        #: when no run was current).  Such a chunk belongs to the run current then, a tie to the
        #: chunks before it that bulk.reconstruct's workers must not cut.  None (not kept) unless
        #: set to a set: kept, it grows by a run id for each such run, which a reader that hands
        #: runs out as they finish (pop_finished) would hold for ever.
        self._runless_into: Optional[set] = None
        self._tool_args: Dict[str, _ToolArgs] = {}
        self._decoder: Any = None
        self._closed = False
        self.invalid_frames: list = []

    # -- input -------------------------------------------------------------------------------
    def feed(self, data: Any) -> None:
        """Accumulate framed bytes (any split).  Raises a DecodeError on a bad frame (strict) or
        records it in ``invalid_frames`` (errors="keep")."""
        if self._closed:
            raise RuntimeError("feed() after close()")
        dec = self._decoder
        if dec is None:
            opts: Dict[str, Any] = {"errors": self._errors}
            if self._max is not None:
                opts["max_frame_bytes"] = self._max
            dec = self._decoder = self._impl.StreamDecoder(self._framing, _sink=self, **opts)
        # (called once per network read by a live consumer, often one event each: no bound
        # method, no *args tuple, no loop over the empty list the native decoder mostly returns)
        try:
            items = dec.feed(data)
        except DecodeError as exc:
            self._take(getattr(exc, "chunks", None))
            raise
        if items:
            self._take(items)

    def _feed_all(self, pieces: Any) -> None:
        """add() each typed chunk and feed() each other piece: accumulate()'s loop for a whole
        source, compiled on the native path (as a Python loop, a 2.6 MB SSE body in 16 KiB pieces
        spent about 2 % of its time in it)."""
        base = _c.BaseChunk
        for piece in pieces:
            if isinstance(piece, base):
                self.add(piece)
            else:
                self.feed(piece)

    def close(self) -> None:
        """End of input: a stream cut mid-frame raises TruncatedError (strict)."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._decoder is not None:
                try:
                    items = self._decoder.close()
                except DecodeError as exc:
                    self._take(getattr(exc, "chunks", None))
                    raise
                self._take(items)
        finally:
            # The buffers hold their writers: with those let go (and the decoder), what the
            # accumulator built is freed with it, by reference counting.
            self._decoder = None
            for run in self._runs.values():
                run.release()

    def __del__(self) -> None:
        # Dropped mid-stream (a client gone, an error), without close(): let go of the buffers'
        # writers as close() does, so that what it built is freed now, by reference counting,
        # not by a later full collection.  (The decoder holds it only weakly.)
        if not getattr(self, "_closed", True):
            for run in self._runs.values():
                run.release()

    def _take(self, items: Any) -> None:
        # The native decoder hands most frames over as it meets them (see _route); what it
        # returns (also with the error it raises), and all the reference decoder returns, is
        # taken here, in order.
        for item in items or ():
            self._item(item)

    def _item(self, item: Any) -> None:
        if type(item) is _MinFinish:
            self._light_finish(item)
        else:
            self.add(item)

    def add(self, chunk: Any) -> None:
        """Accumulate one typed chunk."""
        t = type(chunk)
        kind = _KINDS.get(t)
        if kind is None:
            kind = _kind_of(t)
        if kind is _c.TextDelta:
            p = chunk.payload
            run = _run_of(self, chunk.runId, chunk.from_)
            part = run.text_part(p.id, p.providerMetadata)
            part.buf.append(p.text.encode("utf-8", "surrogatepass"))
        elif kind is _OTHER:
            _other(self, chunk)
        elif kind is _c.ReasoningDelta:
            p = chunk.payload
            run = _run_of(self, chunk.runId, chunk.from_)
            part = run.reasoning_delta(p.id, p.providerMetadata)
            part.buf.append(p.text.encode("utf-8", "surrogatepass"))
        elif kind is _c.ToolCallDelta:
            p = chunk.payload
            run = _run_of(self, chunk.runId, chunk.from_)
            ta = run.tool_args_for(p.toolCallId, _v(p.toolName), None)
            ta.buf.append(p.argsTextDelta.encode("utf-8", "surrogatepass"))
        elif kind is InvalidFrame:
            self.invalid_frames.append(chunk)
        else:
            raise TypeError(f"add() takes a chunk, got {type(chunk).__name__}")

    # -- called by the native decoder ---------------------------------------------------------
    def _route(self, kind: int, run_id: Any, from_: Any, key: Any, name: Any) -> tuple:
        """A delta frame whose (run, id) has no current buffer: do the bookkeeping and return
        (buffer, owner).  kind: 1 text, 2 reasoning, 3 tool call (key: toolCallId)."""
        run = _run_of(self, run_id, from_)
        if kind == 1:
            part = run.text_part(key, UNSET)
            return part.buf, part
        if kind == 2:
            part = run.reasoning_delta(key, UNSET)
            return part.buf, part
        ta = run.tool_args_for(key, name, None)
        ta.buf.owner = ta
        return ta.buf, ta

    def _route_pm(self, kind: int, run_id: Any, from_: Any, key: Any, pm: Any) -> tuple:
        """_route for a text (kind 1) or reasoning (2) delta that carries providerMetadata, which
        its part takes (as add() does with the chunk): (buffer, owner)."""
        run = _run_of(self, run_id, from_)
        part = run.text_part(key, pm) if kind == 1 else run.reasoning_delta(key, pm)
        return part.buf, part

    def _make_current(self, run_id: str, from_: str) -> None:
        """A text-start frame without providerMetadata, or a start frame of payload {id,
        messageId}, read by the native decoder: all either does is make its run the current one
        (a new run at its first chunk)."""
        _run_of(self, run_id, from_)

    def _tool_input_end(self, run_id: str, from_: str, call_id: str) -> None:
        """A tool-call-input-streaming-end frame of payload {toolCallId}, read by the native
        decoder."""
        _run_of(self, run_id, from_).input_end(call_id)

    def _tool_input_start(self, run_id: str, from_: str, call_id: str, name: str) -> None:
        """A tool-call-input-streaming-start frame of payload {toolCallId, toolName}, read by the
        native decoder: what _on_tool_input_start does with the payload it would decode."""
        _run_of(self, run_id, from_).tool_args_for(
            call_id, name, _c.ToolCallInputStreamingStartPayload(toolCallId=call_id, toolName=name))

    def _tool_read(self, result: bool, run_id: Any, from_: Any, chunk: Any, call_id: Any) -> None:
        """A tool-call or (result) tool-result frame read by the native decoder, the chunk made of
        what it read: what _on_tool_call or _on_tool_result does with it."""
        run = _run_of(self, run_id, from_)
        if result:
            run.tool_result(chunk, call_id)
        else:
            run.tool_call(chunk, call_id)

    def _text_end(self, run_id: str, from_: str, id_: str) -> None:
        """A text-end frame without providerMetadata, read by the native decoder."""
        _run_of(self, run_id, from_).end_text(id_, UNSET)

    def _light_finish(self, m: Any) -> None:
        """A step-finish/finish frame read with the light decoder."""
        self._finish_read(light_fields(m))

    def _finish_read(self, f: tuple) -> None:
        """A step-finish/finish frame, as light_fields gives it (the native decoder reads these
        values in C)."""
        _run_of(self, f[1], f[8]).finish_frame(f[0], f[2:])

    def _step_start(self, run_id: Any, from_: Any, warnings: Any) -> None:
        """A step-start frame, its runId, from and payload.warnings (UNSET where absent) read by
        the native decoder: what _on_step_start does with the chunk."""
        _run_of(self, run_id, from_).step_start(_v(warnings))

    def _invalid(self, inv: Any) -> None:
        self.invalid_frames.append(inv)

    # -- one handler per chunk type (_HANDLERS): (run, chunk, payload) ---------------------------
    def _on_text_start(self, run: _Run, chunk: Any, p: Any) -> None:
        if p.providerMetadata is not UNSET:
            run.text_pm[p.id] = p.providerMetadata

    def _on_text_end(self, run: _Run, chunk: Any, p: Any) -> None:
        run.end_text(p.id, p.providerMetadata)

    def _on_reasoning_start(self, run: _Run, chunk: Any, p: Any) -> None:
        part = run.reasoning_part(p.id, p.providerMetadata, True)
        pm = _v(p.providerMetadata)
        if isinstance(pm, dict) and any(isinstance(v, dict) and "redactedData" in v for v in pm.values()):
            part.redacted = True
            part.listed = True
            run.seq.append(("span", part))

    def _on_reasoning_end(self, run: _Run, chunk: Any, p: Any) -> None:
        part = run.open_reasoning.pop(p.id, None)
        if part is None:   # an end with no open part: a part of its own, not a reasoning entry
            part = _Part("reasoning", p.id, run.rbuf, p.providerMetadata)
        if p.providerMetadata is not UNSET:
            part.pm = p.providerMetadata
        if not part.listed:   # no delta: Mastra keeps an empty reasoning part
            part.listed = True
            run.seq.append(("span", part))
        part.seal()

    def _on_redacted_reasoning(self, run: _Run, chunk: Any, p: Any) -> None:
        part = run.reasoning_part(getattr(p, "id", None), getattr(p, "providerMetadata", UNSET), True)
        run.open_reasoning.pop(part.id, None)
        part.redacted = part.listed = True
        run.seq.append(("span", part))

    def _on_step_start(self, run: _Run, chunk: Any, p: Any) -> None:
        run.step_start(_v(getattr(p, "warnings", UNSET)))

    def _on_step_finish(self, run: _Run, chunk: Any, p: Any) -> None:
        run.finish_frame(True, _finish_fields(p))

    def _on_finish(self, run: _Run, chunk: Any, p: Any) -> None:
        run.finish_frame(False, _finish_fields(p))

    def _on_tool_input_start(self, run: _Run, chunk: Any, p: Any) -> None:
        run.tool_args_for(p.toolCallId, _v(p.toolName), p)

    def _on_tool_input_end(self, run: _Run, chunk: Any, p: Any) -> None:
        run.input_end(p.toolCallId)

    def _on_tool_call(self, run: _Run, chunk: Any, p: Any) -> None:
        run.tool_call(chunk, p.toolCallId)

    def _on_tool_result(self, run: _Run, chunk: Any, p: Any) -> None:
        run.tool_result(chunk, p.toolCallId)

    def _on_tool_error(self, run: _Run, chunk: Any, p: Any) -> None:
        run.tool_errors.append(chunk)
        run.step()
        run.any_tool = True

    def _on_tool_output(self, run: _Run, chunk: Any, p: Any) -> None:
        self._nested(run, _v(p.output))

    def _on_source(self, run: _Run, chunk: Any, p: Any) -> None:
        run.sources.append(chunk)
        run.step().sources.append(chunk)
        run.seq.append(("source", chunk))

    def _on_file(self, run: _Run, chunk: Any, p: Any) -> None:
        run.files.append(chunk)
        run.step().files.append(chunk)
        run.seq.append(("file", chunk))

    def _on_object_result(self, run: _Run, chunk: Any, p: Any) -> None:
        run.object = _v(chunk.object)

    def _on_error(self, run: _Run, chunk: Any, p: Any) -> None:
        run.error = _error_value(_v(p.error))
        run.terminate("error", "failed", "error")

    def _on_abort(self, run: _Run, chunk: Any, p: Any) -> None:
        run.terminate("abort", "canceled", "aborted")

    def _on_tripwire(self, run: _Run, chunk: Any, p: Any) -> None:
        run.tripwire = msgspec.to_builtins(p) if isinstance(p, msgspec.Struct) else p
        run.terminate("tripwire", None, "other")

    def _on_suspended(self, run: _Run, chunk: Any, p: Any) -> None:
        run.suspend_payload = msgspec.to_builtins(p) if isinstance(p, msgspec.Struct) else p
        run.terminate("suspended", "suspended", "suspended")

    def _nested(self, parent: _Run, out: Any) -> None:
        """A sub-agent's chunk carried in tool-output belongs to its own run, not the parent's."""
        if not isinstance(out, dict) or not isinstance(out.get("type"), str):
            return
        rid = out.get("runId")
        if not isinstance(rid, str) or rid == parent.run_id or "from" not in out:
            return
        try:
            chunk = convert_item(out)
        except (DecodeError, ValueError, TypeError):
            return
        current, main = self._current, self._main
        self.add(chunk)
        self._current, self._main = current, main

    # -- output ------------------------------------------------------------------------------
    def result(self, run_id: Any = UNSET) -> RunOutput:
        """The main run (the first top-level run seen), or the run with this id, as it stands."""
        if run_id is UNSET:
            run = self._main
        else:
            run = self._runs.get(run_id)
            if run is None:
                raise KeyError(f"no run with runId {run_id!r}")
        if run is None:
            run = _Run(self, None, UNSET)
        out = run.result()
        if run is self._main:
            out.invalid_frames = list(self.invalid_frames)
        return out

    def results(self) -> Dict[Any, RunOutput]:
        """Every run seen, by runId (None for chunks before any runId), in first-seen order."""
        return {rid: run.result() for rid, run in self._runs.items()}

    def pop_results(self) -> Iterator[RunOutput]:
        """Every run's RunOutput, in first-seen order, dropping each run's buffers once its
        output is made: the way to collect many runs without holding both."""
        # (next(iter(self._runs)) after each pop would step over every key popped before it,
        # which makes popping n runs O(n^2): a second for 100,000 runs)
        while self._runs:
            for rid in list(self._runs):
                if rid in self._runs:          # (the caller may pop between our yields)
                    yield self._pop(rid)

    def _pop(self, rid: Any) -> RunOutput:
        out = self.result(rid)
        run = self._runs.pop(rid)
        for ta in run.tool_args:
            self._tool_args.pop(ta, None)
        run.release()
        if self._current is run:
            self._current = None
        return out

    def pop_finished(self) -> Iterator[RunOutput]:
        """Like pop_results, but only the runs whose ``finish`` chunk has arrived: what a
        long-running reader calls between feeds to keep memory bounded by the runs in flight."""
        for rid in [rid for rid, run in self._runs.items() if run.finished]:
            yield self._pop(rid)

    def run_ids(self) -> List[Any]:
        return list(self._runs)

    def partial_args(self, tool_call_id: str) -> Any:
        """Best-effort parse of the argument JSON received so far for a tool call (None if none).

        Each call parses only what arrived since the previous call."""
        ta = self._tool_args.get(tool_call_id)
        if ta is None:
            return None
        if ta.parser is None:
            ta.parser = PartialJSON()
        data = ta.buf.data
        if len(data) > ta.fed:
            new = bytes(data[ta.fed:])
            cut = _complete_utf8(new)       # (a high surrogate waits for its low half)
            ta.parser.feed(join_surrogates(new[:cut].decode("utf-8", "surrogatepass")))
            ta.fed += cut
        return ta.parser.value()

    def buffer(self, kind: str = "text", run_id: Any = UNSET) -> memoryview:
        """The UTF-8 bytes accumulated so far as a read-only memoryview, without copying:
        kind "text" or "reasoning" for a run (the main run by default), or a toolCallId for that
        call's argument JSON."""
        if kind in ("text", "reasoning"):
            run = self._main if run_id is UNSET else self._runs.get(run_id)
            if run is None:
                return memoryview(b"")
            buf = run.text if kind == "text" else run.rbuf
        else:
            ta = self._tool_args.get(kind)
            if ta is None:
                raise KeyError(f"no tool call {kind!r}")
            buf = ta.buf
        return buf.view()


#: chunk type -> its AccumulatorBase handler (the other types change nothing but the current run;
#: data-* chunks are told by their class)
_HANDLERS: Dict[str, Any] = {
    "text-start": AccumulatorBase._on_text_start, "text-end": AccumulatorBase._on_text_end,
    "reasoning-start": AccumulatorBase._on_reasoning_start,
    "reasoning-end": AccumulatorBase._on_reasoning_end,
    "redacted-reasoning": AccumulatorBase._on_redacted_reasoning,
    "step-start": AccumulatorBase._on_step_start, "step-finish": AccumulatorBase._on_step_finish,
    "finish": AccumulatorBase._on_finish,
    "tool-call-input-streaming-start": AccumulatorBase._on_tool_input_start,
    "tool-call-input-streaming-end": AccumulatorBase._on_tool_input_end,
    "tool-call": AccumulatorBase._on_tool_call, "tool-result": AccumulatorBase._on_tool_result,
    "tool-error": AccumulatorBase._on_tool_error, "tool-output": AccumulatorBase._on_tool_output,
    "source": AccumulatorBase._on_source, "file": AccumulatorBase._on_file,
    "object-result": AccumulatorBase._on_object_result, "error": AccumulatorBase._on_error,
    "abort": AccumulatorBase._on_abort, "tripwire": AccumulatorBase._on_tripwire,
    "tool-call-approval": AccumulatorBase._on_suspended,
    "tool-call-suspended": AccumulatorBase._on_suspended,
}
