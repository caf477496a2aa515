"""Accumulation rules beyond the recorded scenarios: interleaved runs, id reuse, live tool
arguments, nested sub-runs, buffers, errors.  Each runs through add() and feed() on both paths."""

import itertools
import json
import pathlib
import random
import sys

import msgspec
import pytest

from conftest import CORPUS
from test_accumulate import CHUNK_FILES, _check
from test_utf8 import EDGES, _python
from util import corrupted, corrupted_logs, kept_head_frames, random_stream

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "bench"))
import gen  # noqa: E402

RUN = "run-1"


def line(type_, payload=None, run=RUN, **top):
    d = {"type": type_}
    if run is not None:
        d["runId"] = run
        d["from"] = "AGENT"
    if payload is not None:
        d["payload"] = payload
    d.update(top)
    return json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode()


def ways(codec, lines):
    """The main run's result through add(), feed() whole and feed() a byte at a time."""
    data = b"".join(ln + b"\n" for ln in lines)
    a = codec.Accumulator()
    for c in codec.iter_chunks(data, "ndjson"):
        a.add(c)
    b = codec.Accumulator("ndjson")
    b.feed(data)
    b.close()
    c = codec.Accumulator("ndjson")
    for i in range(len(data)):
        c.feed(data[i:i + 1])
    c.close()
    outs = [x.result() for x in (a, b, c)]
    assert outs[0].to_mastra() == outs[1].to_mastra() == outs[2].to_mastra()
    assert outs[0].parts == outs[1].parts == outs[2].parts
    return outs[1]


#: a tool-call-input-streaming-start for call "c" (without one, -end makes no call)
START_C = line("tool-call-input-streaming-start", {"toolCallId": "c", "toolName": "w"})


def text_delta(id_, text, run=RUN):
    return line("text-delta", {"id": id_, "text": text}, run)


def test_interleaved_corpus_runs_demultiplex(codec):
    """All 21 scenarios interleaved at random in one log: every run still matches Mastra.  A
    chunk without runId (tripwire, data-*, background tasks) stays right after the chunk before it
    in its own stream: it is attributed to the run of the chunk before it."""
    rng = random.Random(3)
    queues = []
    for path in CHUNK_FILES:
        groups = []
        for ln in path.read_bytes().split(b"\n"):
            if not ln:
                continue
            if b'"runId"' in ln[:40] or not groups:
                groups.append([ln])
            else:
                groups[-1].append(ln)
        queues.append(groups)
    out = []
    while queues:
        q = rng.choice(queues)
        out += q.pop(0)
        if not q:
            queues.remove(q)
    runs = codec.accumulate(b"\n".join(out) + b"\n")
    assert len(runs) == len(CHUNK_FILES)
    by_id = {r.run_id: r for r in runs}
    for path in CHUNK_FILES:
        rid = json.loads(path.read_bytes().split(b"\n")[0])["runId"]
        _check(by_id[rid], path)


def test_text_id_reappearing_opens_a_new_part(codec):
    r = ways(codec, [
        line("text-start", {"id": "0"}), text_delta("0", "a"), line("text-end", {"type": "text-end", "id": "0"}),
        text_delta("0", "b"), text_delta("0", "c"), line("text-end", {"type": "text-end", "id": "0"}),
    ])
    assert r.text == "abc"
    assert [p["text"] for p in r.parts if p["type"] == "text"] == ["a", "bc"]


def test_interleaved_text_ids_keep_arrival_order_for_text_and_own_text_per_part(codec):
    r = ways(codec, [text_delta("a", "1"), text_delta("b", "2"), text_delta("a", "3"), text_delta("b", "4"),
                     text_delta("a", "5")])
    assert r.text == "12345"
    assert [p["text"] for p in r.parts] == ["135", "24"]


def test_unicode_and_escapes_survive_the_byte_path(codec):
    s = 'é世界🎉\n\t"\\\u2028\x00\x1f'
    r = ways(codec, [text_delta("t", s[:3]), text_delta("t", s[3:])])
    assert r.text == s


def test_empty_text_part_dropped_unless_it_has_provider_metadata(codec):
    r = ways(codec, [
        text_delta("a", ""), line("text-end", {"type": "text-end", "id": "a"}),
        line("text-delta", {"id": "b", "providerMetadata": {"g": {"sig": "x"}}, "text": ""}),
    ])
    assert r.parts == [{"type": "text", "text": "", "providerMetadata": {"g": {"sig": "x"}}}]


def test_reasoning_signature_last_seen_wins_and_empty_reasoning_kept(codec):
    r = ways(codec, [
        line("reasoning-start", {"id": "r", "providerMetadata": {"anthropic": {"signature": ""}}}),
        line("reasoning-delta", {"id": "r", "text": "think"}),
        line("reasoning-delta", {"id": "r", "providerMetadata": {"anthropic": {"signature": "S"}}, "text": ""}),
        line("reasoning-end", {"id": "r"}),
        line("reasoning-start", {"id": "e"}), line("reasoning-end", {"id": "e"}),
    ])
    assert r.reasoning_text == "think"
    assert [e["payload"] for e in r.reasoning] == [
        {"id": "r", "providerMetadata": {"anthropic": {"signature": "S"}}, "text": "think"}, {"id": "e", "text": ""}]
    assert [p["reasoning"] for p in r.parts] == ["think", ""]


def test_a_steps_reasoning_entries_are_those_begun_in_it_as_they_stood_at_its_end(codec):
    """StepResult.reasoning is Mastra's per-step reasoning details: an entry per reasoning-start in
    the step, written by the deltas and ends that follow in the step only (a part that goes on
    past the step-finish adds to the run's entry, not the step's), emptied at each step-finish
    but not by a goal's truncation.  (The Mastra oracle checks the same streams.)"""
    fin = line("step-finish", {"stepResult": {"reason": "stop"}, "output": {"usage": {}}, "metadata": {}})
    r = ways(codec, [
        line("reasoning-start", {"id": "r", "providerMetadata": {"s": 1}}), line("reasoning-delta", {"id": "r", "text": "1"}),
        line("reasoning-start", {"id": "3"}), line("reasoning-delta", {"id": "3", "text": "x"}), fin,
        line("reasoning-delta", {"id": "r", "text": "2", "providerMetadata": {"s": 2}}),
        line("reasoning-end", {"id": "r", "providerMetadata": {"s": 3}}), fin,
        line("reasoning-start", {"id": "r"}), line("reasoning-delta", {"id": "r", "text": "4"}),
        line("reasoning-end", {"id": "r"}), line("reasoning-delta", {"id": "r", "text": "5"}), fin])
    assert [[e["payload"] for e in st.reasoning] for st in r.steps] == [
        [{"id": "3", "text": "x"}, {"id": "r", "providerMetadata": {"s": 1}, "text": "1"}], [],
        [{"id": "r", "text": "45"}]]
    assert r.steps[0].to_mastra()["reasoning"][0] == {"type": "reasoning", "runId": RUN, "from": "AGENT",
                                                      "payload": {"id": "3", "text": "x"}}
    assert [e["payload"] for e in r.reasoning] == [{"id": "3", "text": "x"}, {"id": "r", "text": "45"}]
    r = ways(codec, [
        line("reasoning-start", {"id": "r", "providerMetadata": {"s": 1}}), line("goal", {"shouldContinue": True}),
        line("reasoning-delta", {"id": "r", "text": "5"}),
        line("reasoning-end", {"id": "r", "providerMetadata": {"s": 6}}), fin])
    assert [[e["payload"] for e in st.reasoning] for st in r.steps] == [
        [{"id": "r", "providerMetadata": {"s": 6}, "text": "5"}]]
    assert r.reasoning == []


def test_no_reasoning_is_undefined_not_empty(codec):
    assert ways(codec, [text_delta("t", "x")]).reasoning_text is None
    assert ways(codec, [line("reasoning-delta", {"id": "r", "text": ""})]).reasoning_text == ""


def test_tool_arguments_streamed_parsed_at_end_and_a_later_call_only_fills_in(codec):
    tc = "call_1"
    start = line("tool-call-input-streaming-start", {"toolCallId": tc, "toolName": "w", "providerExecuted": True})
    deltas = [line("tool-call-delta", {"argsTextDelta": d, "toolCallId": tc, "toolName": "w"})
              for d in ('{"ci', 'ty":"Pa', 'ris"}')]
    end = line("tool-call-input-streaming-end", {"toolCallId": tc})
    r = ways(codec, [start, *deltas, end])
    assert [msgspec.to_builtins(c)["payload"] for c in r.tool_calls] == [
        {"toolCallId": tc, "toolName": "w", "args": {"city": "Paris"}, "providerExecuted": True}]
    # A later tool-call of the id (Mastra drops the provider's own from the wire, so only a stream
    # not written by Mastra has one) is not listed again: it fills in only what the call made at
    # the end lacks -- its arguments when those are empty, providerMetadata, dynamic.
    real = line("tool-call", {"toolCallId": tc, "toolName": "x", "args": {"city": "Lyon"},
                              "providerMetadata": {"p": {"q": 1}}, "dynamic": False})
    r = ways(codec, [start, *deltas, end, real])
    assert [msgspec.to_builtins(c)["payload"] for c in r.tool_calls] == [
        {"toolCallId": tc, "toolName": "w", "args": {"city": "Paris"}, "providerExecuted": True,
         "providerMetadata": {"p": {"q": 1}}, "dynamic": False}]
    assert r.parts[0]["toolInvocation"]["args"] == {"city": "Paris"}
    empty = line("tool-call-delta", {"argsTextDelta": "{oops", "toolCallId": tc})
    r = ways(codec, [start, empty, end, real])
    assert [c.payload.args for c in r.tool_calls] == [{"city": "Lyon"}]
    # the same for a tool-call chunk that came first
    r = ways(codec, [real, line("tool-call", {"toolCallId": tc, "toolName": "w", "args": {"a": 1}})])
    assert [msgspec.to_builtins(c)["payload"]["args"] for c in r.tool_calls] == [{"city": "Lyon"}]


def test_a_call_is_made_at_each_input_end_that_follows_a_start(codec):
    """Mastra makes the call at tool-call-input-streaming-end only when a -start came for the id
    since the previous -end, of the deltas since then; one for each such -end (an id used twice
    is listed twice)."""
    tc = "c"
    start = line("tool-call-input-streaming-start", {"toolCallId": tc, "toolName": "w"})
    end = line("tool-call-input-streaming-end", {"toolCallId": tc})

    def delta(t):
        return line("tool-call-delta", {"argsTextDelta": t, "toolCallId": tc})
    r = ways(codec, [delta('{"a":1}'), end])
    assert r.tool_calls == []
    r = ways(codec, [start, delta('{"a":'), delta("1}"), end, delta("{}"), end, start, delta('{"b":2}'), end])
    assert [c.payload.args for c in r.tool_calls] == [{"a": 1}, {"b": 2}]


def test_the_call_made_at_input_end_is_the_call_as_it_stood_then(codec):
    """The tool-call Mastra makes at tool-call-input-streaming-end is built only when a result
    needs it (a tool-call chunk nearly always replaces it): it still has the arguments, name and
    start payload of that moment, whatever arrives for the call id later."""
    tc = "c"
    lines = [line("tool-call-input-streaming-start", {"toolCallId": tc, "toolName": "w", "title": "T"}),
             line("tool-call-delta", {"argsTextDelta": '{"a":1}', "toolCallId": tc}),
             line("tool-call-input-streaming-end", {"toolCallId": tc}),
             line("tool-call-delta", {"argsTextDelta": "xx", "toolCallId": tc, "toolName": "later"}),
             line("tool-call-input-streaming-start", {"toolCallId": tc, "toolName": "v", "title": "U"})]
    r = ways(codec, lines)
    assert [msgspec.to_builtins(c)["payload"] for c in r.tool_calls] == [
        {"toolCallId": tc, "toolName": "w", "args": {"a": 1}, "title": "T"}]
    assert r.parts[0]["toolInvocation"]["args"] == {"a": 1}
    # asked for mid-stream, then a tool-call chunk for the id: it adds nothing
    acc = codec.Accumulator("ndjson")
    acc.feed(b"".join(ln + b"\n" for ln in lines[:3]))
    assert acc.result().tool_calls[0].payload.args == {"a": 1}
    acc.feed(line("tool-call", {"toolCallId": tc, "toolName": "w", "args": {"a": 2}}) + b"\n")
    assert [c.payload.args for c in acc.result().tool_calls] == [{"a": 1}]


@pytest.mark.parametrize("deltas, call", [
    (['{"a":1}'], {"args": {"a": 1}, "providerExecuted": True}),   # kept as written: with its own key
    ([], {}),                                                      # no arguments streamed, none sent
])
def test_a_result_asked_for_before_the_call_mastra_made_arrives_changes_nothing(codec, deltas, call):
    """A result() between a tool-call-input-streaming-end and the tool-call chunk of the call Mastra
    made there (which the run keeps as written) leaves the run as it would have been: the call made
    for that result stays pending until the chunk comes.  (Found by a long run of the random
    streams below, seed 64634: the chunk, a tool-call without args after an -end with no deltas,
    was taken as written fed whole and as the made call's args `{}` with a result() in between.)"""
    tc = "c"
    lines = ([line("tool-call-input-streaming-start", {"toolCallId": tc, "toolName": "w"})] +
             [line("tool-call-delta", {"argsTextDelta": d, "toolCallId": tc}) for d in deltas] +
             [line("tool-call-input-streaming-end", {"toolCallId": tc}),
              line("tool-call", dict({"toolCallId": tc, "toolName": "w"}, **call)),
              line("finish", {"stepResult": {"reason": "tool-calls"}, "output": {"usage": {}}})])
    data = b"".join(ln + b"\n" for ln in lines)
    whole = codec.Accumulator("ndjson")
    whole.feed(data)
    whole.close()
    asked = codec.Accumulator("ndjson")
    cut = data.index(b'{"type":"tool-call",')
    asked.feed(data[:cut])
    made = asked.result()
    assert made.tool_calls[0].payload.args == (deltas and {"a": 1} or {})     # the call made at the -end
    asked.feed(data[cut:])
    asked.close()
    assert msgspec.to_builtins(asked.result()) == msgspec.to_builtins(whole.result())
    assert [msgspec.to_builtins(c)["payload"] for c in whole.result().tool_calls] == [
        dict({"toolCallId": tc, "toolName": "w"}, **call)]
    assert made.tool_calls[0].payload.args == (deltas and {"a": 1} or {})     # (what was handed out stays)


@pytest.mark.parametrize("args", ["{oops", '{"a":NaN}', "Infinity", '[-Infinity]', '{"a":1}x', " \t ", "\u00a0{}"])
def test_unparseable_tool_arguments_fall_back_to_empty_object(codec, args):
    """What JSON.parse refuses, json.loads' NaN and Infinity included."""
    r = ways(codec, [START_C, line("tool-call-delta", {"argsTextDelta": args, "toolCallId": "c", "toolName": "w"}),
                     line("tool-call-input-streaming-end", {"toolCallId": "c"})])
    assert r.tool_calls[0].payload.args == {}


@pytest.mark.parametrize("args, value", [('{"a":1e999}', {"a": float("inf")}), ('"x"', "x"), ("[1, 2] ", [1, 2]),
                                         ('{"a":1,"a":2}', {"a": 2}), (' \t\r\n{"a":[]}\n', {"a": []})])
def test_tool_arguments_are_what_json_parse_gives(codec, args, value):
    """JSON.parse: any JSON value, an overflowing number is Infinity, the last duplicate wins."""
    r = ways(codec, [START_C, line("tool-call-delta", {"argsTextDelta": args, "toolCallId": "c", "toolName": "w"}),
                     line("tool-call-input-streaming-end", {"toolCallId": "c"})])
    assert r.tool_calls[0].payload.args == value


def test_tool_arguments_nested_too_deep_for_python_are_empty_not_a_crash(codec):
    """JSON.parse takes any depth; Python's parser stops at its recursion limit, and then the
    arguments are {} (a documented difference) rather than an exception out of accumulation."""
    deep = "[" * 5000 + "]" * 5000
    r = ways(codec, [START_C, line("tool-call-delta", {"argsTextDelta": deep, "toolCallId": "c", "toolName": "w"}),
                     line("tool-call-input-streaming-end", {"toolCallId": "c"})])
    assert r.tool_calls[0].payload.args == {}


def test_tool_result_without_a_call_is_kept(codec):
    r = ways(codec, [line("tool-result", {"toolCallId": "x", "toolName": "w", "result": 1})])
    assert [c.payload.toolCallId for c in r.tool_results] == ["x"]
    assert r.tool_calls == []


def test_text_is_the_last_steps_once_a_step_had_tools(codec):
    r = ways(codec, [
        line("step-start", {}), text_delta("t0", "before "),
        line("tool-call", {"toolCallId": "c", "toolName": "w", "args": {}}),
        line("step-finish", {"stepResult": {"reason": "tool-calls"}, "output": {"usage": {}}}),
        line("step-start", {}), text_delta("t1", "after"),
    ])
    assert r.text == "after"
    assert [s.text for s in r.steps] == ["before "]


def test_usage_sums_what_steps_report_and_keeps_the_last_raw(codec):
    """Mastra 1.71's updateUsageCount: a counter adds up what the steps that report it report
    (a step without totalTokens leaves the total as it was); raw is the last step's.  The total
    usage makes totalTokens, when no step reported it, of input + output + reasoning.  (Values
    checked against Mastra itself: tests/test_mastra_oracle.py.)"""
    def fin(usage):
        return line("step-finish", {"stepResult": {"reason": "stop"}, "output": {"usage": usage}})
    r = ways(codec, [fin({"inputTokens": 1, "outputTokens": 2, "totalTokens": 3, "reasoningTokens": 1, "raw": "a"}),
                     fin({"inputTokens": 10, "outputTokens": 20, "raw": "b"})])
    assert r.usage == {"inputTokens": 11, "outputTokens": 22, "totalTokens": 3, "reasoningTokens": 1, "raw": "b"}
    assert r.total_usage == r.usage
    r = ways(codec, [fin({"inputTokens": 1, "outputTokens": 2, "raw": "a"}), fin({"inputTokens": 10, "reasoningTokens": 4})])
    assert r.usage == {"inputTokens": 11, "outputTokens": 2, "raw": "a", "reasoningTokens": 4}
    assert r.total_usage == {"inputTokens": 11, "outputTokens": 2, "totalTokens": 17, "reasoningTokens": 4, "raw": "a"}


def test_usage_keys_are_in_the_order_steps_first_reported_them(codec):
    """The three totals first (Mastra declares them), then the other counters and raw in the
    order they were first reported, each step's read in Mastra's order; the total usage lists
    them in a fixed order.  A null counter adds 0 and a boolean 0 or 1, as JavaScript's +
    does."""
    def fin(usage):
        return line("step-finish", {"stepResult": {"reason": "stop"}, "output": {"usage": usage}})
    r = ways(codec, [fin({"inputTokens": 1, "outputTokens": 2, "cachedInputTokens": 4, "raw": "a"}),
                     fin({"inputTokens": 1, "outputTokens": 2, "reasoningTokens": 8, "raw": "b"})])
    assert list(r.usage.items()) == [("inputTokens", 2), ("outputTokens", 4), ("cachedInputTokens", 4),
                                     ("raw", "b"), ("reasoningTokens", 8)]
    assert list(r.total_usage.items()) == [("inputTokens", 2), ("outputTokens", 4), ("totalTokens", 14),
                                           ("reasoningTokens", 8), ("cachedInputTokens", 4), ("raw", "b")]
    r = ways(codec, [fin({"inputTokens": 1, "outputTokens": 2, "totalTokens": 3})])
    assert list(r.usage.items()) == [("inputTokens", 1), ("outputTokens", 2), ("totalTokens", 3)]
    r = ways(codec, [fin({"cacheCreationInputTokens1h": 5, "inputTokens": 1, "cachedInputTokens": 3,
                          "reasoningTokens": None, "cacheCreationInputTokens5m": True, "outputTokens": 2}),
                     fin({"inputTokens": 1, "outputTokens": 2, "reasoningTokens": 7, "cachedInputTokens": 1.5})])
    assert list(r.usage.items()) == [("inputTokens", 2), ("outputTokens", 4), ("reasoningTokens", 7),
                                     ("cachedInputTokens", 4.5), ("cacheCreationInputTokens5m", 1),
                                     ("cacheCreationInputTokens1h", 5)]
    assert r.total_usage["totalTokens"] == 13


def test_long_texts_decode_whole(codec):
    """A range past 64 KiB is decoded in place, a shorter one from a copy: the texts are whole
    either way, in the run, its steps and its parts."""
    big = ["é" * 4000 + "世界" for _ in range(12)]           # 96 KiB of text in one part
    r = ways(codec, [line("step-start", {}), *(text_delta("a", p) for p in big),
                     line("text-end", {"type": "text-end", "id": "a"}),
                     line("step-finish", {"stepResult": {"reason": "stop"}, "output": {"usage": {}}}),
                     line("step-start", {}), text_delta("b", "tail"), text_delta("a", "é" * 70000)])
    assert len("".join(big).encode()) > 65536
    assert r.text == "".join(big) + "tail" + "é" * 70000
    assert [s.text for s in r.steps] == ["".join(big)]
    assert [p.get("text") for p in r.parts] == ["".join(big), None, "tail", "é" * 70000]  # (None: a step-start)


def test_result_mid_stream_reflects_what_arrived(codec):
    acc = codec.Accumulator("ndjson")
    acc.feed(text_delta("t", "Hel") + b"\n")
    assert acc.result().text == "Hel" and acc.result().status == "running"
    acc.feed(text_delta("t", "lo") + b"\n" + line("text-end", {"type": "text-end", "id": "t"})[:20])
    assert acc.result().text == "Hello"
    assert bytes(acc.buffer("text")) == b"Hello"


def test_chunks_added_after_close_continue_the_open_parts(codec):
    """close() seals the part writing at the end of each buffer (so that buffers and parts make no
    reference cycle); a delta add()ed after it still continues its part, text and reasoning alike,
    and a delta of the other part in between still starts a part of its own."""
    acc = codec.Accumulator("ndjson")
    acc.feed(b"".join(x + b"\n" for x in [
        line("reasoning-start", {"id": "r"}), line("reasoning-delta", {"id": "r", "text": "thi"}),
        text_delta("t", "Hel")]))
    acc.close()
    for x in (text_delta("t", "lo"), line("reasoning-delta", {"id": "r", "text": "nk"}),
              text_delta("u", "!"), text_delta("t", "?")):
        acc.add(codec.decode(x))
    r = acc.result()
    assert r.text == "Hello!?" and r.reasoning_text == "think"
    assert [p.get("text", p.get("reasoning")) for p in r.parts] == ["think", "Hello?", "!"]
    assert [e["payload"]["text"] for e in r.reasoning] == ["think"]


def test_buffer_is_a_read_only_view_and_survives_more_input(codec):
    acc = codec.Accumulator("ndjson")
    acc.feed(text_delta("t", "ab") + b"\n")
    view = acc.buffer("text")
    assert view.readonly and bytes(view) == b"ab"
    with pytest.raises(TypeError):
        view[0] = 0
    acc.feed(text_delta("t", "cé") + b"\n")
    assert bytes(view) == b"ab"
    assert bytes(acc.buffer("text")) == "abcé".encode()
    assert acc.result().text == "abcé"


def test_a_runs_reasoning_buffer_is_made_at_its_first_reasoning(codec):
    """A run gets its reasoning buffer at its first reasoning part (most runs have none): till
    then buffer("reasoning") is empty and the run's reasoning undefined; a reasoning-end with no
    part open is an empty reasoning part of its own, made then too."""
    acc = codec.Accumulator("ndjson")
    acc.feed(text_delta("t", "ab") + b"\n")
    view = acc.buffer("reasoning")
    assert view.readonly and bytes(view) == b"" and acc.result().reasoning_text is None
    acc.feed(line("reasoning-end", {"id": "e"}) + b"\n")
    assert bytes(acc.buffer("reasoning")) == b"" and {"type": "reasoning", "reasoning": "", "details": [
        {"type": "text", "text": ""}]} in acc.result().parts
    acc.feed(line("reasoning-delta", {"id": "r", "text": "hm"}) + b"\n")
    assert bytes(view) == b"" and bytes(acc.buffer("reasoning")) == b"hm"
    assert acc.result().reasoning_text == "hm"


def test_nested_sub_agent_chunks_do_not_leak_into_the_parent(codec):
    sub = {"type": "text-delta", "runId": "sub", "from": "AGENT", "payload": {"id": "s", "text": "inner"}}
    r_lines = [text_delta("t", "outer"),
               line("tool-output", {"output": sub, "toolCallId": "c", "toolName": "agent"})]
    r = ways(codec, r_lines)
    assert r.text == "outer" and r.run_id == RUN
    runs = {x.run_id: x for x in codec.accumulate(b"\n".join(r_lines))}
    assert runs["sub"].text == "inner" and runs[RUN].text == "outer"
    # an agent's chunks a workflow step writes come nested in workflow-step-output: its own run
    # too; a step's own output (no runId) is no chunk of any run
    wf = [line("workflow-step-output", {"stepName": "s", "output": {"type": "step-progress", "pct": 5}}, run="wf"),
          line("workflow-step-output", {"stepName": "s", "output": sub, "runId": "wf"}, run="wf")]
    runs = {x.run_id: x for x in codec.accumulate(b"\n".join(wf))}
    assert set(runs) == {"wf", "sub"} and (runs["sub"].text, runs["wf"].text, runs["wf"].parts) == ("inner", "", [])


def test_chunks_without_run_id_go_to_the_run_before_them(codec):
    runs = codec.accumulate(b"\n".join([
        text_delta("t", "a", run="A"), text_delta("t", "b", run="B"),
        line("tripwire", {"reason": "no"}, run=None),
    ]))
    by = {r.run_id: r for r in runs}
    assert by["B"].tripwire == {"reason": "no"} and by["A"].tripwire is None


def test_a_run_first_met_at_its_step_finish_or_finish_takes_its_from(codec):
    """A log that starts in the middle of a run (rotated, or cut) may show a run's step-finish or
    finish first.  The run takes that frame's `from`, as it would any first chunk's, through the
    finish readers (which skip the message history) as through add(): the reasoning entries and
    the call made at tool-call-input-streaming-end carry it.  (Found by random streams: the readers
    did not read `from`, so feed() gave "AGENT" where add() gave the frame's.)"""
    env = {"runId": RUN, "from": "NETWORK"}
    fin = {"stepResult": {"reason": "stop"}, "output": {"usage": {"inputTokens": 1}},
           "messages": {"all": [{"role": "user", "content": "q"}]}}
    for first in ("step-finish", "finish"):
        lines = [json.dumps(d, separators=(",", ":")).encode() for d in (
            {"type": first, **env, "payload": fin},
            {"type": "reasoning-start", **env, "payload": {"id": "r"}},
            {"type": "reasoning-delta", **env, "payload": {"id": "r", "text": "hm"}},
            {"type": "tool-call-input-streaming-start", **env, "payload": {"toolCallId": "c", "toolName": "w"}},
            {"type": "tool-call-delta", **env, "payload": {"argsTextDelta": "{}", "toolCallId": "c"}},
            {"type": "tool-call-input-streaming-end", **env, "payload": {"toolCallId": "c"}})]
        out = ways(codec, lines)
        assert [e["from"] for e in out.reasoning] == ["NETWORK"]
        assert [c.from_ for c in out.tool_calls] == ["NETWORK"]


def test_a_surrogate_pair_cut_between_deltas_is_joined_as_javascript_joins_it(codec):
    """A JavaScript chunker that cuts text by UTF-16 units (slice()) can end a delta between an
    emoji's two halves; JSON.stringify writes each half as a lone escape, and Mastra's
    concatenation of the deltas joins them: "a\\ud83d" + "\\ude00b" is "a😀b".  So do the text,
    a part's text, the reasoning and the tool arguments, final and live; a lone half stays one.
    (Before, the text kept the two halves: four characters where Mastra has three.)"""
    def ln(type_, payload):
        return json.dumps({"type": type_, "runId": RUN, "from": "AGENT", "payload": payload},
                          separators=(",", ":")).encode()       # (lone halves as \\u escapes)
    lines = [ln("text-delta", {"id": "t", "text": "a\ud83d"}), ln("text-delta", {"id": "t", "text": "\ude00b\ud800"}),
             ln("reasoning-start", {"id": "r"}),
             ln("reasoning-delta", {"id": "r", "text": "\ud83e"}), ln("reasoning-delta", {"id": "r", "text": "\udd14"}),
             ln("tool-call-input-streaming-start", {"toolCallId": "c", "toolName": "w"}),
             ln("tool-call-delta", {"argsTextDelta": '{"q":"\ud83d', "toolCallId": "c"}),
             ln("tool-call-delta", {"argsTextDelta": '\ude00"}', "toolCallId": "c"}),
             ln("tool-call-input-streaming-end", {"toolCallId": "c"})]
    out = ways(codec, lines)
    assert out.text == "a\U0001F600b\ud800" and out.parts[0]["text"] == out.text
    assert out.reasoning_text == "\U0001F914" and out.reasoning[0]["payload"]["text"] == "\U0001F914"
    assert out.tool_calls[0].payload.args == {"q": "\U0001F600"}
    acc = codec.Accumulator("ndjson")
    acc.feed(b"".join(x + b"\n" for x in lines[:7]))
    assert acc.partial_args("c") == {"q": ""}          # (the high half waits for its low one)
    acc.feed(lines[7] + b"\n")
    assert acc.partial_args("c") == {"q": "\U0001F600"}


def test_parts_follow_build_messages_from_chunks(codec):
    path = CORPUS / "chunks" / "c_tool_call_roundtrip.jsonl"
    acc = codec.Accumulator()
    acc.feed(path.read_bytes())
    parts = acc.result().parts
    assert [p["type"] for p in parts] == ["text", "tool-invocation", "step-start", "text"]
    inv = parts[1]["toolInvocation"]
    assert inv["state"] == "result" and inv["args"] == {"city": "Paris", "unit": "c"}
    assert inv["result"]["tempC"] == 21.5
    path = CORPUS / "chunks" / "e_tool_error.jsonl"
    acc = codec.Accumulator()
    acc.feed(path.read_bytes())
    inv = [p for p in acc.result().parts if p["type"] == "tool-invocation"][0]["toolInvocation"]
    assert inv["state"] == "output-error" and inv["errorText"]


def test_the_message_has_a_boundary_at_each_step_and_loses_a_step_tried_again(codec):
    """What Mastra's agent loop does to the message it keeps, besides buildMessagesFromChunks: each
    step after the first opens with a step-start part (none when the message is empty, and not a
    second one in a row), and a step a processor had tried again (reason "retry") is rolled back to
    before its boundary, or the message emptied when the step opened none; the data parts that came
    while the model streamed a step go before the step's parts (the loop adds those at the step's
    end), the others after them all; and each step's parts are built from its chunks alone, so a
    text or reasoning part left open at a step's end ends there.  Checked against real agents in
    test_mastra_server ("chain", "onward", "retried", "twice", "guarded", "tagged", "noted",
    "openspan", "openthought")."""
    def step(*body, reason="stop"):
        return [line("step-start", {}), *body, line("step-finish", {"stepResult": {"reason": reason},
                                                                  "output": {"usage": {}}, "metadata": {}})]
    call = line("tool-call", {"toolCallId": "a", "toolName": "w", "args": {}})
    think = [line("reasoning-start", {"id": "r"}), line("reasoning-delta", {"id": "r", "text": "hm"}),
             line("reasoning-end", {"id": "r"})]
    kinds = lambda r: [p["type"] for p in r.parts]    # noqa: E731
    # a step beginning with reasoning after a tool step; text after text
    r = ways(codec, [*step(call, reason="tool-calls"), *step(*think, text_delta("t", "x")),
                     *step(text_delta("u", "y"))])
    assert kinds(r) == ["tool-invocation", "step-start", "reasoning", "text", "step-start", "text"]
    # an empty first step opens none, nor does a step after a boundary that has nothing after it
    r = ways(codec, [*step(), *step(), *step(text_delta("t", "x")), *step(), *step(call)])
    assert kinds(r) == ["text", "step-start", "tool-invocation"]
    # rolled back to the boundary, which goes too; with none, all goes (data parts too)
    r = ways(codec, [*step(text_delta("t", "a"), call, reason="tool-calls"),
                     *step(text_delta("u", "b"), line("data-x", data=1, run=None), reason="retry"),
                     *step(text_delta("v", "c"))])
    assert [(p["type"], p.get("text")) for p in r.parts] == [
        ("text", "a"), ("tool-invocation", None), ("step-start", None), ("text", "c")]
    r = ways(codec, [*step(*think, text_delta("t", "a"), reason="retry"), *step(text_delta("u", "b"), reason="retry"),
                     *step(text_delta("v", "c"))])
    assert [(p["type"], p.get("text")) for p in r.parts] == [("text", "c")]
    # a stream without step-starts has no boundaries (a tool invocation's step-start only)
    r = ways(codec, [text_delta("t", "a"), call, text_delta("u", "b")])
    assert kinds(r) == ["text", "tool-invocation", "step-start", "text"]
    # a data part that came while the model streamed the step (more text, reasoning, a call, a
    # source or a file after it) goes before the step's parts, in the order they came; one after
    # the model's last in the step (a tool's progress, a processor's note) after them all
    data = lambda n: line("data-x", data=n, run=None)    # noqa: E731
    r = ways(codec, [*step(text_delta("t", "a"), data(1), text_delta("t", "b"), call, data(2), reason="tool-calls"),
                     *step(data(3), *think, data(4), line("source", {"id": "s", "sourceType": "url", "url": "u"}),
                           data(5), text_delta("u", "c"), data(6))])
    assert [p.get("data", p["type"]) for p in r.parts] == [
        1, "text", "tool-invocation", 2, "step-start", 3, 4, 5, "reasoning", "source", "text", 6]
    # a part left open at a step's end ends there: its id's deltas in the next step open a new
    # part, with no providerMetadata from a start before the step's end; a reasoning-start with no
    # delta is an empty part at the end of its step's parts (before the data parts after them)
    r = ways(codec, [*step(line("text-start", {"id": "t", "providerMetadata": {"s": 1}}), text_delta("t", "a"),
                           line("reasoning-delta", {"id": "r", "text": "x"}),
                           line("reasoning-start", {"id": "e", "providerMetadata": {"e": 1}}),
                           line("text-start", {"id": "v", "providerMetadata": {"v": 1}}), call, data(1),
                           reason="tool-calls"),
                     *step(text_delta("t", "b"), line("reasoning-delta", {"id": "r", "text": "y"}),
                           line("reasoning-end", {"id": "e"}), text_delta("v", "c"), line("text-end", {"id": "t"}))])
    assert [(p.get("data", p["type"]), p.get("text", p.get("reasoning")), p.get("providerMetadata")) for p in r.parts] == [
        ("text", "a", {"s": 1}), ("reasoning", "x", None), ("tool-invocation", None, None),
        ("reasoning", "", {"e": 1}), (1, None, None), ("step-start", None, None), ("text", "b", None),
        ("reasoning", "y", None), ("reasoning", "", None), ("text", "c", None)]
    assert (r.text, r.reasoning_text) == ("bc", "xy")


def test_parts_rules_mastra_builds_them_by(codec):
    """buildMessagesFromChunks' rules (tests/test_mastra_oracle.py runs Mastra's own on random
    runs): within a step, a step-start only between a tool invocation and a text right after it; a call with a
    result takes the result's providerExecuted and providerMetadata (the call's Responses item id
    kept); a tool error marks the first invocation of its id listed before it, with Mastra's error
    text; sources and files as Mastra writes them; a reasoning-start
    with nothing after it is an empty part at the end."""
    r = ways(codec, [
        line("tool-call", {"toolCallId": "a", "toolName": "w", "args": {}, "providerExecuted": True,
                           "providerMetadata": {"openai": {"itemId": "i1"}, "x": 1}}),
        line("tool-error", {"toolCallId": "b", "toolName": "w", "error": "too early"}),
        line("tool-result", {"toolCallId": "a", "toolName": "w", "result": 1,
                             "providerMetadata": {"openai": {"itemId": "i2", "k": 2}}}),
        line("reasoning-start", {"id": "r"}), line("reasoning-delta", {"id": "r", "text": "hm"}),
        line("reasoning-end", {"id": "r"}), text_delta("t", "x"), line("text-end", {"id": "t"}),
        line("tool-call", {"toolCallId": "b", "toolName": "w", "args": {}, "title": "T"}),
        line("source", {"id": "s", "sourceType": "document", "title": "d"}),
        text_delta("u", "y"), line("tool-call", {"toolCallId": "b", "toolName": "w", "args": {"n": 2}}),
        line("tool-error", {"toolCallId": "b", "toolName": "w", "error": {"message": "  "}}),
        line("tool-error", {"toolCallId": "b", "toolName": "w", "error": {"name": "E", "message": "boom"}}),
        line("file", {"data": "AA", "mimeType": "image/png"}),
        line("reasoning-start", {"id": "q", "providerMetadata": {"p": 1}}),
        line("step-finish", {"stepResult": {"reason": "stop"}, "output": {"usage": {}}, "metadata": {}}),
    ])
    # (the second tool-call of b only fills in the first's arguments: Mastra sends no such call on)
    assert [p["type"] for p in r.parts] == ["tool-invocation", "reasoning", "text", "tool-invocation", "source",
                                            "text", "file", "reasoning"]
    a = r.parts[0]
    assert a["toolInvocation"]["state"] == "result" and "providerExecuted" not in a
    assert a["providerMetadata"] == {"openai": {"itemId": "i1", "k": 2, "resultItemId": "i2"}}
    b = r.parts[3]
    assert b["title"] == "T" and b["toolInvocation"] == {"state": "output-error", "toolCallId": "b",
                                                         "toolName": "w", "args": {"n": 2}, "errorText": "boom"}
    assert r.parts[4]["source"] == {"sourceType": "url", "id": "s", "url": "", "title": "d"}
    assert r.parts[6] == {"type": "file", "data": "AA", "mimeType": "image/png"}
    assert r.parts[7] == {"type": "reasoning", "reasoning": "", "details": [{"type": "text", "text": ""}],
                          "providerMetadata": {"p": 1}}
    # the text right after an invocation, data parts between them or not, has its step-start
    # (a data part with the model's text after it goes before the step's parts, the rule below;
    # one with none, an empty delta at most, after them all)
    r = ways(codec, [line("tool-call", {"toolCallId": "a", "toolName": "w", "args": {}}),
                     line("data-progress", data={"v": 1}, run=None), text_delta("t", "x")])
    assert [p["type"] for p in r.parts] == ["data-progress", "tool-invocation", "step-start", "text"]
    r = ways(codec, [line("tool-call", {"toolCallId": "a", "toolName": "w", "args": {}}),
                     line("data-progress", data={"v": 1}, run=None),
                     line("text-delta", {"id": "t", "text": "", "providerMetadata": {"p": 1}})])
    assert [p["type"] for p in r.parts] == ["tool-invocation", "step-start", "text", "data-progress"]
    # a null result: buildMessagesFromChunks leaves it out (so a provider-executed tool's stays a
    # call), but the loop merges the result of a tool it ran into the call's part, null too
    # ("voidtool" in test_mastra_server)
    call = line("tool-call", {"toolCallId": "a", "toolName": "w", "args": {}, "providerMetadata": {"p": 1}})
    r = ways(codec, [call, line("tool-result", {"toolCallId": "a", "toolName": "w", "result": None,
                                                "providerMetadata": {"q": 2}})])
    assert r.parts == [{"type": "tool-invocation", "providerMetadata": {"p": 1}, "toolInvocation": {
        "state": "result", "toolCallId": "a", "toolName": "w", "args": {}, "result": None}}]
    r = ways(codec, [call, line("tool-result", {"toolCallId": "a", "toolName": "w", "result": None,
                                                "providerExecuted": True})])
    assert r.parts[0]["toolInvocation"]["state"] == "call"
    # the error text: a message blank as JavaScript's trim() has it gives Mastra's fallback
    for message, text in (("\u3000\ufeff ", "Tool execution failed"), ("\x1f", "\x1f"), ("", "Tool execution failed")):
        r = ways(codec, [line("tool-call", {"toolCallId": "a", "toolName": "w", "args": {}}),
                         line("tool-error", {"toolCallId": "a", "toolName": "w", "error": {"message": message}})])
        assert r.parts[0]["toolInvocation"]["errorText"] == text, message
    # a start while the id's part is open does not close it; the next part takes the last start's
    # providerMetadata, none if it had none
    r = ways(codec, [
        line("text-start", {"id": "t", "providerMetadata": {"a": 1}}), line("text-start", {"id": "t"}),
        text_delta("t", "x"), line("text-start", {"id": "t", "providerMetadata": {"a": 2}}), text_delta("t", "y"),
        line("text-end", {"id": "t"}), line("reasoning-start", {"id": "r"}),
        line("reasoning-delta", {"id": "r", "text": "a"}), line("reasoning-start", {"id": "r", "providerMetadata": {"p": 2}}),
        line("reasoning-delta", {"id": "r", "text": "b"}), line("reasoning-end", {"id": "r"})])
    assert r.parts == [{"type": "text", "text": "xy"},
                       {"type": "reasoning", "reasoning": "ab", "details": [{"type": "text", "text": "ab"}]}]
    assert r.reasoning_text == "ab" and [e["payload"]["text"] for e in r.reasoning] == ["b"]


def test_a_background_tasks_end_is_written_into_the_message_as_its_hook_writes_it(codec):
    """A tool run as a background task (Mastra's backgroundTasks): its result while it runs is a
    placeholder (providerMetadata.mastra.backgroundTask.status "running"), a result as any other.
    The task's end -- a tool-result with status "completed", a tool-error with status "failed",
    sent by the task's hook (and, for a task the loop awaited, by the loop again) -- is written
    into the message by that hook (onResult): the invocation's providerMetadata is the call's
    with mastra.modelOutput (the tool's toModelOutput, as the loop's result carries it; null
    without one) and mastra.backgroundTask; a failure's errorText "Background task failed: " and
    the task's message, unless the loop's own error for an awaited task (an Error made of that
    message, which JSON leaves out of the chunk) comes after it.  test_mastra_server holds the
    awaited ones to a live server ("waited", "bgmodel", "bgfail") and the one left running
    ("later"); a deferred task that ends while the run is still streaming is timing there, so
    it is held to Mastra's code here."""
    call = line("tool-call", {"toolCallId": "a", "toolName": "w", "args": {"n": 1},
                              "providerMetadata": {"mastra": {"k": 1}, "x": 2}})
    bt = lambda status: {"mastra": {"backgroundTask": {"taskId": "T", "status": status}}}  # noqa: E731
    placeholder = line("tool-result", {"toolCallId": "a", "toolName": "w", "result": "Background task started.",
                                       "providerMetadata": bt("running")})
    started = line("background-task-started", {"taskId": "T", "toolName": "w", "toolCallId": "a"})
    done = line("tool-result", {"toolCallId": "a", "toolName": "w", "result": {"v": 1}, "providerMetadata": bt("completed")})
    after = [text_delta("t", "Later. ")]
    # left running: the placeholder, as it came
    r = ways(codec, [call, started, placeholder, *after])
    assert r.parts[0]["toolInvocation"]["result"] == "Background task started."
    assert r.parts[0]["providerMetadata"] == bt("running")
    # deferred, ended while the run streams on: the hook's result and providerMetadata
    r = ways(codec, [call, started, placeholder, *after, done])
    assert r.parts[0]["toolInvocation"] == {"state": "result", "toolCallId": "a", "toolName": "w", "args": {"n": 1},
                                            "result": {"v": 1}}
    assert r.parts[0]["providerMetadata"] == {"mastra": {"k": 1, "modelOutput": None,
                                                         "backgroundTask": {"taskId": "T", "status": "completed"}},
                                              "x": 2}
    assert list(r.parts[0]["providerMetadata"]["mastra"]) == ["k", "modelOutput", "backgroundTask"]
    assert [c.payload.result for c in r.tool_results] == ["Background task started.", {"v": 1}]
    # a task that returns null: the hook writes it as any other ("bgnull" on the live server)
    r = ways(codec, [call, started, placeholder, line("tool-result", {"toolCallId": "a", "toolName": "w", "result": None,
                                                                      "providerMetadata": bt("completed")})])
    assert r.parts[0]["toolInvocation"]["result"] is None
    assert r.parts[0]["providerMetadata"] == {"mastra": {"k": 1, "modelOutput": None,
                                                         "backgroundTask": {"taskId": "T", "status": "completed"}}, "x": 2}
    # awaited, with an output for the model: the loop's result carries it (before or after the hook's)
    modeled = {"mastra": {"backgroundTask": {"taskId": "T", "status": "completed"}, "modelOutput": {"type": "text", "value": "v"}}}
    loops = line("tool-result", {"toolCallId": "a", "toolName": "w", "result": {"v": 1}, "providerMetadata": modeled})
    for results in ([done, loops], [loops, done]):
        r = ways(codec, [call, started, *results, *after])
        assert r.parts[0]["providerMetadata"]["mastra"]["modelOutput"] == {"type": "text", "value": "v"}
    # failed: the hook's text, or the message of the task's failure when the loop's error follows
    failed = line("tool-error", {"toolCallId": "a", "toolName": "w", "error": {"message": "no luck", "stack": "Error: no luck"},
                                 "providerMetadata": bt("failed")})
    loop_error = line("tool-error", {"toolCallId": "a", "toolName": "w", "error": {"name": "Error"}})
    pm = {"mastra": {"k": 1, "modelOutput": None, "backgroundTask": {"taskId": "T", "status": "failed"}}, "x": 2}
    for chunks, text in (([failed], "Background task failed: no luck"), ([failed, loop_error], "no luck")):
        r = ways(codec, [call, started, placeholder, *chunks, *after])
        assert (r.parts[0]["toolInvocation"]["state"], r.parts[0]["toolInvocation"]["errorText"]) == ("output-error", text)
        assert r.parts[0]["providerMetadata"] == pm
    # (a loop error with no background failure before it keeps its own text, as before)
    r = ways(codec, [call, loop_error])
    assert r.parts[0]["toolInvocation"]["errorText"] == '{"name":"Error"}'
    assert r.parts[0]["providerMetadata"] == {"mastra": {"k": 1}, "x": 2}


def test_a_tool_calls_approval_decision_is_in_its_message_part(codec):
    """A call that waited for approval (tool-call-approval), then, in the stream after the
    decision: approved, the loop runs it and writes its result into the message with the grant
    (approval {id: the toolCallId, approved: true}; the tool-result chunk does not carry it);
    declined, a tool-output-denied chunk, and the invocation is output-denied with the chunk's
    approval.  test_mastra_server holds both to a live server; here the edges."""
    pm = {"openai": {"itemId": "fc_1"}}
    call = line("tool-call", {"toolCallId": "a", "toolName": "w", "args": {"n": 1}, "providerMetadata": pm})
    asks = line("tool-call-approval", {"toolCallId": "a", "toolName": "w", "args": {"n": 1}})
    result = line("tool-result", {"toolCallId": "a", "toolName": "w", "args": {"n": 1}, "result": {"ok": 1}})
    no = {"id": "a", "approved": False, "reason": "Tool call was not approved by the user"}
    denied = line("tool-output-denied", {"toolCallId": "a", "toolName": "w", "args": {"n": 1}, "approval": no})
    after = [line("step-start", {}), text_delta("u", "Done.")]
    r = ways(codec, [call, asks, result, *after])
    assert r.parts[0] == {"type": "tool-invocation", "providerMetadata": pm, "toolInvocation": {
        "state": "result", "toolCallId": "a", "toolName": "w", "args": {"n": 1}, "result": {"ok": 1},
        "approval": {"id": "a", "approved": True}}}
    assert r.parts[1:] == [{"type": "step-start"}, {"type": "text", "text": "Done."}]
    # left waiting: the call as it is
    r = ways(codec, [call, asks])
    assert (r.status, r.parts) == ("suspended", [{"type": "tool-invocation", "providerMetadata": pm, "toolInvocation": {
        "state": "call", "toolCallId": "a", "toolName": "w", "args": {"n": 1}}}])
    r = ways(codec, [call, asks, denied, *after])
    assert r.parts[0] == {"type": "tool-invocation", "providerMetadata": pm, "toolInvocation": {
        "state": "output-denied", "toolCallId": "a", "toolName": "w", "args": {"n": 1}, "approval": no}}
    assert (r.tool_results, r.text) == ([], "Done.")
    # a denial without the decision (an older server's), or for a call not listed: as it comes
    bare = line("tool-output-denied", {"toolCallId": "a", "toolName": "w"})
    assert ways(codec, [call, asks, bare]).parts[0]["toolInvocation"] == {
        "state": "output-denied", "toolCallId": "a", "toolName": "w", "args": {"n": 1}}
    other = line("tool-output-denied", {"toolCallId": "b", "toolName": "w", "approval": no})
    assert ways(codec, [call, asks, other]).parts[0]["toolInvocation"]["state"] == "call"
    # a background task's hook writes the grant, for a failure too (the loop's own error has none)
    bg_failed = line("tool-error", {"toolCallId": "a", "toolName": "w", "error": {"message": "m"},
                                    "providerMetadata": {"mastra": {"backgroundTask": {"taskId": "T", "status": "failed"}}}})
    plain_failed = line("tool-error", {"toolCallId": "a", "toolName": "w", "error": {"message": "m"}})
    assert ways(codec, [call, asks, bg_failed]).parts[0]["toolInvocation"]["approval"] == {"id": "a", "approved": True}
    assert "approval" not in ways(codec, [call, asks, plain_failed]).parts[0]["toolInvocation"]
    # no grant for a call that did not wait for approval, nor for another call's approval
    asks_b = line("tool-call-approval", {"toolCallId": "b", "toolName": "w"})
    for chunks in ([call, result], [call, asks_b, result]):
        assert "approval" not in ways(codec, chunks).parts[0]["toolInvocation"]


def test_a_goal_that_continues_the_run_truncates_what_mastra_resolves(codec):
    """goal with shouldContinue true: the text, reasoning, steps, calls, results, sources and
    files begin anew (usage stays); the step being written goes too at its step-finish when it
    had content.  Without shouldContinue true a goal changes nothing."""
    sf = line("step-finish", {"stepResult": {"reason": "stop"}, "output": {"usage": {"inputTokens": 1}},
                              "metadata": {}})
    r = ways(codec, [
        text_delta("t", "a"), line("tool-call", {"toolCallId": "c", "toolName": "w", "args": {}}),
        line("source", {"id": "s", "sourceType": "url", "url": "u"}), sf,
        line("goal", {"objective": "o", "shouldContinue": False}), text_delta("t", "b"),
        line("reasoning-delta", {"id": "r", "text": "x"}),
        line("goal", {"objective": "o", "shouldContinue": True}), text_delta("t", "c"), sf,
        text_delta("t", "d"), line("tool-call", {"toolCallId": "c", "toolName": "w", "args": {"n": 1}}), sf,
        line("finish", {"stepResult": {"reason": "stop"}, "output": {"usage": {}}, "metadata": {}})])
    assert r.text == "d" and r.reasoning_text is None and r.sources == []
    assert [s.text for s in r.steps] == ["d"] and r.steps[0].step_type == "initial"
    assert [c.payload.args for c in r.tool_calls] == [{"n": 1}]     # (listed again: a new list)
    assert r.usage["inputTokens"] == 3
    # (the message keeps what the goal drops; its parts are each step's: t, never ended, goes on
    # in a new part after each step's end)
    assert [p.get("text") for p in r.parts if p["type"] == "text"] == ["a", "bc", "d"]


def test_a_reasoning_part_open_across_a_goal_is_reasoning_again_at_its_next_delta(codec):
    """A goal that continues the run empties its reasoning (reasoningText undefined), and a
    reasoning part still open goes on: its next delta, even an empty one, makes reasoningText a
    string again, of what came after the goal (no reasoning entry: those begin at a
    reasoning-start), while the message part keeps it all.  On the native path such a delta used
    to go on in the C delta loop, unseen by the run: reasoningText stayed None.  (Mastra's values,
    test_mastra_oracle checks these streams and their kin.)"""
    goal = line("goal", {"objective": "o", "shouldContinue": True})
    fin = line("finish", {"stepResult": {"reason": "stop"}, "output": {"usage": {}}, "metadata": {}})

    def rd(text):
        return line("reasoning-delta", {"id": "r", "text": text})

    for after, want in ((rd("x"), "x"), (rd(""), ""), (text_delta("t", "y"), None)):
        r = ways(codec, [rd("a"), goal, after, fin])
        assert (r.reasoning_text, r.reasoning) == (want, [])
    r = ways(codec, [line("reasoning-start", {"id": "r"}), rd("a"), goal, rd("b"), rd("c"),
                     line("reasoning-end", {"id": "r"}), fin])
    assert (r.reasoning_text, r.reasoning) == ("bc", [])
    assert [p["reasoning"] for p in r.parts] == ["abc"]


def test_what_comes_after_a_step_finish_is_the_next_steps_message_parts(codec):
    """Mastra builds each step's message parts from that step's chunks alone, and puts a
    step-start between a tool invocation and a text after it: so a tool call after a step-finish
    and a text after that are of one step (a step-start between them, where we had none), a call
    before it and a text after are not (none); and a data part that came at the end of a step goes
    before the next step's parts, an empty reasoning part of a reasoning-start with nothing after
    it among them (it went after)."""
    sf = line("step-finish", {"stepResult": {"reason": "stop"}, "output": {"usage": {}}, "metadata": {}})
    fin = line("finish", {"stepResult": {"reason": "stop"}, "output": {"usage": {}}, "metadata": {}})
    call = line("tool-call", {"toolCallId": "c", "toolName": "w", "args": {}})
    text = text_delta("t", "x")
    assert [p["type"] for p in ways(codec, [sf, call, text, fin]).parts] == ["tool-invocation", "step-start", "text"]
    assert [p["type"] for p in ways(codec, [call, sf, text, fin]).parts] == ["tool-invocation", "text"]
    first = line("start", {})      # (a data chunk has no runId: it is the run's of the chunk before)
    data = line("data-x", run=None, data={"n": 1})
    start = line("reasoning-start", {"id": "r"})
    assert [p["type"] for p in ways(codec, [first, data, sf, start, fin]).parts] == ["data-x", "reasoning"]
    assert [p["type"] for p in ways(codec, [first, data, start, fin]).parts] == ["reasoning", "data-x"]


def test_bad_frame_strict_raises_with_position_after_taking_what_came_before(codec):
    acc = codec.Accumulator("ndjson")
    data = text_delta("t", "ok") + b"\n" + b'{"type":"text-delta",oops}\n'
    from chunkcodec import DecodeError
    with pytest.raises(DecodeError) as ei:
        acc.feed(data)
    assert ei.value.frame_index == 1 and ei.value.pos == len(text_delta("t", "ok")) + 1 + 21
    assert acc.result().text == "ok"


def test_bad_frame_keep_mode_records_it_and_carries_on(codec):
    acc = codec.Accumulator("ndjson", errors="keep")
    acc.feed(text_delta("t", "a") + b"\n\xff\xfe\n" + text_delta("t", "b") + b"\n")
    acc.close()
    r = acc.result()
    assert r.text == "ab"
    assert [f.frame_index for f in r.invalid_frames] == [1]


def test_truncated_stream_raises_on_close(codec):
    from chunkcodec import TruncatedError
    acc = codec.Accumulator("ndjson")
    acc.feed(text_delta("t", "a") + b"\n" + text_delta("t", "b")[:-3])
    with pytest.raises(TruncatedError):
        acc.close()
    assert acc.result().text == "a"


@pytest.mark.parametrize("text,prefixes", [
    ('{"city":"Paris","n":[1,2.5,true,null],"o":{"k":"v"}}', {
        '{"ci': {}, '{"city":"Pa': {"city": "Pa"}, '{"city":"Paris","n":[1,2': {"city": "Paris", "n": [1, 2]},
        '{"city":"Paris","n":[1,2.5,tr': {"city": "Paris", "n": [1, 2.5, True]},
        '{"city":"Paris","n":[1,2.5,true,null],"o":{': {"city": "Paris", "n": [1, 2.5, True, None], "o": {}},
    }),
    ('{"s":"a\\"b\\u00e9\\ud83d\\ude00"}', {'{"s":"a\\"b\\u00': {"s": 'a"b'}, '{"s":"a\\"b\\u00e9': {"s": 'a"bé'}}),
])
def test_partial_args_closes_what_is_open(codec, text, prefixes):
    for cut in range(1, len(text) + 1):
        acc = codec.Accumulator("ndjson")
        # arrive in two deltas; partial_args is asked after each, so the parser sees the text in two pieces
        mid = cut // 2
        acc.feed(line("tool-call-delta", {"argsTextDelta": text[:mid], "toolCallId": "c", "toolName": "w"}) + b"\n")
        acc.partial_args("c")
        acc.feed(line("tool-call-delta", {"argsTextDelta": text[mid:cut], "toolCallId": "c", "toolName": "w"}) + b"\n")
        got = acc.partial_args("c")
        if text[:cut] in prefixes:
            assert got == prefixes[text[:cut]], text[:cut]
        if cut == len(text):
            assert got == json.loads(text)


def test_partial_args_reads_only_new_bytes(codec, monkeypatch):
    from chunkcodec import _accum
    seen = []
    orig = _accum.PartialJSON.feed
    monkeypatch.setattr(_accum.PartialJSON, "feed", lambda self, t: (seen.append(len(t)), orig(self, t))[1])
    acc = codec.Accumulator("ndjson")
    for piece in ['{"a":"', "x" * 1000, '","b":', "1}"]:
        acc.feed(line("tool-call-delta", {"argsTextDelta": piece, "toolCallId": "c", "toolName": "w"}) + b"\n")
        acc.partial_args("c")
    assert seen == [6, 1000, 6, 2]
    assert acc.partial_args("c") == {"a": "x" * 1000, "b": 1}


def test_partial_args_and_buffer_of_a_call_id_two_runs_use(codec):
    """Two runs of a log may stream calls of the same toolCallId (providers that number their
    calls, call_0...).  partial_args and buffer take a run_id to say whose; without one they give
    the call streamed last.  Handing one run out (pop_finished) leaves the other's call readable."""
    def delta(run, text):
        return line("tool-call-delta", {"argsTextDelta": text, "toolCallId": "call_0", "toolName": "w"}, run=run)
    fin = line("finish", {"stepResult": {"reason": "stop"}, "output": {"usage": {}}}, run="a")
    acc = codec.Accumulator("ndjson")
    acc.feed(delta("a", '{"x":"A') + b"\n" + delta("b", '{"y":[1,') + b"\n")
    assert acc.partial_args("call_0", run_id="a") == {"x": "A"}
    assert acc.partial_args("call_0", run_id="b") == {"y": [1]}
    assert acc.partial_args("call_0") == {"y": [1]}            # (the call streamed last)
    assert bytes(acc.buffer("call_0", run_id="a")) == b'{"x":"A'
    assert acc.partial_args("call_0", run_id="c") is None
    with pytest.raises(KeyError):
        acc.buffer("call_0", run_id="c")
    acc.feed(fin + b"\n")
    assert [r.run_id for r in acc.pop_finished()] == ["a"]
    acc.feed(delta("b", "2]}") + b"\n")
    assert acc.partial_args("call_0") == acc.partial_args("call_0", run_id="b") == {"y": [1, 2]}
    assert bytes(acc.buffer("call_0")) == b'{"y":[1,2]}'
    # a run that streamed the id last, handed out: the other run's call is found
    acc.feed(delta("c", "[") + b"\n" + fin.replace(b'"a"', b'"c"') + b"\n")
    assert acc.partial_args("call_0") == []
    assert [r.run_id for r in acc.pop_finished()] == ["c"]
    assert acc.partial_args("call_0") == {"y": [1, 2]} and bytes(acc.buffer("call_0")) == b'{"y":[1,2]}'


def _bench_module(name):
    import importlib
    import pathlib
    import sys
    bench = str(pathlib.Path(__file__).parent.parent / "bench")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    return importlib.import_module(name)


def test_generated_log_of_interleaved_runs_gives_each_runs_truth(codec):
    """Each run of a generated log, interleaved frame by frame with 59 others, accumulates to what
    a plain json.loads accumulator finds for it, and to what the run gives alone."""
    gen, baselines = _bench_module("gen"), _bench_module("baselines")
    frames = gen.interleaved(60, 40, seed=11)
    data = gen.framed(frames, "sse")
    runs = codec.accumulate(data)
    assert len(runs) == 60
    truth = baselines.baseline_answer(baselines.json_ndjson(gen.framed(frames, "ndjson")))
    assert baselines.chunkcodec_answer(runs) == truth
    alone = codec.accumulate(gen.framed(gen.frames(1, 40, seed=11), "ndjson"))[0]
    assert alone.run_id in {r.run_id for r in runs}
    for r in runs:
        assert r.status == "success" and r.finish_reason == "stop" and len(r.steps) == 2
        assert len(r.tool_calls) == 1 and r.tool_calls[0].payload.args == {"city": "Paris, Île-de-France"}


def test_more_runs_than_route_slots_native_equals_reference(both):
    """Thousands of interleaved (run, id) pairs: the native route cache evicts and re-routes."""
    rng = random.Random(5)
    lines = []
    for i in range(6000):
        r = rng.randrange(3000)
        kind = rng.randrange(3)
        if kind == 0:
            lines.append(text_delta(f"t{r % 3}", f"{i} ", run=f"r{r}"))
        elif kind == 1:
            lines.append(line("reasoning-delta", {"id": "x", "text": f"{i}"}, run=f"r{r}"))
        else:
            lines.append(line("tool-call-delta", {"argsTextDelta": f"{i},", "toolCallId": f"c{r}", "toolName": "w"},
                              run=f"r{r}"))
        if rng.random() < 0.05:
            lines.append(line("text-end", {"type": "text-end", "id": f"t{r % 3}"}, run=f"r{r}"))
    data = b"\n".join(lines) + b"\n"
    native, reference = both
    accs = []
    for api in both:
        acc = api.Accumulator("ndjson")
        acc.feed(data)
        acc.close()
        accs.append(acc)
    a, b = ([msgspec.to_builtins(x) for x in acc.results().values()] for acc in accs)
    assert a == b and len(a) > 2500
    calls = {f"c{r}" for r in range(3000)} & set(accs[1]._tool_args)
    assert len(calls) > 1000
    for c in calls:
        assert bytes(accs[0].buffer(c)) == bytes(accs[1].buffer(c))


def test_deltas_without_run_id_follow_the_current_run_on_both_paths(both):
    lines = [text_delta("t", "a", run="A"), text_delta("t", "x", run=None), text_delta("t", "b", run="B"),
             text_delta("t", "y", run=None),
             line("tool-call-input-streaming-start", {"toolCallId": "c", "toolName": "late"}),
             line("tool-call-delta", {"argsTextDelta": "{", "toolCallId": "c"}),
             line("tool-call-delta", {"argsTextDelta": "}", "toolCallId": "c", "toolName": "late"}),
             line("tool-call-input-streaming-end", {"toolCallId": "c"})]
    data = b"\n".join(lines) + b"\n"
    got = [[msgspec.to_builtins(r) for r in api.accumulate(data)] for api in both]
    assert got[0] == got[1]
    by = {r["run_id"]: r for r in got[0]}
    assert by["A"]["text"] == "ax" and by["B"]["text"] == "by"
    assert by[RUN]["tool_calls"][0]["payload"]["toolName"] == "late"


#: providerMetadata on deltas, as written: two that alternate, escapes, white space, duplicate
#: keys, a long one (its head is not kept), and what the delta loop leaves to the decoder (a number
#: msgspec refuses, nesting past 64, not an object, not JSON)
_DELTA_PMS = ['{"openai":{"itemId":"rs_1"}}', '{"openai":{"itemId":"rs_2"}}',
              '{"anthropic":{"signature":"s\\"A\\u00e9\\ud83d\\ude00=="}}',
              '{"m":{"k":[1,2.5,-3e5,true,false,null,"é😀"]}}', '{ "spaced" : { "x" : 1 } }', '{"d":1,"d":2}',
              '{"long":"' + "x" * 200 + '"}', '{"big":1e400}', '{"deep":' + "[" * 70 + "]" * 70 + '}',
              'null', '"s"', '{"bad":tru}']


def _random_delta_log(rng, n):
    """Delta, text-start, text-end, start and tool-call-input-streaming-start and -end frames in
    Mastra's shape (what the native C delta loop takes or reads) mixed with what sends it back to the
    general path: run ids too long for a stored route, escaped ids, tool deltas that name their
    tool late, ids reopened after text-end, providerMetadata (on deltas: repeated, changing,
    escaped, long, and values the loop leaves to the decoder), extra payload keys, other key
    orders and white space (json.dumps's defaults, sort_keys: the loops take the deltas among
    them), frames near the size limit."""
    runs = ["r%d" % i for i in range(12)] + ["L" * 90, "L" * 170, "\\u0041bc", "é" * 30]
    lines = []
    for i in range(n):
        run = rng.choice(runs)
        kind = rng.randrange(10)
        if rng.random() < 0.01:
            kind = 99
        text = rng.choice(["a", "é", "\\n", "\\\"q\\\"", "😀", "x" * rng.randrange(1, 300), "\\ud83d\\ude00"])
        if kind < 7:
            p = {"id": "t%d" % rng.randrange(3) if kind < 5 else "x"}
            if rng.random() < 0.4:
                p["providerMetadata"] = "@PM@"
            p["text"] = "@"
            d = {"type": "text-delta" if kind < 5 else "reasoning-delta", "runId": run, "from": "AGENT", "payload": p}
        elif kind < 9:
            p = {"argsTextDelta": "@", "toolCallId": "c%d" % rng.randrange(4)}
            if rng.random() < 0.5:
                p["toolName"] = "w"
            if rng.random() < 0.2:
                p["providerMetadata"] = "@PM@"
            d = {"type": "tool-call-delta", "runId": run, "from": "AGENT", "payload": p}
        elif kind == 99:       # the run finishes (and may be popped; its runId may come back)
            d = {"type": "finish", "runId": run, "from": "AGENT",
                 "payload": {"stepResult": {"reason": "stop"}, "output": {"usage": {"inputTokens": 1}}}}
        else:
            kind = rng.choice(["text-start", "text-end", "start", "tool-call-input-streaming-end",
                               "tool-call-input-streaming-start"])
            if kind == "tool-call-input-streaming-start":
                p = {"toolCallId": "c%d" % rng.randrange(5), "toolName": rng.choice(["w", "v", "é"])}
                if rng.random() < 0.2:
                    p[rng.choice(["providerExecuted", "dynamic", "title", "extra"])] = \
                        rng.choice([True, "t", {"k": 1}])
            elif kind == "start":
                p = {"id": "agent", "messageId": "m%d" % i}
                if rng.random() < 0.2:
                    p["extra"] = i
            elif kind == "tool-call-input-streaming-end":
                p = {"toolCallId": "c%d" % rng.randrange(5)}
                if rng.random() < 0.2:
                    p["extra"] = i
            else:
                p = {"type": "text-end"} if kind == "text-end" else {}
                p["id"] = "t%d" % rng.randrange(3)
                if rng.random() < 0.2:
                    p["providerMetadata"] = {"m": {"k": i}}
            d = {"type": kind, "runId": run, "from": "AGENT", "payload": p}
        # Mastra's shape mostly; else as Python's json.dumps writes it (spaces, sorted keys), in
        # another key order, or with a key the loops do not know
        style = rng.random()
        if style < 0.06:
            ln = json.dumps(d, ensure_ascii=False)
        elif style < 0.1:
            ln = json.dumps(d, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        elif style < 0.12:
            ln = json.dumps(d, ensure_ascii=False, sort_keys=True)
        else:
            if style < 0.15:
                d = dict(reversed(d.items()))
            elif style < 0.18:
                d["payload"] = dict(reversed(d["payload"].items()))
            elif style < 0.19:
                d["seq"] = i
            elif style < 0.2:
                del d["from"]
            elif style < 0.21:
                d["payload"].pop("id", None)          # (an error: a text or reasoning delta needs it)
            ln = json.dumps(d, ensure_ascii=False, separators=(",", ":"))
            if 0.21 <= style < 0.22:                  # a key twice
                ln = ln.replace('"from":', '"from":"X","from":') if style < 0.215 else \
                    ln.replace('{"type":', '{"runId":"r0","type":')
            elif 0.22 <= style < 0.23:                # a key twice, escaped the second time
                ln = ln[:-2] + ',"te\\u0078t":"E"}}' if style < 0.225 else ln[:-1] + ',"run\\u0049d":"r1"}'
        # the text goes in as written above, escapes and all (json.dumps would double them)
        ln = ln.replace('"@"', '"' + text + '"').replace('"\\\\u0041bc"', '"\\u0041bc"')
        ln = ln.replace('"@PM@"', rng.choice(_DELTA_PMS))
        if rng.random() < 0.05:
            ln = ln.replace('{"type"', '{ "type"')             # not the exact shape: the other reader
        elif rng.random() < 0.03:
            ln = ln.replace('{"type"', '{\t"type"')            # a tab: the general path
        lines.append(ln.encode())
    return lines


def _frame_tuple(f):
    return (f.raw, type(f.error).__name__, str(f.error), f.frame_index, f.pos, f.dropped)


def _line_end(rng, crlf):
    """LF, or with crlf: CRLF, LF, or now and then a CR before the CRLF (JSON white space: the
    general path's)."""
    if not crlf:
        return b"\n"
    return rng.choice([b"\r\n", b"\r\n", b"\r\n", b"\n", b"\r\r\n"])


def _sse_fields(rng, i):
    """What comes before an SSE event's JSON: `data: `, or `data:` (no space), with now and then
    other fields before it (id, event, retry, a comment; up to five lines, one starting with
    `data` that is no data field, which the general path ignores too)."""
    head = rng.choice([b"data: ", b"data:"])
    k = rng.random()
    if k < 0.5:
        return head
    fields = [b"id: %d" % i, b"event: chunk", b"retry: 3000", b": keep-alive", b"dataX: 1", b"id:"]
    return b"".join(f + rng.choice([b"\n", b"\r\n"]) for f in rng.sample(fields, rng.randint(1, 5))) + head


@pytest.mark.parametrize("framing", ["ndjson", "sse", "rs", "ndjson-crlf", "sse-crlf", "sse-fields"])
@pytest.mark.parametrize("seed", range(4))
def test_delta_loop_native_equals_reference(both, framing, seed):
    """The native C delta loop (routes, buffers that grow in place, views held across growth,
    the frame size limit, runs popped between feeds and their runIds coming back) gives what the
    reference gives, fed in random pieces.  (-crlf: lines ending in CRLF, mixed with LF, as a
    Windows log or an SSE server using CRLF writes them; the pieces cut between CR and LF too.
    -fields: SSE events with other fields before their data line, and `data:` without a space.)"""
    rng = random.Random(seed)
    lines = _random_delta_log(rng, 1500)
    framing, variant = (framing.split("-") + [""])[:2]
    crlf = variant in ("crlf", "fields")
    if framing == "sse":
        data = b"".join((_sse_fields(rng, i) if variant == "fields" else b"data: ") + ln + _line_end(rng, crlf)
                        + _line_end(rng, crlf) for i, ln in enumerate(lines)) + b"data: [DONE]\n\n"
    else:
        data = b"".join(ln + (b"\x1e" if framing == "rs" else _line_end(rng, crlf)) for ln in lines)
    limit = rng.choice([None, 200, 400])
    cuts = sorted(rng.sample(range(1, len(data)), 200))
    pops = {k for k in range(len(cuts)) if rng.random() < 0.1}
    outs = []
    for api in both:
        acc = api.Accumulator(framing, errors="keep", max_frame_bytes=limit)
        views, popped = [], []
        for k, (a, b) in enumerate(zip([0] + cuts, cuts + [len(data)])):
            acc.feed(data[a:b])
            if k in pops:
                popped += [msgspec.to_builtins(r, enc_hook=_frame_tuple) for r in acc.pop_finished()]
            if rng.random() < 0.1 and acc.run_ids():
                rid = rng.choice(acc.run_ids())
                v = acc.buffer("text", rid)
                views.append((v, bytes(v)))
        acc.close()
        for v, was in views:                  # a view never changes, whatever came after it
            assert bytes(v) == was
        res = [msgspec.to_builtins(r) for r in acc.results().values()]
        bufs = {(k, rid): bytes(acc.buffer(k, rid)) for rid in acc.run_ids() for k in ("text", "reasoning")}
        bad = list(acc.invalid_frames)
        outs.append((res, bufs, bad, popped))
    assert outs[0] == outs[1]
    assert len(outs[0][0]) + len(outs[0][3]) >= 15
    if limit is not None:
        assert outs[0][2]        # some frames were over the limit


_ISA_PROBE = """
import hashlib, json, sys
import msgspec
from chunkcodec import _core, Accumulator, bulk
data = open(sys.argv[1], "rb").read()
acc = Accumulator("ndjson", errors="keep")
acc.feed(data)
acc.close()
runs = [msgspec.to_builtins(r) for r in acc.results().values()]
runs.append([(f.frame_index, f.pos, type(f.error).__name__) for f in acc.invalid_frames])
ix = bulk.scan(sys.argv[1], "ndjson", workers=1)
cols = [c.tolist() for c in (ix.offset, ix.length, ix.type, ix.run, ix.text_off, ix.text_len)]
print(json.dumps({"isa": _core.fast_isa(), "runs": hashlib.sha256(json.dumps(runs).encode()).hexdigest(),
                  "index": hashlib.sha256(json.dumps([cols, ix.run_ids]).encode()).hexdigest(),
                  "frames": len(ix), "bad": len(acc.invalid_frames)}))
"""


def _cpu_has_avx2():
    try:
        with open("/proc/cpuinfo") as f:
            return " avx2" in f.read()
    except OSError:
        return None


def test_delta_loops_give_the_same_with_and_without_avx2(both, tmp_path):
    """The C delta loops (the accumulator's and the bulk indexer's) read 64-byte blocks with AVX2
    where the CPU has it, else with SSE2; CHUNKCODEC_NO_AVX2 forces the portable reader.  Both give
    the same runs and the same index for a log built to hit every edge of the fast path (escapes,
    multi-byte characters, frames up to the 1 KB limit of the fast path, ids it does not take; bad
    UTF-8, raw control bytes and lone backslashes in some texts), each in a fresh process (the
    choice is made once per process)."""
    import os
    import subprocess
    rng = random.Random(7)
    lines = _random_delta_log(rng, 3000)
    for i in rng.sample(range(len(lines)), 150):       # break a text: the frame is invalid
        ln = lines[i]
        at = ln.rfind(b'":"') + 3 + rng.randrange(3)
        if at < len(ln) - 3:
            lines[i] = ln[:at] + rng.choice([b"\xff", b"\xc3", b"\x01", b"\\", b"\xed\xa0\x80"]) + ln[at:]
    log = tmp_path / "deltas.ndjson"
    log.write_bytes(b"".join(ln + b"\n" for ln in lines))
    out = {}
    for name, env in (("default", {}), ("portable", {"CHUNKCODEC_NO_AVX2": "1"})):
        e = {k: v for k, v in os.environ.items() if k not in ("CHUNKCODEC_NO_AVX2", "CHUNKCODEC_NO_EXTENSIONS")}
        r = subprocess.run([sys.executable, "-c", _ISA_PROBE, str(log)], env={**e, **env}, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        out[name] = json.loads(r.stdout)
    assert out["portable"]["isa"] == "portable"
    if _cpu_has_avx2() is not None and sys.platform == "linux" and os.uname().machine == "x86_64":
        assert out["default"]["isa"] == ("avx2" if _cpu_has_avx2() else "portable")
    assert out["default"]["frames"] == 3000 and out["default"]["bad"] > 50
    assert {k: v for k, v in out["default"].items() if k != "isa"} == \
        {k: v for k, v in out["portable"].items() if k != "isa"}


def _adds_on_both(both, monkeypatch, lines, errors="strict"):
    """The NDJSON lines accumulated on both paths (native, then reference), with the tag of each
    chunk add() is given recorded, a "|" after each path's: (tags, [the two accumulators])."""
    data = b"".join(ln + b"\n" for ln in lines)
    seen, accs = [], []
    for api in both:                     # (the native base class is a cdef class: patch the subclass)
        monkeypatch.setattr(api.Accumulator, "add", lambda self, c, add=api.Accumulator.add: (
            seen.append(getattr(getattr(type(c), "__struct_config__", None), "tag", None)), add(self, c))[1])
    for api in both:
        acc = api.Accumulator("ndjson", errors=errors)
        acc.feed(data)
        acc.close()
        accs.append(acc)
        seen.append("|")
    return seen, accs


def test_native_reads_plain_deltas_and_text_brackets_without_the_decoder(both, monkeypatch):
    """Mastra's plain text-delta/text-start/text-end frames, and its start frame (payload id and
    messageId), never reach the general path (add) on the native side (the C loop takes or reads
    them); the same log on the reference path does.  A start of another shape does."""
    lines = [line("start", {"id": "agent", "messageId": "m"}), line("start", {"id": "agent"}),
             line("text-start", {"id": "t"}), text_delta("t", "Hé"),
             text_delta("t", "llo"), line("text-end", {"type": "text-end", "id": "t"}),
             line("text-start", {"id": "t"}), text_delta("t", "!"), line("text-end", {"type": "text-end", "id": "t"})]
    seen, accs = _adds_on_both(both, monkeypatch, lines)
    for acc in accs:
        assert acc.result().text == "Héllo!" and [p["text"] for p in acc.result().parts] == ["Héllo", "!"]
    assert seen == ["start", "|", "start", "start", "text-start", "text-delta", "text-delta", "text-end",
                    "text-start", "text-delta", "text-end", "|"]


def test_native_reads_plain_tool_input_starts_without_the_decoder(both, monkeypatch):
    """Mastra's plain tool-call-input-streaming-start (payload toolCallId and toolName) never
    reaches add() on the native side (the C loop reads it); one with more keys, or an escape, does.
    Either way the results are the reference path's: the tool call Mastra makes at the input's end
    takes what the last start carried (here a plain start after one with providerExecuted: none)."""
    start = "tool-call-input-streaming-start"
    lines = [line(start, {"toolCallId": "a", "toolName": "get"}),
             line("tool-call-delta", {"argsTextDelta": '{"x":1}', "toolCallId": "a", "toolName": "get"}),
             line("tool-call-input-streaming-end", {"toolCallId": "a"}),
             line(start, {"toolCallId": "b", "toolName": "run", "providerExecuted": True}),
             line(start, {"toolCallId": "b", "toolName": "run"}),
             line("tool-call-delta", {"argsTextDelta": "{}", "toolCallId": "b"}),
             line("tool-call-input-streaming-end", {"toolCallId": "b"}),
             line(start, {"toolCallId": "c", "toolName": "gét"}).replace("é".encode(), b"\\u00e9"),
             line("tool-call-input-streaming-end", {"toolCallId": "c"})]
    seen, accs = _adds_on_both(both, monkeypatch, lines)
    outs = [acc.result().to_mastra() for acc in accs]
    assert outs[0] == outs[1]
    calls = {c["payload"]["toolCallId"]: c["payload"] for c in outs[0]["toolCalls"]}
    assert calls["a"] == {"toolCallId": "a", "toolName": "get", "args": {"x": 1}}
    assert calls["b"] == {"toolCallId": "b", "toolName": "run", "args": {}}
    assert calls["c"]["toolName"] == "gét"
    assert seen[:seen.index("|")] == [start, start] and seen.count(start) == 2 + 4


_TOOL_CALL = ('{"type":"tool-call","runId":"@R","from":"AGENT","payload":{"toolCallId":"@C","toolName":"w",'
              '"args":{"city":"Paris, Île","n":[1,-2,3.5,-4e2,true,false,null],"o":{}}}}')
_TOOL_RESULT = ('{"type":"tool-result","runId":"@R","from":"AGENT","payload":{"args":{"city":"Paris"},'
                '"toolCallId":"@C","toolName":"w","result":{"tempC":21.5,"sky":"sunny","ok":true}}}')
# (frame, whether the native path reads it in C; @R: its runId, @C: its toolCallId): tool-call and
# tool-result frames the way Mastra writes them, and the shapes the typed decoder must read instead
# (or refuse)
TOOL_EDGES = [
    (_TOOL_CALL, True), (_TOOL_RESULT, True),
    (_TOOL_CALL.replace('"toolName":"w"', '"toolName":"w\\u00e9\\"x"'), True),        # escaped strings
    (_TOOL_CALL.replace('"Paris, Île"', '"a\\nb\\ud83d\\ude00"'), True),
    (_TOOL_CALL.replace(',"from":"AGENT"', ''), True),                                   # no from
    (_TOOL_RESULT.replace('"args":{"city":"Paris"},', ''), True),                        # no args
    ('{"runId":"@R","from":"AGENT","payload":{"toolCallId":"@C","toolName":"w","args":{"a":1}},'
     '"type":"tool-call"}', True),                                                       # type last
    (_TOOL_CALL.replace('":', '": ').replace(',"', ', "'), True),                        # json.dumps's spaces
    (_TOOL_CALL.replace('"toolName":"w",', '"toolName":"w","providerExecuted":true,'), False),
    ('{"type":"tool-call","runId":"@R","from":"AGENT","payload":{"toolCallId":"@C","toolName":"w",'
     '"args":{"a":1}},"metadata":{"k":1}}', False),
    (_TOOL_CALL.replace('"toolName":"w",', ''), False),                                  # (an error)
    (_TOOL_CALL.replace('"toolCallId":"@C"', '"toolCallId":7'), False),                 # (an error)
    (_TOOL_CALL.replace('"toolName":"w",', '"toolName":"w","toolName":"v",'), False),
    (_TOOL_CALL.replace('"n":[1,', '"n":[1e400,'), False),
    (_TOOL_CALL.replace('"runId":"@R",', ''), False),
    (_TOOL_CALL.replace('"tool-call"', '"tool\\u002dcall"'), False),
    ('{"type":"tool-call","runId":"@R","from":"AGENT","payload":{"toolCallId":"@C","toolName":"w",'
     '"args":{"a":1},"result":1}}', False),
    (_TOOL_RESULT.replace('"sunny"', '"sun\\x"'), False),                               # (an error)
    (_TOOL_CALL.replace('"toolName"', '"tool\\u004eame"'), False),
    (_TOOL_CALL.replace('"Paris, Île"', '"Paris, \udcff"'), False),                # a 0xFF byte: an error
]
# Mastra's shape is read by a template (its keys in its order), any other by walking the keys:
# frames that differ from the template at its edges
TOOL_TEMPLATE_EDGES = [
    (_TOOL_CALL + " ", True),                                                            # white space after
    (_TOOL_RESULT.replace('"args":{"city":"Paris"},', '') + "\t", True),
    (_TOOL_RESULT.replace('"sunny"', '1e400'), False),
    (_TOOL_CALL.replace('"toolName":"w"', '"toolName":7'), False),
    (_TOOL_CALL.replace('"tool-call"', '"tool-result"'), True),                        # a result in a call's order
    (_TOOL_RESULT.replace('"tool-result"', '"tool-call"'), False),                     # a call with a result
    (_TOOL_CALL.replace('"tool-call"', '"tool-calls"'), False),
    (_TOOL_CALL.replace('}}}', '}} }'), True),
    (_TOOL_CALL.replace('}}}', '}}}}'), False),
]


def _tool_frame(edge, run, call):
    return edge.replace("@R", run).replace("@C", call).encode("utf-8", "surrogateescape")


def test_tool_frames_read_in_c_equal_the_typed_decoder(both):
    """The native side reads tool-call and tool-result frames with a C reader (cc_scan_tool) and
    makes their chunks itself.  Whatever it takes must be exactly the chunk the typed decoder
    makes, of the same class, and it must take nothing that decoder refuses or reads another
    way: on edge cases, and on randomly corrupted frames."""
    impl = both[0].impl
    for edge, taken in TOOL_EDGES + TOOL_TEMPLATE_EDGES:
        f = _tool_frame(edge, "r", "c")
        got = impl.tool_chunk(f)
        assert (got is not None) == taken, f
        if taken:
            want = impl.decode(f)
            assert got == want and type(got) is type(want), f
    frames = [_tool_frame(e, "r%d" % i, "c%d" % i) for i, (e, ok) in enumerate(TOOL_EDGES + TOOL_TEMPLATE_EDGES) if ok]
    rng = random.Random(9)
    counts = [0, 0]
    for _ in range(300):
        for f in corrupted(rng, frames, len(frames)):
            got = impl.tool_chunk(f)
            counts[got is not None] += 1
            if got is not None:
                want = impl.decode(f)
                assert got == want and type(got) is type(want), f
    assert min(counts) > 100, counts          # both ways were exercised


def test_tool_frames_read_in_c_accumulate_alike_on_both_paths(both, monkeypatch):
    """Tool calls and results read in C go into the run as the ones decoded do: the same results
    on both paths (tool calls, results, steps, parts, invalid frames), and the frames the C
    reader takes never reach add() on the native side."""
    lines = []
    for i, (edge, _) in enumerate(TOOL_EDGES):
        lines += [line("step-start", {}), _tool_frame(edge, RUN, "c%d" % i), _tool_frame(_TOOL_RESULT, RUN, "c%d" % i),
                  line("step-finish", {"stepResult": {"reason": "tool-calls"}, "output": {"usage": {}}})]
    seen, accs = _adds_on_both(both, monkeypatch, lines, errors="keep")
    outs = [(acc.result().to_mastra(), acc.result().parts, [_frame_tuple(f) for f in acc.invalid_frames])
            for acc in accs]
    assert outs[0] == outs[1]
    mastra, parts, bad = outs[0]
    assert len(bad) == 4 and len(mastra["toolResults"]) == len(TOOL_EDGES) + 2    # (two edges are results)
    native, reference = seen[:seen.index("|")], seen[seen.index("|") + 1:]
    tools = ("tool-call", "tool-result")
    assert sum(t in tools for t in native) == sum(not ok for _, ok in TOOL_EDGES) - len(bad)
    assert sum(t in tools for t in reference) == 2 * len(TOOL_EDGES) - len(bad)


def test_long_text_grows_the_buffer_past_doubling_with_views_held(codec):
    """A run whose text outgrows the buffer's doubling range (64 KiB): every view taken on the
    way still shows the bytes it was taken on, and the text is whole."""
    pieces = ["%05d:" % i + "é" * 40 + "\n" for i in range(4000)]
    data = b"".join(text_delta("t", p) + b"\n" for p in pieces)
    acc = codec.Accumulator("ndjson")
    views = []
    for k in range(0, len(data), 50_000):
        acc.feed(data[k:k + 50_000])
        v = acc.buffer("text")
        views.append((v, bytes(v)))
    acc.close()
    want = "".join(pieces)
    assert acc.result().text == want and len(want.encode()) > 300_000
    assert all(bytes(v) == was for v, was in views)
    assert bytes(acc.buffer("text")) == want.encode()


def test_a_run_id_that_comes_back_after_its_run_was_popped_starts_a_new_run(codec):
    """pop_finished() hands a run out and drops it (bulk.reconstruct does this between feeds);
    deltas of the same runId and part id after that (a resumed run, a log with the run twice) go to
    a new run, not into the buffers of the one handed out."""
    fin = line("finish", {"stepResult": {"reason": "stop"}, "output": {"usage": {}}})
    call = line("tool-call-delta", {"argsTextDelta": "{", "toolCallId": "c", "toolName": "w"})
    acc = codec.Accumulator("ndjson")
    acc.feed(text_delta("t", "one ") + b"\n" + call + b"\n" + fin + b"\n")
    assert [r.text for r in acc.pop_finished()] == ["one "]
    acc.feed(text_delta("t", "two") + b"\n" + call + b"\n")
    (r,) = acc.results().values()
    assert r.run_id == RUN and r.text == "two" and bytes(acc.buffer("c")) == b"{"


def test_pop_finished_hands_out_a_run_a_tripwire_ended_and_keeps_a_suspended_one(codec):
    """Mastra sends nothing after a tripwire chunk (not even a finish: corpus scenario m), so
    pop_finished() hands such a run out with the finished ones; a run suspended by an approval
    request (scenario n) stays, as its stream may go on when it is resumed."""
    fin = line("finish", {"stepResult": {"reason": "stop"}, "output": {"usage": {}}}, run="c")
    trip = json.dumps({"type": "tripwire", "payload": {"reason": "no"}}).encode()     # (no runId)
    ask = line("tool-call-approval", {"toolCallId": "k", "toolName": "w", "args": {}}, run="b")
    acc = codec.Accumulator("ndjson")
    acc.feed(b"\n".join([text_delta("t", "A", run="a"), trip, text_delta("t", "B", run="b"), ask,
                         text_delta("t", "C", run="c"), fin, text_delta("t", "D", run="d")]) + b"\n")
    out = list(acc.pop_finished())
    assert [(r.run_id, r.text, r.finish_reason) for r in out] == [("a", "A", "other"), ("c", "C", "stop")]
    assert out[0].tripwire == {"reason": "no"}
    assert acc.run_ids() == ["b", "d"] and acc.result("b").status == "suspended"


def test_a_reader_that_hands_runs_out_as_they_finish_holds_nothing_of_them(codec):
    """A long-running reader feeds a stream of runs and hands each out as it finishes
    (pop_finished): its memory must not grow with the runs handed out, also when each run has a
    chunk without runId (a data-* part).  (Before, the accumulator kept the id of every run such a
    chunk joined, for bulk.reconstruct's workers: about 130 bytes a run, for ever.)"""
    import gc
    import tracemalloc

    def run(i):
        env = {"runId": "run-%06d-%s" % (i, "x" * 30), "from": "AGENT"}
        return b"".join(json.dumps(d).encode() + b"\n" for d in (
            {"type": "text-delta", **env, "payload": {"id": "t", "text": "hi"}},
            {"type": "data-x", "data": {"v": 1}},
            {"type": "finish", **env, "payload": {"stepResult": {"reason": "stop"}, "output": {"usage": {}}}}))
    acc = codec.Accumulator("ndjson")
    tracemalloc.start()
    try:
        used = []
        for i in range(600):
            acc.feed(run(i))
            assert [r.run_id for r in acc.pop_finished()] == ["run-%06d-%s" % (i, "x" * 30)]
            if i in (199, 599):
                gc.collect()
                used.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    assert (used[1] - used[0]) / 400 < 16, used           # bytes a run


def test_pop_results_hands_out_every_run_once_in_order_and_walks_the_table_once(codec):
    """pop_results() yields each run once, in first-seen order, also when the caller pops runs
    (pop_finished) or feeds more between its yields.  It walks the run table a constant number of
    times (counted on the reference path): taking the first key again after each pop steps over
    every key popped before it, which made accumulate() of 100,000 runs spend 6.8 s here (0.7 s
    now)."""
    fin = line("finish", {"stepResult": {"reason": "stop"}, "output": {"usage": {}}}, run="r3")
    acc = codec.Accumulator("ndjson")
    acc.feed(b"".join(text_delta("t", "x%d" % i, run="r%d" % i) + b"\n" for i in range(6)) + fin + b"\n")
    gen_ = acc.pop_results()
    got = [next(gen_).run_id]                          # r0
    got += [r.run_id for r in acc.pop_finished()]      # r3, by the caller
    acc.feed(text_delta("t", "y", run="r9") + b"\n")   # a run that arrives meanwhile
    got += [r.run_id for r in gen_]
    assert got == ["r0", "r3", "r1", "r2", "r4", "r5", "r9"] and acc.run_ids() == []
    if codec.name == "native":
        # (the native path types the run table as a dict, so it takes no subclass to count with;
        # its code is the reference path's source, compiled)
        return

    class Walks(dict):
        n = 0

        def __iter__(self):
            Walks.n += 1
            return super().__iter__()

    acc = codec.Accumulator("ndjson")
    acc.feed(b"".join(text_delta("t", "x", run="r%d" % i) + b"\n" for i in range(500)))
    acc._runs = Walks(acc._runs)
    assert [r.run_id for r in acc.pop_results()] == ["r%d" % i for i in range(500)]
    assert Walks.n <= 2, Walks.n


def test_deltas_with_unknown_keys_are_accumulated(codec):
    """A delta with a field this version does not know (a newer Mastra, a proxy's annotation)
    decodes to a subclass of its type; its text must still count."""
    lines = [text_delta("t", "a"),
             line("text-delta", {"id": "t", "text": "b", "newField": 1}),
             line("text-delta", {"id": "t", "text": "c"}, annotated=True),
             line("reasoning-delta", {"id": "r", "text": "think", "signatureHint": "s"}),
             line("tool-call-delta", {"argsTextDelta": "{}", "toolCallId": "c", "toolName": "w", "index": 0})]
    r = ways(codec, lines)
    assert r.text == "abc" and r.reasoning_text == "think"


def _base_of(cls):
    """The AccumulatorBase of _accum.py that cls is built on (compiled, on the native path)."""
    return next(c for c in cls.__mro__ if c.__name__ == "AccumulatorBase")


def test_the_class_kind_cache_of_add_refills_after_it_is_cleared(codec, monkeypatch):
    """add() caches what to do per chunk class (subclasses made for unknown keys included); the
    cache is cleared when full, and the chunks after that are still accumulated."""
    _accum = sys.modules[_base_of(codec.Accumulator).__module__]     # _accumc on the native path
    monkeypatch.setattr(_accum, "_KINDS_MAX", 5)
    monkeypatch.setattr(_accum, "_KINDS", dict(_accum._KINDS))
    lines = [line("text-delta", {"id": "t", "text": f"{i}", f"k{i}": i}) for i in range(8)]
    lines += [line("step-start", {}), line("text-end", {"type": "text-end", "id": "t"}),
              line("reasoning-delta", {"id": "r", "text": "x", "hint": 1})]
    r = ways(codec, lines)
    assert r.text == "01234567" and r.reasoning_text == "x"
    assert len(_accum._KINDS) <= 5


def test_the_text_memo_walks_a_few_ranges_and_keys_the_rest(codec):
    """result() decodes each range of a run's buffers once, through a _Memo: the first _MEMO_LIST
    ranges in a list it walks, the rest in a dict, so that a run of thousands of parts is not
    walked through for each (that was quadratic: 1.9 s for a run of 8,000 parts).  Every range,
    asked again, gives the str it gave the first time; the list stays short."""
    _accum = sys.modules[_base_of(codec.Accumulator).__module__]     # _accumc on the native path
    buf, other = codec.Accumulator._Buf(), codec.Accumulator._Buf()
    buf.append(b"0123456789abcdef" * 200)
    other.append(b"x" * 100)
    memo = _accum._Memo()
    ranges = [(b, i, i + 7) for i in range(0, 3000, 3) for b in (buf, other) if i + 7 <= len(b.data)]
    first = [memo.get(b, s, e) for b, s, e in ranges]
    assert first == [bytes(b.data[s:e]).decode() for b, s, e in ranges]
    assert len(memo.memo) == _accum._MEMO_LIST and len(memo.more) == len(ranges) - _accum._MEMO_LIST
    assert all(memo.get(b, s, e) is t for (b, s, e), t in zip(ranges, first))
    assert memo.get(buf, 5, 5) == "" and memo.get(other, 90) == "x" * 10 and memo.get(other, 0, 10 ** 6) == "x" * 100


def test_a_delta_buffers_len_is_its_bytes_as_the_c_loop_and_appends_leave_them(codec):
    """len(buf), which the accumulator asks for each part and step boundary (a slot, not a lookup
    of .data), is len(buf.data): empty, after appends, and after the C delta loop wrote into the
    run's text buffer in place (the native path)."""
    buf = codec.Accumulator._Buf()
    assert len(buf) == len(buf.data) == 0
    buf.append(b"caf\xc3\xa9")
    assert len(buf) == len(buf.data) == 5
    acc = codec.Accumulator("ndjson")
    acc.feed(b"".join(text_delta("t", w) + b"\n" for w in ("Hello", ", ", "w\u00f6rld")))
    run = acc._runs[RUN]
    assert len(run.text) == len(run.text.data) == len("Hello, wörld".encode())
    if codec.name == "native":
        assert acc._decoder._loop_frames >= 1       # (written by the C loop, not by append)
    acc.close()
    assert acc.result().text == "Hello, wörld"


def test_a_run_of_many_parts_reads_out_every_part(codec):
    """A run whose every delta has a part of its own (ids that change each time): its parts and
    text through the memo's dict, the same on both paths."""
    lines = []
    for i in range(300):
        lines += [text_delta(f"t{i}", f"{i},"), line("text-end", {"type": "text-end", "id": f"t{i}"})]
    r = ways(codec, lines)
    assert r.text == "".join(f"{i}," for i in range(300))
    assert [p["text"] for p in r.parts] == [f"{i}," for i in range(300)]


def _whole_and_in_pieces(both, framing, data, step):
    """data accumulated (errors kept) on both paths, fed whole and in pieces of step bytes: the
    four the same, and that one (runs as builtins, invalid frames as tuples)."""
    outs = []
    for api in both:
        for size in (len(data), step):
            acc = api.Accumulator(framing, errors="keep")
            for i in range(0, len(data), size):
                acc.feed(data[i:i + size])
            acc.close()
            outs.append(([msgspec.to_builtins(r, enc_hook=_frame_tuple) for r in acc.results().values()],
                         [_frame_tuple(f) for f in acc.invalid_frames]))
    assert outs[0] == outs[1] == outs[2] == outs[3]
    return outs[0]


@pytest.mark.parametrize("framing", ["ndjson", "sse", "ndjson-crlf", "sse-crlf"])
def test_delta_frames_after_a_kept_head_accumulate_alike_on_both_paths(both, framing):
    """The native delta loop reads a frame whose head it has seen from its text on (util.
    kept_head_frames): every run's text and reasoning, and the same invalid frames, on both paths,
    fed whole and in pieces that cut frames."""
    frames = kept_head_frames()
    sep, pre = {"ndjson": (b"\n", b""), "sse": (b"\n\n", b"data: "), "ndjson-crlf": (b"\r\n", b""),
                "sse-crlf": (b"\r\n\r\n", b"data: ")}[framing]
    framing = framing.split("-")[0]
    data = b"".join(pre + f + sep for f in frames)
    runs, bad = _whole_and_in_pieces(both, framing, data, 4093)
    assert len(runs) == 600 and len(bad) > 500
    assert sum(r["text"].startswith("hello") and r["text"].endswith("bye") for r in runs) > 300


@pytest.mark.parametrize("framing", ["ndjson", "ndjson-crlf", "sse", "sse-crlf", "rs"])
def test_texts_at_the_edge_of_the_one_block_delta_read(both, framing):
    """The native delta loop reads the usual delta after a kept head, one whose text has only
    one-character escapes and ends (with `"}}` and the separator, CRLF's LF included) within the 64
    bytes after the head, from that one block; the others as before.  Texts of 0 to 70 bytes, ASCII
    and not, each followed by a variant (a raw control byte, bad UTF-8, a quote, escapes good and
    bad, a lone backslash, white space after the frame) among many runs' deltas: the same runs and
    the same invalid frames as on the reference path, fed whole and in pieces."""
    sep, pre = {"ndjson": (b"\n", b""), "ndjson-crlf": (b"\r\n", b""), "sse": (b"\n\n", b"data: "),
                "sse-crlf": (b"\r\n\r\n", b"data: "), "rs": (b"\x1e", b"")}[framing]
    heads = [('{"type":"text-delta","runId":"%08d-aaaa-4bbb-8ccc-%012d","from":"AGENT","payload":'
              '{"id":"txt-0","text":"' % (i, i)).encode() for i in range(8)]
    texts = []
    for n in range(71):
        texts += [b"a" * n, ("é" * n).encode()[:n].decode("utf-8", "ignore").encode(), b"b" * max(n - 4, 0) + "😀".encode()]
    # (what each variant adds to the text: None for an invalid frame)
    odd = [(b"\x01", None), (b"\xc3(", None), (b"\\n", b"\n"), (b"\xed\xa0\x80", None), (b'"x', None),
           (b'\\"\\\\', b'"\\'), (b"\\t\\/\\b\\f\\r", b"\t/\b\f\r"), (b"\\u00e9", "é".encode()), (b"\\x", None),
           (b"\\", None), (b"\\\\\\", None)]
    frames, want = [], {h: [] for h in heads}
    for k, text in enumerate(texts):
        h = heads[k % len(heads)]
        frames.append(h + text + b'"}}')
        want[h].append(text)
        raw, adds = odd[k % len(odd)]
        cut = len(text) // 2
        while cut and text[cut] & 0xC0 == 0x80:        # (a cut between characters)
            cut -= 1
        if (len(raw) - len(raw.rstrip(b"\\"))) % 2:   # (a lone backslash: before the closing quote)
            cut = len(text)
        trailing = b" " if k % 7 == 0 else b""         # (valid: JSON white space after the frame)
        frames.append(h + text[:cut] + raw + text[cut:] + b'"}}' + trailing)
        if adds is not None:
            want[h].append(text[:cut] + adds + text[cut:])
    data = b"".join(pre + f + sep for f in frames)
    runs, bad_frames = _whole_and_in_pieces(both, framing.split("-")[0], data, 61)
    got = {r["run_id"]: r["text"] for r in runs}
    for h in heads:
        assert got[h[30:66].decode()] == b"".join(want[h]).decode()
    assert len(bad_frames) == sum(odd[k % len(odd)][1] is None for k in range(len(texts)))


#: test_utf8's bytes at the edges of UTF-8's table, but for the control byte (a frame with it is
#: invalid whatever its UTF-8)
_UTF8_EDGES = bytes(b for b in EDGES if b >= 0x20)


@pytest.mark.parametrize("framing", ["ndjson", "sse"])
def test_utf8_in_texts_read_from_the_one_block_after_a_kept_head(both, framing):
    """The one-block read of a delta after a kept head checks its text's bytes of 0x80 and over
    where the block's mask says they start (fast_delta.h utf8_valid_masked), not by a call of
    cc_utf8_valid: each sequence of up to four edge bytes (960 of them: cut sequences, bad
    continuations, overlongs, surrogates, past U+10FFFF), inside a short text at the start, middle
    and end of the text, with an escape beside it: a frame is taken exactly when Python's decoder
    takes its text, and the text is the same on both paths."""
    sep, pre = {"ndjson": (b"\n", b""), "sse": (b"\n\n", b"data: ")}[framing]
    heads = [('{"type":"text-delta","runId":"%08d-aaaa-4bbb-8ccc-%012d","from":"AGENT","payload":'
              '{"id":"txt-0","text":"' % (i, i)).encode() for i in range(4)]
    seqs = [bytes(p) for n in (1, 2) for p in itertools.product(_UTF8_EDGES, repeat=n)]
    seqs += [bytes([a, b, c]) for a in (0xE0, 0xE1, 0xED, 0xEF) for b in _UTF8_EDGES for c in (0x80, 0xBF, 0x41)]
    seqs += [bytes([a, b, c, d]) for a in (0xF0, 0xF1, 0xF4) for b in (0x80, 0x8F, 0x90, 0xBF) for c in (0x80, 0x41)
             for d in (0x80, 0xBF, 0x41)]
    frames, want, bad = [], {h: [] for h in heads}, 0
    for k, seq in enumerate(seqs):
        h = heads[k % len(heads)]
        frames.append(h + b"ok" + b'"}}')         # (keeps the head's route live between the others)
        want[h].append(b"ok")
        text = (seq + b"ab", b"x\\n" + seq + "é".encode(), b"abc" + seq, b"\\t" + seq + b"\\\\")[k % 4]
        frames.append(h + text + b'"}}')
        raw = text.replace(b"\\n", b"\n").replace(b"\\t", b"\t").replace(b"\\\\", b"\\")
        if _python(raw):
            want[h].append(raw)
        else:
            bad += 1
    data = b"".join(pre + f + sep for f in frames)
    runs, bad_frames = _whole_and_in_pieces(both, framing, data, 509)
    got = {r["run_id"]: r["text"] for r in runs}
    for h in heads:
        assert got[h[30:66].decode()] == b"".join(want[h]).decode()
    assert len(bad_frames) == bad > 600


def test_the_route_table_starts_small_and_grows_while_parts_are_open(both):
    """An accumulating decoder's route table starts at 16 slots, enough for one stream, which then
    costs kilobytes, not the 512-slot table with its heads (about 272 KB, zeroed per decoder); a log
    that interleaves many runs, each part open across the growth, makes it grow to 512, with every
    route moved along: the same runs as on the reference path.  A feed of 1 MiB or more makes it
    512 at once."""
    native, reference = both
    one = (CORPUS / "wire" / "agent_reasoning.sse").read_bytes()
    acc = native.Accumulator()
    acc.feed(one)
    assert acc._decoder._route_slots == 16
    acc.close()
    rng = random.Random(5)
    runs = {"r%03d" % i: 0 for i in range(120)}
    lines = []
    for _ in range(6000):          # every run's part stays open: its deltas go on after the growth
        rid = rng.choice(list(runs))
        runs[rid] += 1
        lines.append(b'{"type":"text-delta","runId":"%s","from":"AGENT","payload":{"id":"t","text":"%d "}}'
                     % (rid.encode(), runs[rid]))
    data = b"\n".join(lines) + b"\n"
    outs = []
    for api in both:
        acc = api.Accumulator()
        for i in range(0, len(data), 5000):
            acc.feed(data[i:i + 5000])
            if api is native and i == 0:
                assert acc._decoder._route_slots < 512
        if api is native:
            assert acc._decoder._route_slots == 512
        acc.close()
        outs.append({r.run_id: r.text for r in acc.results().values()})
    assert outs[0] == outs[1]
    assert outs[0]["r007"] == "".join("%d " % k for k in range(1, runs["r007"] + 1))
    # a feed of 1 MiB or more (accumulate() of a log, mostly) makes the table its largest at
    # once; one of a MiB less a byte does not
    one = b'{"type":"text-delta","runId":"r","from":"AGENT","payload":{"id":"t","text":"x"}}\n'
    one = one * (1 + (1 << 20) // len(one))          # (one run: it never makes the table grow)
    for size, slots in (((1 << 20) - 1, 16), (1 << 20, 512)):
        acc = native.Accumulator()
        acc.feed(one[:size])
        assert acc._decoder._route_slots == slots
    big = data * (1 + (1 << 20) // len(data))
    assert {r.run_id: r.text for r in native.accumulate(big)} == \
        {r.run_id: r.text for r in reference.accumulate(big)}
    # so does accumulate() of a body in pieces of bytes that make 1 MiB or more (an SSE body read
    # 16 KiB at a time), before its first piece
    for size, slots in (((1 << 20) - 1, 16), (1 << 20, 512)):
        acc = native.Accumulator()
        acc._feed_all([one[i:min(i + 16384, size)] for i in range(0, size, 16384)])
        assert acc._decoder._route_slots == slots
    pieces = [big[i:i + 16384] for i in range(0, len(big), 16384)]
    assert {r.run_id: r.text for r in native.accumulate(pieces)} == \
        {r.run_id: r.text for r in reference.accumulate(pieces)} == \
        {r.run_id: r.text for r in native.accumulate(big)}


def _runs_in_flight(runs, deltas, seed):
    """A log of `runs` runs with one text part each, all open at once: their deltas in a random
    order (each run's in its own order), every delta's text "w" and its number."""
    rng = random.Random(seed)
    order = [r for r in range(runs) for _ in range(deltas)]
    rng.shuffle(order)
    seen = [0] * runs
    lines = []
    for r in order:
        seen[r] += 1
        lines.append(b'{"type":"text-delta","runId":"run-%05d","from":"AGENT","payload":{"id":"t","text":"w%d "}}'
                     % (r, seen[r]))
    return b"\n".join(lines) + b"\n"


def test_the_route_table_grows_past_512_when_routes_keep_making_way(both):
    """Past 512 slots the table grows (to 2,048) only when live routes keep making way, as with
    1,500 runs in flight at once (each delta after the first of a part routed in C again: most of
    them), not for the odd set that gets a third route in a log of 40 runs."""
    native, reference = both
    data = _runs_in_flight(1500, 12, seed=3)
    outs, taken = _loop_taken(both, data, lambda acc: {r.run_id: r.text for r in acc.results().values()})
    assert outs[0]["run-00007"] == "".join("w%d " % k for k in range(1, 13))
    acc = native.Accumulator("ndjson")
    acc.feed(data)
    assert acc._decoder._route_slots == 2048
    # of the 16,500 deltas after the first of a part, the C loop took 13,650 (the rest routed
    # again: while the table grew, which forgets the kept heads, and in its sets that still get a
    # third route); with the table held at 512 slots it took 5,668
    assert taken >= 12500, taken
    acc.close()
    log = gen.framed(gen.interleaved(40, 300), "ndjson")
    acc = native.Accumulator("ndjson")
    acc.feed(log)
    assert acc._decoder._route_slots == 512
    acc.close()


def _loop_taken(both, data, answer, framing="ndjson"):
    """answer(acc) for a log accumulated on both paths, the same on both; and how many of its
    frames the native C delta loop appended itself."""
    outs = []
    for api in both:
        acc = api.Accumulator(framing)
        acc.feed(data)
        if api is both[0]:
            taken = acc._decoder._loop_frames
        acc.close()
        outs.append(answer(acc))
    assert outs[0] == outs[1]
    return outs, taken


_JSON_DUMPS = {"spaced": dict(), "sorted": dict(sort_keys=True, separators=(",", ":")),
               "sorted-spaced": dict(sort_keys=True), "ascii": dict(ensure_ascii=True, separators=(", ", ":")),
               "unknown keys": dict(separators=(",", ":")), "providerMetadata, sorted": dict(sort_keys=True),
               "providerMetadata": dict(separators=(",", ":"))}


#: line shapes: (framing, what comes before each frame (%d: its number), what comes after it)
_LINE_SHAPES = {"ndjson, CRLF": ("ndjson", b"", b"\r\n"), "sse, CRLF": ("sse", b"data: ", b"\r\n\r\n"),
                "sse, data: without a space": ("sse", b"data:", b"\n\n"),
                "sse, id and event fields": ("sse", b"id: %d\nevent: chunk\ndata: ", b"\n\n"),
                "sse, all of them": ("sse", b": ping\r\nid: %d\r\ndata:", b"\r\n\r\n")}


@pytest.mark.parametrize("shape", list(_LINE_SHAPES))
def test_deltas_on_other_lines_stay_in_the_delta_loop(both, shape):
    """Lines ended by CRLF (a log written on Windows; an SSE server that ends its lines so, as the
    SSE standard allows, sse-starlette by default), SSE events with other fields before their data
    line (an id to resume from, an event name) or `data:` without its space: the native C loop
    takes their deltas as it takes Mastra's lines, where it left every one of them to the general
    path before (CRLF: 2.5x the LF log's time a delta in accumulate, 2.8x in the bulk index)."""
    framing, pre, end = _LINE_SHAPES[shape]
    lines = [json.dumps(c, ensure_ascii=False, separators=(",", ":")).encode() for c in _crlf_chunks()]
    data = b"".join((pre % i if b"%d" in pre else pre) + ln + end for i, ln in enumerate(lines))
    outs, taken = _loop_taken(both, data, lambda acc: [msgspec.to_builtins(r) for r in acc.results().values()],
                              framing)
    assert outs[0][3]["text"] == "".join("é%d \"q\"\n " % k for k in range(30))
    assert len(lines) - 40 <= taken <= len(lines), taken     # all but each part's first, and a few


def _crlf_chunks():
    chunks = []
    for k in range(30):
        for r in range(8):
            chunks.append({"type": "text-delta", "runId": "run-%d" % r, "from": "AGENT",
                           "payload": {"id": "txt-0", "text": "é%d \"q\"\n " % k}})
            chunks.append({"type": "reasoning-delta", "runId": "run-%d" % r, "from": "AGENT",
                           "payload": {"id": "rs-0", "text": "%d😀 " % k}})
    return chunks


@pytest.mark.parametrize("shape", list(_JSON_DUMPS))
def test_deltas_written_again_by_json_dumps_stay_in_the_delta_loop(both, shape):
    """A log written again by Python (json.dumps: its default ", " and ": ", sort_keys, \\u
    escapes), with keys the chunks' schema does not know (a log's sequence number and timestamp,
    before the type, inside the payload), or with providerMetadata (also on tool-call deltas,
    which accumulation ignores), in Mastra's key order or another: the native C loop takes its
    text, reasoning and tool-call deltas itself (once the accumulator has routed each part), where
    it left every one of them to the general path before (3x slower, and 100x with unknown keys,
    which the typed decoder declares a subclass for); the runs are the reference path's."""
    chunks = []
    for k in range(30):
        for r in range(8):
            run = "run-%d" % r
            chunks.append({"type": "text-delta", "runId": run, "from": "AGENT",
                           "payload": {"id": "txt-0", "text": "é%d \"q\"\n " % k}})
            chunks.append({"type": "reasoning-delta", "runId": run, "from": "AGENT",
                           "payload": {"id": "rs-0", "text": "%d😀 " % k}})
            payload = {"argsTextDelta": '{"k":%d,' % k, "toolCallId": "call-%d" % r}
            if k == 0:
                payload["toolName"] = "w"
            chunks.append({"type": "tool-call-delta", "runId": run, "from": "AGENT", "payload": payload})
    if shape == "unknown keys":
        chunks = [{"seq": i, **c, "ts": "2025-11-23T10:00:%02d" % (i % 60)} for i, c in enumerate(chunks)]
        for c in chunks[::2]:
            c["payload"]["x"] = {"y": [1, -2.5e3, None, True, "é"]}
    if shape.startswith("providerMetadata"):
        for i, c in enumerate(chunks):
            c["payload"]["providerMetadata"] = {"openai": {"itemId": "it-%d" % (i // 48)}}
    data = b"".join(json.dumps(c, **_JSON_DUMPS[shape]).encode() + b"\n" for c in chunks)
    outs, taken = _loop_taken(both, data, lambda acc: [msgspec.to_builtins(r) for r in acc.results().values()]
                              + [{c: bytes(acc.buffer(c)) for c in ("call-0", "call-7")}])
    assert outs[0][3]["text"] == "".join("é%d \"q\"\n " % k for k in range(30))
    assert outs[0][3]["reasoning_text"] == "".join("%d😀 " % k for k in range(30))
    assert outs[0][-1]["call-7"] == b"".join(b'{"k":%d,' % k for k in range(30))
    # all but the first delta of each of the 24 parts (the accumulator routes it), and of each
    # change of providerMetadata (15 a part), and a few while the route table grows
    least = len(chunks) - 40 - (15 * 16 if shape.startswith("providerMetadata") else 0)
    assert least <= taken <= len(chunks), taken


def test_a_part_reopened_with_unknown_keys_stays_in_the_delta_loop(both):
    """Deltas carrying a key the schema does not know, the same on every line (a proxy's tag): the
    loop keeps their head, and when the part is closed and its id reopened, the first delta of the
    new part (a kept head, no live route) is routed for the loop too, not left to the general
    path, which would decode every later delta whole."""
    def delta(k):
        return (b'{"src":"proxy-1","type":"text-delta","runId":"r","from":"AGENT",'
                b'"payload":{"id":"t","text":"%d "}}\n' % k)
    end = line("text-end", {"type": "text-end", "id": "t"}, run="r") + b"\n"
    data = b"".join(delta(k) for k in range(20)) + end + b"".join(delta(k) for k in range(20, 40))
    outs, taken = _loop_taken(both, data, lambda acc: msgspec.to_builtins(acc.result()))
    assert [p["text"] for p in outs[0]["parts"]] == ["".join("%d " % k for k in range(a, a + 20)) for a in (0, 20)]
    assert taken == 38, taken


@pytest.mark.parametrize("ids", ["%08x-1111-2222-3333-444455556666", "aaaaaaaa-bbbb-cccc-dddd-%012d",
                                 "agent-run-2025-11-23-%06d", "r%d"])
def test_interleaved_runs_keep_their_routes_whatever_their_ids_share(both, ids):
    """40 runs, one part each, interleaved delta by delta, with runIds that share a suffix, a
    prefix or neither: the native decoder asks the accumulator for a route about once per part,
    not once per delta (a route hash of the ids' last 8 bytes alone put every run of the first
    kind in one set, and each delta evicted the one before: 10x slower), and the texts are the
    reference path's."""
    native, reference = both
    rids = [ids % i for i in range(40)]
    data = b"".join(text_delta("txt-0", "%d " % k, run=rid) + b"\n" for k in range(50) for rid in rids)
    calls = []

    class Counting(native.Accumulator):
        def _route(self, *args):
            calls.append(args)
            return super()._route(*args)

    outs = []
    for acc in (Counting("ndjson"), reference.Accumulator("ndjson")):
        acc.feed(data)
        acc.close()
        outs.append({r.run_id: r.text for r in acc.results().values()})
    assert outs[0] == outs[1]
    assert outs[0][rids[7]] == "".join("%d " % k for k in range(50))
    # 40 routes, and a few more while the table grows from its 16 slots (a route evicted then is
    # asked for again); before the fix: 2,000
    assert 40 <= len(calls) <= 80, len(calls)


def _pm_delta(kind, rid, id_, pm, text, general=False):
    ln = ('{"type":"%s-delta","runId":"%s","from":"AGENT","payload":{"id":"%s","providerMetadata":%s,"text":"%s"}}'
          % (kind, rid, id_, pm, text))
    # (general: a tab for white space, which the delta loops leave to the general path)
    return (ln.replace('{"type"', '{\t"type"') if general else ln).encode() + b"\n"


def test_deltas_carrying_provider_metadata_stay_in_the_delta_loop(both):
    """Deltas that each carry providerMetadata, as providers that tag every delta send them (Mastra
    writes {id, providerMetadata, text}): the C loop takes every delta whose providerMetadata is the
    bytes its part took last, so the accumulator is asked once per part, not once per delta (each
    went through the typed decoder before: about 25x slower); a change of providerMetadata is
    asked about, and last seen wins on both paths."""
    native, reference = both
    rids = ["%08x-9c1e-4a7b-8d2f-5e6a7b8c9d0e" % (i * 2654435761 % 2**32) for i in range(40)]
    data = b"".join(_pm_delta("reasoning", rid, "rs_%d:0" % i, '{"openai":{"itemId":"rs_%d"}}' % i, "%d " % k)
                    for k in range(30) for i, rid in enumerate(rids))
    data += b"".join(_pm_delta("text", rid, "msg", '{"openai":{"itemId":"msg_%d"}}' % k, "t%d " % k)
                     for k in range(3) for rid in rids[:5])
    calls = []

    class Counting(native.Accumulator):
        def _route_pm(self, *args):
            calls.append(args[3])
            return super()._route_pm(*args)

        def add(self, chunk):
            calls.append(chunk)
            return super().add(chunk)

    outs = []
    for acc in (Counting("ndjson"), reference.Accumulator("ndjson")):
        acc.feed(data)
        acc.close()
        outs.append([msgspec.to_builtins(r) for r in acc.results().values()])
    assert outs[0] == outs[1]
    r3 = outs[0][3]
    assert r3["reasoning_text"] == "".join("%d " % k for k in range(30))
    assert [p.get("providerMetadata") for p in r3["parts"] if p["type"] == "reasoning"] == [
        {"openai": {"itemId": "rs_3"}}]
    assert [p.get("providerMetadata") for p in r3["parts"] if p["type"] == "text"] == [
        {"openai": {"itemId": "msg_2"}}]
    # one call per reasoning part (and a few while the route table grows), one per changed text pm
    assert all(isinstance(c, str) for c in calls)
    assert 40 + 15 <= len(calls) <= 80 + 15, len(calls)


def test_provider_metadata_set_on_another_path_is_not_overlooked_by_the_delta_loop(both):
    """The loop compares a delta's providerMetadata with the bytes its route stored; a part that
    took other providerMetadata meanwhile through a frame the loop does not read (here: a tab for
    white space, decoded whole) must not keep it when a delta brings the stored bytes back."""
    a, b = '{"p":{"v":"A"}}', '{"p":{"v":"B"}}'
    data = (_pm_delta("text", "r", "t", a, "1") + _pm_delta("text", "r", "t", a, "2")
            + _pm_delta("text", "r", "t", b, "3", general=True) + _pm_delta("text", "r", "t", a, "4")
            + _pm_delta("reasoning", "r", "x", a, "5") + _pm_delta("reasoning", "r", "x", b, "6", general=True)
            + _pm_delta("reasoning", "r", "x", a, "7") + _pm_delta("reasoning", "r", "x", a, "8"))
    outs = []
    for api in both:
        for step in (len(data), 5):
            acc = api.Accumulator("ndjson")
            for i in range(0, len(data), step):
                acc.feed(data[i:i + step])
            acc.close()
            r = acc.result()
            outs.append((r.parts, r.reasoning, r.text, r.reasoning_text))
    assert outs[0] == outs[1] == outs[2] == outs[3]
    parts, reasoning, text, rtext = outs[0]
    assert text == "1234" and rtext == "5678"
    assert parts[0]["providerMetadata"] == parts[1]["providerMetadata"] == {"p": {"v": "A"}}
    assert reasoning == []      # (deltas without a reasoning-start: no reasoning entry, as in Mastra)


@pytest.mark.parametrize("seed", range(3))
def test_randomly_corrupted_logs_accumulate_alike_on_both_paths(both, seed):
    """Frames of every type, some with bytes deleted, inserted or overwritten, in the three
    framings, fed in random pieces with errors="keep": the same runs and the same invalid frames on
    both paths, and no exception but DecodeError's kin (this found keys msgspec cannot name and
    msgspec's UnicodeDecodeError escaping)."""
    for rng, framing, data in corrupted_logs(seed, 20, 40, p=0.3):
        cuts = sorted(rng.sample(range(1, len(data)), 20))
        outs = []
        for api in both:
            acc = api.Accumulator(framing, errors="keep")
            for a, b in zip([0] + cuts, cuts + [len(data)]):
                acc.feed(data[a:b])
            acc.close()
            outs.append(([msgspec.to_builtins(r, enc_hook=_frame_tuple) for r in acc.results().values()],
                         [_frame_tuple(f) for f in acc.invalid_frames]))
        assert outs[0] == outs[1]


def _everything(acc):
    """Every run of an accumulator (its to_mastra() and all its fields) and the frames it kept."""
    return ([(rid, r.to_mastra(), msgspec.to_builtins(r, enc_hook=_frame_tuple)) for rid, r in acc.results().items()],
            [_frame_tuple(f) for f in acc.invalid_frames])


@pytest.mark.parametrize("block", range(8))
def test_random_streams_of_every_type_accumulate_alike_every_way(both, block):
    """Random streams of every chunk type the accumulator handles, in orders no server writes
    (tests/util.py random_stream: ids reused, ends before starts, steps finished twice, sub-runs in
    tool-output, runless chunks, several runs interleaved, several JSON styles and framings, some
    frames corrupted), fed in random pieces with errors="keep": the same runs, the same results
    asked for mid-stream and the same invalid frames on both paths; and for the streams not
    corrupted, on each path, the same runs fed whole (whatever was asked for on the way), through
    add() of the decoded chunks and through accumulate().  (This found the finish readers' missing
    `from`, and the decoder's hang on an unknown key whose name would start with two underscores:
    test_model; run over 150,000 seeds by tools/fuzz.py, a result() that changed the run:
    test_a_result_asked_for_before_the_call_mastra_made_arrives_changes_nothing.)"""
    for seed in range(block * 40, block * 40 + 40):
        check_random_stream(both, seed)


def check_random_stream(both, seed):
    """The check of test_random_streams_of_every_type_accumulate_alike_every_way for one seed
    (tools/fuzz.py runs it over many more)."""
    rng = random.Random(seed)
    framing, data, bad = random_stream(rng)
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randrange(15))))
    mids = set(rng.sample(range(len(cuts) + 1), min(len(cuts) + 1, 3)))
    outs = []
    for api in both:
        acc = api.Accumulator(framing, errors="keep")
        seen = []
        for i, (a, b) in enumerate(zip([0] + cuts, cuts + [len(data)])):
            acc.feed(data[a:b])
            if i in mids:
                seen.append(_everything(acc))
        acc.close()
        outs.append((_everything(acc), seen))
    assert outs[0] == outs[1], (seed, "in pieces, results asked for mid-stream: native != reference")
    if bad:
        return
    for path, api in zip(("native", "reference"), both):
        whole = api.Accumulator(framing)
        whole.feed(data)
        whole.close()
        added = api.Accumulator(framing)
        for c in api.iter_chunks(data, framing):
            added.add(c)
        added.close()
        assert _everything(whole) == _everything(added) == outs[0][0], (path, seed)
        assert [r.to_mastra() for r in api.accumulate(data, framing)] == \
            [r.to_mastra() for r in whole.results().values()], (path, seed, "accumulate()")


_FIN = '{"type":"step-finish","runId":"r1","from":"AGENT","payload":{%s}}'
_FIN_PARTS = ('"stepResult":{"reason":"stop","warnings":[]}', '"metadata":{"id":"m","modelId":"x"}',
              '"output":{"text":"hi","usage":{"inputTokens":1,"raw":{"a":[1,2.5e3,-0,true,null]}}}',
              '"messages":{"all":[{"role":"user","content":"caf\u00e9 \\" \\\\ \\n \\u00e9 \\ud83d\\ude00 \u4e16"}]}',
              '"providerMetadata":{"p":{"sig":"s"}}')
#: Frames in or just outside what the C finish reader takes, with whether it should take them.
FINISH_EDGES = [
    (_FIN % ",".join(_FIN_PARTS), True),
    (_FIN % ", ".join(reversed(_FIN_PARTS)), True),                       # any key order
    (' \r\n{ "type" : "finish" , "runId" : 7 , "payload" : null } \t', True),   # white space, odd values
    ('{"type":"finish",\r"payload":{\t"output" : null}}', True),
    ('{"type":"finish",\n"payload":null}', False),                         # a line feed inside: decoder's
    ('{"type":"finish","payload":{"messages":[1,\n2]}}', False),
    ('{"type":"finish","payload":{"output":null}}', True),                   # no runId, output null
    ('{"type":"finish"}', True),
    (_FIN % '"output":{"usage":{"n":1e999}}', False),                      # out of range: msgspec's way
    (_FIN % '"metadata":{},"metadata":{}', False),                         # duplicate key
    (_FIN % '"meta\\u0064ata":{"id":"m"}', False),                         # escaped key
    # (keys are checked for escapes and non-ASCII 8 bytes at a time, the last word overlapping)
    (_FIN % '"metadat\\u0061":{"id":"m"}', False),                         # its escape in the last word
    (_FIN % '"metadaté":{"id":"m"},"metadata":{"id":"m2"}', False),        # non-ASCII in the last word
    (_FIN % '"stepResult":{"reason":"stop","finishRe\\u0061son":"x"}', True),   # decoded whole
    (_FIN % '"stepResult":{"reason":"stop","isContinuedé":1}', True),
    (_FIN % '"stepResult":{"reason":"stop","isContinued":false,"abcdefgh":1}', True),
    ('{"type":"finish","payload":[]}', False),                              # payload neither object nor null
    (_FIN % '"output":"x"', False),
    (_FIN % ('"messages":' + "[" * 70 + "]" * 70), False),                 # deeper than the reader goes
    (_FIN % '"messages":"\\ud800"', False),                                # lone surrogate
    (_FIN % '"messages":"a\x01"', False),                                  # control byte
    (_FIN % '"messages":"\\/\\b\\f\\r\\t\\"\\\\"', True),                       # every one-byte escape
    (_FIN % '"messages":"a\\x"', False),                                 # no such escape
    (_FIN % '"messages":"a\\\'"', False),
    ('{"type":"finish","payload":{"m":"\\', False),                        # cut after a backslash
    (_FIN % '"messages":01', False),
    (_FIN % '"messages":[1,]', False),
    ('{"type":"finish","payload":{}} x', False),
    ('{"type":"text-delta","payload":{}}', False),
    # stepResult and metadata: their keys are read in C, as a dict keeps them, unless msgspec must
    # decode them whole to say whether it takes them (bad UTF-8, a number out of range)
    (_FIN % '"stepResult":"stop","metadata":[1]', True),                     # neither is an object
    (_FIN % '"stepResult":"sto\udc9c","metadata":[1]', False),                # ... with bad UTF-8
    (_FIN % '"stepResult":"stop","metadata":[1e999]', False),                 # ... out of range
    (_FIN % '"stepResult":{"reason":"a","warnings":[1],"reason":"b"}', True),   # the last one wins
    (_FIN % '"stepResult":{"re\\u0061son":"stop"},"metadata":{"\\u0069d":"m"}', True),  # escaped keys
    (_FIN % '"stepResult":{"reason":5,"t":0.7,"n":12345678901234567890,"e":-1e-999}', True),
    (_FIN % '"metadata":{"id":"a\\"b\\u00e9","modelId":null,"t":[1e299,1e300,-2.5E+301]}', True),
    (_FIN % '"providerMetadata":null,"metadata":{"providerMetadata":{"p":1}}', True),
    (_FIN % '"metadata":{"providerMetadata":{"p":1}},"providerMetadata":{"q":2}', True),
    (_FIN % '"stepResult":{"reason":"stop","t":1.8e308}', False),               # out of range
    (_FIN % '"metadata":{"n":1%s}' % ("0" * 5000), False),
    (_FIN % '"metadata":{"id":"m","x":"\udcff"}', False),                    # bad UTF-8 (byte 0xFF)
    (_FIN % '"metadata":{"id":"\udcc3"}', False),                             # in a value read
    ('{"type":"finish","from":"USER","runId":"r","payload":null}', True),   # from: read, any place
    ('{"type":"finish","from":7,"payload":null}', True),                    # ... any value (typed Any)
    ('{"type":"finish","from":"A","from":"B","payload":null}', False),      # duplicate: the decoder's
    # response ids: metadata.id when metadata has one (any value), else payload.id when truthy;
    # metadata.modelId || metadata.model || ""
    (_FIN % '"id":"p1","metadata":{"model":"m2"}', True),
    (_FIN % '"id":"p1","metadata":{"id":null,"modelId":"","model":"m2"}', True),
    (_FIN % '"id":"","metadata":{"modelId":0,"model":null}', True),
    (_FIN % '"metadata":{"id":7,"modelId":["x"],"model":"m"},"id":"p1"', True),
    (_FIN % '"id":"p1","metadata":{"id":"m1","\\u0069d":"m3"}', True),   # decoded whole
    (_FIN % '"id":"p1","metadata":null', True),
    (_FIN % '"id":"p1","id":"p2","metadata":{}', False),                  # duplicate: the decoder's
    (_FIN % '"id":7,"metadata":{}', False),                               # payload.id is a string
    (_FIN % '"id":null,"metadata":{}', False),
    # a payload.providerMetadata that metadata's hides is not read, but decoded by the light decoder
    (_FIN % '"metadata":{"providerMetadata":{"p":1}},"providerMetadata":{"\udc85":2}', False),
]


def test_finish_frames_read_in_c_equal_the_light_decoder(both):
    """The native side reads step-finish/finish frames with a C reader that checks the message
    history without decoding it (cc_scan_finish).  Whatever it takes, it must read exactly as
    msgspec's light decoder (the reference path's) does, and it must not take a frame that decoder
    refuses: on edge cases, and on 4,025 randomly corrupted finish frames."""
    from chunkcodec import _accum

    def light(f):
        m = _accum.decode_finish_light(f)
        return None if m is None else _accum.light_fields(m)

    impl = both[0].impl
    for text, taken in FINISH_EDGES:
        f = text.encode("utf-8", "surrogateescape")
        got, was_taken = impl.finish_fields(f)
        assert (got, was_taken) == (light(f), taken), text
    big = [f for f in gen.interleaved(6, 12, 5) if f.startswith(_accum.FINISH_PREFIXES)]
    big += [e.encode("utf-8", "surrogateescape") for e, ok in FINISH_EDGES if ok]
    assert all(impl.finish_fields(f)[1] for f in big)
    rng = random.Random(5)
    counts = [0, 0]
    for _ in range(175):                     # 4,025 corrupted frames
        for f in corrupted(rng, big, len(big)):
            got, was_taken = impl.finish_fields(f)
            want = light(f)
            assert got == want, f
            assert not (was_taken and want is None), f
            counts[was_taken] += 1
    assert min(counts) > 100, counts      # both ways were exercised


def test_a_finish_frame_is_checked_where_nothing_is_read(codec):
    """A step-finish whose payload.providerMetadata is hidden by metadata's (Mastra reads
    metadata.providerMetadata first) is not read, but it is still part of the frame: bad UTF-8 in
    it is the frame's error, with where, as the decoder gives it (the native finish reader took
    such a frame once)."""
    from chunkcodec.errors import DecodeError
    bad = (_FIN % '"metadata":{"providerMetadata":{"p":1}},"providerMetadata":{"\udc85":2}')
    ok = (_FIN % '"metadata":{"providerMetadata":{"p":1}},"providerMetadata":{"q":2}')
    acc = codec.Accumulator()
    acc.feed(ok.encode() + b"\n")
    with pytest.raises(DecodeError, match=r"not valid UTF-8.*frame 1"):
        acc.feed(bad.encode("utf-8", "surrogateescape") + b"\n")
    assert acc.result().steps[0].provider_metadata == {"p": 1}


def _finish_open_log(framing: str, frames: list) -> bytes:
    if framing == "sse":
        return b"".join(b"data: " + f + b"\n\n" for f in frames)
    return b"".join(f + (b"\x1e" if framing == "rs" else b"\n") for f in frames)


def test_finish_frames_read_before_their_end_is_found(both):
    """The native path reads a step-finish/finish frame from where it starts, without looking
    for its end first (_finish_open, cc_scan_finish_open), and takes it only when the framing's
    terminator (LF or CRLF, 0x1E, an SSE event's blank line) follows its closing brace.  Every other
    ending -- white space or bytes after the object, a line feed inside it, an SSE event ending in
    CRLF or with more lines -- goes the general way, and both paths give the same runs and the
    same invalid frames, however the bytes are cut."""
    run = gen.run_frames(random.Random(3), 6)
    fins = [k for k, f in enumerate(run) if f.startswith((b'{"type":"step-finish"', b'{"type":"finish"'))]
    assert len(fins) == 3
    pretty = json.dumps(json.loads(run[fins[0]]), indent=1).encode()
    variants = {                                     # (what to do to the first step-finish, taken)
        "as written": (lambda f: f, True),
        "spaces after": (lambda f: f + b"  ", False),
        "bytes after": (lambda f: f + b" x", False),
        "line feeds inside": (lambda f: pretty, False),
        "a CR inside": (lambda f: f.replace(b',"payload"', b',\r"payload"', 1), True),
    }
    for framing in ("ndjson", "rs", "sse"):
        for name, (change, taken) in variants.items():
            frames = [change(f) if k == fins[0] else f for k, f in enumerate(run)]
            data = _finish_open_log(framing, frames)
            if name == "as written" and framing == "ndjson":
                data = data.replace(b"}\n", b"}\r\n")           # CRLF line ends: taken too
            # cut in two at each byte around the changed frame's start and end, and here and there
            at = data.index(frames[fins[0]][:40])
            end = at + len(frames[fins[0]])
            cuts = [None] + sorted({*range(max(1, at - 3), at + 12), *range(end - 4, min(len(data), end + 5)),
                                    *range(1, len(data), 251)})
            outs = []
            for api in both:
                for cut in cuts:
                    acc = api.Accumulator(framing, errors="keep")
                    for piece in ([data] if cut is None else [data[:cut], data[cut:]]):
                        acc.feed(piece)
                    if api is both[0] and cut is None:
                        opened = acc._decoder._open_frames
                    acc.close()
                    out = acc.result()
                    outs.append((msgspec.to_builtins(msgspec.structs.replace(out, invalid_frames=[])),
                                 out.invalid_frames))
            assert all(o == outs[0] for o in outs), (framing, name)
            assert opened == 3 - (not taken), (framing, name, opened)
    # an SSE event with a field after its data line, or CRLF: the general way, the same answer
    for tail, taken in ((b"\nid: 7\n\n", False), (b"\r\n\r\n", False), (b"\n\n", True)):
        data = b"".join(b"data: " + f + (tail if k == fins[0] else b"\n\n") for k, f in enumerate(run))
        outs = []
        for api in both:
            acc = api.Accumulator("sse")
            acc.feed(data)
            if api is both[0]:
                assert acc._decoder._open_frames == 3 - (not taken), tail
            acc.close()
            outs.append(msgspec.to_builtins(acc.result()))
        assert outs[0] == outs[1]


def test_finish_frame_cut_by_a_piece_end_is_read_once(both):
    """A step-finish/finish frame that a stream's piece ends in is not read up to the piece's end
    and then again whole: _finish_open leaves a frame that starts after the last terminator of
    what it has, so that each frame is begun once, in every framing and at every piece size."""
    native, ref = both
    frames = gen.interleaved(3, 40)
    n_fin = sum(f.startswith((b'{"type":"step-finish"', b'{"type":"finish"')) for f in frames)
    for framing in ("ndjson", "rs", "sse"):
        data = _finish_open_log(framing, frames)
        for size in (1000, 4096, 16384, len(data)):
            pieces = [data[i:i + size] for i in range(0, len(data), size)]
            got, dec = _runs_out(native, None, framing, pieces)
            assert got == _runs_out(ref, None, framing, pieces)[0], (framing, size)
            assert dec._open_tries == dec._open_frames, (framing, size, dec._open_tries, dec._open_frames)
            assert dec._open_frames >= n_fin - len(pieces), (framing, size)


def test_frames_the_delta_loop_never_takes_do_not_enter_it(both):
    """A frame that starts as Mastra writes a step-finish/finish, tool-call or tool-result frame
    (type first) or a step-start frame (runId, from, type) where the decoder's loop (re)starts -- a
    piece's first frame, the frame after a finish frame or an event -- goes to its own reader
    first: the C delta loop, which would stop at it at once, is not entered for it.  Same runs as
    the reference path; each finish frame still begun once; the same frames with the type not
    first go through the loop as before."""
    native, ref = both
    mixed = gen.interleaved(4, 30)
    frames = [f for f in mixed if f.startswith((b'{"type":"step-finish"', b'{"type":"finish"'))]
    others = [f for f in mixed if f.startswith((b'{"type":"tool-call"', b'{"type":"tool-result"'))
              or (f.startswith(b'{"runId":"') and b'","from":"AGENT","type":"step-start"' in f[:120])]
    assert len(others) == 4 * 4
    for framing in ("ndjson", "rs", "sse"):
        data = _finish_open_log(framing, frames)
        got, dec = _runs_out(native, data, framing)
        assert got == _runs_out(ref, data, framing)[0], framing
        assert dec._open_frames == len(frames) and dec._open_tries == len(frames), framing
        assert dec._loop_calls == 0, (framing, dec._loop_calls)
        data = _finish_open_log(framing, others)
        got, dec = _runs_out(native, data, framing)
        assert got == _runs_out(ref, data, framing)[0], framing
        assert dec._loop_calls == 0, (framing, dec._loop_calls)
        moved = [json.dumps({**{k: v for k, v in json.loads(f).items() if k != "type"},
                             "type": json.loads(f)["type"]}).encode() for f in others]
        data = _finish_open_log(framing, moved)
        got2, dec = _runs_out(native, data, framing)
        assert got2 == got == _runs_out(ref, data, framing)[0], framing
        assert dec._loop_calls == len(moved), framing
        # among the other frames of a log
        data = _finish_open_log(framing, mixed)
        got, dec = _runs_out(native, data, framing)
        assert got == _runs_out(ref, data, framing)[0], framing
        assert dec._open_tries == dec._open_frames == len(frames), framing
    # a frame that starts like one but is not (cut short, or bad JSON): read once, then the general
    # way, as on the reference path
    bad = [frames[0][:-1], frames[1].replace(b'"usage":', b'"usage" ', 1), frames[2]]
    for framing in ("ndjson", "sse"):
        data = _finish_open_log(framing, bad)
        got, dec = _runs_out(native, data, framing)
        assert got == _runs_out(ref, data, framing)[0], framing
        assert dec._open_tries <= len(bad), framing


def test_finish_frame_at_max_frame_bytes_read_before_its_end(both):
    """max_frame_bytes holds for a finish frame read by _finish_open as by the split: a frame of
    exactly the limit is read, one byte more is FrameTooLarge (or, kept, an invalid frame)."""
    from chunkcodec.errors import FrameTooLarge
    run = gen.run_frames(random.Random(4), 6)
    big = max(len(f) for f in run)
    for framing in ("ndjson", "rs", "sse"):
        data = _finish_open_log(framing, run)
        extra = 6 if framing == "sse" else 0             # (an SSE event's limit counts its `data: `)
        for limit, ok in ((big + extra, True), (big + extra - 1, False)):
            outs = []
            for api in both:
                acc = api.Accumulator(framing, errors="keep", max_frame_bytes=limit)
                acc.feed(data)
                acc.close()
                out = acc.result()
                outs.append((msgspec.to_builtins(msgspec.structs.replace(out, invalid_frames=[])),
                             [(i.frame_index, i.pos, i.dropped) for i in out.invalid_frames]))
            assert outs[0] == outs[1], (framing, limit)
            assert (outs[0][1] == []) == ok, (framing, limit, outs[0][1])
            for api in both:
                acc = api.Accumulator(framing, max_frame_bytes=limit)
                if ok:
                    acc.feed(data)
                else:
                    with pytest.raises(FrameTooLarge):
                        acc.feed(data)


def _runs_out(api, data, framing="ndjson", pieces=None, **opts):
    """The runs an accumulator makes of data (fed whole, or in pieces), and its invalid frames."""
    acc = api.Accumulator(framing, errors="keep", **opts)
    for piece in pieces or [data]:
        acc.feed(piece)
    dec = acc._decoder
    acc.close()
    outs = [(msgspec.to_builtins(msgspec.structs.replace(r, invalid_frames=[])),
             [(i.frame_index, i.pos, type(i.error).__name__) for i in r.invalid_frames])
            for r in acc.pop_results()]
    return outs, dec


def test_finish_repeating_its_step_finish_is_compared_not_read_again(both):
    """A run's finish frame repeats its last step-finish's payload (Mastra's: all but
    output.usage, which is the total), so the native path keeps, per run, the members of payload
    and output the step-finish reader skipped (the message history), and skips those of the
    finish that are the same bytes without checking them again (cc_scan_finish_memo).  Any other
    byte is read as before: on the recorded streams, in every framing, and with the finish frame
    changed (a letter: still taken; a random edit: taken, refused or sent to the decoder) the runs
    and invalid frames are the reference path's."""
    native, ref = both
    for path in CHUNK_FILES:
        data = path.read_bytes()
        n_fin = data.count(b'"type":"finish"')
        if data.count(b'"type":"step-finish"') == 0 or n_fin == 0:
            continue
        got, dec = _runs_out(native, data)
        assert got == _runs_out(ref, data)[0], path.name
        assert dec._memo_members >= 3 * n_fin, path.name    # (messages, output.steps and .text at least)
    run = gen.run_frames(random.Random(8), 8)
    fin = next(k for k, f in enumerate(run) if f.startswith(b'{"type":"finish"'))
    for framing in ("ndjson", "rs", "sse"):
        got, dec = _runs_out(native, _finish_open_log(framing, run), framing)
        assert got == _runs_out(ref, _finish_open_log(framing, run), framing)[0], framing
        assert dec._memo_members >= 6, (framing, dec._memo_members)
    # a letter of the history changed: the member it is in is read, the others still compared
    history_at = run[fin].index(b'"messages":') + 40
    letter = run[fin][:history_at] + (b"Q" if run[fin][history_at:history_at + 1] != b"Q" else b"R") + \
        run[fin][history_at + 1:]
    frames = run[:fin] + [letter] + run[fin + 1:]
    got, dec = _runs_out(native, _finish_open_log("ndjson", frames))
    assert got == _runs_out(ref, _finish_open_log("ndjson", frames))[0]
    assert 1 <= dec._memo_members < 6 + 2
    rng = random.Random(9)
    hits = 0
    for f in corrupted(rng, [run[fin]] * 400, 400):
        frames = run[:fin] + [f] + run[fin + 1:]
        data = _finish_open_log("ndjson", frames)
        got, dec = _runs_out(native, data)
        assert got == _runs_out(ref, data)[0], f
        hits += dec._memo_members > 2
    assert hits > 100, hits                  # the memo was used, past each edit


def test_finish_memos_kept_across_feeds_and_bounded(both):
    """A finish memo refers to the bytes fed, without a copy: it lasts from one feed() to the
    next when they are a stream's pieces (a run's finish comes in a later piece than its
    step-finish), not past the feed() of a buffer of over 1 MiB (the caller's whole log), nor
    past close(); and the pieces memos keep are bounded (16 MiB per decoder), however many runs
    have a step-finish and no finish yet."""
    native, ref = both
    run = gen.run_frames(random.Random(10), 8)
    pieces = [f + b"\n" for f in run]
    got, dec = _runs_out(native, None, pieces=pieces)
    assert got == _runs_out(ref, None, pieces=pieces)[0]
    assert dec._memo_members >= 6 and dec._memo_runs == 0
    last_sf = max(k for k, f in enumerate(run) if f.startswith(b'{"type":"step-finish"'))
    acc = native.Accumulator("ndjson")
    acc.feed(b"".join(pieces[:last_sf + 1]))
    assert acc._decoder._memo_runs == 1                 # a small piece: kept
    big = b"".join(pieces[:last_sf + 1]) + b" " * (1 << 20) + b"\n"
    acc2 = native.Accumulator("ndjson")
    acc2.feed(big)
    assert acc2._decoder._memo_runs == 0                # the caller's big buffer: not kept
    dec = acc._decoder
    acc.close()
    assert dec._memo_runs == 0 and dec._memo_bytes == 0
    # many runs cut off after a step-finish (of 11 KB), each in a piece of its own
    sf = next(f for f in gen.run_frames(random.Random(11), 300)[::-1] if f.startswith(b'{"type":"step-finish"'))
    rid = json.loads(sf)["runId"].encode()
    acc = native.Accumulator("ndjson")
    acc.feed(b"")
    dec = acc._decoder
    most = 0
    for i in range(2600):
        acc.feed(sf.replace(rid, b"%036d" % i) + b"\n")
        assert dec._memo_bytes <= 16 << 20
        most = max(most, dec._memo_runs)
    assert (16 << 20) // 12000 < most < 2600, most
    acc.close()
    # a memo's places to go on from are its own memory, counted whatever its buffer: a step-finish
    # of 3,000 small elements (6 KB) keeps 3,000 places of 8 bytes
    sf = (_FIN % ('"messages":[%s]' % ",".join(["1"] * 3000))).encode() + b"\n"
    acc = native.Accumulator("ndjson")
    acc.feed(b"")
    dec = acc._decoder
    most = 0
    for i in range(1500):
        acc.feed(sf.replace(b'"r1"', b'"%06d"' % i))
        most = max(most, dec._memo_runs)
    assert most == (16 << 20) // (len(sf) + 3000 * 8), most
    acc.close()
    acc = native.Accumulator("ndjson")
    acc.feed(b"".join(sf.replace(b'"r1"', b'"%06d"' % i) for i in range(200)))    # 1.2 MB: not kept
    assert acc._decoder._memo_runs == 0 and acc._decoder._memo_bytes == 0


#: One escape or bad byte each: the C finish reader walks a string's escapes 64 bytes at a time.
_STRING_ESCAPES = ['\\n', '\\"', '\\\\', '\\/', '\\u00e9', '\\ud83d\\ude00', '\\u0022']
_STRING_FAULTS = ['\\x', '\\ud800', '\\ud800\\u0041', '\\udc00', '\\u12g4', '\x01', '\x1f', '\\']


def test_finish_reader_skips_long_strings_with_escapes_anywhere(both):
    """Strings the finish reader skips, with a second escape (or a fault) at every distance from
    the first, so that it falls on, before and after a 64-byte block's edge, with the string
    ending within the block, after it, or near the frame's end: taken exactly when msgspec's light
    decoder takes it, and read the same (the usage after the string shows where it ended)."""
    from chunkcodec import _accum
    impl = both[0].impl
    counts = [0, 0]
    for d in range(0, 80):
        for e in _STRING_ESCAPES + _STRING_FAULTS:
            for tail in (0, 5, 70):
                s = "\\n" + "x" * d + e + "y" * tail
                for rest in (',"output":{"usage":{"inputTokens":%d}}' % d, ""):
                    f = (_FIN % ('"messages":"%s"%s' % (s, rest))).encode()
                    m = _accum.decode_finish_light(f)
                    want = None if m is None else _accum.light_fields(m)
                    got, taken = impl.finish_fields(f)
                    assert (got, taken) == (want, want is not None), f
                    counts[taken] += 1
    assert min(counts) > 1000, counts


def test_a_long_string_repeated_in_a_finish_frame_is_compared_not_read_again(both):
    """Mastra's step-finish and finish frames carry each step's text several times over, so the
    finish reader keeps the long strings it skipped in a frame (48 bytes and more) by their first
    8 bytes, and skips one that is the same bytes, closing quote included, by a compare.  Anything
    else about the second string is read as before: one that goes on past the first's closing
    quote, one with a fault the first has not, one cut short by the frame's end; each is taken,
    refused or read exactly as msgspec's light decoder reads it.  The accumulator's count of
    strings compared (a test hook) shows the compare was used, on the generated log and on the
    recorded streams, and both paths give the same runs."""
    from chunkcodec import _accum
    native, ref = both
    impl = native.impl
    first = r"\n" + r"caf\u00e9 \" é \\ " * 6               # 116 bytes, escapes and all
    seconds = [first, first + "more", first + r"\u12g4", first[:-1] + "\x01", first[:40], "\\", first + "\\"]
    for second in seconds:
        for rest in (',"output":{"usage":{"inputTokens":3}}', ""):
            for third in ("", ',"' + first + '"'):
                f = (_FIN % ('"messages":["%s","%s"%s]%s' % (first, second, third, rest))).encode()
                for frame in (f, f[:len(f) - len(rest) - 12]):       # (cut: in the second or third)
                    m = _accum.decode_finish_light(frame)
                    want = None if m is None else _accum.light_fields(m)
                    assert impl.finish_fields(frame) == (want, want is not None), frame
    # on a log: the texts the frames repeat are compared (four of Mastra's five copies a step)
    data = gen.framed(gen.interleaved(4, 60, 3), "ndjson")
    got, dec = _runs_out(native, data)
    assert got == _runs_out(ref, data)[0]
    n_sf = data.count(b'"type":"step-finish"')
    assert dec._rep_strings >= 3 * n_sf, (dec._rep_strings, n_sf)
    compared = {}
    for path in CHUNK_FILES:
        data = path.read_bytes()
        got, dec = _runs_out(native, data)
        assert got == _runs_out(ref, data)[0], path.name
        compared[path.name] = dec._rep_strings
    assert compared["i_long_text_5000.jsonl"] >= 4, compared     # its text: four copies of five


def _two_step_finishes(first: str, second: str) -> bytes:
    """A run's step-finish with payload.messages `first`, then one with `second`, as NDJSON."""
    return b"".join((_FIN % ('"messages":%s,"output":{"usage":{"inputTokens":%d}}' % (m, k))).encode() + b"\n"
                    for k, m in enumerate((first, second)))


def test_step_finish_goes_on_from_the_last_step_finish_of_its_run(both):
    """Each step-finish of a long Mastra run repeats the one before and adds the new step
    (messages.all and .nonUser one step longer, output.steps with the last step's tool result
    added).  So the native reader keeps, with a run's memo, the places in its skipped members'
    values it can go on from (just past each element or member of the first two levels), goes on
    from the last one before the first byte that differs, and past each later place whose
    counterpart in the memo is followed by the same bytes, takes them too (ck_sync).  On runs of
    many steps, in every framing, fed whole and in pieces, the runs are the reference path's,
    and the hook counts show the places were used."""
    native, ref = both
    frames = gen.interleaved(4, 6, 21, steps=9)
    n_sf = sum(f.startswith(b'{"type":"step-finish"') for f in frames)
    rng = random.Random(22)
    for framing in ("ndjson", "rs", "sse"):
        data = _finish_open_log(framing, frames)
        got, dec = _runs_out(native, data, framing)
        assert got == _runs_out(ref, data, framing)[0], framing
        # (each later step-finish: its messages and output.steps go on from the memo, and then
        # again past the end of messages.all and of the step that changed)
        assert dec._memo_resumed >= 3 * (n_sf - 4), (dec._memo_resumed, n_sf)
        cuts = sorted(rng.sample(range(1, len(data)), 40))
        pieces = [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]
        got, dec = _runs_out(native, None, framing, pieces=pieces)
        assert got == _runs_out(ref, None, framing, pieces=pieces)[0], framing
    # edits anywhere in a later step-finish (the memo's bytes before them, at them, after them):
    # taken, refused or sent to the decoder as the reference path does
    run = gen.long_run_frames(random.Random(23), 5, 4)
    sfs = [k for k, f in enumerate(run) if f.startswith(b'{"type":"step-finish"')]
    hits = 0
    for k in sfs[1:]:
        for f in corrupted(rng, [run[k]] * 150, 150):
            data = _finish_open_log("ndjson", run[:k] + [f] + run[k + 1:])
            got, dec = _runs_out(native, data)
            assert got == _runs_out(ref, data)[0], f
            hits += dec._memo_resumed > 2
    assert hits > 150, hits


def test_going_on_from_a_memo_place_needs_the_same_state(both):
    """A place of the memo is taken only in the state the reader was in there: the same level,
    in containers of the same kinds.  Bytes after a place that read alike in an array and in an
    object must not carry a frame past where it is wrong; a value of another kind is read afresh;
    past the room for places (8,192 a frame), the reader goes on from the last one kept."""
    native, ref = both
    cases = [
        ('{"all":[1,2],"x":[4]}', '{"all":{"k":1,2],"x":[4]}'),         # same bytes after `1`, not JSON
        ('{"all":[1,2],"x":[4]}', '{"all":{"k":1,"j":2},"x":[4]}'),
        ('{"all":[{"a":1},2],"x":[4]}', '{"all":[[1],2],"x":[4]}'),
        ('{"all":[1,2],"x":[4]}', '[{"all":[1,2]},{"x":[4]}]'),          # another kind of value
        ('{"all":[1,2],"x":[4]}', '{"all":[1,2,3],"x":[4]}'),
        ('{"all":[1,2],"x":[4]}', '{"all":[1,2,3],"x":[4,5}'),
        ('{"all":[1,2],"x":[4]}', '{"all":[1,2,3],"x":[4]]'),
        ('{"all":[1,2],"x":[4]}', '{"all":[1,2,3],"x":[4]'),
        ('[[1,[2]],[3]]', '[[1,[2]],[3],[4]]'),
        ('[[1,[2]],[3]]', '[[1,[2],[3]]]'),
        ('[[1,[2]],[3]]', '[[1,[2]]],[3]]'),
        ('"' + "a\\n" * 40 + '"', '"' + "a\\n" * 41 + '"'),
    ]
    many = ",".join(str(k) for k in range(10000))
    cases.append(("[%s]" % many, "[%s,1]" % many))                      # more places than room
    cases.append(('{"all":[%s],"x":[4]}' % many, '{"all":[%s,7],"x":[4]}' % many))
    for first, second in cases:
        data = _two_step_finishes(first, second)
        got, dec = _runs_out(native, data)
        assert got == _runs_out(ref, data)[0], (first, second)
    got, dec = _runs_out(native, _two_step_finishes(*cases[-1]))
    assert dec._memo_resumed == 1 and got[0][0]["usage"]["inputTokens"] == 1     # (from the last place kept)


_SS = '{"runId":"r1","from":"AGENT","type":"step-start","payload":{%s}}'
_SS_REQ = '"request":{"body":{"model":"m","messages":[{"role":"user","content":"caf\u00e9 \\" \\n \\ud83d\\ude00"}],"t":0.7,"n":-12}}'
#: step-start frames in or just outside what the C step-start reader takes, with whether it should.
STEP_START_EDGES = [
    (_SS % (_SS_REQ + ',"warnings":[],"messageId":"m1","startedAt":1795314166040'), True),   # as Mastra writes it
    ('{"type":"step-start","payload":{"warnings":[{"type":"other","message":"w"}]}}', True),  # no runId/from
    (' { "type" : "step-start" , "runId" : "r" , "payload" : { } , "metadata" : {"a":[null,true]} } ', True),
    (_SS % '"warnings":"x","inputMessages":[{"role":"user"}],"startedAt":-5', True),     # warnings: any value
    ('{"type":"step-start"}', False),                                      # no payload: the decoder refuses it
    ('{"type":"step-start","payload":{"request":{"a":\n1}}}', False),       # a line feed inside
    ('{"type":"step-start","payload":null}', False),
    ('{"type":"step-start","runId":7,"payload":{}}', False),              # runId not a string
    (_SS % '"messageId":1', False),
    (_SS % '"startedAt":1.5', False),
    (_SS % '"startedAt":1234567890123456789', False),                     # past what it vouches for
    (_SS % '"extra":1', False),                                            # a key the payload has not
    ('{"type":"step-start","x":1,"payload":{}}', False),
    (_SS % '"warnings":[],"warnings":[]', False),                          # duplicate
    ('{"type":"step-start","run\\u0049d":"r","payload":{}}', False),      # escaped key
    (_SS % '"request":{"t":1e999}', False),                                # out of range
    (_SS % '"request":{"t":1e300}', False),                                # in range, but past what it vouches for
    (_SS % '"request":"\udcff"', False),                                   # bad UTF-8
    (_SS % '"request":"\\ud800"', False),                                  # lone surrogate
    (_SS % '"request":[1,]', False),
    ('{"type":"step-starts","payload":{}}', False),
    ('{"type":"text-start","payload":{"id":"step-start"}}', False),
    ('{"type":"step-start","payload":{}} x', False),
    # Mastra's shape (read by a template), at its edges
    (_SS % '"request":{"t":1e999},"warnings":[],"messageId":"m1","startedAt":1', False),
    (_SS % '"request":{},"warnings":[],"messageId":"\\ud800","startedAt":1', False),
    (_SS % '"request":{},"warnings":[],"messageId":7,"startedAt":1', False),
    (_SS % '"request":{},"warnings":[],"messageId":"m1","startedAt":1.0', False),
    (_SS % '"request":{},"warnings":[],"messageId":"m1","startedAt":01', False),
    (_SS % '"request":{},"warnings":[],"messageId":"m1","startedAt":1' + " ", True),
    (_SS % '"request":{},"warnings":{"a":[1,{}]},"messageId":"m\\u00e9","startedAt":-1', True),
    (_SS.replace('"step-start"', '"step-starts"') % '"request":{},"warnings":[],"messageId":"m1","startedAt":1', False),
    (_SS.replace('"runId":"r1"', '"runId":1') % '"request":{},"warnings":[],"messageId":"m1","startedAt":1', False),
    (_SS % '"request":{},"warnings":[],"messageId":"m1","startedAt":1}', False),
]


def test_step_start_frames_read_in_c_equal_the_typed_decoder(both):
    """The native side reads step-start frames -- whose request can hold the whole prompt -- with
    a C reader that checks them without decoding them (cc_scan_step_start).  What it takes, the
    typed decoder must take, with the same runId, from and warnings; on edge cases, and on
    thousands of randomly corrupted step-start frames.  And a log of them accumulates alike."""
    impl, ref = both[0].impl, both[1]

    def typed(f):
        got = list(ref.iter_chunks(f + b"\n", framing="ndjson", errors="keep"))
        if len(got) != 1 or type(got[0]).__name__ != "StepStart":
            return None
        c = got[0]
        return c.runId, c.from_, c.payload.warnings

    for text, taken in STEP_START_EDGES:
        f = text.encode("utf-8", "surrogateescape")
        got = impl.step_start_fields(f)
        assert (got is not None) == taken, text
        if got is not None:
            assert got == typed(f), text
    frames = [f for f in gen.interleaved(6, 12, 5) if b'"step-start"' in f[:120]]
    frames += [e.encode() for e, ok in STEP_START_EDGES if ok]
    assert all(impl.step_start_fields(f) is not None for f in frames)
    rng = random.Random(6)
    counts = [0, 0]
    for _ in range(150):
        for f in corrupted(rng, frames, len(frames)):
            got = impl.step_start_fields(f)
            if got is not None:
                assert got == typed(f), f
            counts[got is not None] += 1
    assert min(counts) > 100, counts
    finish = b'{"type":"step-finish","runId":"%s","payload":{"stepResult":{"reason":"stop"}}}\n'
    edges = [e.encode() for e, ok in STEP_START_EDGES if ok]
    log = (edges[0] + b"\n" + finish % b"r1" + edges[1].replace(b'"type"', b'"runId":"r2","type"', 1) + b"\n" +
           finish % b"r2" + edges[2] + b"\n" + finish % b"r")
    outs = [[msgspec.to_builtins(r) for r in api.accumulate(log)] for api in both]
    assert outs[0] == outs[1]
    # (a step's warnings are its step-finish's stepResult.warnings, not its step-start's: Mastra)
    assert [[s["warnings"] for s in r["steps"]] for r in outs[0]] == [[[]], [[]], [[]]]


def test_step_start_reader_looks_for_its_type_in_the_first_160_bytes(both):
    """The C step-start reader takes a frame only if `"step-start"` starts within its first 148
    bytes (it ends by byte 160), wherever the 16-byte blocks it is sought in fall; past that the
    typed decoder reads it, with the same values.  Near misses (a quote and `s` with a quote 11
    bytes on, but other letters) are not it."""
    impl, ref = both[0].impl, both[1]
    for k in range(0, 141):
        for from_ in ("AGENT", "step-starX"):           # (a near miss before the type)
            f = ('{"runId":"%s","from":"%s","type":"step-start","payload":{}}' % ("r" * k, from_)).encode()
            at = f.index(b'"step-start"')
            got = impl.step_start_fields(f)
            assert (got is not None) == (at + 12 <= 160), (k, from_)
            want = next(iter(ref.iter_chunks(f + b"\n", framing="ndjson")))
            assert type(want).__name__ == "StepStart"
            if got is not None:
                assert got == (want.runId, want.from_, want.payload.warnings)
    assert impl.step_start_fields(b'{"type":"step-start","payload":{}}') is not None
    assert impl.step_start_fields(b'{"type":"step-starT","payload":{}}') is None


def test_frames_whose_first_bytes_hold_another_types_name_still_go_to_their_own_reader(both):
    """The native side picks the reader to try first for a frame that is not a delta or a finish
    frame by the quoted type among its first 160 bytes ("step-start", "tool-call",
    "tool-result").  The same string as another value (a delta's text, a from, a tool's result)
    must not send a frame to the typed decoder, nor change what it adds: the hot, step-start and
    tool readers still take their own frames, and both paths agree."""
    esc = "r\\u0031"          # runId "r1" written with an escape: such a delta leaves the C loop
    frames = [
        line("start", {"id": "agent", "messageId": "m"}, run="r1"),
        b'{"runId":"r1","from":"tool-call","type":"step-start","payload":{"request":{},"warnings":[]}}',
        line("text-start", {"id": "t"}, run="r1"),
    ]
    for word in ("tool-call", "step-start", "tool-result", "tool-call-delta"):
        frames.append(('{"type":"text-delta","runId":"%s","from":"AGENT","payload":{"id":"t","text":"%s"}}'
                       % (esc, word)).encode())
        frames.append(('{"type":"text-delta","runId":"%s","from":"AGENT","payload":{"id":"t","text":" "}}'
                       % esc).encode())
    frames += [
        line("text-end", {"type": "text-end", "id": "t"}, run="r1"),      # (Mastra's: read in C)
        b'{"type":"tool-call","runId":"r1","from":"step-start","payload":{"toolCallId":"c1",'
        b'"toolName":"step-start","args":{"a":"tool-result"}}}',
        b'{"runId":"r1","from":"AGENT","type":"tool-result","payload":{"toolCallId":"c1","toolName":"w",'
        b'"args":{},"result":"step-start"}}',
        b'{"type":"step-finish","runId":"r1","from":"AGENT","payload":{"stepResult":{"reason":"stop"},'
        b'"output":{"usage":{"inputTokens":1,"outputTokens":2,"totalTokens":3}},"metadata":{}}}',
        b'{"type":"finish","runId":"r1","from":"AGENT","payload":{"stepResult":{"reason":"stop"},'
        b'"output":{"usage":{"inputTokens":1,"outputTokens":2,"totalTokens":3}},"metadata":{}}}',
    ]
    data = b"".join(f + b"\n" for f in frames)
    outs = []
    for api in both:
        acc = api.Accumulator("ndjson")
        acc.feed(data)
        if api is both[0]:
            assert acc._decoder._typed_frames == 0
        acc.close()
        outs.append(msgspec.to_builtins(acc.result()))
    assert outs[0] == outs[1]
    out = outs[0]
    assert out["text"] == "tool-call step-start tool-result tool-call-delta "
    assert [c["payload"]["toolName"] for c in out["tool_calls"]] == ["step-start"]
    assert [r["payload"]["result"] for r in out["tool_results"]] == ["step-start"]
    assert out["tool_calls"][0]["from"] == "step-start"
    # (the hook counts: a source chunk, which no reader of the native side's takes, is typed)
    acc = both[0].Accumulator("ndjson")
    acc.feed(line("source", {"id": "s", "sourceType": "url", "url": "https://x", "title": "tool-call"}) + b"\n")
    assert acc._decoder._typed_frames == 1


def test_the_native_decoder_takes_only_the_compiled_accumulator_as_its_sink():
    """The native decoder calls its accumulator's methods as C calls (it cimports the compiled
    AccumulatorBase): anything else is refused up front, never called blindly."""
    from conftest import Api, _native
    core = _native()
    with pytest.raises(TypeError, match="accumulator"):
        core.StreamDecoder("sse", _sink=object())
    acc = Api(core).Accumulator()
    frame = b'data: {"type":"start","runId":"r","from":"AGENT","payload":{"id":"a","messageId":"m"}}\n\n'
    assert core.StreamDecoder("sse", _sink=acc).feed(frame) == [] and acc.run_ids() == ["r"]
    # Accumulator.feed calls its own decoder's feed in C; a decoder of another class (here a
    # subclass whose feed() counts its calls) it calls as AccumulatorBase does, through Python
    calls = []

    class Counting(core.StreamDecoder):
        def feed(self, data):
            calls.append(len(data))
            return super().feed(data)

    acc = Api(core).Accumulator()
    acc._decoder = Counting("sse", _sink=acc)
    acc.feed(frame)
    acc.feed(frame.replace(b'"r"', b'"r2"'))
    assert calls == [len(frame), len(frame) + 1] and acc.run_ids() == ["r", "r2"]


def test_the_native_path_runs_the_compiled_accumulator_and_the_reference_path_the_plain_one():
    """_accum.py is the reference path's accumulator as it is and, compiled with _accumc.pxd, the
    native path's: a build that dropped the .pxd (plain Python attributes) or the compiled copy
    would still pass every other test, only slower."""
    import chunkcodec._accum as plain
    from chunkcodec import _reference
    from conftest import _native
    assert _reference.AccumulatorBase is plain.AccumulatorBase and plain.__file__.endswith(".py")
    compiled = sys.modules[_base_of(_native().AccumulatorBase).__module__]
    assert compiled.__name__ == "chunkcodec._accumc" and not compiled.__file__.endswith(".py")
    # (the native path's class on it: _core._AccumulatorBase, whose feed() calls its decoder in C)
    assert _native().AccumulatorBase.__module__ == "chunkcodec._core"
    # a field of a cdef class is a getset descriptor; an entry of __slots__ a member descriptor
    for cls, field in (("_Part", "buf"), ("_ToolArgs", "buf"), ("_Step", "usage"), ("_Run", "steps")):
        assert type(vars(getattr(compiled, cls))[field]).__name__ == "getset_descriptor", cls
        assert type(vars(getattr(plain, cls))[field]).__name__ == "member_descriptor", cls


def test_the_pxd_declares_exactly_the_slots_of_the_compiled_classes():
    """_accumc.pxd types the classes of _accum.py: an attribute in a class's __slots__ that the
    .pxd lacks is an AttributeError on the native path alone, at the first run that sets it."""
    import ast
    import re
    src = pathlib.Path(__file__).parents[1] / "src" / "chunkcodec"
    pxd = (src / "_accumc.pxd").read_text()
    classes = {node.name: node for node in ast.parse((src / "_accum.py").read_text()).body
               if isinstance(node, ast.ClassDef)}
    declared = re.findall(r"^cdef class (\w+):\n((?:    .*\n)+)", pxd, re.M)   # (fields, then methods)
    assert [name for name, _ in declared] == ["_Memo", "_Part", "_ToolArgs", "_PendingCall", "_Step", "_Run",
                                               "AccumulatorBase"]
    for name, body in declared:
        fields = {f for line in body.splitlines() if line.split()[:2] == ["cdef", "public"]
                  for f in re.split(r",\s*", line.split(None, 3)[3])}
        fields |= {f for f in ("__dict__", "__weakref__") if re.search(r"^    cdef \w+ %s$" % f, body, re.M)}
        slots = next(ast.literal_eval(st.value) for st in classes[name].body
                     if isinstance(st, ast.Assign) and st.targets[0].id == "__slots__")
        assert fields == set(slots), name


@pytest.mark.parametrize("error, want", [
    (None, {"name": "Error", "message": "Unknown error chunk in stream"}),
    (42, {"name": "Error", "message": "Unknown error chunk in stream"}),
    ("", {"name": "Error", "message": "Unknown error chunk in stream"}),
    ("boom", {"name": "Error", "message": "boom"}),
    ({"name": "X"}, {"name": "X", "message": '{"name":"X"}'}),
    ({"message": 5}, {"name": "Error", "message": 5}),
    ({}, {"name": "Error", "message": "[object Object]"}),
    ([1, 2.0, "é"], {"name": "Error", "message": '[1,2,"é"]'}),
    ({"name": "TypeError", "message": "m", "stack": "at x"}, {"name": "TypeError", "message": "m"}),
])
def test_an_error_chunk_gives_the_error_mastra_makes_of_it(codec, error, want):
    """getErrorFromUnknown: an object's own name and message whatever their types, else its
    JSON.stringify text; a non-empty string; else the fallback message.  (Mastra's values:
    tests/test_mastra_oracle.py runs the same.)"""
    r = ways(codec, [line("error", {"error": error}),
                     line("finish", {"stepResult": {"reason": "error"}, "output": {"usage": {}}})])
    assert r.error == want and r.status == "failed" and r.finish_reason == "error"


def test_usage_that_is_not_numbers_adds_up_as_javascript_adds_it(codec):
    """A counter a step reports as a string concatenates, null counts 0 and true 1, an object
    is "[object Object]": JavaScript's + in Mastra's updateUsageCount and total (Mastra's
    values)."""
    def fin(usage, t="step-finish"):
        return line(t, {"stepResult": {"reason": "stop"}, "output": {"usage": usage}})
    r = ways(codec, [fin({"inputTokens": "5"}), fin({"inputTokens": 2, "outputTokens": None}), fin({}, "finish")])
    assert r.usage == {"inputTokens": "052", "outputTokens": 0}
    assert r.total_usage == {"inputTokens": "052", "outputTokens": 0, "totalTokens": "05200"}
    r = ways(codec, [fin({"inputTokens": True, "cachedInputTokens": [1, 2]}),
                     fin({"inputTokens": 1, "cachedInputTokens": {}}), fin({}, "finish")])
    assert r.usage == {"inputTokens": 2, "cachedInputTokens": "01,2[object Object]"}


def test_a_step_a_processor_tripped_has_no_text_and_says_its_tripwire(codec):
    """A step-finish whose stepResult.reason is "tripwire", or "retry" (an output processor's
    tripwire with retry: Mastra's loop tries the step again), has in the last entry of
    output.steps the tripwire Mastra reads: the step's text is then "", and StepResult.tripwire
    is that entry's.  Other reasons: Mastra's loop puts none there."""
    def sf(reason, steps, text):        # (each step's text a part of its own, as a model writes it)
        return [text_delta(text, text), line("text-end", {"id": text}),
                line("step-finish", {"stepResult": {"reason": reason}, "output": {
                    "usage": {}, "steps": steps}, "metadata": {"id": "m"}})]
    tw = {"reason": "again", "retry": True, "processorId": "p"}
    r = ways(codec, [*sf("retry", [{"text": "a"}, {"tripwire": tw}], "a"), *sf("retry", [{}], "b"),
                     *sf("tripwire", [{"tripwire": {"reason": "no"}}], "c"), *sf("stop", [], "d"),
                     line("finish", {"stepResult": {"reason": "stop"}, "output": {"usage": {}}})])
    assert [(st.finish_reason, st.text, st.tripwire) for st in r.steps] == [
        ("retry", "", tw), ("retry", "b", None), ("tripwire", "", {"reason": "no"}), ("stop", "cd", None)]
    assert r.steps[0].to_mastra()["tripwire"] == tw and "tripwire" not in r.steps[1].to_mastra()
    # the run's text, read from the message at the finish, leaves out the steps tried again (the
    # reason says so, whatever the entry holds), and the last step has that text too
    # (test_a_step_tried_again_leaves_the_run)
    assert r.text == "cd" and r.tripwire is None


def test_a_step_a_processor_tripped_has_its_text_back_at_the_finish(codec):
    """A step's tripwire means the agent has output processors, and with them Mastra re-reads the
    run's text at the finish from its message list and gives it to the last step: a last step that
    a processor's tripwire ended (text "" till then) has its text back, and so has the run after
    tool steps; not when the run was aborted.  Checked against a real agent in test_mastra_server
    ("blocked")."""
    tw = {"reason": "Not allowed", "processorId": "censor"}
    blocked = line("step-finish", {"stepResult": {"reason": "tripwire"}, "output": {"usage": {}, "steps": [
        {"tripwire": tw}]}, "metadata": {"id": "m"}})
    fin = line("finish", {"stepResult": {"reason": "tripwire"}, "output": {"usage": {}}})
    head = [text_delta("t", "not "), text_delta("t", "allowed"), blocked]
    r = ways(codec, head)
    assert (r.text, [s.text for s in r.steps]) == ("not allowed", [""])     # (before the finish)
    r = ways(codec, head + [fin])
    assert (r.text, [(s.text, s.tripwire) for s in r.steps]) == ("not allowed", [("not allowed", tw)])
    r = ways(codec, head + [line("abort", {}), fin])
    assert (r.text, [s.text for s in r.steps], r.finish_reason) == ("not allowed", [""], "aborted")
    tool = [text_delta("t", "a"), line("tool-call", {"toolCallId": "c", "toolName": "w", "args": {}}),
            line("tool-result", {"toolCallId": "c", "toolName": "w", "result": 1}),
            line("step-finish", {"stepResult": {"reason": "tool-calls"}, "output": {"usage": {}}, "metadata": {}})]
    r = ways(codec, tool + [text_delta("u", "b"), blocked])
    assert (r.text, [s.text for s in r.steps]) == ("", ["a", ""])
    r = ways(codec, tool + [text_delta("u", "b"), blocked, fin])
    assert (r.text, [s.text for s in r.steps]) == ("b", ["a", "b"])


def test_a_step_tried_again_leaves_the_run(codec):
    """A step a processor had tried again (its step-finish's reason is "retry") means the agent
    has output processors, and with them Mastra re-reads the run's text from its message list at
    the finish (the step is not there: the text is what came after it) and resolves the object at
    a step-finish that is no retry (the object that step resolved is dropped; one resolved in an
    earlier step stays).  Not a step whose tripwire asks for a retry past the agent's
    maxProcessorRetries: its reason is "tripwire", and it stays.  Checked against a real agent in
    test_mastra_server ("guarded", "retried", "twice", "stubborn")."""
    def sf(reason, text, tw=None, obj=None):
        out = [text_delta("t", text)]
        if obj is not None:
            out.append(line("object-result", None, object=obj))
        steps = [{"tripwire": tw}] if tw else []
        return out + [line("step-finish", {"stepResult": {"reason": reason}, "output": {"usage": {}, "steps": steps},
                                          "metadata": {"id": "m"}})]
    again = {"reason": "again", "retry": True}
    fin = line("finish", {"stepResult": {"reason": "stop"}, "output": {"usage": {}}})
    r = ways(codec, [*sf("retry", "first", again, {"a": 1}), *sf("stop", "second", obj={"a": 2}), fin])
    assert (r.text, r.object, [s.text for s in r.steps]) == ("second", {"a": 2}, ["", "second"])
    # retried twice after a tool step whose object stays; a tripwire without retry keeps the text
    call = line("tool-call", {"toolCallId": "c", "toolName": "w", "args": {}})
    r = ways(codec, [call, *sf("tool-calls", "zero", obj={"a": 0}), *sf("retry", "one", again, {"a": 1}),
                     *sf("retry", "two", again), *sf("stop", "three"), fin])
    assert (r.text, r.object) == ("three", {"a": 0})
    r = ways(codec, [*sf("retry", "one", again), *sf("retry", "two", again), *sf("stop", "three"), fin])
    assert r.text == "three"
    r = ways(codec, [*sf("tripwire", "one", again, {"a": 1}), *sf("stop", "two"), fin])
    assert (r.text, r.object) == ("onetwo", {"a": 1})
    # with processors the run's text is the message's text after its last tool invocation, and
    # the last step has it too ("onagain" in test_mastra_server)
    def step(reason, *body, tw=None):
        return [line("step-start", {}), *body, line("step-finish", {"stepResult": {"reason": reason}, "output": {
            "usage": {}, "steps": [{"tripwire": tw}] if tw else []}, "metadata": {"id": "m"}})]
    def said(i, t):     # noqa: E306
        return [text_delta(i, t), line("text-end", {"id": i})]
    r = ways(codec, [*step("tool-calls", call), *step("other", *said("x", "X ")), *step("retry", *said("y", "Y"), tw=again),
                     *step("stop", *said("z", "Z")), fin])
    assert (r.text, [s.text for s in r.steps]) == ("X Z", ["", "X ", "", "X Z"])
    r = ways(codec, [*sf("retry", "one", None, {"a": 1}), *sf("stop", "two"), fin])
    assert (r.text, r.object) == ("two", None)
    # a call still without a result (a client's tool) is not in the message the text is read
    # from, and a message of nothing else is none ("retryclient" in test_mastra_server)
    r = ways(codec, [*step("retry", *said("s", "Sure."), tw=again), *step("tool-calls", *said("o", "Okay. "), call), fin])
    assert (r.text, [s.text for s in r.steps]) == ("Okay. ", ["", "Okay. "])
    r = ways(codec, [*step("retry", *said("s", "Sure."), tw=again), *step("tool-calls", call), fin])
    assert (r.text, [s.text for s in r.steps]) == ("", ["", ""])
    r = ways(codec, [*step("tool-calls", call), *step("retry", *said("s", "Sure."), tw=again),
                     *step("stop", *said("o", "Okay.")), fin])
    assert (r.text, [s.text for s in r.steps]) == ("Okay.", ["", "", "Okay."])


def test_a_structuring_models_object_is_the_runs(codec):
    """With structuredOutput given a model of its own, Mastra's StructuredOutputProcessor writes
    the object and object-result chunks of that model's run into the stream with that run's id
    and metadata.from "structured-output"; MastraModelOutput resolves the streamed run's object
    from them, so they go to the run current then, as chunks without runId do, and make no run
    of their own.  Other object chunks keep their runId ("structured" in test_mastra_server)."""
    md = {"from": "structured-output"}
    fin = line("finish", {"stepResult": {"reason": "stop"}, "output": {"usage": {}}})
    sf = line("step-finish", {"stepResult": {"reason": "stop"}, "output": {"usage": {}}, "metadata": {"id": "m"}})
    body = [text_delta("t", "42"), line("object", run="other", object={}, metadata=md),
            line("object-result", run="other", object={"answer": 42}, metadata=md), sf, fin]
    r = ways(codec, body)
    assert (r.text, r.object) == ("42", {"answer": 42})
    data = b"".join(ln + b"\n" for ln in body)
    assert [x.run_id for x in codec.accumulate(data)] == [RUN]
    other = [text_delta("t", "42"), line("object-result", run="other", object={"answer": 42}, metadata={"from": "x"}), sf, fin]
    runs = codec.accumulate(b"".join(ln + b"\n" for ln in other))
    assert [(x.run_id, x.object) for x in runs] == [(RUN, None), ("other", {"answer": 42})]


def test_nothing_after_a_tripwire_changes_the_run(codec):
    """Mastra stops reading a stream at a tripwire chunk (its wire ends there): chunks after one
    (a stream written by something else) change nothing; not a later error, a finish whose reason
    is tripwire, more text or another tripwire."""
    head = [text_delta("t", "a"), line("step-finish", {"stepResult": {"reason": "stop"}, "output": {"usage": {"inputTokens": 1}}}),
            text_delta("t", "b"), line("tripwire", {"reason": "first", "processorId": "p"}, run=None)]
    want = ways(codec, head)
    assert want.tripwire == {"reason": "first", "processorId": "p"} and want.text == "ab"
    got = ways(codec, head + [line("error", {"error": "x"}), text_delta("t", "c"),
                              line("tripwire", {"reason": "second"}, run=None),
                              line("finish", {"stepResult": {"reason": "tripwire"}, "output": {"usage": {"outputTokens": 5}}})])
    assert got.to_mastra() == want.to_mastra()
