"""The ailoop engine's vocabulary as Python types: StreamChunk's variants and what they carry.

Field names and order follow the Rust definitions of ailoop-core 1.0.0-rc.3 (plus what the
unreleased engine adds: ``Usage.reasoning_tokens``, ``AbortReason``, ``ToolCallMalformed``), so that
the JSON written by :mod:`chunkcodec.ailoop` is what ``#[derive(Serialize)]`` on those types writes.

Rust enums become one Struct per variant; ``Message``, ``UserBlock``, ``AssistantBlock``,
``ToolResultBlock``, ``Source`` and ``StreamChunk`` are the unions of them.  ``FinishReason`` and
``AbortReason`` are small immutable classes because their JSON form mixes strings (unit variants)
and one-key objects.
"""

from __future__ import annotations

import uuid
from typing import Any, Optional, Union

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from typing import Annotated

__all__ = [
    # events
    "TextDelta", "ToolCallStarted", "ToolCallArgsDelta", "ToolCallFinished", "ToolCallMalformed",
    "ReasoningDelta", "ReasoningFinished", "RedactedReasoningBlock", "TurnFinished", "RunStarted",
    "StepStarted", "StepFinished", "ToolResult", "RunFinished", "HistoryCompacted", "StreamChunk",
    "EVENT_TYPES",
    # carried types
    "FinishReason", "AbortReason", "Usage", "RunId", "StepId",
    "Message", "User", "Assistant", "UserBlock", "AssistantBlock", "Text", "UserToolResult",
    "Image", "Document", "ToolCall", "Reasoning", "RedactedReasoning", "ToolResultContent",
    "ToolResultBlock", "TextContent", "ImageContent", "Source", "Base64Source", "UrlSource",
    "FileIdSource", "Snapshot",
]

U64_MAX = 2 ** 64 - 1
#: Rust's u64 / usize: what a counter or an index may hold.
U64 = Annotated[int, Meta(ge=0)]  # msgspec reads at most a u64 anyway



def _check_u64(obj: Any, *names: str) -> None:
    """msgspec reads integers past 2**64; a Rust u64/usize does not."""
    for n in names:
        v = getattr(obj, n)
        if type(v) is int and v > U64_MAX:
            raise ValueError(f"`{n}` = {v} does not fit in a u64")


#: RunId(Uuid) and StepId(Uuid): serde writes a newtype struct as its content, a Uuid as its
#: lowercase hyphenated string.
RunId = uuid.UUID
StepId = uuid.UUID


# ------------------------------------------------------------------------------------------------
# Usage, FinishReason, AbortReason

class Usage(Struct, kw_only=True):
    """Token counters of one turn or of a run (``Usage``).

    The six rc.3 counters, plus ``reasoning_tokens`` from the unreleased engine: UNSET means
    "not reported" and is left out of the JSON, which is then exactly rc.3's form.  ``a + b``
    adds field-wise and saturates at 2**64-1, as the unreleased ``Add`` does.
    """

    input_tokens: U64 = 0
    output_tokens: U64 = 0
    cached_input_tokens: U64 = 0
    cache_creation_input_tokens: U64 = 0
    cache_creation_5m_tokens: U64 = 0
    cache_creation_1h_tokens: U64 = 0
    reasoning_tokens: Union[U64, UnsetType] = UNSET

    def __post_init__(self) -> None:
        _check_u64(self, *_COUNTERS, "reasoning_tokens")

    def __add__(self, other: "Usage") -> "Usage":
        if not isinstance(other, Usage):
            return NotImplemented
        r: Any = UNSET
        if self.reasoning_tokens is not UNSET or other.reasoning_tokens is not UNSET:
            r = min(U64_MAX, (self.reasoning_tokens or 0) + (other.reasoning_tokens or 0))
        return Usage(**{f: min(U64_MAX, getattr(self, f) + getattr(other, f)) for f in _COUNTERS},
                     reasoning_tokens=r)


_COUNTERS = ("input_tokens", "output_tokens", "cached_input_tokens", "cache_creation_input_tokens",
             "cache_creation_5m_tokens", "cache_creation_1h_tokens")


class AbortReason:
    """Why a run was aborted, in the unreleased engine (``AbortReason``).

    kind is one of ``Timeout`` (secs, nanos: a Rust Duration), ``Cancelled``, ``Terminated``
    (reason), ``ToolTerminated`` (tool_name, call_id, reason) or ``MaxIterations`` (iterations).
    ``str()`` is the engine's Display text.
    """

    __slots__ = ("kind", "secs", "nanos", "reason", "tool_name", "call_id", "iterations")
    KINDS = ("Timeout", "Cancelled", "Terminated", "ToolTerminated", "MaxIterations")

    def __init__(self, kind: str, *, secs: int = 0, nanos: int = 0, reason: str = "",
                 tool_name: str = "", call_id: str = "", iterations: int = 0):
        if kind not in self.KINDS:
            raise ValueError(f"AbortReason kind must be one of {self.KINDS}, got {kind!r}")
        for name, v in (("secs", secs), ("nanos", nanos), ("iterations", iterations)):
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= U64_MAX:
                raise ValueError(f"AbortReason.{name} must be an int in [0, 2**64), got {v!r}")
        if not nanos < 1_000_000_000:
            raise ValueError(f"AbortReason.nanos must be below 1e9, got {nanos!r}")
        for name, v in (("reason", reason), ("tool_name", tool_name), ("call_id", call_id)):
            if not isinstance(v, str):
                raise ValueError(f"AbortReason.{name} must be a str, got {type(v).__name__}")
        self.kind, self.secs, self.nanos, self.reason = kind, secs, nanos, reason
        self.tool_name, self.call_id, self.iterations = tool_name, call_id, iterations

    def _key(self) -> tuple:
        return (self.kind, self.secs, self.nanos, self.reason, self.tool_name, self.call_id,
                self.iterations)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbortReason) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        fields = {"Timeout": ("secs", "nanos"), "Terminated": ("reason",),
                  "ToolTerminated": ("tool_name", "call_id", "reason"),
                  "MaxIterations": ("iterations",)}.get(self.kind, ())
        args = "".join(f", {f}={getattr(self, f)!r}" for f in fields)
        return f"AbortReason({self.kind!r}{args})"

    def __str__(self) -> str:
        if self.kind == "Timeout":
            return f"timeout exceeded after {_rust_duration(self.secs, self.nanos)}"
        if self.kind == "Cancelled":
            return "cancelled by caller"
        if self.kind == "MaxIterations":
            return f"agent loop exceeded max iterations ({self.iterations})"
        return self.reason


def _rust_duration(secs: int, nanos: int) -> str:
    """Duration's Debug text for the common cases: 30s, 1.5s, 250ms, 10µs, 7ns."""
    if secs:
        frac = f"{nanos:09d}".rstrip("0")
        return f"{secs}.{frac}s" if frac else f"{secs}s"
    for unit, div in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
        if nanos >= div or unit == "ns":
            whole, rest = divmod(nanos, div)
            frac = f"{rest:0{len(str(div)) - 1}d}".rstrip("0") if div > 1 else ""
            return f"{whole}.{frac}{unit}" if frac else f"{whole}{unit}"
    return "0ns"  # pragma: no cover


class FinishReason:
    """Why a turn or run ended (``FinishReason``).

    kind is ``EndTurn``, ``ToolUse``, ``MaxTokens``, ``StopSequence``, ``Aborted`` or ``Other``.
    detail is None for the first four; for ``Other`` the provider's reason (str); for
    ``Aborted`` a str (rc.3: ``Aborted(String)``) or an :class:`AbortReason` (unreleased).
    """

    __slots__ = ("kind", "detail")
    KINDS = ("EndTurn", "ToolUse", "MaxTokens", "StopSequence", "Aborted", "Other")
    UNIT = ("EndTurn", "ToolUse", "MaxTokens", "StopSequence")

    def __init__(self, kind: str, detail: Union[str, AbortReason, None] = None):
        if kind not in self.KINDS:
            raise ValueError(f"FinishReason kind must be one of {self.KINDS}, got {kind!r}")
        if kind in self.UNIT:
            if detail is not None:
                raise ValueError(f"FinishReason {kind} carries no detail, got {detail!r}")
        elif kind == "Other" and not isinstance(detail, str):
            raise ValueError(f"FinishReason Other needs a str detail, got {detail!r}")
        elif kind == "Aborted" and not isinstance(detail, (str, AbortReason)):
            raise ValueError(f"FinishReason Aborted needs a str or AbortReason, got {detail!r}")
        self.kind = kind
        self.detail = detail

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FinishReason) and (self.kind, self.detail) == (other.kind, other.detail)

    def __hash__(self) -> int:
        return hash((self.kind, self.detail))

    def __repr__(self) -> str:
        return f"FinishReason({self.kind!r})" if self.detail is None else \
            f"FinishReason({self.kind!r}, {self.detail!r})"


FinishReason.END_TURN = FinishReason("EndTurn")          # type: ignore[attr-defined]
FinishReason.TOOL_USE = FinishReason("ToolUse")          # type: ignore[attr-defined]
FinishReason.MAX_TOKENS = FinishReason("MaxTokens")      # type: ignore[attr-defined]
FinishReason.STOP_SEQUENCE = FinishReason("StopSequence")  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------------------
# Messages (ailoop-core message.rs: these have serde, and this is their form)

class Base64Source(Struct, tag_field="type", tag="base64"):
    media_type: str
    data: str


class UrlSource(Struct, tag_field="type", tag="url"):
    url: str


class FileIdSource(Struct, tag_field="type", tag="file_id"):
    id: str


Source = Union[Base64Source, UrlSource, FileIdSource]


class TextContent(Struct, tag_field="type", tag="text"):
    """``ToolResultBlock::Text``."""
    text: str


class ImageContent(Struct, tag_field="type", tag="image"):
    """``ToolResultBlock::Image``."""
    source: Source


ToolResultBlock = Union[TextContent, ImageContent]


class ToolResultContent(Struct, omit_defaults=True):
    """What a tool returned: blocks, and is_error (written only when true, as ailoop does)."""

    blocks: "list[ToolResultBlock]"
    is_error: bool = False

    @classmethod
    def text(cls, text: str, is_error: bool = False) -> "ToolResultContent":
        return cls([TextContent(text)], is_error)

    def collect_text(self) -> str:
        """The text blocks joined by newlines, as ``ToolResultContent::collect_text``."""
        return "\n".join(b.text for b in self.blocks if isinstance(b, TextContent))


class Text(Struct):
    """``UserBlock::Text`` and ``AssistantBlock::Text`` (cache_control is never serialized)."""
    text: str


class UserToolResult(Struct):
    """``UserBlock::ToolResult``."""
    call_id: str
    content: ToolResultContent


class Image(Struct):
    """``UserBlock::Image``."""
    source: Source


class Document(Struct):
    """``UserBlock::Document``."""
    source: Source


class ToolCall(Struct):
    """``AssistantBlock::ToolCall``: written with ``id`` (rc.3); ``call_id`` is read too."""
    id: str
    name: str
    args: Any


class Reasoning(Struct):
    """``AssistantBlock::Reasoning``: signature is written as null when None."""
    text: str
    signature: Optional[str] = None


class RedactedReasoning(Struct):
    """``AssistantBlock::RedactedReasoning``."""
    data: str


UserBlock = Union[Text, UserToolResult, Image, Document]
AssistantBlock = Union[Text, ToolCall, Reasoning, RedactedReasoning]


class User(Struct):
    """``Message::User``."""
    blocks: "list[UserBlock]"


class Assistant(Struct):
    """``Message::Assistant``."""
    blocks: "list[AssistantBlock]"


Message = Union[User, Assistant]


class Snapshot(Struct):
    """An ailoop-history ConversationSnapshot: ``{"version":1,"messages":[...],"pinned":[...]}``."""
    messages: "list[Message]"
    pinned: "list[bool]" = msgspec.field(default_factory=list)
    version: int = 1

    def __post_init__(self) -> None:
        if not self.pinned:
            self.pinned = [False] * len(self.messages)


# ------------------------------------------------------------------------------------------------
# StreamChunk

class TextDelta(Struct):
    delta: str


class ToolCallStarted(Struct):
    id: str
    name: str


class ToolCallArgsDelta(Struct):
    id: str
    delta: str


class ToolCallFinished(Struct):
    id: str
    name: str
    args: Any


class ToolCallMalformed(Struct):
    """Unreleased engine only: argument JSON that is not an object; the tool is not run."""
    id: str
    name: str
    raw: str
    error: str


class ReasoningDelta(Struct):
    delta: str


class ReasoningFinished(Struct):
    signature: Optional[str] = None


class RedactedReasoningBlock(Struct):
    data: str


class TurnFinished(Struct):
    reason: FinishReason
    usage: Usage
    service_tier: Optional[str] = None


class RunStarted(Struct):
    run_id: RunId


class StepStarted(Struct):
    run_id: RunId
    step_id: StepId
    iteration: U64

    def __post_init__(self) -> None:
        _check_u64(self, "iteration")


class StepFinished(Struct):
    run_id: RunId
    step_id: StepId
    iteration: U64
    new_messages_so_far: "list[Message]"

    def __post_init__(self) -> None:
        _check_u64(self, "iteration")


class ToolResult(Struct):
    run_id: RunId
    step_id: StepId
    call_id: str
    content: ToolResultContent


class RunFinished(Struct):
    run_id: RunId
    reason: FinishReason
    usage: Usage
    new_messages: "list[Message]"


class HistoryCompacted(Struct):
    run_id: RunId
    before_count: U64
    after_count: U64
    strategy: str

    def __post_init__(self) -> None:
        _check_u64(self, "before_count", "after_count")


StreamChunk = Union[TextDelta, ToolCallStarted, ToolCallArgsDelta, ToolCallFinished,
                    ToolCallMalformed, ReasoningDelta, ReasoningFinished, RedactedReasoningBlock,
                    TurnFinished, RunStarted, StepStarted, StepFinished, ToolResult, RunFinished,
                    HistoryCompacted]

#: Every event type, in the order of the Rust enum (ToolCallMalformed, unreleased, last).
EVENT_TYPES = (TextDelta, ToolCallStarted, ToolCallArgsDelta, ToolCallFinished, ReasoningDelta,
               ReasoningFinished, RedactedReasoningBlock, TurnFinished, RunStarted, StepStarted,
               StepFinished, ToolResult, RunFinished, HistoryCompacted, ToolCallMalformed)
