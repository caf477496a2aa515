"""ailoop history reconstruction (the engine's rules, shared/spec/ailoop-events.md §3) and
conversion between Mastra chunks and ailoop events on the recorded Mastra corpus."""

import json
import uuid

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

import chunkcodec
from chunkcodec import ailoop as A

from conftest import CORPUS

RU = uuid.UUID("0e6f0b8c-6f1e-4d2a-9a7e-2f1f5b3c4d5e")
SU = uuid.UUID("9b2d7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d")
END = A.TurnFinished(A.FinishReason("EndTurn"), A.Usage())
TOOL_USE = A.TurnFinished(A.FinishReason("ToolUse"), A.Usage(input_tokens=1))


def T(s):
    return A.TextDelta(s)


def result(cid, text="ok", err=False):
    return A.ToolResult(RU, SU, cid, A.ToolResultContent.text(text, err))


# ------------------------------------------------------------------------------------------------
# The rules, one by one

def test_text_deltas_make_one_block_closed_at_the_end():
    assert A.assemble([T("Hel"), T("lo"), T(" you"), END]) == [A.Assistant([A.Text("Hello you")])]


def test_tool_call_started_closes_text_finished_appends_the_call():
    evs = [T("Let me "), T("check."), A.ToolCallStarted("c1", "wx"), A.ToolCallArgsDelta("c1", '{"ci'),
           A.ToolCallArgsDelta("c1", 'ty":1}'), A.ToolCallFinished("c1", "wx", {"city": "Paris"}), TOOL_USE]
    # the args come from ToolCallFinished, not from the deltas
    assert A.assemble(evs) == [A.Assistant([A.Text("Let me check."), A.ToolCall("c1", "wx", {"city": "Paris"})])]


def test_finished_args_delta_and_reasoning_delta_do_not_close_text():
    evs = [T("a"), A.ToolCallFinished("c1", "f", {}), T("b"), A.ToolCallArgsDelta("c1", "x"), T("c"),
           A.ReasoningDelta("r"), T("d"), END]
    # a Finished without a Started: the text lands after the call; the reasoning is dropped
    assert A.assemble(evs) == [A.Assistant([A.ToolCall("c1", "f", {}), A.Text("abcd")])]


def test_reasoning_finished_flushes_text_and_keeps_empty_reasoning_with_signature():
    evs = [A.ReasoningDelta("think"), A.ReasoningDelta("ing"), A.ReasoningFinished("sig-1"),
           A.ReasoningFinished("sig-only"), T("answer"), END]
    assert A.assemble(evs) == [A.Assistant([A.Reasoning("thinking", "sig-1"), A.Reasoning("", "sig-only"),
                                            A.Text("answer")])]


def test_text_between_reasoning_deltas_and_their_finish_goes_before_the_reasoning():
    evs = [A.ReasoningDelta("r1"), T("t"), A.ReasoningDelta("r2"), A.ReasoningFinished(None), END]
    assert A.assemble(evs) == [A.Assistant([A.Text("t"), A.Reasoning("r1r2", None)])]


def test_reasoning_without_finish_is_dropped():
    assert A.assemble([A.ReasoningDelta("lost"), T("kept"), END]) == [A.Assistant([A.Text("kept")])]
    assert A.assemble([A.ReasoningDelta("lost"), END]) == []


def test_redacted_reasoning_is_atomic_and_closes_text():
    evs = [T("a"), A.RedactedReasoningBlock("Zm9v"), T("b"), END]
    assert A.assemble(evs) == [A.Assistant([A.Text("a"), A.RedactedReasoning("Zm9v"), A.Text("b")])]


def test_empty_deltas_add_nothing():
    assert A.assemble([T(""), T(""), END]) == []
    assert A.assemble([T(""), A.ToolCallStarted("c", "f"), T(""), A.ToolCallFinished("c", "f", {}), END]) == [
        A.Assistant([A.ToolCall("c", "f", {})])]


def test_block_order_is_the_order_of_finished_events():
    """The Azure adapter's parallel calls: Started a, Started b, args, Finished a, Finished b."""
    evs = [A.ToolCallStarted("a", "f"), A.ToolCallStarted("b", "g"), A.ToolCallArgsDelta("a", "{}"),
           A.ToolCallArgsDelta("b", "{}"), A.ToolCallFinished("b", "g", {"n": 2}),
           A.ToolCallFinished("a", "f", {"n": 1}), TOOL_USE]
    assert A.assemble(evs) == [A.Assistant([A.ToolCall("b", "g", {"n": 2}), A.ToolCall("a", "f", {"n": 1})])]


def test_tool_results_are_gathered_into_one_user_message_then_the_next_turn():
    evs = [A.RunStarted(RU), A.StepStarted(RU, SU, 0), T("x"), A.ToolCallStarted("a", "f"),
           A.ToolCallFinished("a", "f", {}), A.ToolCallStarted("b", "f"), A.ToolCallFinished("b", "f", {}),
           TOOL_USE, result("a", "1"), result("b", "2", err=True), A.StepFinished(RU, SU, 0, []),
           A.StepStarted(RU, SU, 1), T("done"), END, A.StepFinished(RU, SU, 1, []),
           A.RunFinished(RU, A.FinishReason("EndTurn"), A.Usage(), [])]
    assert A.assemble(evs) == [
        A.Assistant([A.Text("x"), A.ToolCall("a", "f", {}), A.ToolCall("b", "f", {})]),
        A.User([A.UserToolResult("a", A.ToolResultContent.text("1")),
                A.UserToolResult("b", A.ToolResultContent.text("2", True))]),
        A.Assistant([A.Text("done")]),
    ]


def test_public_stream_without_turn_finished_ends_turns_at_lifecycle_events():
    """Consumers never see TurnFinished: a ToolResult or StepFinished ends the turn."""
    evs = [A.StepStarted(RU, SU, 0), T("a"), A.ToolCallStarted("c", "f"), A.ToolCallFinished("c", "f", {}), result("c"),
           A.StepFinished(RU, SU, 0, []), A.StepStarted(RU, SU, 1), T("b")]
    assert A.assemble(evs) == [A.Assistant([A.Text("a"), A.ToolCall("c", "f", {})]),
                               A.User([A.UserToolResult("c", A.ToolResultContent.text("ok"))]),
                               A.Assistant([A.Text("b")])]


def test_malformed_call_is_recorded_with_empty_args():
    evs = [A.ToolCallStarted("c", "f"), A.ToolCallMalformed("c", "f", "{x", "bad"), END]
    assert A.assemble(evs) == [A.Assistant([A.ToolCall("c", "f", {})])]


def test_impossible_interleavings_do_not_crash():
    """Orders the engine documents as impossible still follow the rules without raising."""
    evs = [result("x"), T("after a result"), A.ReasoningFinished(None), result("y"), result("z"),
           A.ToolCallArgsDelta("nobody", "{"), A.RunFinished(RU, A.FinishReason("EndTurn"), A.Usage(), []),
           A.StepFinished(RU, SU, 0, []), A.HistoryCompacted(RU, 5, 2, "truncate"), T("late")]
    assert A.assemble(evs) == [
        A.User([A.UserToolResult("x", A.ToolResultContent.text("ok"))]),
        A.Assistant([A.Text("after a result"), A.Reasoning("", None)]),
        A.User([A.UserToolResult("y", A.ToolResultContent.text("ok")),
                A.UserToolResult("z", A.ToolResultContent.text("ok"))]),
        A.Assistant([A.Text("late")]),
    ]


def test_assembler_is_incremental_and_rejects_non_events():
    a = A.Assembler()
    a.add(T("hi"))
    assert a.messages == []            # the turn is still open
    a.add(END)
    assert a.messages == [A.Assistant([A.Text("hi")])]
    with pytest.raises(TypeError, match="expected an ailoop event, got dict"):
        a.add({"TextDelta": {"delta": "x"}})


EVENT = st.one_of(
    st.text(max_size=3).map(A.TextDelta), st.text(max_size=3).map(A.ReasoningDelta),
    st.sampled_from("ab").map(lambda i: A.ToolCallStarted(i, "f")),
    st.sampled_from("ab").map(lambda i: A.ToolCallArgsDelta(i, "{")),
    st.sampled_from("ab").map(lambda i: A.ToolCallFinished(i, "f", {"i": i})),
    st.sampled_from("ab").map(lambda i: A.ToolCallMalformed(i, "f", "{", "e")),
    st.one_of(st.none(), st.text(max_size=2)).map(A.ReasoningFinished),
    st.text(max_size=2).map(A.RedactedReasoningBlock),
    st.just(END), st.just(A.RunStarted(RU)), st.just(A.StepStarted(RU, SU, 0)),
    st.just(A.StepFinished(RU, SU, 0, [])), st.sampled_from("ab").map(result),
    st.just(A.RunFinished(RU, A.FinishReason("EndTurn"), A.Usage(), [])),
    st.just(A.HistoryCompacted(RU, 2, 1, "truncate")),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(EVENT, max_size=40))
def test_any_order_keeps_text_calls_and_results(evs):
    msgs = A.assemble(evs)
    blocks = [b for m in msgs for b in m.blocks]
    # no text is ever lost or reordered; every finished call and every result is there, in order
    assert "".join(b.text for b in blocks if type(b) is A.Text) == "".join(
        e.delta for e in evs if type(e) is A.TextDelta)
    assert all(b.text for b in blocks if type(b) is A.Text)
    assert [b.id for b in blocks if type(b) is A.ToolCall] == [
        e.id for e in evs if type(e) in (A.ToolCallFinished, A.ToolCallMalformed)]
    assert [b.call_id for b in blocks if type(b) is A.UserToolResult] == [
        e.call_id for e in evs if type(e) is A.ToolResult]
    assert [b.signature for b in blocks if type(b) is A.Reasoning] == [
        e.signature for e in evs if type(e) is A.ReasoningFinished]
    assert all(m.blocks for m in msgs)


# ------------------------------------------------------------------------------------------------
# Mastra <-> ailoop on the recorded corpus

SCENARIOS = sorted(p.stem for p in (CORPUS / "chunks").glob("*.jsonl"))


def _load(name):
    chunks = list(chunkcodec.iter_chunks((CORPUS / "chunks" / f"{name}.jsonl").read_bytes()))
    expected = json.loads((CORPUS / "chunks" / f"{name}.expected.json").read_text())
    return chunks, expected


def _view(run, success):
    """What a round trip must keep: text, reasoning (with signature / redacted data), tool calls
    with args, tool results and errors, and for runs that succeeded, usage and the steps.  (A run
    that failed has Mastra's error rules applied to its usage; ailoop has no error event, so the
    round trip cannot carry the failure: see the README table.)"""
    m = run.to_mastra()

    def counters(u):
        return {k: v for k, v in (u or {}).items() if k != "raw"}

    return {
        "text": m["text"],
        "reasoning": [(p["payload"]["text"], p["payload"].get("providerMetadata")) for p in m["reasoning"]],
        "tool_calls": [(c["payload"]["toolCallId"], c["payload"]["toolName"], c["payload"].get("args"))
                       for c in m["toolCalls"]],
        "tool_results": [(r["type"], r["payload"]["toolCallId"], r["payload"]["toolName"],
                          r["payload"].get("result"), bool(r["payload"].get("isError")))
                         for r in m["toolResults"]],
        "tool_errors": [(e.payload.toolCallId, e.payload.toolName) for e in run.tool_errors],
        "usage": counters(m["usage"]) if success else None,
        "total_usage": counters(m["totalUsage"]) if success else None,
        "steps": [(s.text, s.finish_reason) for s in run.steps] if success else None,
    }


def test_the_corpus_is_there():
    assert len(SCENARIOS) >= 20


@pytest.mark.parametrize("name", SCENARIOS)
def test_mastra_to_ailoop_to_mastra_keeps_what_both_can_say(name):
    chunks, expected = _load(name)
    events = A.from_mastra(chunks)
    assert isinstance(events[0], A.RunStarted)
    # every converted event is a valid event in the JSON form
    for ev in events:
        assert A.decode(A.encode(ev)) == ev
    back = A.to_mastra(events)
    # ... and the Mastra chunks we write are valid Mastra chunks (re-decoded from their JSON)
    wire = b"".join(chunkcodec.encode_stream(back, "sse"))
    assert [type(c) for c in chunkcodec.iter_chunks(wire)] == [type(c) for c in back]
    (orig,) = chunkcodec.accumulate(chunks)
    (again,) = chunkcodec.accumulate(back)
    assert str(again.run_id) == str(A.run_uuid(orig.run_id))
    ok = orig.status == "success"
    assert _view(again, ok) == _view(orig, ok)


@pytest.mark.parametrize("name", SCENARIOS)
def test_history_text_equals_mastras_text(name):
    """Single-step runs: all of the history's text.  Multi-step runs: Mastra keeps the last
    step's text, which is the last assistant message's."""
    chunks, expected = _load(name)
    msgs = A.assemble(A.from_mastra(chunks))
    assistant = [m for m in msgs if isinstance(m, A.Assistant)]
    texts = ["".join(b.text for b in m.blocks if isinstance(b, A.Text)) for m in assistant]
    want = expected["text"]["value"]
    if len(expected["steps"].get("value") or []) <= 1:
        assert "".join(texts) == want
    else:
        assert texts[-1] == want


def test_conversion_details_on_a_tool_round_trip():
    chunks, _ = _load("c_tool_call_roundtrip")
    events = A.from_mastra(chunks)
    names = [type(e).__name__ for e in events]
    assert names == [
        "RunStarted", "StepStarted", "TextDelta", "ToolCallStarted", "ToolCallArgsDelta", "ToolCallArgsDelta",
        "ToolCallArgsDelta", "ToolCallArgsDelta", "ToolCallFinished", "TurnFinished", "ToolResult",
        "StepFinished", "StepStarted", "TextDelta", "TextDelta", "TurnFinished", "StepFinished", "RunFinished"]
    run = uuid.UUID("fa4d73bf-e294-47c7-861c-7dd29e59f824")     # Mastra's runId is a UUID: kept
    assert events[0] == A.RunStarted(run)
    assert events[1] == A.StepStarted(run, A.step_uuid(run, 0), 0)
    assert events[9].reason == A.FinishReason("ToolUse") and events[9].usage.input_tokens == 30
    assert events[10].content == A.ToolResultContent.text(
        '{"city":"Paris","tempC":21.5,"summary":"Sunny in Paris ☀️"}')
    # StepFinished carries the history so far, RunFinished all of it
    assert events[11].new_messages_so_far == A.assemble(events[:11])
    assert events[-1].new_messages == A.assemble(events)
    assert events[-1].reason == A.FinishReason("EndTurn") and events[-1].usage.input_tokens == 90


def test_reasoning_signature_and_redacted_block_convert():
    chunks, _ = _load("b_reasoning_then_text")
    events = A.from_mastra(chunks)
    provider = [e for e in events if type(e).__name__.startswith(("Reasoning", "Redacted", "Text"))]
    assert provider == [A.ReasoningDelta("Let me think… "), A.ReasoningDelta("the user wants 2+2. "),
                        A.ReasoningFinished("sig_ABC123=="), A.RedactedReasoningBlock("REDACTED_BLOB"),
                        A.TextDelta("2 + 2 "), A.TextDelta("= 4.")]
    usage = next(e for e in events if isinstance(e, A.TurnFinished)).usage
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (20, 40, 25)


def test_tool_error_and_abort_convert():
    chunks, _ = _load("e_tool_error")
    err = next(e for e in A.from_mastra(chunks) if isinstance(e, A.ToolResult))
    assert err.content == A.ToolResultContent.text("Tool exploded: testing", True)
    chunks, _ = _load("g_abort_signal")
    events = A.from_mastra(chunks)
    assert events[-1].reason == A.FinishReason("Aborted", "cancelled by caller")
    assert sum(isinstance(e, A.RunFinished) for e in events) == 1      # the finish after abort is the same run
    back = A.to_mastra(events)
    assert [type(c).__name__ for c in back[-2:]] == ["Abort", "Finish"]


def test_non_uuid_run_ids_get_stable_uuids_and_runs_stay_apart():
    chunks = [
        chunkcodec.decode(b'{"type":"start","runId":"run-a","from":"AGENT","payload":{}}'),
        chunkcodec.decode(b'{"type":"start","runId":"run-b","from":"AGENT","payload":{}}'),
        chunkcodec.decode(b'{"type":"text-delta","runId":"run-a","from":"AGENT","payload":{"id":"1","text":"A"}}'),
        chunkcodec.decode(b'{"type":"text-delta","runId":"run-b","from":"AGENT","payload":{"id":"1","text":"B"}}'),
    ]
    events = A.from_mastra(chunks)
    ra, rb = A.run_uuid("run-a"), A.run_uuid("run-b")
    assert ra == A.run_uuid("run-a") != rb and ra.version == 5
    assert events[:2] == [A.RunStarted(ra), A.RunStarted(rb)]
    back = A.to_mastra(events)
    texts = {(c.runId, c.payload.text) for c in back if isinstance(c, chunkcodec.TextDelta)}
    assert texts == {(str(ra), "A"), (str(rb), "B")}


def test_history_compacted_travels_through_mastra_as_a_data_chunk():
    ev = A.HistoryCompacted(RU, 40, 12, "summarize")
    back = A.to_mastra([A.RunStarted(RU), ev])
    assert back[1].type == A.HISTORY_COMPACTED_TYPE
    wire = b"".join(chunkcodec.encode_stream(back, "ndjson"))
    assert [e for e in A.from_mastra(wire) if isinstance(e, A.HistoryCompacted)] == [ev]


def test_from_mastra_reads_bytes_and_paths(tmp_path):
    data = (CORPUS / "chunks" / "a_text_unicode.jsonl").read_bytes()
    p = tmp_path / "x.jsonl"
    p.write_bytes(data)
    assert A.from_mastra(data) == A.from_mastra(p) == A.from_mastra(list(chunkcodec.iter_chunks(data)))


def test_to_mastra_of_a_bare_provider_stream():
    """Provider events without lifecycle: one run (the given id), one step, step-finish at the end."""
    back = A.to_mastra([T("hi"), A.ToolCallStarted("c", "f"), A.ToolCallFinished("c", "f", {"a": 1}), TOOL_USE],
                       run_id="r1")
    assert [type(c).__name__ for c in back] == ["StepStart", "TextStart", "TextDelta", "TextEnd",
                                                "ToolCallInputStreamingStart", "ToolCallInputStreamingEnd",
                                                "ToolCall", "StepFinish"]
    assert all(c.runId == "r1" for c in back)
    assert back[-1].payload.stepResult == {"reason": "tool-calls", "rawReason": "tool-calls", "isContinued": True}
    assert back[-1].payload.output == {"usage": {"inputTokens": 1, "outputTokens": 0, "totalTokens": 1}}
    with pytest.raises(TypeError):
        A.to_mastra([msgspec.Struct])
