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

import re
from typing import Any, Dict, Iterator, List, Optional, Union

import msgspec
from msgspec import UNSET, UnsetType

from . import chunks as _c
from ._model import convert_item
from ._jsonout import encode_general, js_number, js_numbers
from ._results import (PartialJSON, RunOutput, StepResult, _builtins, _complete_utf8, join_surrogates,
                       parse_args)
from .errors import DecodeError, InvalidFrame

__all__ = ["RunOutput", "StepResult", "AccumulatorBase", "PartialJSON"]

_PRIMARY = ("inputTokens", "outputTokens", "totalTokens")
_DETAIL = ("reasoningTokens", "cachedInputTokens", "cacheCreationInputTokens",
           "cacheCreationInputTokens5m", "cacheCreationInputTokens1h")
_USAGE_KEYS = _PRIMARY + _DETAIL
#: the keys updateUsageCount reads, in its order
_UPDATE_ORDER = _USAGE_KEYS + ("raw",)
_UPDATE_INDEX = {k: i for i, k in enumerate(_UPDATE_ORDER)}
_RAW = _UPDATE_INDEX["raw"]
_ABSENT = object()   # (a dict lookup's default: no such key)


def _v(x: Any) -> Any:
    return None if x is UNSET else x


def _push(lst: Optional[list], x: Any) -> list:
    """lst with x appended, made for it when None: the lists a run or step makes at their first
    entry (most runs have no source, file or tool error)."""
    if lst is None:
        return [x]
    lst.append(x)
    return lst


def _truthy(x: Any) -> bool:
    """JavaScript truthiness of a JSON value (UNSET: undefined).  Objects and arrays are truthy,
    empty or not."""
    if x is UNSET or x is None or x is False:
        return False
    if isinstance(x, (str, int, float)):
        return bool(x)
    return True


def _js_key(x: Any) -> str:
    """The property key JavaScript makes of a JSON value used as one (``obj[payload.id]``)."""
    if type(x) is str:
        return x
    return "undefined" if x is UNSET else _js_string(x)


def _js_index(k: str) -> int:
    """k as an array index (the keys JavaScript lists first, in numeric order), or -1."""
    if k.isdigit() and k.isascii() and (k == "0" or k[0] != "0"):
        n = int(k)
        if n < 4294967295:
            return n
    return -1


def _js_values(d: dict) -> list:
    """``Object.values`` of an object kept as a dict in insertion order: the keys that are array
    indices first, in numeric order, then the others in insertion order."""
    idx = [(n, k) for k in d for n in (_js_index(k),) if n >= 0]
    if not idx:
        return list(d.values())
    idx.sort()
    out = [d[k] for _, k in idx]
    out.extend(v for k, v in d.items() if _js_index(k) < 0)
    return out


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


#: An input this big (bytes) is a log or a long stream: _feed_all tells the decoder so.
_BIG_INPUT = 1 << 20

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
            if e[0] is buf:
                a, b = e[1], e[2]       # (compiled: C integers, no int object made for the compare)
                if a == start and b == end:
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

    __slots__ = ("kind", "id", "buf", "segs", "tail", "pm", "redacted", "listed", "msg", "more")

    def __init__(self, kind: str, id_: Any, buf: Any, pm: Any) -> None:
        self.kind = kind
        self.id = id_
        self.buf = buf
        self.segs: list = []
        self.tail = -1          # start of the range it is writing at the end of buf, or -1
        self.pm = pm
        self.redacted = False
        self.listed = False     # has its place in the message parts
        # A reasoning part begun by a reasoning-start while its id's message part was open (deltas
        # since, no end): Mastra's message part goes on, so this one's text is that part's too.
        self.msg: Any = None    # that message part, in `more`'s parts
        self.more: Any = None   # a message part's: the parts whose text it goes on with, or None

    def set_pm(self, pm: Any) -> None:
        """A delta's providerMetadata (last seen wins).  (The native delta loop takes a delta
        whose providerMetadata is the one its route stored with the part's last; a part still
        writing at its buffer's end re-takes it here, which on the native path drops the routes to
        the buffer: one set on any other path is then the one a later delta is compared with.)"""
        self.pm = pm
        if self.msg is not None:
            self.msg.pm = pm
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

    def text_upto(self, dec: _Memo, limit: int) -> str:
        """Its text written before its buffer reached limit bytes (a step's end)."""
        out = [dec.get(self.buf, a, min(b, limit)) for a, b in self.segs if a < limit]
        if 0 <= self.tail < limit:
            out.append(dec.get(self.buf, self.tail, limit))
        return "".join(out)


class _ToolArgs:
    __slots__ = ("id", "name", "buf", "start", "parser", "fed", "mark", "pidx")

    def __init__(self, id_: str, name: Any, buf: Any, start: Any) -> None:
        self.id = id_
        self.name = name
        self.buf = buf
        # the tool-call-input-streaming-start payload since the last -end (None: none)
        self.start = start
        self.parser: Optional[PartialJSON] = None
        self.fed = 0            # bytes of buf the parser has seen
        self.mark = 0           # where the deltas since the last -end start in buf
        self.pidx = -1          # the place in call_list of the call made at the last -end, till
                                # a tool-call chunk of the id comes


class _PendingCall:
    """The tool-call Mastra makes at tool-call-input-streaming-end, until a tool-call chunk takes
    its place (as one nearly always does): what it is made from, as it stood then.  made() builds
    it, once, when a result() needs it; it stays pending in the run's call_list all the same, so
    that a result() asked for before that tool-call chunk comes changes nothing (_Run._echo)."""

    __slots__ = ("ta", "begin", "end", "name", "start", "call")

    def __init__(self, ta: _ToolArgs) -> None:
        self.ta = ta
        # its argument deltas: those since the previous -end for the id (Mastra keeps them per
        # call and drops them at the -end), not those arriving later
        self.begin = ta.mark
        self.end = len(ta.buf)
        self.name = ta.name
        self.start = ta.start
        self.call: Any = None

    def made(self, run: "_Run") -> Any:
        """The call, made at the first result() that needs it (its arguments are those of its
        deltas, as they stood at the -end, whenever it is made)."""
        if self.call is None:
            kw: Dict[str, Any] = {"toolCallId": self.ta.id, "toolName": self.name or "",
                                  "args": parse_args(self.ta.buf.text(self.begin, self.end))}
            s = self.start
            if s is not None:
                for k in ("providerExecuted", "providerMetadata", "dynamic", "title"):
                    val = getattr(s, k, UNSET)
                    if val is not UNSET:
                        kw[k] = val
            self.call = _c.ToolCall(runId=run.run_id if run.run_id is not None else UNSET, from_=run.from_,
                                    payload=_c.ToolCallPayload(**kw))
        return self.call


class _Step:
    """A step: what arrived from the previous step-finish to its own (Mastra's ``bufferedByStep``;
    a step-start changes nothing there): ranges of the run's buffers, and the places of its tool
    calls and results in the run's lists."""

    __slots__ = ("t0", "r0", "t1", "r1", "calls", "results", "sources",
                 "files", "warnings", "reason", "usage", "pm", "resp_id", "model_id", "trip", "tripwire",
                 "reasoned", "rdet")

    def __init__(self, t0: int, r0: int) -> None:
        self.t0, self.r0 = t0, r0
        self.t1 = self.r1 = -1
        self.calls: list = []       # indices in the run's call_list
        self.results: list = []     # indices in the run's tool_results
        # (made at the step's first source or file: most steps have none)
        self.sources: Optional[list] = None
        self.files: Optional[list] = None
        # (set by its step-finish, which is what lists the step in the run's steps)
        self.warnings: Any = None
        self.reason = None
        self.usage: Optional[dict] = None
        self.pm = None
        self.resp_id = self.model_id = None
        self.trip = False           # its step-finish carried a tripwire: its text is ""
        self.tripwire: Any = None   # that tripwire (the last entry of output.steps'), or None
        self.reasoned = False       # a reasoning delta opened a part in it (goal())
        self.rdet: Optional[list] = None    # its reasoning entries (_Run.srdet), at its step-finish


class _Run:
    __slots__ = ("new_buf", "all_tool_args", "run_id", "from_", "text", "rbuf", "open_text", "open_reasoning",
                 "text_pm", "rdet", "srdet", "saw_reasoning", "seq", "steps", "cur", "tool_calls", "call_list", "pending",
                 "tool_args", "tool_results", "tool_errors", "sources", "files", "u", "u_max", "u_sorted", "warnings",
                 "finish_reason", "status", "finished", "suspended", "error", "tripwire", "trip", "object", "obj_state",
                 "obj_step", "suspend_payload", "pm", "cut", "cut_next", "procs", "stepped", "nmodel", "seg_data",
                 "ended", "gated")

    def __init__(self, acc: "AccumulatorBase", run_id: Optional[str], from_: Any) -> None:
        # (no reference back to acc: a run that holds its accumulator makes a reference cycle, and
        # every run of every log would wait for the garbage collector to be freed)
        Buf = self.new_buf = acc._Buf
        self.all_tool_args = acc._tool_args
        self.run_id = run_id
        self.from_ = from_ if isinstance(from_, str) else "AGENT"
        self.text = Buf()
        self.rbuf: Any = None     # (made at the run's first reasoning part: reasoning_buf())
        self.open_text: Dict[Any, _Part] = {}
        self.open_reasoning: Dict[Any, _Part] = {}
        self.text_pm: Dict[Any, Any] = {}
        # Mastra's reasoning entries, a JavaScript object keyed by payload.id (_js_key): key ->
        # [id, providerMetadata, the parts written since the id's reasoning-start]
        self.rdet: Dict[str, list] = {}
        # the step's own (Mastra's bufferedByStepReasoningDetails): made and written alike, but
        # emptied at each step-finish (and not by a goal's truncation); None while empty
        self.srdet: Optional[Dict[str, list]] = None
        self.saw_reasoning = False
        self.seq: list = []            # message parts in stream order: (kind, value)
        self.steps: List[_Step] = []
        self.cur: Optional[_Step] = None
        # the tool calls in the order Mastra lists them: chunks, or _PendingCalls; tool_calls:
        # toolCallId -> the index of the first (which a later tool-call of that id only fills in)
        self.call_list: list = []
        self.tool_calls: Dict[str, int] = {}
        self.pending = False                   # call_list may hold a _PendingCall (calls())
        self.tool_args: Dict[str, _ToolArgs] = {}
        self.tool_results: list = []
        # (made at the run's first tool-error, source or file: most runs have none)
        self.tool_errors: Optional[list] = None
        self.sources: Optional[list] = None
        self.files: Optional[list] = None
        # the usage counters (Mastra's #usageCount): the totals, the detail counters and raw, each
        # once some step reported it
        self.u: Dict[str, Any] = {}
        # whether u's keys are in Mastra's order (_UPDATE_ORDER: then the usage is u as it is),
        # and the place in that order of the last key it took
        self.u_sorted = True
        self.u_max = -1
        self.warnings: Any = []    # the last step-finish's (Mastra's #warnings)
        self.finish_reason: Optional[str] = None
        self.status = "running"
        self.finished = False     # a finish chunk arrived: nothing more is expected
        self.suspended = False    # a tool-call-approval/-suspended arrived
        self.gated = None         # the toolCallIds of the tool-call-approval chunks (a set), or None
        self.error: Optional[dict] = None
        self.tripwire: Optional[dict] = None
        # a tripwire chunk ends the run where it is (Mastra stops reading the stream there): what
        # the run had then, (text end, steps, usage, warnings, status, error, tripwire, cut); None till
        # then
        self.trip: Optional[tuple] = None
        self.object: Any = None
        # Mastra's object promise: 0 pending, 1 resolved (by the first object-result), 2 rejected
        # (by an error chunk while pending); obj_step: the steps finished when it was resolved
        self.obj_state = 0
        self.obj_step = 0
        # a step's tripwire or retry said the agent has output processors (step_finish)
        self.procs = False
        self.stepped = False      # a step-start arrived (the next one opens a step boundary)
        self.ended = False        # a step-finish since the last step boundary (part_entry)
        self.nmodel = 0           # tool-call, source and file chunks so far (stamp())
        self.seg_data = False     # a data part came since the last step boundary (step_start)
        self.suspend_payload: Optional[dict] = None
        self.pm: Any = None
        # A goal chunk that continues the run truncates Mastra's run buffers: where the run's
        # text, reasoning, steps, calls, results, sources and files begin since (lengths of the
        # buffers and lists then), or None; and whether the step being written then is dropped
        # too at its step-finish (goal())
        self.cut: Optional[tuple] = None
        self.cut_next = False

    def release(self) -> None:
        """No buffer of the run keeps a writer: the part writing at the end of one is sealed, as
        when another part takes over (a later delta for it starts a new range).  Then no decoder
        route leads to the run, and a buffer and its owner no longer make a reference cycle.
        Done when the input ends, and when a run is handed out and dropped (the same runId
        arriving again then starts a new run)."""
        for buf in (self.text, self.rbuf):
            if buf is not None and buf.owner is not None:
                buf.owner.seal()
        for ta in self.tool_args.values():
            ta.buf.owner = None

    def reasoning_buf(self) -> Any:
        """The run's reasoning buffer, made at its first reasoning part (most runs have none)."""
        if self.rbuf is None:
            self.rbuf = self.new_buf()
        return self.rbuf

    def rlen(self) -> int:
        """The bytes of reasoning written so far."""
        return 0 if self.rbuf is None else len(self.rbuf)

    # -- steps -------------------------------------------------------------------------------
    def step(self) -> _Step:
        """The step being written: from the end of the previous one (made at its first content)."""
        if self.cur is None:
            steps = self.steps
            if steps:
                prev = steps[-1]
                self.cur = _Step(prev.t1, prev.r1)
            else:
                self.cur = _Step(0, 0)
        return self.cur

    def step_start(self, warnings: Any) -> None:
        """A step-start: nothing for MastraModelOutput (a step is what arrives between two
        step-finishes; its warnings are the step-finish's).  The message Mastra keeps has a step
        boundary there but at the run's first (_parts)."""
        if not self.stepped:
            self.stepped = True
        else:
            self.ended = False
            if self.seg_data:   # (its stamp: where the data parts of the step it ends go)
                self.seg_data = False
                self.seq.append(("step", self.stamp()))
            else:
                self.seq.append(("step", None))

    def _close_spans(self) -> None:
        """A step's end, for the message parts.  Mastra builds each step's parts from that step's
        chunks alone (buildMessagesFromChunks, a new MessagePartSpans each time), so a text or
        reasoning part still open (no *-end) ends with its step: a later delta of its id opens a
        new part, and a text-start's providerMetadata still waiting for a first delta is dropped;
        a reasoning-start with no delta since is an empty reasoning part at the end of the step's
        parts (flushSpansLeftOpen).  What MastraModelOutput resolves does not change: its
        reasoning entries go on by id (reasoning_part)."""
        for part in self.open_text.values():
            part.seal()
        self.open_text.clear()
        self.text_pm.clear()
        for part in self.open_reasoning.values():
            if not part.listed:
                part.listed = True
                self.part_entry("span", part)
            part.seal()
        self.open_reasoning.clear()

    def part_entry(self, kind: str, v: Any) -> None:
        """A message part's entry in `seq` (a text or reasoning span, a tool invocation, a
        source, a file, a data part), for _parts.  After a step's end with no step-start since
        (`ended`: not Mastra's loop, which always sends one), that end is marked first: Mastra
        builds each step's parts from that step's chunks alone, so the first part after a
        step-finish, of whatever kind, begins the next step's (a step-start goes between a tool
        invocation and a text after it only within a step; a data part goes with the step it
        came in)."""
        if self.ended:
            self.ended = False
            self.seq.append(("end", None))
        self.seq.append((kind, v))

    def stamp(self) -> tuple:
        """How much of what the model streams the run had: text and reasoning bytes, tool-call,
        source and file chunks (not a chunk that adds none of these: an empty delta, a start or
        an end).  A data-* chunk with more after it in its step came while the model was still
        streaming the step (_parts)."""
        return (len(self.text), self.rlen(), self.nmodel)

    def step_finish(self, reason: Any, warnings: Any, usage: Any, resp_id: Any, model_id: Any,
                    pm: Any, trip: Any = UNSET) -> None:
        if self.open_text or self.open_reasoning or self.text_pm:
            self._close_spans()
        st = self.step()
        self.ended = True
        st.t1, st.r1 = len(self.text), self.rlen()
        st.reason = reason if isinstance(reason, str) else None
        # (stepResult.warnings || [], which is also the run's warnings from then on)
        self.warnings = st.warnings = warnings if _truthy(warnings) else []
        st.usage = usage if isinstance(usage, dict) else {}
        st.resp_id, st.model_id = resp_id, model_id     # (as response_ids makes them)
        st.pm = pm if isinstance(pm, dict) else None
        st.trip = _truthy(trip)
        if trip is not UNSET:
            st.tripwire = _builtins(trip)
            # Only an output processor puts a tripwire on a step, so the agent's output has a
            # processor runner (Mastra's loop gives it the agent's output processors).  With one,
            # Mastra re-reads the run's text at the finish from its message list and gives it to the
            # last step too (result()).
            self.procs = self.procs or st.trip
        if st.reason == "retry":
            # A processor had the step tried again (only a processor does): the loop rolls its
            # message back, so the step is gone from that message list (its parts go, _parts, and
            # with them its text from the run's text read at the finish, result()), and the
            # runner's object promise waits for a step-finish that is not a retry (the object of a
            # step tried again is dropped).  The reason, not the tripwire's own `retry`: a
            # processor asking for a retry past maxProcessorRetries ends the run with a "tripwire"
            # step whose tripwire says retry, and that step stays.
            self.procs = True
            self.seq.append(("retry", None))
            if self.obj_state == 1 and self.obj_step == len(self.steps):
                self.object = None
                self.obj_state = 0
        if self.srdet:
            # (its parts may go on being written after this: their text is read up to r1)
            st.rdet = [[e[0], e[1], e[2][:]] for e in _js_values(self.srdet)]
            self.srdet = None
        self.steps.append(st)
        self.cur = None
        self._add_usage(st.usage)
        if self.cut_next:
            self.cut_next = False
            self.truncate()

    def goal(self) -> None:
        """A goal chunk with shouldContinue true (a goal loop goes on): Mastra truncates the run's
        buffers (usage, warnings, the object and the step being written stay); and again at the
        next step-finish if the step being written has text, calls, reasoning, sources or files
        (so that it goes too, once listed)."""
        cur = self.cur
        if cur is not None:
            t0, r0 = cur.t0, cur.r0
            content = cur.calls or cur.sources or cur.files or cur.reasoned
        else:       # (deltas of parts open since the previous step make no step: they go on in C)
            t0, r0 = (self.steps[-1].t1, self.steps[-1].r1) if self.steps else (0, 0)
            content = False
        self.truncate()
        if content or len(self.text) > t0 or self.rlen() > r0:
            self.cut_next = True

    def truncate(self) -> None:
        """Mastra's #truncateRunBuffers: the run's text, reasoning and reasoning entries, steps,
        tool calls and results, sources and files begin anew, and so does what it knows of the
        calls whose arguments are streaming (no call is made at their -end)."""
        self.cut = (len(self.text), self.rlen(), len(self.steps), len(self.call_list), len(self.tool_results),
                    len(self.sources) if self.sources else 0, len(self.files) if self.files else 0)
        self.tool_calls = {}
        self.rdet = {}
        self.saw_reasoning = False
        rbuf = self.rbuf
        if rbuf is not None and rbuf.owner is not None:
            # A reasoning part still writing goes on after the cut, and its next delta must come
            # here (reasoning_delta: it counts, even empty), not go on in the native delta loop:
            # taking the buffer again drops the loop's routes to it (DeltaBuf.owner).
            rbuf.owner = rbuf.owner
        for ta in self.tool_args.values():
            ta.start = None
            ta.mark = len(ta.buf)

    def _add_usage(self, usage: dict) -> None:
        """Mastra's updateUsageCount: each counter the step reports is added to the run's (a
        reported null adds 0, as JavaScript's + does, and makes the counter reported), and raw is
        the last one reported."""
        u = self.u
        fresh = None
        for k, v in usage.items():
            i = _UPDATE_INDEX.get(k, -1)
            if i < 0:
                continue
            cur = u.get(k, _ABSENT)     # (one lookup: the counter, or none yet)
            if cur is _ABSENT:
                if fresh is None:
                    fresh = []
                fresh.append((i, k, v))
            elif i == _RAW:
                u[k] = v
            elif (type(v) is int or type(v) is float) and (type(cur) is int or type(cur) is float):
                u[k] = cur + v
            else:   # (null, a boolean, a string...: as JavaScript adds them)
                u[k] = _js_add(cur, v)
        if fresh is not None:
            self._fresh_usage(fresh, True)

    def _fresh_usage(self, fresh: list, add: bool) -> None:
        """Counters (and raw) the run has not had yet, (place in _UPDATE_ORDER, key, value), from a
        step's usage (add) or a finish's: they take their places in the order Mastra reads them."""
        u = self.u
        if len(fresh) > 1:
            prev = -1
            for e in fresh:     # (as a rule they come in that order already)
                if e[0] < prev:
                    fresh.sort()    # (by place alone: each key has its own)
                    break
                prev = e[0]
        for e in fresh:
            i = e[0]
            v = e[2]
            if add and i != _RAW and type(v) is not int and type(v) is not float:
                v = _js_add(0, v)       # ((undefined ?? 0) + v)
            if i < self.u_max:
                self.u_sorted = False
            else:
                self.u_max = i
            u[e[1]] = v

    def finish_frame(self, step: bool, f: tuple, trip: Any = UNSET) -> None:
        """A step-finish (step) or finish frame, its fields as pick_finish gives them; trip: the
        tripwire of the last entry of its output.steps, read for the STEP_TRIP_REASONS (UNSET
        otherwise: Mastra's loop puts one there only with those)."""
        if step:    # (the arguments one by one: a call with *f goes through Python on the native path)
            self.step_finish(f[0], f[1], f[2], f[3], f[4], f[5], trip)
        else:
            self.finish(f[0], f[2], f[5], trip)

    def finish(self, reason: Any, usage: Any, pm: Any, trip: Any = UNSET) -> None:
        self.finished = True
        if self.status != "failed" and self.status != "canceled":
            self.status = "success"
        if self.status == "canceled":
            self.finish_reason = "aborted"
        elif _truthy(reason):
            self.finish_reason = reason if isinstance(reason, str) else None
        if reason == "tripwire" and (self.status != "canceled" or _truthy(trip)):
            t = trip if isinstance(trip, dict) else {}
            tw = {"reason": t.get("reason") if _truthy(t.get("reason")) else "Processor tripwire triggered"}
            for k in ("retry", "metadata", "processorId"):
                if k in t:
                    tw[k] = t[k]
            self.tripwire = tw
        if isinstance(usage, dict):
            # populateUsageCount: the counters no step reported, from the finish's usage.  On
            # the wire a finish carries the run's counters with a total nobody reported written
            # as 0 (Mastra's "?? 0" when it forwards the frame): such a 0 is not taken.
            u = self.u
            fresh = None
            for k, v in usage.items():
                if k not in u:
                    i = _UPDATE_INDEX.get(k, -1)
                    if i < 0 or i < 3 and v == 0 and (type(v) is int or type(v) is float):
                        continue
                    if fresh is None:
                        fresh = []
                    fresh.append((i, k, v))
            if fresh is not None:
                self._fresh_usage(fresh, False)
        # the run's providerMetadata is the finish's; its last step takes it if it has none
        self.pm = None if pm is UNSET else pm
        if self.pm is not None and len(self.steps) > (0 if self.cut is None else self.cut[2]) \
                and self.steps[-1].pm is None:
            self.steps[-1].pm = self.pm

    def usage(self) -> Dict[str, Any]:
        """The counters as Mastra's #usageCount lists them: the three totals first, the others in
        the order they were first reported."""
        u = self.u
        if self.u_sorted:       # (the usual case: u is in that order already)
            return dict(u)
        out = {k: u[k] for k in _PRIMARY if k in u}
        for k, v in u.items():
            if _UPDATE_INDEX.get(k, 3) >= 3:
                out[k] = v
        return out

    def total_usage(self, usage: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """Mastra's #getTotalUsage (usage: what usage() gives now, when the caller has it): the
        counters in a fixed order, totalTokens made of the input, output and reasoning ones
        when no step reported it."""
        u = self.usage() if usage is None else usage
        if self.u_sorted and "totalTokens" in u:     # (the usual case: usage() is in that order)
            return dict(u)
        out: Dict[str, Any] = {}
        if "inputTokens" in u:
            out["inputTokens"] = u["inputTokens"]
        if "outputTokens" in u:
            out["outputTokens"] = u["outputTokens"]
        if "totalTokens" in u:
            out["totalTokens"] = u["totalTokens"]
        else:
            # (input ?? 0) + (output ?? 0) + (reasoning ?? 0), as JavaScript adds them
            total: Any = u.get("inputTokens")
            if total is None:
                total = 0
            for k in ("outputTokens", "reasoningTokens"):
                v = u.get(k)
                if v is None:
                    v = 0
                if (type(v) is int or type(v) is float) and (type(total) is int or type(total) is float):
                    total = total + v
                else:
                    total = _js_add(total, v)
            out["totalTokens"] = total
        for k in _DETAIL:
            if k in u:
                out[k] = u[k]
        if "raw" in u:
            out["raw"] = u["raw"]
        return out

    def fail(self, error: dict) -> None:
        """An error chunk: the run failed (its finish, which Mastra still sends, gives the finish
        reason)."""
        self.error = error
        self.status = "failed"
        if not self.finished:
            self.finish_reason = "error"
        if self.obj_state == 0:
            self.obj_state = 2

    def trip_wire(self, p: dict) -> None:
        """A tripwire chunk: Mastra resolves the run as it stands and reads no further."""
        if self.trip is not None:
            return
        reason = p.get("reason")
        tw = {"reason": reason if _truthy(reason) else "Content blocked"}
        for k in ("retry", "metadata", "processorId"):
            if k in p:
                tw[k] = p[k]
        self.tripwire = tw
        self.finish_reason = "other"
        self.trip = (len(self.text), len(self.steps), self.usage(), self.warnings, self.status, self.error, tw,
                     self.cut)

    # -- text and reasoning ------------------------------------------------------------------
    def text_part(self, id_: Any, pm: Any) -> _Part:
        """The open text part for id, opened on its first delta."""
        part = self.open_text.get(id_)
        if part is None:
            stashed = self.text_pm.pop(id_, UNSET)
            part = _Part("text", id_, self.text, stashed if pm is UNSET else pm)
            self.open_text[id_] = part
            self.part_entry("span", part)
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

    def reasoning_part(self, id_: Any, pm: Any, start: int) -> _Part:
        """The open reasoning part for id; start: 0 for a delta (opens one if none is open), 1
        for a reasoning-start (a new part, and a new reasoning entry for the id), 2 for a
        redacted-reasoning (a new part, no entry: MastraModelOutput does not list those)."""
        part = self.open_reasoning.get(id_)
        if part is None or start:
            msg = None
            if part is not None:
                part.seal()
                if start == 1 and part.listed and not _redacted(pm):
                    msg = part if part.msg is None else part.msg
            part = _Part("reasoning", id_, self.reasoning_buf(), pm)
            if msg is not None:       # (the message part goes on: see _Part)
                part.msg = msg
                part.listed = True
                if msg.more is None:
                    msg.more = []
                msg.more.append(part)
            self.open_reasoning[id_] = part
            if start == 1:
                # (an id seen before keeps its place in the object, with the new entry)
                k = _js_key(id_)
                self.rdet[k] = [id_, pm, [part]]
                if self.srdet is None:
                    self.srdet = {}
                self.srdet[k] = [id_, pm, [part]]
            elif start == 0:
                k = _js_key(id_)
                e = self.rdet.get(k)
                if e is not None:
                    e[2].append(part)
                if self.srdet:
                    e = self.srdet.get(k)
                    if e is not None:
                        e[2].append(part)
            self.step()
        elif pm is not UNSET:
            part.set_pm(pm)
        if start == 0 and _truthy(pm):
            self.reasoning_end(id_, pm)
        return part

    def reasoning_end(self, id_: Any, pm: Any) -> None:
        """A reasoning-end (or delta): its providerMetadata, when truthy, is its entries'."""
        if _truthy(pm):
            k = _js_key(id_)
            e = self.rdet.get(k)
            if e is not None:
                e[1] = pm
            if self.srdet:
                e = self.srdet.get(k)
                if e is not None:
                    e[1] = pm

    def reasoning_delta(self, id_: Any, pm: Any) -> _Part:
        part = self.reasoning_part(id_, pm, 0)
        self.saw_reasoning = True
        if not part.listed:
            self.part_entry("span", part)
            part.listed = True
            self.step().reasoned = True
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
            if isinstance(name, str):
                ta.name = name
        if not ta.name and isinstance(name, str):
            ta.name = name
        return ta

    def _push_call(self, entry: Any, call_id: Any) -> None:
        i = len(self.call_list)
        self.call_list.append(entry)
        if call_id not in self.tool_calls:
            self.tool_calls[call_id] = i
        self.part_entry("tool", i)     # (a message part for each call listed)
        self.step().calls.append(i)

    def tool_call(self, chunk: Any, call_id: Any) -> None:
        """A tool-call chunk.  Mastra lists a call once per toolCallId: a later tool-call of an
        id already listed (the provider's, after the one Mastra made at the end of the
        arguments' streaming) only fills in what the first lacks."""
        self.nmodel += 1
        ta = self.tool_args.get(call_id)
        if ta is not None and ta.pidx >= 0:
            # the tool-call Mastra writes right after an -end is the call it made there
            j = ta.pidx
            ta.pidx = -1
            if self._echo(self.call_list[j], chunk):
                self.call_list[j] = chunk
                return
        i = self.tool_calls.get(call_id)
        if i is not None:
            self._merge_call(i, chunk)
            return
        self._push_call(chunk, call_id)
        out = chunk.payload.output
        if type(out) is dict and out.get("from") == "AGENT" and out.get("type") == "finish":
            # a sub-agent's finish as the call's output: its usage counts for this run
            fp = out.get("payload")
            if type(fp) is dict and type(fp.get("usage")) is dict:
                self._add_usage(fp["usage"])

    def _merge_call(self, i: int, chunk: Any) -> None:
        e = self.call_list[i]
        q = chunk.payload
        if type(e) is _PendingCall:
            e = e.made(self)
        p = e.payload
        ch: Dict[str, Any] = {}
        if _truthy(q.args) and _no_keys(p.args):
            ch["args"] = q.args
        if _truthy(q.providerMetadata) and not _truthy(p.providerMetadata):
            ch["providerMetadata"] = q.providerMetadata
        if q.dynamic is not UNSET and q.dynamic is not None and (p.dynamic is UNSET or p.dynamic is None):
            ch["dynamic"] = q.dynamic
        if _truthy(q.observability) and not _truthy(p.observability):
            ch["observability"] = q.observability
        if ch:
            e = msgspec.structs.replace(e, payload=msgspec.structs.replace(p, **ch))
        self.call_list[i] = e

    def _echo(self, e: Any, chunk: Any) -> bool:
        """Whether a tool-call chunk is the call Mastra made at an -end (e, pending): the same
        name and arguments.  (Kept then as written, with any key it has beyond those.)  As a rule
        the arguments' JSON is the streamed text itself, compared without parsing it; else they
        are what parsing that gives."""
        if type(e) is not _PendingCall:
            return False
        pc = e
        q = chunk.payload
        if pc.name and pc.name != q.toolName:
            return False
        args = q.args
        ta = pc.ta
        enc = _json_encode(args) if args is not UNSET else b""
        return (pc.end - pc.begin == len(enc) and ta.buf.data.startswith(enc, pc.begin)
                or parse_args(ta.buf.text(pc.begin, pc.end)) == args)

    def tool_result(self, chunk: Any, call_id: Any) -> None:
        self.step().results.append(len(self.tool_results))
        self.tool_results.append(chunk)

    def input_end(self, call_id: str) -> None:
        """tool-call-input-streaming-end: Mastra makes the call there, of the arguments streamed
        since the previous -end, when a -start came since then."""
        ta = self.tool_args.get(call_id)
        if ta is None:
            return
        if ta.start is not None:
            ta.pidx = len(self.call_list)
            self._push_call(_PendingCall(ta), call_id)
            self.pending = True
        ta.start = None
        ta.mark = len(ta.buf)

    def calls(self) -> list:
        """call_list, with the pending calls made: a list of its own when there are any (they stay
        pending in call_list, where a tool-call chunk that comes later may yet take their place:
        a result() mid-stream must not change what the stream gives)."""
        calls = self.call_list
        if self.pending:
            made = None
            for i, c in enumerate(calls):
                if type(c) is _PendingCall:
                    if made is None:
                        made = calls[:]
                    made[i] = c.made(self)
            if made is None:
                self.pending = False    # (none left: tool-call chunks took their places)
            else:
                calls = made
        return calls

    # -- output ------------------------------------------------------------------------------
    def result(self) -> RunOutput:
        # (called once per run by accumulate(): written for speed)
        dec = _Memo()
        tbuf, rbuf = self.text, self.rbuf
        calls, results = self.calls(), self.tool_results
        trip = self.trip
        cut = self.cut if trip is None else trip[7]     # (None unless a goal truncated the run)
        done = self.steps if trip is None else self.steps[:trip[1]]
        if cut is not None:
            done = done[cut[2]:]
        parts = self._parts(dec, calls)
        # With output processors (a step's tripwire or retry says so: step_finish), Mastra re-reads
        # the run's text at the finish from its message list (resolveOutputTextSkippingCompletion-
        # Checks: the text of its last message as the model would be sent it, that is, the text
        # parts after the last tool invocation of the message; none without a message), and gives
        # that text to the last step when it differs, unless the run was aborted (a step a
        # processor's tripwire ended, its text "" so far, has its text back).
        rereads = self.procs and self.finished and self.status != "canceled" and not self.suspended
        reread = _message_text(parts) if rereads and trip is None else None
        steps = []
        for st in done:
            ci, ri = st.calls, st.results
            text = "" if st.trip else dec.get(tbuf, st.t0, st.t1)
            if reread is not None and st is done[-1]:
                text = reread
            steps.append(StepResult(
                step_type="tool-result" if steps else "initial",
                text=text,
                # (a step without reasoning, the usual one: no call)
                reasoning_text=dec.get(rbuf, st.r0, st.r1) if st.r1 > st.r0 else "",
                finish_reason=st.reason, usage=st.usage,
                tool_calls=[calls[i] for i in ci] if ci else [],
                tool_results=[results[i] for i in ri] if ri else [],
                reasoning=[self._reasoning_entry(e, dec, st.r1) for e in st.rdet] if st.rdet else [],
                sources=st.sources[:] if st.sources else [], files=st.files[:] if st.files else [],
                warnings=st.warnings,
                provider_metadata=st.pm, response_id=st.resp_id, response_model_id=st.model_id,
                tripwire=st.tripwire))
        if trip is not None:
            # what Mastra resolves at a tripwire: the text so far, the steps done, and empty lists
            usage = trip[2]
            return RunOutput(
                run_id=self.run_id, text=dec.get(tbuf, 0 if cut is None else cut[0], trip[0]), reasoning_text=None,
                reasoning=[],
                tool_calls=[], tool_results=[], tool_errors=[], usage=usage, total_usage=dict(usage),
                finish_reason="other", object=None, sources=[], files=[], warnings=trip[3],
                provider_metadata=None, steps=steps, error=trip[5], tripwire=trip[6], status=trip[4],
                suspend_payload=None, parts=parts, invalid_frames=[])
        # The text: the last step's once a step had tool calls or results (Mastra leaves out the
        # narration before the tools), unless the run was suspended; everything otherwise.  Till
        # the finish, the step being written counts as the last.
        last = self.cur if self.cur is not None and not self.finished else (done[-1] if done else None)
        tool_step = False
        for st in done:
            if st.calls or st.results:
                tool_step = True
                break
        if rereads:     # (no message: the last step's text)
            text = reread if reread is not None else steps[-1].text if steps else ""
        elif last is not None and tool_step and not self.suspended:
            text = "" if last.trip else dec.get(tbuf, last.t0, last.t1)
        else:
            text = dec.get(tbuf, 0 if cut is None else cut[0])
        usage = self.usage()
        if cut is None:
            reasoning_text = dec.get(rbuf) if self.saw_reasoning else None
            calls, results = calls[:], results[:]
            sources = self.sources[:] if self.sources else []
            files = self.files[:] if self.files else []
        else:
            reasoning_text = dec.get(rbuf, cut[1]) if self.saw_reasoning else None
            calls, results = calls[cut[3]:], results[cut[4]:]
            sources = self.sources[cut[5]:] if self.sources else []
            files = self.files[cut[6]:] if self.files else []
        return RunOutput(
            run_id=self.run_id, text=text, reasoning_text=reasoning_text,
            reasoning=[self._reasoning_entry(e, dec) for e in _js_values(self.rdet)] if self.rdet else [],
            tool_calls=calls, tool_results=results, tool_errors=self.tool_errors[:] if self.tool_errors else [],
            usage=usage, total_usage=self.total_usage(usage), finish_reason=self.finish_reason,
            # (a run that stays suspended resolves its object as undefined)
            object=None if self.status == "suspended" else self.object,
            sources=sources, files=files,
            warnings=self.warnings, provider_metadata=self.pm, steps=steps,
            error=self.error, tripwire=self.tripwire, status=self.status,
            suspend_payload=self.suspend_payload, parts=parts, invalid_frames=[])

    def _reasoning_entry(self, e: list, dec: _Memo, limit: int = -1) -> dict:
        """A reasoning entry [id, providerMetadata, parts] as Mastra lists it; limit: a step's,
        its text up to the reasoning buffer's length at the step's end."""
        payload: Dict[str, Any] = {}
        if e[0] is not UNSET:
            payload["id"] = e[0]
        if e[1] is not UNSET:
            payload["providerMetadata"] = e[1]
        parts = e[2]
        if limit >= 0:
            payload["text"] = "".join([p.text_upto(dec, limit) for p in parts])
        else:
            payload["text"] = parts[0].text(dec) if len(parts) == 1 else "".join([p.text(dec) for p in parts])
        d: Dict[str, Any] = {"type": "reasoning"}
        if self.run_id is not None:
            d["runId"] = self.run_id
        d["from"] = self.from_
        d["payload"] = payload
        return d

    def _parts(self, dec: _Memo, calls: list) -> List[dict]:
        """The parts of the message Mastra persists (``buildMessagesFromChunks``, with the agent
        loop's step boundaries and rollbacks, and its data parts where it puts them); calls: the
        run's calls() (its call_list, pending calls made)."""
        # (buildMessagesFromChunks takes a result that is not null or undefined; the loop builds a
        # step's parts of the model's own chunks, where only a provider-executed tool's result is,
        # and merges the results of the tools it ran into the message itself, null ones too)
        results = {}
        for c in self.tool_results:
            r = c.payload.result
            if r is not None and r is not UNSET or r is None and getattr(c.payload, "providerExecuted", UNSET) is not True:
                results[c.payload.toolCallId] = c
        out: List[dict] = []
        # a step-start goes before a text part that comes right after a tool invocation in the
        # same step (buildMessagesFromChunks inserts it once empty texts are dropped); the data
        # parts, which Mastra adds to the message apart from the others, as they arrive, do not
        # come between them
        after_tool = False
        bg_failed = None    # toolCallId -> the message of its background task's failure
        # The agent loop opens each step after the first with a step boundary
        # (MessageList.openStepBoundary): a step-start part, unless the message is empty (no
        # boundary then) or ends in one already (that one is the boundary); a step a processor had
        # tried again is rolled back to its boundary, which goes too (rollbackToStepBoundary), or
        # with no boundary the message is removed whole.  The loop adds a step's parts to its
        # message once the model's stream for the step has ended, and a data-* part as it comes:
        # one that came while the model was still streaming the step (more of the step's text,
        # reasoning, tool calls, sources or files after it) goes before the step's parts, after
        # those the data parts before it put there; one that came after, after all of them.
        boundary = -1
        ends = None     # each step's stamp at its end (None: a step without data parts)
        late = None     # the step's data parts that go after its parts (None: none)
        seg = 0
        seg_start = early = 0
        for kind, v in self.seq:
            if kind == "span":
                part = v        # (a _Part: typed in the .pxd, so its fields are read directly)
                t = part.text(dec)
                if part.more is not None:
                    t += "".join([q.text(dec) for q in part.more])
                pm = _v(part.pm)
                if part.kind == "text":
                    if not t and pm is None:
                        continue
                    if after_tool:
                        out.append({"type": "step-start"})
                    d = {"type": "text", "text": t}
                else:
                    detail = {"type": "redacted", "data": ""} if part.redacted else {"type": "text", "text": t}
                    d = {"type": "reasoning", "reasoning": t, "details": [detail]}
                if pm is not None:
                    d["providerMetadata"] = pm
                out.append(d)
                after_tool = False
            elif kind == "tool":
                p = calls[v].payload
                cid = p.toolCallId
                inv: Dict[str, Any] = {"state": "call", "toolCallId": cid, "toolName": p.toolName,
                                       "args": _v(p.args) if p.args is not UNSET else {}}
                pm = getattr(p, "providerMetadata", UNSET)
                executed = getattr(p, "providerExecuted", UNSET)
                res = results.get(cid)
                if res is not None:
                    inv["state"] = "result"
                    inv["result"] = res.payload.result
                    if self.gated is not None and cid in self.gated:
                        # a call that waited for approval and ran: the loop gives its result
                        # the grant (a declined one has no result: tool-output-denied)
                        inv["approval"] = {"id": cid, "approved": True}
                    # (the result's providerExecuted, and its providerMetadata, else the call's; a
                    # null one only the loop merges, into the call's part as it is, unless a
                    # background task's hook wrote it first)
                    rpm = getattr(res.payload, "providerMetadata", UNSET)
                    bg = _background_task(rpm, "completed")
                    if bg is not None:
                        # (the task's hook and the loop each send a result: the loop's carries
                        # the tool's toModelOutput, whichever comes last)
                        mo = None
                        for c in self.tool_results:
                            m = _v(getattr(c.payload, "providerMetadata", None))
                            m = m.get("mastra") if c.payload.toolCallId == cid and isinstance(m, dict) else None
                            if isinstance(m, dict) and m.get("modelOutput") is not None:
                                mo = m["modelOutput"]
                        pm = _background_pm(pm, mo, bg)
                        executed = getattr(res.payload, "providerExecuted", UNSET)
                    elif inv["result"] is not None:
                        pm = _merged_item_ids(pm, rpm)
                        executed = getattr(res.payload, "providerExecuted", UNSET)
                d = {"type": "tool-invocation", "toolInvocation": inv}
                if pm is not UNSET:
                    d["providerMetadata"] = pm
                if executed is not UNSET:
                    d["providerExecuted"] = executed
                title = getattr(p, "title", UNSET)
                if title is not UNSET:
                    d["title"] = title
                out.append(d)
                after_tool = True
            elif kind == "tool-error":
                # the first invocation of its id listed so far (none: nothing) takes the error
                cid = getattr(v.payload, "toolCallId", UNSET)
                d = _first_invocation(out, cid)
                if d is not None:
                    inv = dict(d["toolInvocation"])
                    inv["state"] = "output-error"
                    err = _v(v.payload.error)
                    epm = getattr(v.payload, "providerMetadata", UNSET)
                    bg = _background_task(epm, "failed")
                    if bg is not None:
                        # a background task's failure, as the task's hook writes it into the
                        # message (its error an object with the message: no Error instance)
                        msg = err.get("message") if isinstance(err, dict) else None
                        if bg_failed is None:
                            bg_failed = {}
                        bg_failed[cid] = msg
                        inv["errorText"] = "Background task failed: " + \
                            (msg if isinstance(msg, str) and msg else "Unknown error")
                        if self.gated is not None and cid in self.gated:
                            # (the hook writes an approved call's grant, failed or not)
                            inv["approval"] = {"id": cid, "approved": True}
                        cpm = UNSET     # (the hook's base: the call's, not a placeholder result's)
                        for c in calls:
                            if c.payload.toolCallId == cid:
                                cpm = getattr(c.payload, "providerMetadata", UNSET)
                                break
                        d["providerMetadata"] = _background_pm(_v(cpm), None, bg)
                    else:
                        if bg_failed is not None and cid in bg_failed and isinstance(err, dict) \
                                and "message" not in err and isinstance(bg_failed[cid], str):
                            # the loop's own error for an awaited task that failed: an Error
                            # made of the task's message, which JSON leaves out of the chunk
                            err = dict(err, message=bg_failed[cid])
                        msg = _error_value(err, "Tool execution failed")["message"]
                        inv["errorText"] = msg if not isinstance(msg, str) or msg.strip(_JS_SPACE) else \
                            "Tool execution failed"
                    d["toolInvocation"] = inv
            elif kind == "source":
                p = _builtins(v.payload)
                src = {"sourceType": "url"}
                if "id" in p:
                    src["id"] = p["id"]
                src["url"] = p["url"] if _truthy(p.get("url")) else ""
                for k in ("title", "providerMetadata"):
                    if k in p:
                        src[k] = p[k]
                out.append({"type": "source", "source": src})
                after_tool = False
            elif kind == "file":
                p = _builtins(v.payload)
                d = {"type": "file"}
                for k in ("data", "mimeType"):
                    if k in p:
                        d[k] = p[k]
                if _truthy(p.get("providerMetadata")):
                    d["providerMetadata"] = p["providerMetadata"]
                out.append(d)
                after_tool = False
            elif kind == "data":
                d = {"type": v[0].type, "data": _v(v[0].data)}
                if ends is None:
                    ends = [e for k, e in self.seq if k == "step"]
                    ends.append(self.stamp())
                if v[1] != ends[seg]:
                    out.insert(seg_start + early, d)
                    early += 1
                elif late is None:
                    late = [d]
                else:
                    late.append(d)
            elif kind == "step" or kind == "end":
                # (a step boundary; "end": a step's end with no step-start after it, no boundary)
                if late is not None:
                    out += late
                    late = None
                if kind == "step":
                    if out:
                        if out[-1]["type"] != "step-start":
                            out.append({"type": "step-start"})
                        boundary = len(out) - 1
                    else:
                        boundary = -1
                    seg += 1
                after_tool = False
                seg_start = len(out)
                early = 0
            elif kind == "denied":      # (rare: after the usual kinds)
                # a declined call (tool-output-denied): the loop marks the first invocation of
                # its id so, with the decision the chunk carries
                cid = v.payload.toolCallId
                d = _first_invocation(out, cid)
                if d is not None:
                    old = d["toolInvocation"]
                    inv = {"state": "output-denied", "toolCallId": cid, "toolName": old["toolName"],
                           "args": old["args"]}
                    approval = v.payload.approval
                    if approval is not UNSET:
                        inv["approval"] = _v(approval)
                    d["toolInvocation"] = inv
            else:           # "retry" (the step's late data parts go with it)
                late = None
                del out[max(boundary, 0):]
                after_tool = False
                seg_start = len(out)
                early = 0
        if late is not None and self.ended:
            # (the step those data parts came in has ended since, and what is open below came
            # after it: the next step's parts, after them, as part_entry's end mark would put it)
            out += late
            late = None
        # a reasoning-start with no delta or end since: an empty part, at the end
        # (MessagePartSpans.flushSpansLeftOpen)
        for part in self.open_reasoning.values():
            if not part.listed:
                d = {"type": "reasoning", "reasoning": "", "details": [{"type": "text", "text": ""}]}
                pm = _v(part.pm)
                if pm is not None:
                    d["providerMetadata"] = pm
                out.append(d)
        if late is not None:
            out += late
        return out


def _first_invocation(out: list, cid: Any) -> Optional[dict]:
    """The first tool-invocation part listed so far for toolCallId cid (the one a tool-error or
    a tool-output-denied marks), or None."""
    for d in out:
        if d["type"] == "tool-invocation" and d["toolInvocation"]["toolCallId"] == cid:
            return d
    return None


def _message_text(parts: list) -> Any:
    """The text Mastra reads of the message those parts make (coreContentToString of its last
    message as the model is sent it: the text parts after the last tool invocation, joined), or
    None when there is no message.  An invocation still in state "call" (no result: a client's
    tool, a provider's call with none) is dropped before that conversion (sanitizeAIV4UIMessages),
    and a message of nothing else with it."""
    out = []
    kept = False
    for p in parts:
        t = p["type"]
        if t == "tool-invocation":
            if p["toolInvocation"]["state"] == "call":
                continue
            out = []
        elif t == "text":
            out.append(p["text"])
        kept = True
    return "".join(out) if kept else None


def _no_keys(x: Any) -> bool:
    """``Object.keys(x || {}).length === 0``."""
    if isinstance(x, (dict, list, str)):
        return not x
    return True


def _error_value(e: Any, fallback: str = "Unknown error chunk in stream") -> dict:
    """Mastra's ``getErrorFromUnknown(payload.error, {fallbackMessage})`` (an error chunk's
    fallback by default) as its ``{name, message}``: an object's own name and message (whatever
    their types: Object.assign copies them onto the Error), else its JSON.stringify text
    ("[object Object]" for {}); a non-empty string as the message; anything else the fallback."""
    if isinstance(e, dict):
        if "message" in e:
            msg = e["message"]
        else:
            msg = _js_stringify(e)
            if msg == "{}":
                msg = "[object Object]"
        return {"name": e["name"] if "name" in e else "Error", "message": msg}
    if isinstance(e, list):
        return {"name": "Error", "message": _js_stringify(e)}
    if isinstance(e, str) and e:
        return {"name": "Error", "message": e}
    return {"name": "Error", "message": fallback}


#: what JavaScript's String.prototype.trim takes off (white space and line terminators)
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000\ufeff"


def _redacted(pm: Any) -> bool:
    """A reasoning-start's providerMetadata says the reasoning is redacted (a provider's entry
    with redactedData)."""
    return isinstance(pm, dict) and any(isinstance(v, dict) and _truthy(v.get("redactedData")) for v in pm.values())


def _merged_item_ids(call: Any, result: Any) -> Any:
    """The providerMetadata of a tool invocation with a result (``preserveResponseItemIdsOnMerge``):
    the result's, else the call's; where the call and the result carry different OpenAI (or Azure)
    Responses item ids, the call's is kept as ``itemId`` and the result's as ``resultItemId``."""
    merged = call if result is UNSET or result is None else result
    for prov in ("openai", "azure"):
        a = call.get(prov) if isinstance(call, dict) else None
        b = result.get(prov) if isinstance(result, dict) else None
        ca = a.get("itemId") if isinstance(a, dict) else None
        rb = b.get("itemId") if isinstance(b, dict) else None
        if isinstance(ca, str) and isinstance(rb, str) and ca != rb:
            ns = merged.get(prov) if isinstance(merged, dict) else None
            ns = dict(ns) if isinstance(ns, dict) else {}
            ns["itemId"] = ca
            ns["resultItemId"] = rb
            merged = dict(merged) if isinstance(merged, dict) else {}
            merged[prov] = ns
    return merged


def _background_task(pm: Any, status: str) -> Any:
    """The ``mastra.backgroundTask`` of a tool result's (or error's) providerMetadata when it says
    the task ended with ``status`` ("completed", "failed"): such a chunk is the task's end, whose
    hook (``onResult``) writes the invocation into the message; else None."""
    m = pm.get("mastra") if isinstance(pm, dict) else None
    bt = m.get("backgroundTask") if isinstance(m, dict) else None
    return bt if isinstance(bt, dict) and bt.get("status") == status else None


def _background_pm(call: Any, model_output: Any, bt: dict) -> dict:
    """The providerMetadata a background task's hook gives the invocation it writes into the
    message: the call's, its ``mastra`` entry given ``modelOutput`` (the tool's toModelOutput, as
    the loop's result chunk carries it; null without one, or for a failure) and the task's
    ``backgroundTask``."""
    out = dict(call) if isinstance(call, dict) else {}
    cm = out.get("mastra")
    mastra = dict(cm) if isinstance(cm, dict) else {}
    mastra["modelOutput"] = model_output
    mastra["backgroundTask"] = {"taskId": bt.get("taskId"), "status": bt["status"]}
    out["mastra"] = mastra
    return out


def _js_stringify(x: Any) -> str:
    """JSON.stringify(x) of a JSON value."""
    return encode_general(x, js_numbers).decode("utf-8")


def _js_string(x: Any) -> str:
    """JavaScript's String(x) of a JSON value."""
    if isinstance(x, str):
        return x
    if x is None:
        return "null"
    if x is True or x is False:
        return "true" if x else "false"
    if isinstance(x, (int, float)):
        return js_number(_json_encode(x)).decode()
    if isinstance(x, dict):
        return "[object Object]"
    return ",".join("" if v is None else _js_string(v) for v in x)


def _js_add(a: Any, b: Any) -> Any:
    """JavaScript's a + b of two JSON values (a usage counter that is not a number: a string
    concatenates, null counts 0, true 1)."""
    if isinstance(a, (dict, list)):
        a = _js_string(a)
    if isinstance(b, (dict, list)):
        b = _js_string(b)
    if isinstance(a, str) or isinstance(b, str):
        return _js_string(a) + _js_string(b)
    return (0 if a is None else int(a) if a is True or a is False else a) + \
        (0 if b is None else int(b) if b is True or b is False else b)


# --------------------------------------------------------------------------------------------
# Big frames: step-finish and finish

#: The stepResult.reasons with which Mastra's loop puts a tripwire in the last entry of a
#: step-finish's output.steps (a processor's tripwire; one that had the step tried again): the
#: frames whose output.steps is read (_step_trip; the native finish reader leaves them to the light
#: decoder).
STEP_TRIP_REASONS = ("tripwire", "retry")


class _MinOutput(msgspec.Struct):
    usage: Any = UNSET
    # (kept as the bytes it is, read only for the STEP_TRIP_REASONS: _step_trip)
    steps: Union[msgspec.Raw, UnsetType] = UNSET


class _MinOutputPayload(msgspec.Struct):
    stepResult: Any = UNSET
    metadata: Any = UNSET
    output: Optional[_MinOutput] = None
    providerMetadata: Any = UNSET
    id: Union[str, UnsetType] = UNSET       # (typed as the chunk's payload types it)


class _MinFinish(msgspec.Struct):
    type: str
    runId: Any = UNSET
    from_: Any = msgspec.field(name="from", default=UNSET)
    payload: Optional[_MinOutputPayload] = None


_min_decoder = msgspec.json.Decoder(_MinFinish)
_json_encode = msgspec.json.Encoder().encode

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


def response_ids(md_id: Any, pid: Any, model_id: Any, model: Any) -> tuple:
    """A step's response.id and response.modelId as Mastra's loop makes them of a step-finish whose
    metadata is an object: ``{id: payload.id || "", ...metadata, modelId: metadata.modelId ||
    metadata.model || ""}``, so metadata.id when metadata has the key (whatever its value; UNSET:
    it has not), else payload.id when truthy, else "".  (Shared by pick_finish and the native
    finish reader, which finds the four values itself.)"""
    return (md_id if md_id is not UNSET else pid if _truthy(pid) else "",
            model_id if _truthy(model_id) else model if _truthy(model) else "")


def pick_finish(sr: Any, md: Any, usage: Any, pm: Any, pid: Any = UNSET) -> tuple:
    """(reason, warnings, usage, resp_id, model_id, pm) from a step-finish/finish payload's
    stepResult, metadata, output.usage, providerMetadata and id (UNSET where absent), for typed
    and light payloads.  (The native C reader finds the keys of stepResult and metadata itself and
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
        # (Mastra's loop cannot read such a step-finish: its response ids are "")
        return reason, warnings, usage, "", "", None if pm is UNSET else pm
    # (metadata.providerMetadata ?? providerMetadata)
    mpm = md.get("providerMetadata")
    if mpm is not None:
        pm = mpm
    elif pm is UNSET:
        pm = None
    return (reason, warnings, usage) + response_ids(md.get("id", UNSET), pid, md.get("modelId"), md.get("model")) \
        + (pm,)


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
                       getattr(payload, "providerMetadata", UNSET), getattr(payload, "id", UNSET))


def light_fields(m: Any) -> tuple:
    """What accumulation reads from a light step-finish/finish (decode_finish_light's struct):
    (is step-finish, runId or None, reason, warnings, usage, response id, model id,
    providerMetadata, from or UNSET), and for the STEP_TRIP_REASONS the tripwire of the last entry
    of output.steps (_step_trip).  (from: for the run the frame may be the first of, as the
    typed chunk's would be: a log that starts in the middle of a run.)"""
    f = _finish_fields(m.payload)
    out = (m.type == "step-finish", None if m.runId is UNSET else m.runId) + f + (m.from_,)
    if f[0] in STEP_TRIP_REASONS:
        out += (_step_trip(m.payload),)
    return out


def _step_trip(payload: Any) -> Any:
    """The tripwire of the last entry of a step-finish/finish payload's output.steps (typed or
    light), UNSET if none: what Mastra reads there when a step or the run ends on a tripwire."""
    out = getattr(payload, "output", UNSET)
    steps = out.get("steps", UNSET) if isinstance(out, dict) else getattr(out, "steps", UNSET)
    if isinstance(steps, msgspec.Raw):
        try:
            steps = msgspec.json.decode(steps)
        except msgspec.DecodeError:
            return UNSET
    if isinstance(steps, list) and steps:
        last = _builtins(steps[-1])
        if isinstance(last, dict):
            return last.get("tripwire", UNSET)
    return UNSET


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


def _has_parts(run: _Run) -> bool:
    """Whether the run has message parts (its step boundaries and rollbacks aside)."""
    for kind, v in run.seq:
        if kind != "step" and kind != "retry" and kind != "end":
            return True
    return False


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
        if acc._main is None or acc._main.run_id is None and not _has_parts(acc._main):
            acc._main = run
    acc._current = run
    return run


def _structuring(chunk: Any) -> bool:
    """Whether an object or object-result chunk is a structuring model's (metadata.from
    "structured-output": Mastra's StructuredOutputProcessor, when structuredOutput has a model of
    its own).  It carries that model's run id, but it is the object of the run being streamed,
    which MastraModelOutput resolves from it: it goes to the current run, as a chunk without
    runId does."""
    md = chunk.metadata
    return type(md) is dict and md.get("from") == "structured-output"


def _other(acc: "AccumulatorBase", chunk: Any) -> None:
    """A chunk other than a delta: to its handler (_HANDLERS, by tag), with its run.  (A
    function, not a method: on the native path a C call.)"""
    cls = type(chunk)
    tag = _TAGS.get(cls)         # (the classes with a fixed tag: no DataChunk among them)
    t = tag or getattr(chunk, "type", None) or cls.__struct_config__.tag
    run_id = getattr(chunk, "runId", UNSET)
    if (cls is _c.ObjectResult or cls is _c.Object) and _structuring(chunk):
        run_id = UNSET
    run = _run_of(acc, run_id, getattr(chunk, "from_", UNSET))
    handle = _HANDLERS.get(t)
    if handle is not None:
        handle(acc, run, chunk, getattr(chunk, "payload", UNSET))
    elif tag is None and isinstance(chunk, _c.DataChunk):
        if chunk.transient is not True:
            run.part_entry("data", (chunk, run.stamp()))
            run.seg_data = True


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
            dec = self._make_decoder()
        # (called once per network read by a live consumer, often one event each: no bound
        # method, no *args tuple, no loop over the empty list the native decoder mostly returns)
        try:
            items = self._decoder_feed(dec, data)
        except DecodeError as exc:
            self._take(getattr(exc, "chunks", None))
            raise
        if items:
            self._take(items)

    def _decoder_feed(self, dec: Any, data: Any) -> Any:
        """dec.feed(data): the chunks the decoder did not hand this accumulator itself.  (The
        native path's accumulator calls its own decoder's feed in C: _core._AccumulatorBase.)"""
        return dec.feed(data)

    def _make_decoder(self) -> Any:
        """The decoder feed() gives the bytes to (made at the first)."""
        opts: Dict[str, Any] = {"errors": self._errors}
        if self._max is not None:
            opts["max_frame_bytes"] = self._max
        dec = self._decoder = self._impl.StreamDecoder(self._framing, _sink=self, **opts)
        return dec

    def _feed_all(self, pieces: Any) -> None:
        """add() each typed chunk and feed() each other piece: accumulate()'s loop for a whole
        source, compiled on the native path (as a Python loop, a 2.6 MB SSE body in 16 KiB pieces
        spent about 2 % of its time in it)."""
        base = _c.BaseChunk
        if type(pieces) is list or type(pieces) is tuple:
            # a whole body in pieces (an SSE body read 16 KiB at a time): if it is a big one, the
            # native decoder sizes its tables for it now, as it does for a big piece, instead of
            # growing them on the way (each growth forgets what the delta loop had kept)
            n = 0
            for piece in pieces:
                if type(piece) is not bytes:
                    break
                n += len(piece)
                if n >= _BIG_INPUT:
                    dec = self._decoder
                    if dec is None and not self._closed:
                        dec = self._make_decoder()
                    expect = getattr(dec, "_expect", None)
                    if expect is not None:
                        expect(n)
                    break
        for piece in pieces:
            # (bytes first: isinstance with a chunk class costs about 900 instructions a piece)
            if type(piece) is not bytes and isinstance(piece, base):
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
        """A start frame of payload {id, messageId}, read by the native decoder: all it does is
        make its run the current one (a new run at its first chunk)."""
        _run_of(self, run_id, from_)

    def _text_start(self, run_id: str, from_: str, id_: str) -> None:
        """A text-start frame without providerMetadata, read by the native decoder: its run made
        the current one, and no providerMetadata kept for the id's next part."""
        run = _run_of(self, run_id, from_)
        if run.text_pm:
            run.text_pm.pop(id_, None)

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
        _run_of(self, f[1], f[8]).finish_frame(f[0], f[2:], f[9] if len(f) > 9 else UNSET)

    def _step_start(self, run_id: Any, from_: Any, warnings: Any) -> None:
        """A step-start frame, its runId, from and payload.warnings (UNSET where absent) read by
        the native decoder: what _on_step_start does with the chunk."""
        _run_of(self, run_id, from_).step_start(_v(warnings))

    def _invalid(self, inv: Any) -> None:
        self.invalid_frames.append(inv)

    # -- one handler per chunk type (_HANDLERS): (run, chunk, payload) ---------------------------
    def _on_text_start(self, run: _Run, chunk: Any, p: Any) -> None:
        # (the providerMetadata the id's next part opens with: this start's, none if it has none)
        if p.providerMetadata is not UNSET:
            run.text_pm[p.id] = p.providerMetadata
        elif run.text_pm:
            run.text_pm.pop(p.id, None)

    def _on_text_end(self, run: _Run, chunk: Any, p: Any) -> None:
        run.end_text(p.id, p.providerMetadata)

    def _on_reasoning_start(self, run: _Run, chunk: Any, p: Any) -> None:
        part = run.reasoning_part(p.id, p.providerMetadata, 1)
        if _redacted(p.providerMetadata):
            part.redacted = True
            part.listed = True
            run.part_entry("span", part)

    def _on_reasoning_end(self, run: _Run, chunk: Any, p: Any) -> None:
        run.reasoning_end(p.id, p.providerMetadata)
        part = run.open_reasoning.pop(p.id, None)
        if part is None:   # an end with no open part: a part of its own, not a reasoning entry
            part = _Part("reasoning", p.id, run.reasoning_buf(), p.providerMetadata)
        if p.providerMetadata is not UNSET:
            part.pm = p.providerMetadata
            if part.msg is not None:
                part.msg.pm = p.providerMetadata
        if not part.listed:   # no delta: Mastra keeps an empty reasoning part
            part.listed = True
            run.part_entry("span", part)
        part.seal()

    def _on_redacted_reasoning(self, run: _Run, chunk: Any, p: Any) -> None:
        part = run.reasoning_part(getattr(p, "id", None), getattr(p, "providerMetadata", UNSET), 2)
        run.open_reasoning.pop(part.id, None)
        part.redacted = part.listed = True
        run.part_entry("span", part)

    def _on_step_start(self, run: _Run, chunk: Any, p: Any) -> None:
        run.step_start(_v(getattr(p, "warnings", UNSET)))

    def _on_step_finish(self, run: _Run, chunk: Any, p: Any) -> None:
        self._finish_chunk(run, True, p)

    def _on_finish(self, run: _Run, chunk: Any, p: Any) -> None:
        self._finish_chunk(run, False, p)

    def _finish_chunk(self, run: _Run, step: bool, p: Any) -> None:
        f = _finish_fields(p)
        run.finish_frame(step, f, _step_trip(p) if f[0] in STEP_TRIP_REASONS else UNSET)

    def _on_tool_input_start(self, run: _Run, chunk: Any, p: Any) -> None:
        run.tool_args_for(p.toolCallId, _v(p.toolName), p)

    def _on_tool_input_end(self, run: _Run, chunk: Any, p: Any) -> None:
        run.input_end(p.toolCallId)

    def _on_tool_call(self, run: _Run, chunk: Any, p: Any) -> None:
        run.tool_call(chunk, p.toolCallId)

    def _on_tool_result(self, run: _Run, chunk: Any, p: Any) -> None:
        run.tool_result(chunk, p.toolCallId)

    def _on_goal(self, run: _Run, chunk: Any, p: Any) -> None:
        if p is not UNSET and getattr(p, "shouldContinue", UNSET) is True:
            run.goal()

    def _on_tool_error(self, run: _Run, chunk: Any, p: Any) -> None:
        # (not a tool result for Mastra, nor what makes a step a tool step)
        run.tool_errors = _push(run.tool_errors, chunk)
        run.seq.append(("tool-error", chunk))
        run.step()

    def _on_tool_output(self, run: _Run, chunk: Any, p: Any) -> None:
        self._nested(run, _v(p.output))

    def _on_workflow_step_output(self, run: _Run, chunk: Any, p: Any) -> None:
        # (an agent a workflow step runs writes its chunks to the step's writer: they come nested
        # here, as a sub-agent's come in tool-output)
        self._nested(run, _v(p.output))

    def _on_source(self, run: _Run, chunk: Any, p: Any) -> None:
        st = run.step()
        run.sources = _push(run.sources, chunk)
        st.sources = _push(st.sources, chunk)
        run.part_entry("source", chunk)
        run.nmodel += 1

    def _on_file(self, run: _Run, chunk: Any, p: Any) -> None:
        st = run.step()
        run.files = _push(run.files, chunk)
        st.files = _push(st.files, chunk)
        run.part_entry("file", chunk)
        run.nmodel += 1

    def _on_object_result(self, run: _Run, chunk: Any, p: Any) -> None:
        if run.obj_state == 0:
            run.object = _v(chunk.object)
            run.obj_state = 1
            run.obj_step = len(run.steps)

    def _on_error(self, run: _Run, chunk: Any, p: Any) -> None:
        run.fail(_error_value(_v(p.error)))

    def _on_abort(self, run: _Run, chunk: Any, p: Any) -> None:
        run.status = "canceled"
        if not run.finished:
            run.finish_reason = "aborted"

    def _on_tripwire(self, run: _Run, chunk: Any, p: Any) -> None:
        p = msgspec.to_builtins(p) if isinstance(p, msgspec.Struct) else p
        run.trip_wire(p if isinstance(p, dict) else {})

    def _on_approval(self, run: _Run, chunk: Any, p: Any) -> None:
        self._on_suspended(run, chunk, p)
        cid = getattr(p, "toolCallId", UNSET)
        if type(cid) is str:
            if run.gated is None:
                run.gated = set()
            run.gated.add(cid)

    def _on_tool_denied(self, run: _Run, chunk: Any, p: Any) -> None:
        # (a part's state, as a tool-error's; nothing else of the run)
        run.seq.append(("denied", chunk))

    def _on_suspended(self, run: _Run, chunk: Any, p: Any) -> None:
        run.suspend_payload = msgspec.to_builtins(p) if isinstance(p, msgspec.Struct) else p
        run.status = "suspended"
        run.suspended = True
        if not run.finished:
            run.finish_reason = "suspended"

    def _nested(self, parent: _Run, out: Any) -> None:
        """A sub-agent's chunk carried in tool-output (or an agent's in a workflow's
        workflow-step-output) belongs to its own run, not the parent's."""
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
        for cid, ta in run.tool_args.items():
            if self._tool_args.get(cid) is ta:       # (not another run's call of the same id)
                del self._tool_args[cid]
        run.release()
        if self._current is run:
            self._current = None
        return out

    def pop_finished(self) -> Iterator[RunOutput]:
        """Like pop_results, but only the runs that have ended: their ``finish`` chunk has
        arrived, or a ``tripwire`` one (Mastra sends nothing after it, not even a finish).  What a
        long-running reader calls between feeds to keep memory bounded by the runs in flight.  (A
        run suspended by an approval request stays: its stream may go on when it is resumed.)"""
        for rid in [rid for rid, run in self._runs.items() if run.finished or run.trip is not None]:
            yield self._pop(rid)

    def run_ids(self) -> List[Any]:
        return list(self._runs)

    def _call_args(self, tool_call_id: str, run_id: Any) -> Optional[_ToolArgs]:
        """The arguments streamed for a call: of that run's call of the id, or (run_id UNSET) of
        the call of the id streamed last, among the runs not handed out."""
        if run_id is not UNSET:
            run = self._runs.get(run_id)
            return None if run is None else run.tool_args.get(tool_call_id)
        ta = self._tool_args.get(tool_call_id)
        if ta is None:
            # (the run whose call the table named was handed out: another run's call of the id)
            for run in reversed(self._runs.values()):
                ta = run.tool_args.get(tool_call_id)
                if ta is not None:
                    break
        return ta

    def partial_args(self, tool_call_id: str, run_id: Any = UNSET) -> Any:
        """Best-effort parse of the argument JSON received so far for a tool call (None if none):
        the call of that id in run run_id, or by default the one streamed last (two runs of a log
        may number their calls alike).

        Each call parses only what arrived since the previous call."""
        ta = self._call_args(tool_call_id, run_id)
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
        call's argument JSON (the run's call of that id, or by default the one streamed last)."""
        if kind in ("text", "reasoning"):
            run = self._main if run_id is UNSET else self._runs.get(run_id)
            if run is None:
                return memoryview(b"")
            buf = run.text if kind == "text" else run.rbuf
            if buf is None:         # (a run without reasoning has no reasoning buffer yet)
                return memoryview(b"")
        else:
            ta = self._call_args(kind, run_id)
            if ta is None:
                raise KeyError(f"no tool call {kind!r}" + ("" if run_id is UNSET else f" in run {run_id!r}"))
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
    "workflow-step-output": AccumulatorBase._on_workflow_step_output,
    "goal": AccumulatorBase._on_goal,
    "source": AccumulatorBase._on_source, "file": AccumulatorBase._on_file,
    "object-result": AccumulatorBase._on_object_result, "error": AccumulatorBase._on_error,
    "abort": AccumulatorBase._on_abort, "tripwire": AccumulatorBase._on_tripwire,
    "tool-call-approval": AccumulatorBase._on_approval,
    "tool-output-denied": AccumulatorBase._on_tool_denied,
    "tool-call-suspended": AccumulatorBase._on_suspended,
}
