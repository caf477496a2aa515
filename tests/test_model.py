"""The typed model: every chunk type, real-world schema breaks, nothing lost."""

import json
import threading

import msgspec
import pytest

import chunkcodec as cc
from chunkcodec import chunks

SEED_TYPES = """text-start text-delta text-end reasoning-start reasoning-delta reasoning-end reasoning-signature
tool-call tool-result tool-call-input-streaming-start tool-call-delta tool-call-input-streaming-end tool-error
source file start step-start step-finish raw finish error abort object tool-output step-output
background-task-started background-task-running background-task-progress background-task-output
background-task-completed background-task-failed background-task-suspended background-task-resumed
background-task-cancelled response-metadata watch tripwire""".split()
CODE_TYPES = """redacted-reasoning reasoning-file custom tool-call-approval tool-call-suspended tool-output-denied
object-result is-task-complete goal routing-agent-start routing-agent-text-start routing-agent-text-delta
routing-agent-end routing-agent-abort agent-execution-start agent-execution-approval agent-execution-suspended
agent-execution-end agent-execution-abort workflow-execution-start workflow-execution-end
workflow-execution-suspended workflow-execution-abort tool-execution-start tool-execution-end
tool-execution-approval tool-execution-suspended tool-execution-abort network-execution-event-step-finish
network-execution-event-finish network-validation-start network-validation-end network-object
network-object-result workflow-start workflow-finish workflow-canceled workflow-paused workflow-step-start
workflow-step-finish workflow-step-suspended workflow-step-waiting workflow-step-output
workflow-step-progress workflow-step-result""".split()


@pytest.mark.parametrize("tag", SEED_TYPES + CODE_TYPES)
def test_every_documented_type_has_a_class(tag):
    cls = chunks.TAGGED[tag]
    assert cls.__struct_config__.tag == tag and issubclass(cls, chunks.BaseChunk)


def _rt(codec, obj):
    line = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
    chunk = codec.decode(line)
    assert msgspec.to_builtins(chunk) == obj
    assert codec.encode(chunk, "ndjson") == line + b"\n"
    return chunk


def test_unknown_fields_survive(codec):
    obj = {"type": "text-delta", "runId": "r", "from": "AGENT", "extra": [1, {"x": 2}],
           "payload": {"id": "1", "text": "hi", "newField": True, "odd key!": 1, "class": 2}}
    chunk = _rt(codec, obj)
    assert isinstance(chunk, cc.TextDelta) and chunk.payload.text == "hi"
    assert chunk.extra == [1, {"x": 2}] and chunk.payload.newField is True
    assert chunk.payload.class_ == 2
    # the extended class is reused for the same set of extra keys
    assert type(codec.decode(json.dumps(obj))) is type(chunk)


def test_unknown_keys_msgspec_cannot_name_are_kept_under_a_plain_name(codec):
    """A key with a quote, a backslash, a control character or a lone surrogate cannot be a
    msgspec field name: such a key's value is kept under the key with those characters replaced
    (unique among the keys), and the raw bytes still re-encode the frame exactly."""
    line = (b'{"type":"text-delta","runId":"r","from":"AGENT","x\\"y":1,"z\\ud800":5,'
            b'"payload":{"id":"t","text":"a","tex\\t":2,"tex_":3,"q\\\\":4}}')
    c = codec.decode(line)
    assert c.payload.text == "a" and c.x_y == 1 and c.z_ == 5
    assert (c.payload.tex_, c.payload.tex__, c.payload.q_) == (3, 2, 4)
    assert codec.encode(c, "ndjson") == line + b"\n"
    acc = codec.Accumulator("ndjson")
    acc.feed(line + b"\n")
    assert acc.result().text == "a"


def test_unknown_keys_whose_names_would_start_with_two_underscores(codec):
    """`__meta` (as log shippers add), `]]` and other unknown keys whose attribute name would
    start with two underscores, which msgspec takes for no field: one underscore, made unique
    (before, the name got more underscores at its end until it did not start with two: a hang, on
    both paths).  Found by the random streams of test_accumulate_rules (a corrupted `from`)."""
    line = (b'{"type":"text-delta","runId":"r","from":"AGENT","__meta":1,"__":2,"_":3,"]]":4,'
            b'"payload":{"id":"t","text":"a","__x":5,"\\f]rom":6}}')
    got = []
    t = threading.Thread(target=lambda: got.append(codec.decode(line)), daemon=True)
    t.start()
    t.join(30)                                  # (a hang fails the test, not the suite)
    assert got, "decode() did not return"
    c = got[0]
    assert (c.payload.text, c._meta, c.payload._x) == ("a", 1, 5)
    assert msgspec.to_builtins(c) == {"type": "text-delta", "runId": "r", "from": "AGENT", "__meta": 1, "__": 2,
                                      "_": 3, "]]": 4, "payload": {"id": "t", "text": "a", "__x": 5, "_]rom": 6}}
    assert codec.encode(c, "ndjson") == line + b"\n"
    acc = codec.Accumulator("ndjson")
    acc.feed(line + b"\n")
    assert acc.result().text == "a"


def test_chunks_pickle_with_unknown_keys_and_the_text_they_were_decoded_from(codec):
    """pickle (reconstruct's workers send whole RunOutputs; multiprocessing, caches): a chunk of a
    class made for its unknown keys, which pickle cannot find by name, comes back of an equal
    class, in another process too; and a chunk keeps the JSON text it was decoded from, so that it
    re-encodes to the same bytes.  (Before, the first raised PicklingError and the second came back
    without its text: re-encoded with the model's key order.)"""
    import pickle
    import subprocess
    import sys
    lines = [b'{"type":"tool-call","runId":"r","from":"AGENT","seq":7,'
             b'"payload":{"toolCallId":"c","toolName":"w","args":{"a":1},"zz":[2]}}',
             b'{"type":"source","runId":"r","from":"AGENT","payload":{"id":"s","url":"u","sourceType":"url"}}',
             b'{"type": "text-delta", "runId": "r", "from": "AGENT", "payload": {"id": "t", "text": "h\\u00e9"}}',
             b'{"type":"text-delta","runId":"r","from":"AGENT","payload":{"id":"t","text":"a"}}']
    chunks_ = list(codec.iter_chunks(b"\n".join(lines) + b"\n", "ndjson"))
    acc = codec.Accumulator("ndjson")
    acc.feed(b"\n".join(lines) + b"\n")
    run = acc.result()
    blob = pickle.dumps((chunks_, run))
    back, run2 = pickle.loads(blob)
    assert back == chunks_ and run2 == run and run2.to_mastra() == run.to_mastra()
    assert [codec.encode(c, "ndjson") for c in back] == [ln + b"\n" for ln in lines]
    assert back[0].seq == 7 and back[0].payload.zz == [2] and isinstance(back[0], cc.ToolCall)
    # in a process that never made the class
    code = ("import pickle, sys, msgspec, chunkcodec\n"
            "cs, run = pickle.loads(sys.stdin.buffer.read())\n"
            "sys.stdout.buffer.write(b''.join(chunkcodec.encode(c, 'ndjson') for c in cs))\n"
            "sys.stdout.buffer.write(msgspec.json.encode(run.to_mastra()))")
    out = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, check=True).stdout
    want = b"".join(ln + b"\n" for ln in lines)
    assert out[:len(want)] == want
    assert msgspec.json.decode(out[len(want):]) == msgspec.json.decode(msgspec.json.encode(run.to_mastra()))


def test_a_finish_frame_with_bad_utf8_is_a_decode_error_not_a_crash(codec):
    """msgspec raises UnicodeDecodeError, not its DecodeError, for bad UTF-8 in a string it
    decodes: the light reader of step-finish/finish frames passes such a frame to the full decoder,
    which reports it with its position."""
    bad = b'{"type":"finish","runId":"ab\xc8","payload":{}}\n'
    acc = codec.Accumulator("ndjson")
    with pytest.raises(cc.DecodeError) as exc:
        acc.feed(b'{"type":"text-delta","runId":"r","from":"AGENT","payload":{"id":"t","text":"x"}}\n' + bad)
    assert exc.value.frame_index == 1
    keep = codec.Accumulator("ndjson", errors="keep")
    keep.feed(bad)
    assert [f.frame_index for f in keep.invalid_frames] == [0]


def test_unknown_type_is_kept_whole(codec):
    obj = {"type": "brand-new-thing", "runId": "r", "payload": {"a": 1}, "weird": "x"}
    chunk = _rt(codec, obj)
    assert isinstance(chunk, cc.UnknownChunk) and chunk.type == "brand-new-thing" and chunk.weird == "x"


@pytest.mark.parametrize("obj,cls", [
    ({"type": "data-progress", "data": {"pct": 50}}, cc.DataChunk),
    ({"type": "data-log", "data": "x", "transient": True, "id": "d1"}, cc.DataChunk),
    ({"type": "agent-execution-event-text-delta", "runId": "r", "from": "NETWORK",
      "payload": {"type": "text-delta", "payload": {"id": "1", "text": "x"}}}, cc.AgentExecutionEvent),
    ({"type": "workflow-execution-event-workflow-start", "payload": {"type": "workflow-start"}},
     cc.WorkflowExecutionEvent),
    ({"type": "tripwire", "payload": {"reason": "blocked", "retry": False, "processorId": "p"}}, cc.Tripwire),
    ({"type": "tripwire", "runId": "r", "from": "AGENT", "payload": {"tripwireReason": "old"}}, cc.Tripwire),
    ({"from": "AGENT", "runId": "r", "type": "object", "object": {"a": [1]}}, cc.Object),
    ({"type": "object-result", "object": {"a": 1}, "metadata": {"fallback": False}}, cc.ObjectResult),
    ({"type": "raw", "runId": "r", "from": "AGENT", "payload": "plain string"}, cc.Raw),
    ({"type": "error", "payload": {"error": {"message": "An error occurred"}}}, cc.Error),
    ({"type": "text-end", "runId": "r", "from": "AGENT", "payload": {"type": "text-end", "id": "1"}}, cc.TextEnd),
    ({"type": "workflow-step-start", "id": "s", "runId": "r", "from": "WORKFLOW", "payload": {"id": "s"}},
     cc.WorkflowStepStart),
    ({"type": "file", "runId": "r", "from": "AGENT", "payload": {"data": {"0": 137, "1": 80}, "mimeType": "image/png"}},
     cc.File),
    ({"type": "text-delta", "payload": {"id": "1", "text": "no envelope"}}, cc.TextDelta),
])
def test_schema_breaks_from_real_streams(codec, obj, cls):
    assert isinstance(_rt(codec, obj), cls)


def test_from_attribute_and_chunk_construction(codec):
    c = cc.TextDelta("run", "AGENT", payload=cc.TextDeltaPayload(id="1", text="x"))
    assert c.from_ == "AGENT"
    assert msgspec.to_builtins(c) == {"type": "text-delta", "runId": "run", "from": "AGENT",
                                      "payload": {"id": "1", "text": "x"}}
    assert codec.encode(c) == (b'data: {"type":"text-delta","runId":"run","from":"AGENT",'
                               b'"payload":{"id":"1","text":"x"}}\n\n')


def test_replace_drops_raw_bytes(codec):
    line = b'{"payload":{"text":"a","id":"1"},"type":"text-delta"}'
    c = codec.decode(line)
    assert codec.impl.to_json(c) == line and codec.encode(c, "ndjson") == line + b"\n"
    c2 = msgspec.structs.replace(c, runId="new")
    assert codec.impl.to_json(c2) == b'{"type":"text-delta","runId":"new","payload":{"id":"1","text":"a"}}'
    assert codec.encode(c2, "ndjson") == b'{"type":"text-delta","runId":"new","payload":{"id":"1","text":"a"}}\n'
    with pytest.raises(AttributeError):
        c.runId = "x"  # frozen
    cc.forget_raw(c)
    assert codec.impl.to_json(c) == b'{"type":"text-delta","payload":{"id":"1","text":"a"}}'


def test_hot_and_cold_paths_build_equal_chunks(codec):
    hot = b'{"type":"reasoning-delta","runId":"r","from":"AGENT","payload":{"id":"1","text":"\\u00e9\\ud83d\\ude00\\n"}}'
    cold = hot.replace(b'"text"', b'"providerMetadata":{"a":{}},"text"')
    h, c = codec.decode(hot), codec.decode(cold)
    assert h.payload.text == c.payload.text == "\u00e9\U0001F600\n"
    assert type(h) is type(c) is cc.ReasoningDelta
    t = codec.decode(b'{"type":"tool-call-delta","payload":{"argsTextDelta":"{\\"a","toolCallId":"c1"}}')
    assert t.payload.toolName is msgspec.UNSET and t.payload.argsTextDelta == '{"a'


@pytest.mark.parametrize("text", ["", "a", "é", "ÿ", "Ā", "世界", "😀", "a\u2028b", "\x00", "\\", '"',
                                  "e\u0301", "🇯🇵", "x" * 1000, "ascii then é", "é then 😀"])
def test_string_kinds(codec, text):
    obj = {"type": "text-delta", "runId": "r", "from": "AGENT", "payload": {"id": "1", "text": text}}
    for ensure_ascii in (False, True):
        line = json.dumps(obj, separators=(",", ":"), ensure_ascii=ensure_ascii).encode()
        chunk = codec.decode(line)
        assert chunk.payload.text == text
        assert chunk.payload.text.__eq__(text) and hash(chunk.payload.text) == hash(text)


def test_lone_surrogate_escapes_like_json_loads(codec):
    line = b'{"type":"text-delta","payload":{"id":"1","text":"\\ud800x"}}'
    assert codec.decode(line).payload.text == "\ud800x"
    assert codec.loads(line) == json.loads(line)
    assert codec.encode(codec.loads(line), "ndjson") == line + b"\n"


def test_unknown_key_sets_do_not_grow_memory_without_end(codec):
    from chunkcodec import _model
    for i in range(_model._EXTENDED_MAX + 10):
        chunk = codec.decode(f'{{"type":"never-seen","k{i}":{i}}}'.encode())
        assert getattr(chunk, f"k{i}") == i
    assert len(_model._EXTENDED) <= _model._EXTENDED_MAX
