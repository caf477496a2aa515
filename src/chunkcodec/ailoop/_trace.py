"""ailoop's JsonTracer logs: NDJSON lines ``{"schema":1,"ts_ms":...,"kind":"...", ...}``.

One Struct per kind.  The tracer is lossy by design: by default it records counts (``chars``,
``bytes``, message counts), and text, args and bodies only in verbose mode, so those fields are
optional.  A kind this module does not know yet (the tracer gains kinds under schema 1) becomes an
:class:`OtherTrace` holding its fields, rather than an error; a schema other than 1 is an error.
"""

from __future__ import annotations

import uuid
from typing import Any, Optional, Union

import msgspec
from msgspec import UNSET, Struct, UnsetType

from ..errors import from_msgspec
from . import _types as T

__all__ = ["TraceRecord", "TraceReason", "OtherTrace", "decode_trace", "TRACE_TYPES",
           "RunStartedTrace", "ChatRequestTrace", "TextDeltaTrace", "ReasoningDeltaTrace",
           "ReasoningFinishedTrace", "RedactedReasoningTrace", "ToolCallStartedTrace",
           "ToolCallFinishedTrace", "ToolCallMalformedTrace", "ToolResultTrace", "StepStartedTrace",
           "StepFinishedTrace", "TurnFinishedTrace", "HistoryCompactedTrace", "RunFinishedTrace",
           "RunErrorTrace", "BeforeToolCallTrace", "AfterToolCallTrace"]


class TraceReason(Struct, omit_defaults=True):
    """A finish reason as the tracer writes it: kind is end_turn, tool_use, max_tokens,
    stop_sequence, aborted, other or unknown; the rest only when they apply."""
    kind: str
    detail: Union[str, UnsetType] = UNSET
    abort_kind: Union[str, UnsetType] = UNSET
    tool_name: Union[str, UnsetType] = UNSET
    call_id: Union[str, UnsetType] = UNSET


class TraceRecord(Struct, tag_field="kind", kw_only=True, omit_defaults=True):
    """Every record's envelope: schema (1) and ts_ms (milliseconds since the epoch)."""
    schema: int
    ts_ms: T.U64


class RunStartedTrace(TraceRecord, tag="run_started"):
    run_id: uuid.UUID
    messages: Any = UNSET
    max_iterations: Any = UNSET
    max_tokens: Any = UNSET


class ChatRequestTrace(TraceRecord, tag="chat_request"):
    run_id: uuid.UUID
    step_id: uuid.UUID
    messages: Any = UNSET
    tools: Any = UNSET
    max_tokens: Any = UNSET


class TextDeltaTrace(TraceRecord, tag="text_delta"):
    chars: T.U64
    text: Union[str, UnsetType] = UNSET


class ReasoningDeltaTrace(TraceRecord, tag="reasoning_delta"):
    chars: T.U64
    text: Union[str, UnsetType] = UNSET


class ReasoningFinishedTrace(TraceRecord, tag="reasoning_finished"):
    has_signature: bool


class RedactedReasoningTrace(TraceRecord, tag="redacted_reasoning"):
    bytes: T.U64


class ToolCallStartedTrace(TraceRecord, tag="tool_call_started"):
    call_id: str
    name: str


class ToolCallFinishedTrace(TraceRecord, tag="tool_call_finished"):
    call_id: str
    name: str
    args: Any = UNSET


class ToolCallMalformedTrace(TraceRecord, tag="tool_call_malformed"):
    call_id: Union[str, UnsetType] = UNSET
    name: Union[str, UnsetType] = UNSET
    error: Any = UNSET
    raw: Union[str, UnsetType] = UNSET


class ToolResultTrace(TraceRecord, tag="tool_result"):
    run_id: uuid.UUID
    step_id: uuid.UUID
    call_id: str
    outcome: Any
    body: Any = UNSET


class StepStartedTrace(TraceRecord, tag="step_started"):
    run_id: uuid.UUID
    step_id: uuid.UUID
    iteration: T.U64


class StepFinishedTrace(TraceRecord, tag="step_finished"):
    run_id: uuid.UUID
    step_id: uuid.UUID
    iteration: T.U64
    new_messages: Any = UNSET


class TurnFinishedTrace(TraceRecord, tag="turn_finished"):
    reason: TraceReason
    usage: T.Usage
    service_tier: Optional[str] = None


class HistoryCompactedTrace(TraceRecord, tag="history_compacted"):
    run_id: uuid.UUID
    before: T.U64
    after: T.U64
    strategy: str


class RunFinishedTrace(TraceRecord, tag="run_finished"):
    run_id: uuid.UUID
    reason: TraceReason
    usage: T.Usage
    new_messages: Any = UNSET


class RunErrorTrace(TraceRecord, tag="run_error"):
    run_id: Union[uuid.UUID, UnsetType] = UNSET
    error: Any = UNSET
    usage: Union[T.Usage, UnsetType] = UNSET
    partial_messages: Any = UNSET


class BeforeToolCallTrace(TraceRecord, tag="before_tool_call"):
    name: Union[str, UnsetType] = UNSET
    call_id: Union[str, UnsetType] = UNSET
    args: Any = UNSET


class AfterToolCallTrace(TraceRecord, tag="after_tool_call"):
    name: Union[str, UnsetType] = UNSET
    call_id: Union[str, UnsetType] = UNSET
    outcome: Any = UNSET


class OtherTrace(Struct):
    """A record of a kind this version does not know: its kind, envelope and other fields."""
    kind: str
    schema: int
    ts_ms: int
    fields: dict


TRACE_TYPES = (RunStartedTrace, ChatRequestTrace, TextDeltaTrace, ReasoningDeltaTrace,
               ReasoningFinishedTrace, RedactedReasoningTrace, ToolCallStartedTrace,
               ToolCallFinishedTrace, ToolCallMalformedTrace, ToolResultTrace, StepStartedTrace,
               StepFinishedTrace, TurnFinishedTrace, HistoryCompactedTrace, RunFinishedTrace,
               RunErrorTrace, BeforeToolCallTrace, AfterToolCallTrace)
_KINDS = frozenset(c.__struct_config__.tag for c in TRACE_TYPES)
_dec = msgspec.json.Decoder(Union[TRACE_TYPES])  # type: ignore[valid-type]


class _Head(Struct):
    kind: str
    schema: int
    ts_ms: T.U64


_head_dec = msgspec.json.Decoder(_Head)
_dict_dec = msgspec.json.Decoder(dict)


def decode_trace(frame: Any, frame_index: int = 0, frame_pos: int = 0) -> Any:
    """One JsonTracer line as its record; errors carry the line's byte offset and index."""
    try:
        head = _head_dec.decode(frame)
        if head.schema != 1:
            raise msgspec.ValidationError(f"unsupported trace schema {head.schema}, expected 1 - at `$.schema`")
        if head.kind in _KINDS:
            return _dec.decode(frame)
        fields = _dict_dec.decode(frame)
        for k in ("kind", "schema", "ts_ms"):
            fields.pop(k, None)
        return OtherTrace(head.kind, head.schema, head.ts_ms, fields)
    except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError) as exc:
        raise from_msgspec(exc, frame, frame_index, frame_pos) from None
