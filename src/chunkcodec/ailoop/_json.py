"""The JSON form of ailoop events and messages: what serde's default derive reads and writes.

Enums are externally tagged (``{"TextDelta":{"delta":"hi"}}``, unit variants as strings:
``"EndTurn"``), structs are objects with the Rust field names in declaration order, ``Option``
is null when None, ``RunId``/``StepId`` are hyphenated UUID strings, ``Duration`` is
``{"secs":..,"nanos":..}``.  Like serde, unknown fields inside a variant are ignored and an
unknown variant is an error.  Tool call ids are read from ``id`` (rc.3) or ``call_id``
(the unreleased rename) and written as ``id``.

Decoding is one msgspec pass into "envelope" Structs (a field per variant, unknown keys
forbidden), so errors carry msgspec's JSON path; the chosen variant is then unwrapped.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Union

import msgspec
from msgspec import Struct

from ..errors import DecodeError, EncodeError, InvalidFrame, from_msgspec
from . import _types as T

__all__ = ["decode_event", "encode_event", "decode_message", "encode_message", "to_builtins",
           "load_snapshot", "dump_snapshot", "FrameDecoder"]


# ------------------------------------------------------------------------------------------------
# FinishReason / AbortReason <-> their serde values

def _unit_or_key(obj: Any, what: str) -> tuple[str, Any]:
    """An externally tagged enum value: "Name" or {"Name": content} -> (name, content)."""
    if isinstance(obj, str):
        return obj, None
    if isinstance(obj, dict) and len(obj) == 1:
        return next(iter(obj.items()))
    raise ValueError(f"Expected a {what} variant: a string or an object with one key, got "
                     f"{_describe(obj)}")


def _describe(obj: Any) -> str:
    if isinstance(obj, dict):
        return f"an object with {len(obj)} keys" if len(obj) != 1 else "an object"
    return {list: "an array", str: "a string", bool: "a bool", int: "an int", float: "a float",
            type(None): "null"}.get(type(obj), type(obj).__name__)


def _need(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


def _u64(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= T.U64_MAX


def abort_from_builtins(obj: Any) -> T.AbortReason:
    name, v = _unit_or_key(obj, "AbortReason")
    if name == "Cancelled":
        _need(v is None, "AbortReason Cancelled carries no content")
        return T.AbortReason("Cancelled")
    if name == "Timeout":
        _need(isinstance(v, dict) and _u64(v.get("secs")) and _u64(v.get("nanos"))
              and v["nanos"] < 1_000_000_000,
              "AbortReason Timeout expects a Duration {\"secs\": u64, \"nanos\": u32 < 1e9}")
        return T.AbortReason("Timeout", secs=v["secs"], nanos=v["nanos"])
    if name == "Terminated":
        _need(isinstance(v, dict) and isinstance(v.get("reason"), str),
              "AbortReason Terminated expects {\"reason\": str}")
        return T.AbortReason("Terminated", reason=v["reason"])
    if name == "ToolTerminated":
        _need(isinstance(v, dict) and all(isinstance(v.get(k), str)
                                          for k in ("tool_name", "call_id", "reason")),
              "AbortReason ToolTerminated expects {\"tool_name\": str, \"call_id\": str, "
              "\"reason\": str}")
        return T.AbortReason("ToolTerminated", tool_name=v["tool_name"], call_id=v["call_id"],
                             reason=v["reason"])
    if name == "MaxIterations":
        _need(_u64(v), "AbortReason MaxIterations expects a usize")
        return T.AbortReason("MaxIterations", iterations=v)
    raise ValueError(f"unknown AbortReason variant `{name}`, expected one of "
                     f"{', '.join(T.AbortReason.KINDS)}")


def abort_to_builtins(a: T.AbortReason) -> Any:
    if a.kind == "Cancelled":
        return "Cancelled"
    if a.kind == "Timeout":
        return {"Timeout": {"secs": a.secs, "nanos": a.nanos}}
    if a.kind == "Terminated":
        return {"Terminated": {"reason": a.reason}}
    if a.kind == "ToolTerminated":
        return {"ToolTerminated": {"tool_name": a.tool_name, "call_id": a.call_id,
                                   "reason": a.reason}}
    return {"MaxIterations": a.iterations}


def finish_from_builtins(obj: Any) -> T.FinishReason:
    name, v = _unit_or_key(obj, "FinishReason")
    if name in T.FinishReason.UNIT:
        _need(v is None, f"FinishReason {name} carries no content")
        return T.FinishReason(name)
    if name == "Other":
        _need(isinstance(v, str), f"FinishReason Other expects a string, got {_describe(v)}")
        return T.FinishReason("Other", v)
    if name == "Aborted":
        # rc.3 holds a string, the unreleased engine an AbortReason.  The bytes
        # {"Aborted":"Cancelled"} are both; reading them as AbortReason::Cancelled keeps the
        # newer form's round trip, and either reading writes the same bytes back.
        if isinstance(v, str) and v != "Cancelled":
            return T.FinishReason("Aborted", v)
        return T.FinishReason("Aborted", abort_from_builtins(v))
    raise ValueError(f"unknown FinishReason variant `{name}`, expected one of "
                     f"{', '.join(T.FinishReason.KINDS)}")


def finish_to_builtins(r: T.FinishReason) -> Any:
    if r.detail is None:
        return r.kind
    if isinstance(r.detail, T.AbortReason):
        return {r.kind: abort_to_builtins(r.detail)}
    return {r.kind: r.detail}


def _dec_hook(tp: type, obj: Any) -> Any:
    if tp is T.FinishReason:
        return finish_from_builtins(obj)
    raise NotImplementedError(tp)  # pragma: no cover


def _enc_hook(obj: Any) -> Any:
    if isinstance(obj, T.FinishReason):
        return finish_to_builtins(obj)
    if isinstance(obj, T.AbortReason):
        return abort_to_builtins(obj)
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")


# ------------------------------------------------------------------------------------------------
# Wire shapes for decoding (envelopes + the variants that need unwrapping)

class _ContentW(Struct):
    """ToolResultContent as written now ({blocks, is_error}) or by 0.1.x ({"Text": s} / {"Error": s})."""
    blocks: Optional["list[T.ToolResultBlock]"] = None
    is_error: bool = False
    Text: Optional[str] = None
    Error: Optional[str] = None


class _UserToolResultW(Struct):
    call_id: str
    content: _ContentW


class _ToolCallW(Struct, kw_only=True):
    name: str
    args: Any
    id: Optional[str] = None
    call_id: Optional[str] = None


class _UserBlockEnv(Struct, forbid_unknown_fields=True):
    Text: Union[str, T.Text, None] = None            # 0.1.x wrote Text(String)
    ToolResult: Optional[_UserToolResultW] = None
    Image: Optional[T.Image] = None
    Document: Optional[T.Document] = None


class _AssistantBlockEnv(Struct, forbid_unknown_fields=True):
    Text: Union[str, T.Text, None] = None
    ToolCall: Optional[_ToolCallW] = None
    Reasoning: Optional[T.Reasoning] = None
    RedactedReasoning: Optional[T.RedactedReasoning] = None


class _UserW(Struct):
    blocks: "list[_UserBlockEnv]"


class _AssistantW(Struct):
    blocks: "list[_AssistantBlockEnv]"


class _MessageEnv(Struct, forbid_unknown_fields=True):
    User: Optional[_UserW] = None
    Assistant: Optional[_AssistantW] = None


class _SnapshotW(Struct):
    version: int
    messages: "list[_MessageEnv]"
    pinned: Optional["list[bool]"] = None


class _ToolCallStartedW(Struct, kw_only=True):
    name: str
    id: Optional[str] = None
    call_id: Optional[str] = None


class _ToolCallArgsDeltaW(Struct, kw_only=True):
    delta: str
    id: Optional[str] = None
    call_id: Optional[str] = None


class _ToolCallMalformedW(Struct, kw_only=True):
    name: str
    raw: str
    error: str
    id: Optional[str] = None
    call_id: Optional[str] = None


class _StepFinishedW(Struct):
    run_id: T.RunId
    step_id: T.StepId
    iteration: T.U64
    new_messages_so_far: "list[_MessageEnv]"


class _ToolResultW(Struct):
    run_id: T.RunId
    step_id: T.StepId
    call_id: str
    content: _ContentW


class _RunFinishedW(Struct):
    run_id: T.RunId
    reason: T.FinishReason
    usage: T.Usage
    new_messages: "list[_MessageEnv]"


class _EventEnv(Struct, forbid_unknown_fields=True):
    TextDelta: Optional[T.TextDelta] = None
    ToolCallStarted: Optional[_ToolCallStartedW] = None
    ToolCallArgsDelta: Optional[_ToolCallArgsDeltaW] = None
    ToolCallFinished: Optional[_ToolCallW] = None
    ReasoningDelta: Optional[T.ReasoningDelta] = None
    ReasoningFinished: Optional[T.ReasoningFinished] = None
    RedactedReasoningBlock: Optional[T.RedactedReasoningBlock] = None
    TurnFinished: Optional[T.TurnFinished] = None
    RunStarted: Optional[T.RunStarted] = None
    StepStarted: Optional[T.StepStarted] = None
    StepFinished: Optional[_StepFinishedW] = None
    ToolResult: Optional[_ToolResultW] = None
    RunFinished: Optional[_RunFinishedW] = None
    HistoryCompacted: Optional[T.HistoryCompacted] = None
    ToolCallMalformed: Optional[_ToolCallMalformedW] = None


_EVENT_NAMES = _EventEnv.__struct_fields__
_event_dec = msgspec.json.Decoder(_EventEnv, dec_hook=_dec_hook)
_message_dec = msgspec.json.Decoder(_MessageEnv)
_snapshot_dec = msgspec.json.Decoder(_SnapshotW)


class _Invalid(ValueError):
    """A shape error found while unwrapping: message + JSON path."""

    def __init__(self, msg: str, path: str):
        super().__init__(f"{msg} - at `{path}`")


def _one(env: Struct, names: tuple, what: str, path: str) -> tuple[str, Any]:
    found = [(n, v) for n in names if (v := getattr(env, n)) is not None]
    if len(found) != 1:
        if not found:
            raise _Invalid(f"Expected an object with one {what} variant key, got no variant", path)
        raise _Invalid(f"Expected one {what} variant key, got {len(found)}: "
                       f"{', '.join(n for n, _ in found)}", path)
    return found[0]


def _call_id(w: Any, path: str) -> str:
    if w.id is not None and w.call_id is not None and w.id != w.call_id:
        raise _Invalid(f"`id` ({w.id!r}) and `call_id` ({w.call_id!r}) disagree", path)
    cid = w.id if w.id is not None else w.call_id
    if cid is None:
        raise _Invalid("Object missing required field `id` (or `call_id`)", path)
    return cid


def _content(w: _ContentW, path: str) -> T.ToolResultContent:
    if w.blocks is not None:
        return T.ToolResultContent(w.blocks, w.is_error)
    if w.Text is not None:            # 0.1.x: enum ToolResultContent { Text(String), Error(String) }
        return T.ToolResultContent([T.TextContent(w.Text)])
    if w.Error is not None:
        return T.ToolResultContent([T.TextContent(w.Error)], True)
    raise _Invalid("Object missing required field `blocks`", path)


def _user_block(env: _UserBlockEnv, path: str) -> Any:
    name, v = _one(env, _UserBlockEnv.__struct_fields__, "UserBlock", path)
    if name == "Text":
        return T.Text(v) if isinstance(v, str) else v
    if name == "ToolResult":
        return T.UserToolResult(v.call_id, _content(v.content, f"{path}.ToolResult.content"))
    return v


def _assistant_block(env: _AssistantBlockEnv, path: str) -> Any:
    name, v = _one(env, _AssistantBlockEnv.__struct_fields__, "AssistantBlock", path)
    if name == "Text":
        return T.Text(v) if isinstance(v, str) else v
    if name == "ToolCall":
        return T.ToolCall(_call_id(v, f"{path}.ToolCall"), v.name, v.args)
    return v


def _message(env: _MessageEnv, path: str) -> Any:
    name, v = _one(env, ("User", "Assistant"), "Message", path)
    if name == "User":
        return T.User([_user_block(b, f"{path}.User.blocks[{i}]") for i, b in enumerate(v.blocks)])
    return T.Assistant([_assistant_block(b, f"{path}.Assistant.blocks[{i}]")
                        for i, b in enumerate(v.blocks)])


def _messages(envs: list, path: str) -> list:
    return [_message(m, f"{path}[{i}]") for i, m in enumerate(envs)]


def _unwrap_event(name: str, v: Any) -> Any:
    p = f"$.{name}"
    if name == "ToolCallStarted":
        return T.ToolCallStarted(_call_id(v, p), v.name)
    if name == "ToolCallArgsDelta":
        return T.ToolCallArgsDelta(_call_id(v, p), v.delta)
    if name == "ToolCallFinished":
        return T.ToolCallFinished(_call_id(v, p), v.name, v.args)
    if name == "ToolCallMalformed":
        return T.ToolCallMalformed(_call_id(v, p), v.name, v.raw, v.error)
    if name == "StepFinished":
        return T.StepFinished(v.run_id, v.step_id, v.iteration,
                              _messages(v.new_messages_so_far, f"{p}.new_messages_so_far"))
    if name == "ToolResult":
        return T.ToolResult(v.run_id, v.step_id, v.call_id, _content(v.content, f"{p}.content"))
    if name == "RunFinished":
        return T.RunFinished(v.run_id, v.reason, v.usage, _messages(v.new_messages, f"{p}.new_messages"))
    return v


_UNKNOWN_FIELD = re.compile(r"^Object contains unknown field `([^`]*)`(?: - at `([^`]*)`)?$")


def _variant_errors(exc: msgspec.ValidationError, what: str) -> msgspec.ValidationError:
    """msgspec's "unknown field" on an envelope means an unknown enum variant: say so."""
    m = _UNKNOWN_FIELD.match(str(exc))
    if m is None:
        return exc
    name, path = m.group(1), m.group(2) or "$"
    if path == "$":
        kind = what
    else:
        b = _BLOCK_PATH.search(path)
        kind = f"{b.group(1)}Block" if b else "Message"
    return msgspec.ValidationError(f"unknown {kind} variant `{name}` - at `{path}`")


_BLOCK_PATH = re.compile(r"\.(User|Assistant)\.blocks\[\d+\]$")


def _decoding(data: Any, frame_index: int, frame_pos: int, what: str, decoder: Any, unwrap: Any) -> Any:
    """Decode with an envelope decoder, unwrap, and turn any failure into our DecodeError."""
    try:
        try:
            env = decoder.decode(data)
        except msgspec.ValidationError as exc:
            raise _variant_errors(exc, what) from None
        return unwrap(env)
    except _Invalid as exc:
        raise from_msgspec(msgspec.ValidationError(str(exc)), data, frame_index, frame_pos) from None
    except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError) as exc:
        raise from_msgspec(exc, data, frame_index, frame_pos) from None


def _event(env: _EventEnv) -> Any:
    return _unwrap_event(*_one(env, _EVENT_NAMES, "StreamChunk", "$"))


def _snapshot(w: _SnapshotW) -> T.Snapshot:
    if w.version != 1:
        raise _Invalid(f"unsupported snapshot version {w.version}, expected 1", "$.version")
    msgs = _messages(w.messages, "$.messages")
    pinned = w.pinned if w.pinned is not None else [False] * len(msgs)
    if len(pinned) != len(msgs):
        raise _Invalid(f"`pinned` has {len(pinned)} entries for {len(msgs)} messages", "$.pinned")
    return T.Snapshot(msgs, pinned)


def decode_event(frame: Any, frame_index: int = 0, frame_pos: int = 0) -> Any:
    """One event from its JSON text; raises ValidationError / DecodeError with the position."""
    return _decoding(frame, frame_index, frame_pos, "StreamChunk", _event_dec, _event)


def decode_message(data: Any) -> Any:
    """One Message (``{"User":{...}}`` / ``{"Assistant":{...}}``) from its JSON text."""
    return _decoding(data, 0, 0, "Message", _message_dec, lambda env: _message(env, "$"))


def load_snapshot(data: Any) -> T.Snapshot:
    """An ailoop-history ConversationSnapshot from its JSON text (pretty or compact).

    Like ailoop, rejects a version other than 1 and a ``pinned`` whose length differs from
    ``messages``; a missing ``pinned`` means nothing is pinned.
    """
    return _decoding(data, 0, 0, "Message", _snapshot_dec, _snapshot)


# ------------------------------------------------------------------------------------------------
# Encoding

_enc = msgspec.json.Encoder(enc_hook=_enc_hook)

_USER_TAG = {T.Text: "Text", T.UserToolResult: "ToolResult", T.Image: "Image", T.Document: "Document"}
_ASSISTANT_TAG = {T.Text: "Text", T.ToolCall: "ToolCall", T.Reasoning: "Reasoning",
                  T.RedactedReasoning: "RedactedReasoning"}


def _message_builtins(m: Any) -> dict:
    if type(m) is T.User:
        tags, name = _USER_TAG, "User"
    elif type(m) is T.Assistant:
        tags, name = _ASSISTANT_TAG, "Assistant"
    else:
        raise EncodeError(f"expected a Message (User or Assistant), got {type(m).__name__}")
    blocks = []
    for b in m.blocks:
        tag = tags.get(type(b))
        if tag is None:
            raise EncodeError(f"{type(b).__name__} is not a {name} block")
        blocks.append({tag: b})
    return {name: {"blocks": blocks}}


def _event_body(ev: Any) -> Any:
    cls = type(ev)
    if cls is T.StepFinished:
        return {"run_id": ev.run_id, "step_id": ev.step_id, "iteration": ev.iteration,
                "new_messages_so_far": [_message_builtins(m) for m in ev.new_messages_so_far]}
    if cls is T.RunFinished:
        return {"run_id": ev.run_id, "reason": ev.reason, "usage": ev.usage,
                "new_messages": [_message_builtins(m) for m in ev.new_messages]}
    return ev


_EVENT_TAG = {cls: cls.__name__.encode() for cls in T.EVENT_TYPES}


def encode_event(ev: Any) -> bytes:
    """The JSON text of one event, as serde_json::to_vec writes the derived form."""
    tag = _EVENT_TAG.get(type(ev))
    if tag is None:
        raise EncodeError(f"expected an ailoop event (one of {', '.join(c.__name__ for c in T.EVENT_TYPES)}),"
                          f" got {type(ev).__name__}")
    try:
        return b'{"' + tag + b'":' + _enc.encode(_event_body(ev)) + b"}"
    except (TypeError, ValueError, msgspec.EncodeError) as exc:
        raise EncodeError(f"cannot encode {type(ev).__name__}: {exc}") from None


def encode_message(m: Any) -> bytes:
    try:
        return _enc.encode(_message_builtins(m))
    except (TypeError, ValueError, msgspec.EncodeError) as exc:
        raise EncodeError(f"cannot encode {type(m).__name__}: {exc}") from None


def dump_snapshot(snap: T.Snapshot, pretty: bool = True) -> bytes:
    """A ConversationSnapshot's JSON; pretty=True gives serde_json::to_vec_pretty's layout
    (two-space indent), which JsonFileHistoryStore writes."""
    if len(snap.pinned) != len(snap.messages):
        raise EncodeError(f"snapshot has {len(snap.pinned)} pinned flags for {len(snap.messages)} messages")
    body = _enc.encode({"version": snap.version,
                        "messages": [_message_builtins(m) for m in snap.messages],
                        "pinned": snap.pinned})
    return msgspec.json.format(body, indent=2) if pretty else body


def to_builtins(ev: Any) -> Any:
    """What the JSON form holds, as dicts/lists/str/int (an event, a Message or a Snapshot)."""
    if isinstance(ev, T.Snapshot):
        return msgspec.json.decode(dump_snapshot(ev, pretty=False))
    if type(ev) in (T.User, T.Assistant):
        return msgspec.json.decode(encode_message(ev))
    return msgspec.json.decode(encode_event(ev))


class FrameDecoder:
    """What StreamDecoder calls for each frame when decoding another format (``_decoder=``)."""

    def __init__(self, decode_frame: Any):
        self.decode_frame = decode_frame

    def decode_document(self, buf: bytes, pos: int, keep: bool, out: list) -> int:
        """The "json" framing: one JSON value, an event or an array of events."""
        stripped = buf.strip(b" \t\r\n")
        if not stripped:
            return 0
        if not stripped.startswith(b"["):
            try:
                out.append(self.decode_frame(buf, 0, pos))
            except DecodeError as exc:
                if not keep:
                    raise
                out.append(InvalidFrame(buf, exc, 0, pos))
            return 1
        try:
            items = msgspec.json.decode(buf, type=list[msgspec.Raw])
        except (msgspec.MsgspecError, UnicodeDecodeError) as exc:
            err = from_msgspec(exc, buf, 0, pos)
            if not keep:
                raise err from None
            out.append(InvalidFrame(buf, err, 0, pos))
            return 1
        for i, raw in enumerate(items):
            try:
                out.append(self.decode_frame(bytes(raw), i, pos))
            except DecodeError as exc:
                if not keep:
                    raise
                out.append(InvalidFrame(bytes(raw), exc, i, pos))
        return len(items)
