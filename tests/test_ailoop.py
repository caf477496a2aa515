"""chunkcodec.ailoop: the JSON form (what serde's default derive writes), framed streams on both
paths, snapshots, JsonTracer logs and errors.

The expected JSON below is written by hand from the Rust definitions in
shared/spec/ailoop-events.md §2: externally tagged enums, fields in declaration order, Option as
null, unit variants as strings, newtype structs (RunId, StepId) as their content.
"""

import asyncio
import uuid

import msgspec
import pytest

from chunkcodec import DecodeError, InvalidFrame, ValidationError, ailoop as A
from chunkcodec.errors import EncodeError

R = "0e6f0b8c-6f1e-4d2a-9a7e-2f1f5b3c4d5e"
S = "9b2d7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d"
RU, SU = uuid.UUID(R), uuid.UUID(S)

USAGE_JSON = ('{"input_tokens":10,"output_tokens":20,"cached_input_tokens":3,'
              '"cache_creation_input_tokens":5,"cache_creation_5m_tokens":2,"cache_creation_1h_tokens":3}')
USAGE = A.Usage(input_tokens=10, output_tokens=20, cached_input_tokens=3, cache_creation_input_tokens=5,
                cache_creation_5m_tokens=2, cache_creation_1h_tokens=3)
MSGS_JSON = ('[{"Assistant":{"blocks":[{"Reasoning":{"text":"hm","signature":null}},{"Text":{"text":"hi"}},'
             '{"ToolCall":{"id":"c1","name":"fetch","args":{"x":1}}},{"RedactedReasoning":{"data":"Zm9v"}}]}},'
             '{"User":{"blocks":[{"ToolResult":{"call_id":"c1","content":{"blocks":[{"type":"text","text":"ok"},'
             '{"type":"image","source":{"type":"url","url":"https://x/y.png"}}],"is_error":true}}},'
             '{"Text":{"text":"more"}},{"Image":{"source":{"type":"base64","media_type":"image/png","data":"AA=="}}},'
             '{"Document":{"source":{"type":"file_id","id":"file_1"}}}]}}]')
MSGS = [
    A.Assistant([A.Reasoning("hm", None), A.Text("hi"), A.ToolCall("c1", "fetch", {"x": 1}),
                 A.RedactedReasoning("Zm9v")]),
    A.User([A.UserToolResult("c1", A.ToolResultContent([A.TextContent("ok"),
                                                          A.ImageContent(A.UrlSource("https://x/y.png"))], True)),
            A.Text("more"), A.Image(A.Base64Source("image/png", "AA==")), A.Document(A.FileIdSource("file_1"))]),
]

#: (event built in Python, the JSON serde writes for it): every variant.
VARIANTS = [
    (A.TextDelta("hi"), '{"TextDelta":{"delta":"hi"}}'),
    (A.TextDelta(""), '{"TextDelta":{"delta":""}}'),
    (A.ToolCallStarted("c1", "fetch"), '{"ToolCallStarted":{"id":"c1","name":"fetch"}}'),
    (A.ToolCallArgsDelta("c1", '{"x":'), '{"ToolCallArgsDelta":{"id":"c1","delta":"{\\"x\\":"}}'),
    (A.ToolCallFinished("c1", "fetch", {"x": 1, "y": [True, None, 1.5]}),
     '{"ToolCallFinished":{"id":"c1","name":"fetch","args":{"x":1,"y":[true,null,1.5]}}}'),
    (A.ReasoningDelta("think"), '{"ReasoningDelta":{"delta":"think"}}'),
    (A.ReasoningFinished("sig"), '{"ReasoningFinished":{"signature":"sig"}}'),
    (A.ReasoningFinished(None), '{"ReasoningFinished":{"signature":null}}'),
    (A.RedactedReasoningBlock("Zm9v"), '{"RedactedReasoningBlock":{"data":"Zm9v"}}'),
    (A.TurnFinished(A.FinishReason("EndTurn"), USAGE, "priority"),
     '{"TurnFinished":{"reason":"EndTurn","usage":' + USAGE_JSON + ',"service_tier":"priority"}}'),
    (A.TurnFinished(A.FinishReason("Other", "content_filter"), A.Usage()),
     '{"TurnFinished":{"reason":{"Other":"content_filter"},"usage":{"input_tokens":0,"output_tokens":0,'
     '"cached_input_tokens":0,"cache_creation_input_tokens":0,"cache_creation_5m_tokens":0,'
     '"cache_creation_1h_tokens":0},"service_tier":null}}'),
    (A.RunStarted(RU), '{"RunStarted":{"run_id":"' + R + '"}}'),
    (A.StepStarted(RU, SU, 0), '{"StepStarted":{"run_id":"' + R + '","step_id":"' + S + '","iteration":0}}'),
    (A.StepFinished(RU, SU, 2, MSGS),
     '{"StepFinished":{"run_id":"' + R + '","step_id":"' + S + '","iteration":2,"new_messages_so_far":' + MSGS_JSON + '}}'),
    (A.ToolResult(RU, SU, "c1", A.ToolResultContent.text("22 C")),
     '{"ToolResult":{"run_id":"' + R + '","step_id":"' + S + '","call_id":"c1","content":{"blocks":[{"type":"text","text":"22 C"}]}}}'),
    (A.RunFinished(RU, A.FinishReason("Aborted", "cancelled by caller"), USAGE, []),
     '{"RunFinished":{"run_id":"' + R + '","reason":{"Aborted":"cancelled by caller"},"usage":' + USAGE_JSON
     + ',"new_messages":[]}}'),
    (A.RunFinished(RU, A.FinishReason("ToolUse"), USAGE, MSGS),
     '{"RunFinished":{"run_id":"' + R + '","reason":"ToolUse","usage":' + USAGE_JSON + ',"new_messages":' + MSGS_JSON + '}}'),
    (A.HistoryCompacted(RU, 40, 12, "summarize"),
     '{"HistoryCompacted":{"run_id":"' + R + '","before_count":40,"after_count":12,"strategy":"summarize"}}'),
    (A.ToolCallMalformed("c9", "fetch", "{oops", "expected value at line 1 column 2"),
     '{"ToolCallMalformed":{"id":"c9","name":"fetch","raw":"{oops","error":"expected value at line 1 column 2"}}'),
]

#: FinishReason / AbortReason values and their serde form.
REASONS = [
    (A.FinishReason("EndTurn"), '"EndTurn"'),
    (A.FinishReason("ToolUse"), '"ToolUse"'),
    (A.FinishReason("MaxTokens"), '"MaxTokens"'),
    (A.FinishReason("StopSequence"), '"StopSequence"'),
    (A.FinishReason("Aborted", "timeout exceeded after 30s"), '{"Aborted":"timeout exceeded after 30s"}'),
    (A.FinishReason("Other", "content_filter"), '{"Other":"content_filter"}'),
    (A.FinishReason("Aborted", A.AbortReason("Cancelled")), '{"Aborted":"Cancelled"}'),
    (A.FinishReason("Aborted", A.AbortReason("Timeout", secs=1, nanos=500_000_000)),
     '{"Aborted":{"Timeout":{"secs":1,"nanos":500000000}}}'),
    (A.FinishReason("Aborted", A.AbortReason("Terminated", reason="budget")),
     '{"Aborted":{"Terminated":{"reason":"budget"}}}'),
    (A.FinishReason("Aborted", A.AbortReason("ToolTerminated", tool_name="rm", call_id="c1", reason="no")),
     '{"Aborted":{"ToolTerminated":{"tool_name":"rm","call_id":"c1","reason":"no"}}}'),
    (A.FinishReason("Aborted", A.AbortReason("MaxIterations", iterations=8)), '{"Aborted":{"MaxIterations":8}}'),
]


@pytest.fixture
def streams(codec):
    return A._Streams(codec)


def _ev_turn(reason_json):
    return ('{"TurnFinished":{"reason":' + reason_json + ',"usage":' + USAGE_JSON + ',"service_tier":null}}').encode()


def test_there_are_fourteen_released_variants_plus_malformed():
    names = {type(ev).__name__ for ev, _ in VARIANTS}
    assert names == {c.__name__ for c in A.EVENT_TYPES}
    assert len(A.EVENT_TYPES) == 15 and A.EVENT_TYPES[-1] is A.ToolCallMalformed


@pytest.mark.parametrize("event,text", VARIANTS, ids=[t[:40] for _, t in VARIANTS])
def test_every_variant_encodes_as_serde_and_round_trips(event, text):
    assert A.encode(event) == text.encode()
    back = A.decode(text.encode())
    assert back == event
    assert A.encode(back) == text.encode()
    assert A.decode(text) == event                           # str input too
    assert msgspec.json.decode(text) == A.to_builtins(event)


@pytest.mark.parametrize("reason,text", REASONS, ids=[t for _, t in REASONS])
def test_finish_reasons_round_trip(reason, text):
    frame = _ev_turn(text)
    ev = A.decode(frame)
    assert ev.reason == reason
    assert A.encode(ev) == frame


def test_finish_reason_map_form_of_a_unit_variant_is_read_like_serde():
    assert A.decode(_ev_turn('{"EndTurn":null}')).reason == A.FinishReason("EndTurn")


def test_abort_reason_display_is_the_engines():
    assert str(A.AbortReason("Cancelled")) == "cancelled by caller"
    assert str(A.AbortReason("Timeout", secs=30)) == "timeout exceeded after 30s"
    assert str(A.AbortReason("Timeout", secs=1, nanos=500_000_000)) == "timeout exceeded after 1.5s"
    assert str(A.AbortReason("Timeout", nanos=250_000_000)) == "timeout exceeded after 250ms"
    assert str(A.AbortReason("MaxIterations", iterations=8)) == "agent loop exceeded max iterations (8)"
    assert str(A.AbortReason("Terminated", reason="budget")) == "budget"


def test_usage_reasoning_tokens_is_written_only_when_reported():
    ev = A.TurnFinished(A.FinishReason("EndTurn"), A.Usage(input_tokens=1, reasoning_tokens=7))
    text = A.encode(ev)
    assert text.endswith(b'"cache_creation_1h_tokens":0,"reasoning_tokens":7},"service_tier":null}}')
    assert A.decode(text) == ev
    assert b"reasoning_tokens" not in A.encode(A.TurnFinished(A.FinishReason("EndTurn"), A.Usage()))


def test_usage_adds_fieldwise_and_saturates():
    big = A.Usage(input_tokens=2 ** 64 - 2, reasoning_tokens=1)
    s = big + A.Usage(input_tokens=5, output_tokens=1)
    assert s.input_tokens == 2 ** 64 - 1 and s.output_tokens == 1 and s.reasoning_tokens == 1
    assert (A.Usage(output_tokens=2) + A.Usage(output_tokens=3)).reasoning_tokens is msgspec.UNSET


def test_call_id_is_read_as_id_everywhere():
    """The unreleased engine renames id -> call_id; both spellings load, id is written (rc.3)."""
    for frame, ev in [
        ('{"ToolCallStarted":{"call_id":"c1","name":"f"}}', A.ToolCallStarted("c1", "f")),
        ('{"ToolCallArgsDelta":{"call_id":"c1","delta":"{}"}}', A.ToolCallArgsDelta("c1", "{}")),
        ('{"ToolCallFinished":{"call_id":"c1","name":"f","args":{}}}', A.ToolCallFinished("c1", "f", {})),
        ('{"ToolCallMalformed":{"call_id":"c1","name":"f","raw":"x","error":"e"}}',
         A.ToolCallMalformed("c1", "f", "x", "e")),
    ]:
        assert A.decode(frame) == ev
    msg = A.decode_message('{"Assistant":{"blocks":[{"ToolCall":{"call_id":"c2","name":"g","args":[1]}}]}}')
    assert msg == A.Assistant([A.ToolCall("c2", "g", [1])])
    assert A.encode_message(msg) == b'{"Assistant":{"blocks":[{"ToolCall":{"id":"c2","name":"g","args":[1]}}]}}'


def test_unknown_fields_inside_a_variant_are_ignored_like_serde():
    assert A.decode('{"TextDelta":{"delta":"a","extra":1}}') == A.TextDelta("a")


def test_old_0_1_message_shapes_load():
    m = A.decode_message('{"User":{"blocks":[{"Text":"hi"},{"ToolResult":{"call_id":"c","content":{"Error":"boom"}}}]}}')
    assert m == A.User([A.Text("hi"), A.UserToolResult("c", A.ToolResultContent([A.TextContent("boom")], True))])
    m = A.decode_message('{"Assistant":{"blocks":[{"Text":"yo"}]}}')
    assert m == A.Assistant([A.Text("yo")])


# ------------------------------------------------------------------------------------------------
# Snapshots

SNAPSHOT_PRETTY = b'''{
  "version": 1,
  "messages": [
    {
      "User": {
        "blocks": [
          {
            "Text": {
              "text": "hi"
            }
          }
        ]
      }
    },
    {
      "Assistant": {
        "blocks": [
          {
            "Reasoning": {
              "text": "...",
              "signature": "sig"
            }
          },
          {
            "ToolCall": {
              "id": "c1",
              "name": "fetch",
              "args": {
                "x": 1
              }
            }
          }
        ]
      }
    },
    {
      "User": {
        "blocks": [
          {
            "ToolResult": {
              "call_id": "c1",
              "content": {
                "blocks": [
                  {
                    "type": "text",
                    "text": "ok"
                  }
                ]
              }
            }
          }
        ]
      }
    }
  ],
  "pinned": [
    true,
    false,
    false
  ]
}'''


def test_snapshot_loads_and_dumps_as_to_vec_pretty():
    snap = A.load_snapshot(SNAPSHOT_PRETTY)
    assert snap.messages == [A.User([A.Text("hi")]),
                             A.Assistant([A.Reasoning("...", "sig"), A.ToolCall("c1", "fetch", {"x": 1})]),
                             A.User([A.UserToolResult("c1", A.ToolResultContent.text("ok"))])]
    assert snap.pinned == [True, False, False] and snap.version == 1
    assert A.dump_snapshot(snap) == SNAPSHOT_PRETTY
    assert A.load_snapshot(A.dump_snapshot(snap, pretty=False)) == snap


def test_snapshot_rules():
    assert A.load_snapshot(b'{"version":1,"messages":[{"User":{"blocks":[]}}]}').pinned == [False]
    with pytest.raises(ValidationError, match=r"unsupported snapshot version 2, expected 1 - at `\$.version`"):
        A.load_snapshot(b'{"version":2,"messages":[]}')
    with pytest.raises(ValidationError, match=r"`pinned` has 2 entries for 0 messages"):
        A.load_snapshot(b'{"version":1,"messages":[],"pinned":[true,false]}')
    with pytest.raises(EncodeError):
        A.dump_snapshot(A.Snapshot([], [True]))


# ------------------------------------------------------------------------------------------------
# Errors

BAD = [
    (b'{"TextDeltas":{"delta":"a"}}', r"unknown StreamChunk variant `TextDeltas` - at `\$`"),
    (b'{}', r"one StreamChunk variant key, got no variant - at `\$`"),
    (b'{"TextDelta":{"delta":"a"},"ReasoningDelta":{"delta":"b"}}', r"got 2: TextDelta, ReasoningDelta"),
    (b'{"TextDelta":{"delta":5}}', r"Expected `str`, got `int` - at `\$.TextDelta.delta`"),
    (b'{"TextDelta":{}}', r"missing required field `delta` - at `\$.TextDelta`"),
    (b'{"RunStarted":{"run_id":"run-1"}}', r"Invalid UUID - at `\$.RunStarted.run_id`"),
    (b'{"StepStarted":{"run_id":"' + R.encode() + b'","step_id":"' + S.encode() + b'","iteration":-1}}',
     r"Expected `int` >= 0 - at `\$.StepStarted.iteration`"),
    (b'{"HistoryCompacted":{"run_id":"' + R.encode() + b'","before_count":18446744073709551616,'
     b'"after_count":1,"strategy":"truncate"}}', r"does not fit in a u64 - at `\$.HistoryCompacted`"),
    (b'{"ToolCallStarted":{"name":"f"}}', r"missing required field `id` \(or `call_id`\) - at `\$.ToolCallStarted`"),
    (b'{"ToolCallStarted":{"id":"a","call_id":"b","name":"f"}}', r"`id` \('a'\) and `call_id` \('b'\) disagree"),
    (_ev_turn(b'"Finished"'.decode()), r"unknown FinishReason variant `Finished`.* - at `\$.TurnFinished.reason`"),
    (_ev_turn('{"Aborted":{"Paused":null}}'), r"unknown AbortReason variant `Paused`"),
    (_ev_turn('{"Other":3}'), r"FinishReason Other expects a string, got an int"),
    (_ev_turn('{"Aborted":{"Timeout":{"secs":1}}}'), r"AbortReason Timeout expects a Duration"),
    (b'{"RunFinished":{"run_id":"' + R.encode() + b'","reason":"EndTurn","usage":{},"new_messages":'
     b'[{"Assistant":{"blocks":[{"Txt":{"text":"x"}}]}}]}}',
     r"unknown AssistantBlock variant `Txt` - at `\$.RunFinished.new_messages\[0\].Assistant.blocks\[0\]`"),
    (b'{"StepFinished":{"run_id":"' + R.encode() + b'","step_id":"' + S.encode() + b'","iteration":0,'
     b'"new_messages_so_far":[{"System":{}}]}}',
     r"unknown Message variant `System` - at `\$.StepFinished.new_messages_so_far\[0\]`"),
    (b'{"ToolResult":{"run_id":"' + R.encode() + b'","step_id":"' + S.encode() + b'","call_id":"c",'
     b'"content":{"blocks":[{"type":"video"}]}}}', r"Invalid value 'video' - at `\$.ToolResult.content.blocks\[0\].type`"),
    (b'[1]', r"Expected `object`, got `array`"),
    (b'{"TextDelta":{"delta":"a"', r"JSON ends before the value is complete"),
]


@pytest.mark.parametrize("frame,pattern", BAD, ids=[p[:40] for _, p in BAD])
def test_bad_events_raise_clear_errors(frame, pattern):
    with pytest.raises(DecodeError, match=pattern):
        A.decode(frame)


def test_errors_in_a_stream_carry_byte_offset_and_frame_index(streams):
    good = b'{"TextDelta":{"delta":"a"}}\n'
    bad = b'{"RunStarted":{"run_id":"nope"}}\n'
    data = good * 2 + bad + good
    with pytest.raises(ValidationError) as ei:
        list(streams.iter_events(data, "ndjson"))
    e = ei.value
    assert (e.pos, e.frame_index) == (2 * len(good), 2)
    assert f"(byte {2 * len(good)}, frame 2)" in str(e)
    assert "Invalid UUID - at `$.RunStarted.run_id`" in str(e)
    kept = list(streams.iter_events(data, "ndjson", errors="keep"))
    assert [type(x).__name__ for x in kept] == ["TextDelta", "TextDelta", "InvalidFrame", "TextDelta"]
    assert kept[2].raw == bad[:-1] and kept[2].pos == 2 * len(good) and kept[2].frame_index == 2


def test_sse_error_position_points_into_the_stream(streams):
    data = b'data: {"TextDelta":{"delta":"a"}}\n\ndata: {"Nope":{}}\n\n'
    with pytest.raises(ValidationError) as ei:
        list(streams.iter_events(data, "sse"))
    assert ei.value.frame_index == 1 and ei.value.pos == data.index(b'{"Nope"')
    assert "unknown StreamChunk variant `Nope`" in str(ei.value)


def test_truncated_stream_is_reported(streams):
    data = b'{"TextDelta":{"delta":"a"}}\n{"TextDelta":{"del'
    with pytest.raises(DecodeError, match="Stream ended mid-frame"):
        list(streams.iter_events(data, "ndjson"))


# ------------------------------------------------------------------------------------------------
# Framed streams

ALL_EVENTS = [ev for ev, _ in VARIANTS]


@pytest.mark.parametrize("framing", ["ndjson", "sse", "rs"])
def test_encode_stream_then_iter_events_round_trips(streams, framing):
    frames = list(streams.encode_stream(ALL_EVENTS, framing))
    data = b"".join(frames)
    assert list(streams.iter_events(data, framing)) == ALL_EVENTS
    assert list(streams.iter_events(data)) == ALL_EVENTS                 # auto-detected
    # fed in small pieces
    pieces = [data[i:i + 7] for i in range(0, len(data), 7)]
    assert list(streams.iter_events(iter(pieces), framing)) == ALL_EVENTS
    if framing == "sse":
        assert frames[-1] == b"data: [DONE]\n\n"
        assert frames[0] == b'data: {"TextDelta":{"delta":"hi"}}\n\n'


def test_encode_with_framing(streams):
    ev = A.TextDelta("x")
    assert streams.encode(ev, "ndjson") == b'{"TextDelta":{"delta":"x"}}\n'
    assert streams.encode(ev, "sse") == b'data: {"TextDelta":{"delta":"x"}}\n\n'
    assert streams.encode(ev, "rs") == b'{"TextDelta":{"delta":"x"}}\x1e'
    with pytest.raises(EncodeError):
        streams.encode(object())


def test_json_framing_reads_an_array_of_events(streams):
    data = b"[" + b",".join(A.encode(ev) for ev in ALL_EVENTS) + b"]"
    assert list(streams.iter_events(data, "json")) == ALL_EVENTS
    assert list(streams.iter_events(A.encode(ALL_EVENTS[0]), "json")) == ALL_EVENTS[:1]
    bad = b'[{"TextDelta":{"delta":"a"}},{"TextDelta":{"delta":1}}]'
    got = list(streams.iter_events(bad, "json", errors="keep"))
    assert got[0] == A.TextDelta("a") and isinstance(got[1], InvalidFrame) and got[1].frame_index == 1


def test_aiter_events(streams):
    data = b"".join(streams.encode_stream(ALL_EVENTS, "sse"))

    async def source():
        for i in range(0, len(data), 100):
            yield data[i:i + 100]

    async def run():
        return [ev async for ev in streams.aiter_events(source())]

    assert asyncio.run(run()) == ALL_EVENTS


def test_module_functions_use_the_default_implementation(tmp_path):
    p = tmp_path / "events.ndjson"
    p.write_bytes(b"".join(A.encode_stream(ALL_EVENTS)))
    assert list(A.iter_events(p)) == ALL_EVENTS
    assert A.encode(ALL_EVENTS[0], "ndjson") == A.encode(ALL_EVENTS[0]) + b"\n"


# ------------------------------------------------------------------------------------------------
# JsonTracer logs

TRACE = b"\n".join([
    b'{"schema":1,"ts_ms":1700000000000,"kind":"run_started","run_id":"' + R.encode() + b'","messages":2,'
    b'"max_iterations":8,"max_tokens":null}',
    b'{"schema":1,"ts_ms":1700000000001,"kind":"step_started","run_id":"' + R.encode() + b'","step_id":"'
    + S.encode() + b'","iteration":0}',
    b'{"schema":1,"ts_ms":1700000000002,"kind":"text_delta","chars":5}',
    b'{"schema":1,"ts_ms":1700000000003,"kind":"text_delta","chars":2,"text":"hi"}',
    b'{"schema":1,"ts_ms":1700000000004,"kind":"tool_call_finished","call_id":"c1","name":"f","args":{"a":1}}',
    b'{"schema":1,"ts_ms":1700000000005,"kind":"turn_finished","reason":{"kind":"aborted","detail":"x",'
    b'"abort_kind":"timeout"},"usage":{"input_tokens":3,"output_tokens":4},"service_tier":null}',
    b'{"schema":1,"ts_ms":1700000000006,"kind":"run_finished","run_id":"' + R.encode() + b'","reason":'
    b'{"kind":"end_turn"},"usage":{"input_tokens":3},"new_messages":2}',
    b'{"schema":1,"ts_ms":1700000000007,"kind":"something_new","x":[1]}',
]) + b"\n"


def test_trace_records_are_typed(streams):
    recs = list(streams.iter_trace(TRACE))
    assert [type(r).__name__ for r in recs] == [
        "RunStartedTrace", "StepStartedTrace", "TextDeltaTrace", "TextDeltaTrace", "ToolCallFinishedTrace",
        "TurnFinishedTrace", "RunFinishedTrace", "OtherTrace"]
    assert recs[0].run_id == RU and recs[0].messages == 2 and recs[0].ts_ms == 1700000000000
    assert recs[2].text is msgspec.UNSET and recs[3].text == "hi"
    assert recs[5].reason == A.TraceReason("aborted", detail="x", abort_kind="timeout")
    assert recs[5].usage.output_tokens == 4
    assert recs[7] == A.OtherTrace("something_new", 1, 1700000000007, {"x": [1]})


def test_trace_errors(streams):
    with pytest.raises(ValidationError, match=r"unsupported trace schema 2, expected 1 - at `\$.schema` \(byte 0, frame 0\)"):
        list(streams.iter_trace(b'{"schema":2,"ts_ms":1,"kind":"text_delta","chars":1}\n'))
    line = b'{"schema":1,"ts_ms":1,"kind":"text_delta","chars":1}\n'
    with pytest.raises(ValidationError, match=rf"Expected `int`, got `str` - at `\$.chars` \(byte {len(line)}, frame 1\)"):
        list(streams.iter_trace(line + b'{"schema":1,"ts_ms":1,"kind":"text_delta","chars":"1"}\n'))
