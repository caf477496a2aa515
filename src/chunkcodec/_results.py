"""What accumulation gives: ``RunOutput`` and ``StepResult``, and the live parser of a tool
call's argument JSON (``PartialJSON``, ``parse_args``).

Apart from ``_accum`` so that the accumulator can be compiled (as ``_accumc``, for the native
path) while the types users see stay one and the same on both paths.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

import msgspec
from msgspec import UNSET

__all__ = ["RunOutput", "StepResult", "PartialJSON", "parse_args"]


def _builtins(x: Any) -> Any:
    return msgspec.to_builtins(x) if isinstance(x, msgspec.Struct) else x


# --------------------------------------------------------------------------------------------
# Results

class StepResult(msgspec.Struct, kw_only=True):
    """One model call of a run (Mastra's ``LLMStepResult``, the fields a consumer reads)."""

    step_type: str
    text: str
    reasoning_text: str
    #: the reasoning entries begun in the step (by a reasoning-start), as RunOutput.reasoning's,
    #: with the text written in the step
    reasoning: List[Dict[str, Any]] = msgspec.field(default_factory=list)
    finish_reason: Optional[str]
    usage: Dict[str, Any]
    tool_calls: List[Any]
    tool_results: List[Any]
    sources: List[Any]
    files: List[Any]
    warnings: List[Any]
    provider_metadata: Optional[Dict[str, Any]] = None
    #: Mastra's response.id and .modelId of the step (a string but for an odd metadata.id: its value)
    response_id: Any = None
    response_model_id: Any = None
    #: the tripwire a processor set on the step (the last entry of its step-finish's output.steps:
    #: its text is then ""; with retry, the agent tried the step again)
    tripwire: Any = None

    def to_mastra(self) -> Dict[str, Any]:
        d = {
            "stepType": self.step_type, "text": self.text, "reasoningText": self.reasoning_text,
            "reasoning": self.reasoning,
            "finishReason": self.finish_reason, "usage": self.usage,
            "toolCalls": [_builtins(c) for c in self.tool_calls],
            "toolResults": [_builtins(c) for c in self.tool_results],
            "sources": [_builtins(c) for c in self.sources],
            "files": [_builtins(c) for c in self.files],
            "warnings": self.warnings,
            "response": {"id": self.response_id, "modelId": self.response_model_id},
        }
        if self.provider_metadata is not None:
            d["providerMetadata"] = self.provider_metadata
        if self.tripwire is not None:
            d["tripwire"] = self.tripwire
        return d


class RunOutput(msgspec.Struct, kw_only=True):
    """What a run resolved to: Mastra's ``MastraModelOutput`` with snake_case names.

    ``None`` stands for JavaScript ``undefined``.  Tool calls, results, errors, sources and files are
    the typed chunks; ``reasoning`` entries and ``parts`` are dicts shaped as Mastra makes them.
    """

    run_id: Optional[str]
    text: str
    reasoning_text: Optional[str]
    reasoning: List[Dict[str, Any]]
    tool_calls: List[Any]
    tool_results: List[Any]
    tool_errors: List[Any]
    usage: Dict[str, Any]
    total_usage: Dict[str, Any]
    finish_reason: Optional[str]
    object: Any
    sources: List[Any]
    files: List[Any]
    warnings: List[Any]
    provider_metadata: Optional[Dict[str, Any]]
    steps: List[StepResult]
    error: Optional[Dict[str, Any]]
    tripwire: Optional[Dict[str, Any]]
    status: str
    suspend_payload: Optional[Dict[str, Any]]
    parts: List[Dict[str, Any]]
    invalid_frames: List[Any] = msgspec.field(default_factory=list)

    def to_mastra(self) -> Dict[str, Any]:
        """A dict shaped like Mastra's resolved output (camelCase keys, chunk dicts)."""
        return {
            "runId": self.run_id,
            "text": self.text,
            "reasoningText": self.reasoning_text,
            "reasoning": self.reasoning,
            "toolCalls": [_builtins(c) for c in self.tool_calls],
            "toolResults": [_builtins(c) for c in self.tool_results],
            "usage": self.usage,
            "totalUsage": self.total_usage,
            "finishReason": self.finish_reason,
            "object": self.object,
            "sources": [_builtins(c) for c in self.sources],
            "files": [_builtins(c) for c in self.files],
            "warnings": self.warnings,
            "providerMetadata": self.provider_metadata,
            "steps": [s.to_mastra() for s in self.steps],
            "error": self.error,
            "tripwire": self.tripwire,
            "status": self.status,
            "suspendPayload": self.suspend_payload,
        }


# --------------------------------------------------------------------------------------------
# Live tool arguments

_LITERALS = {"t": "true", "f": "false", "n": "null"}
_VALUES = {"true": True, "false": False, "null": None}


class PartialJSON:
    """Incremental best-effort JSON parser for tool arguments that are still arriving.

    ``feed(text)`` consumes only the new characters; ``value()`` returns the value so far with open
    strings, arrays and objects closed, as Mastra's client does for live UIs: an unfinished string
    is kept as far as it goes, an unfinished key is dropped, an unfinished literal is completed
    when it can only be one of true/false/null, an unfinished number is kept as far as its last
    digit (tests/test_mastra_oracle.py holds every prefix to Mastra's parsePartialJson).
    Containers are built as tokens complete, so each call costs the new characters plus the depth.
    The containers are live: later deltas update them in place (copy to keep a snapshot).
    """

    __slots__ = ("root", "stack", "key", "tok", "state", "esc", "failed", "done")

    def __init__(self) -> None:
        self.root: Any = UNSET
        self.stack: list = []      # open containers
        self.key: Any = UNSET      # the key waiting for its value (objects)
        self.tok: List[str] = []   # the token being read: string body, number or literal
        self.state = "value"       # value | key | colon | comma | str | key_str | num | lit
        self.esc = ""              # a pending escape inside a string
        self.failed = False
        self.done = False

    def _put(self, v: Any) -> None:
        if not self.stack:
            self.root = v
            self.done = True
            self.state = "end"
            return
        top = self.stack[-1]
        if isinstance(top, list):
            top.append(v)
        else:
            top[self.key] = v
            self.key = UNSET
        self.state = "comma"

    def _open(self, c: Any) -> None:
        self._put(c)
        self.done = False
        self.stack.append(c)
        self.state = "key" if isinstance(c, dict) else "value"

    def feed(self, text: str) -> None:
        i, n = 0, len(text)
        while i < n and not self.failed:
            st = self.state
            if st in ("str", "key_str"):
                j = i
                while j < n:
                    ch = text[j]
                    if self.esc:
                        self.esc += ch
                        if self.esc[1] != "u" or len(self.esc) == 6:
                            try:
                                ch = json.loads('"' + self.esc + '"')
                            except ValueError:
                                self.failed = True
                                return
                            prev = self.tok[-1] if self.tok else ""
                            if "\udc00" <= ch <= "\udfff" and prev and "\ud800" <= prev[-1] <= "\udbff":
                                # the second half of a surrogate pair escaped as two \u escapes
                                pair = (prev[-1] + ch).encode("utf-16", "surrogatepass").decode("utf-16")
                                self.tok[-1] = prev[:-1] + pair
                            else:
                                self.tok.append(ch)
                            self.esc = ""
                        j += 1
                        continue
                    if ch == "\\":
                        self.esc = "\\"
                        j += 1
                        continue
                    if ch == '"':
                        break
                    k = j
                    while k < n and text[k] not in '"\\':
                        k += 1
                    self.tok.append(text[j:k])
                    j = k
                if j >= n:
                    return
                s = "".join(self.tok)
                self.tok = []
                if st == "key_str":
                    self.key = s
                    self.state = "colon"
                else:
                    self._put(s)
                i = j + 1
                continue
            if st in ("num", "lit"):
                j = i
                while j < n and text[j] not in " \t\r\n,]}":
                    j += 1
                self.tok.append(text[i:j])
                if j >= n:
                    return
                self._finish_scalar()
                i = j
                continue
            ch = text[i]
            i += 1
            if ch in " \t\r\n":
                continue
            if st == "value" or st == "colon_done":
                if ch == "{":
                    self._open({})
                elif ch == "[":
                    self._open([])
                elif ch == '"':
                    self.state = "str"
                elif ch == "]" and self.stack and isinstance(self.stack[-1], list) and not self.stack[-1]:
                    self._close()
                elif ch in "-0123456789":
                    self.state = "num"
                    self.tok = [ch]
                elif ch in "tfn":
                    self.state = "lit"
                    self.tok = [ch]
                else:
                    self.failed = True
            elif st == "key":
                if ch == '"':
                    self.state = "key_str"
                elif ch == "}":
                    self._close()
                else:
                    self.failed = True
            elif st == "colon":
                if ch == ":":
                    self.state = "colon_done"
                else:
                    self.failed = True
            elif st == "comma":
                if ch == ",":
                    self.state = "key" if isinstance(self.stack[-1], dict) else "value"
                elif ch in "]}":
                    self._close()
                else:
                    self.failed = True
            else:  # "end": trailing bytes after a complete value
                self.failed = True

    def _close(self) -> None:
        self.stack.pop()
        if self.stack:
            self.state = "comma"
        else:
            self.done = True
            self.state = "end"

    def _finish_scalar(self) -> None:
        tok = "".join(self.tok)
        self.tok = []
        if self.state == "lit":
            if tok not in _VALUES:
                self.failed = True
                return
            self._put(_VALUES[tok])
            return
        try:
            v = json.loads(tok)
        except ValueError:
            self.failed = True
            return
        self._put(v)

    def value(self) -> Any:
        """The best-effort value so far (``None`` if nothing usable has arrived)."""
        if self.failed:
            return None
        st = self.state
        pending: Any = UNSET
        if st == "str":
            pending = "".join(self.tok)
        elif st == "num":
            # (as far as its last digit, as Mastra's parsePartialJson keeps it: "3." is 3,
            # "1.5e-" 1.5, a lone "-" nothing)
            t = "".join(self.tok)
            while t:
                try:
                    pending = json.loads(t)
                    break
                except ValueError:
                    t = t.rstrip(".eE+-") if t[-1] in ".eE+-" else ""
        elif st == "lit":
            tok = "".join(self.tok)
            full = _LITERALS.get(tok[:1], "")
            if full.startswith(tok):
                pending = _VALUES[full]
        if pending is UNSET:
            return None if self.root is UNSET else self.root
        if not self.stack:
            return pending
        # show the unfinished scalar without committing it: it may still grow
        top = self.stack[-1]
        if isinstance(top, list):
            top.append(pending)
            snap = _deep_copy_path(self.root)
            top.pop()
        elif self.key is not UNSET:
            top[self.key] = pending
            snap = _deep_copy_path(self.root)
            del top[self.key]
        else:
            return self.root
        return snap


def _deep_copy_path(v: Any) -> Any:
    # A copy is needed only when an unfinished scalar is shown; it costs the size of the value.
    return json.loads(json.dumps(v))


def _complete_utf8(b: bytes) -> int:
    """Length of b without a trailing incomplete UTF-8 sequence (deltas are whole code points,
    so this only matters for bytes appended by a caller), nor a trailing high surrogate (its low
    half may come next: join_surrogates)."""
    n = len(b)
    i = n - 1
    while i >= 0 and i >= n - 4 and (b[i] & 0xC0) == 0x80:
        i -= 1
    if i >= 0 and b[i] >= 0xC0:
        need = 2 if b[i] < 0xE0 else 3 if b[i] < 0xF0 else 4
        if n - i < need:
            return i
        if b[i] == 0xED and n - i == 3 and 0xA0 <= b[i + 1] <= 0xAF:
            return i
    return n


def join_surrogates(s: str) -> str:
    """s as JavaScript holds it: a high surrogate followed by a low one is the one character the
    two encode.  A delta's text is a JavaScript string, which a chunker cutting by UTF-16 units
    (JavaScript's slice()) may end between an emoji's two halves: JSON.stringify writes each half
    as a lone escape, and Mastra's concatenation of the deltas joins them again.  (Lone halves
    stay as they are.)"""
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


#: json's scanner without NaN and Infinity, which json.loads takes and JSON.parse refuses.
_scan_json = json.JSONDecoder(parse_constant=_not_json).scan_once
_JSON_WS = " \t\n\r"


def parse_args(text: str) -> Any:
    """``JSON.parse`` of a tool call's whole argument text, ``{}`` when empty or invalid (Mastra)."""
    text = text.strip(_JSON_WS)
    if not text:
        return {}
    try:
        value, end = _scan_json(text, 0)
    except (StopIteration, ValueError, RecursionError):
        return {}
    return value if end == len(text) else {}
