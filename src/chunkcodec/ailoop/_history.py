"""The messages ailoop's engine appends to the history, rebuilt from its events.

The rules are those of ``run_chat`` in ailoop/src/engine.rs (identical in every version
published so far):

- TextDelta appends to one text buffer; the buffer becomes a Text block, if it is not empty,
  at ToolCallStarted, ReasoningFinished, RedactedReasoningBlock and at the end of the turn.
  ToolCallFinished, ToolCallArgsDelta and ReasoningDelta do not close it.
- ReasoningFinished closes pending text, then appends Reasoning{text, signature}, even when the
  text is empty.  Reasoning with no ReasoningFinished is dropped at the end of the turn.
- RedactedReasoningBlock closes pending text and appends RedactedReasoning.
- ToolCallFinished appends ToolCall{id, name, args} when it arrives (ToolCallStarted only closes
  text; the args deltas are ignored); ToolCallMalformed appends the call with ``{}`` as args.
- The turn's blocks become one Assistant message, if there are any.  The ToolResults that follow
  are gathered into one User message.

A turn ends at TurnFinished (the provider stream's last chunk), or, when the events come from the
public stream where TurnFinished is filtered out, at the first ToolResult, StepFinished,
StepStarted, RunFinished or the end of the events.  A provider chunk arriving after tool results
starts a new turn.  Sequences the engine never produces (a Finished without a Started, text
between reasoning deltas and their finish, results mid-turn) are handled by the same rules and
never raise.
"""

from __future__ import annotations

from typing import Any, Iterable

from . import _types as T

__all__ = ["Assembler", "assemble"]

_PROVIDER = (T.TextDelta, T.ToolCallStarted, T.ToolCallArgsDelta, T.ToolCallFinished,
             T.ToolCallMalformed, T.ReasoningDelta, T.ReasoningFinished, T.RedactedReasoningBlock)
_TURN_END = (T.TurnFinished, T.StepFinished, T.StepStarted, T.RunFinished, T.RunStarted)


class Assembler:
    """Incremental history reconstruction: ``add(event)`` for each event, then ``messages``
    (or ``close()``, which ends the open turn and returns them)."""

    __slots__ = ("messages", "_blocks", "_text", "_reasoning", "_results", "_in_turn")

    def __init__(self) -> None:
        #: The messages appended so far (the open turn is not in it until it ends).
        self.messages: list[Any] = []
        self._blocks: list[Any] = []
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._results: list[Any] = []
        self._in_turn = False

    def _flush_text(self) -> None:
        if self._text:
            text = "".join(self._text)
            self._text = []
            if text:
                self._blocks.append(T.Text(text))

    def _end_turn(self) -> None:
        if not self._in_turn:
            return
        self._in_turn = False
        self._flush_text()
        self._reasoning = []          # reasoning without ReasoningFinished is dropped
        if self._blocks:
            self.messages.append(T.Assistant(self._blocks))
            self._blocks = []

    def _flush_results(self) -> None:
        if self._results:
            self.messages.append(T.User(self._results))
            self._results = []

    def add(self, ev: Any) -> None:
        cls = type(ev)
        if cls in _PROVIDER:
            if self._results:                     # a provider chunk after results: a new turn
                self._flush_results()
            self._in_turn = True
            if cls is T.TextDelta:
                if ev.delta:
                    self._text.append(ev.delta)
            elif cls is T.ReasoningDelta:
                if ev.delta:
                    self._reasoning.append(ev.delta)
            elif cls is T.ToolCallStarted:
                self._flush_text()
            elif cls is T.ToolCallFinished:
                self._blocks.append(T.ToolCall(ev.id, ev.name, ev.args))
            elif cls is T.ToolCallMalformed:
                self._blocks.append(T.ToolCall(ev.id, ev.name, {}))
            elif cls is T.ReasoningFinished:
                self._flush_text()
                self._blocks.append(T.Reasoning("".join(self._reasoning), ev.signature))
                self._reasoning = []
            elif cls is T.RedactedReasoningBlock:
                self._flush_text()
                self._blocks.append(T.RedactedReasoning(ev.data))
            return
        if cls is T.ToolResult:
            self._end_turn()
            self._results.append(T.UserToolResult(ev.call_id, ev.content))
            return
        if cls in _TURN_END:
            self._end_turn()
            if cls is not T.TurnFinished:
                self._flush_results()
            return
        if cls is T.HistoryCompacted:
            return
        raise TypeError(f"expected an ailoop event, got {cls.__name__}")

    def close(self) -> list[Any]:
        """End the open turn and gather pending results; returns ``messages``.  Adding more
        events afterwards carries on (a StepFinished reports the history this way)."""
        self._end_turn()
        self._flush_results()
        return self.messages


def assemble(events: Iterable[Any]) -> list[Any]:
    """The messages the engine appends to the history for these events (all runs, in order)."""
    a = Assembler()
    for ev in events:
        a.add(ev)
    return a.close()
