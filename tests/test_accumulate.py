"""Accumulation against what Mastra itself resolved (tests/vectors/corpus/chunks/*.expected.json),
through add(), feed() on the JSONL bytes and feed() on SSE, on both paths."""

import json

import msgspec
import pytest

from conftest import CORPUS

CHUNK_FILES = sorted((CORPUS / "chunks").glob("*.jsonl"))
WIRE_SSE = sorted((CORPUS / "wire").glob("*.sse"))

#: Every run-level field the expected files record.
FIELDS = ("text", "reasoningText", "reasoning", "toolCalls", "toolResults", "usage", "totalUsage",
          "finishReason", "object", "sources", "files", "warnings", "providerMetadata", "steps")


def _undef(v):
    """The expected files' {"__undefined": true} is JavaScript undefined: None for us."""
    if isinstance(v, dict):
        if v == {"__undefined": True}:
            return None
        return {k: _undef(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_undef(x) for x in v]
    return v


def expected_view(exp):
    out = {}
    for f in FIELDS:
        promise = exp[f]
        if promise["ok"]:
            out[f] = _undef(promise["value"])
        else:
            # A rejected promise (only `object`, after an error): we give None, and the error is
            # the run's `error`.
            assert promise["error"] == exp["error"], f
            out[f] = None
    for f in ("error", "tripwire", "status"):
        out[f] = exp[f]
    if "suspendPayload" in exp:
        out["suspendPayload"] = exp["suspendPayload"]
    return out


def _step_summary(step, oracle=False):
    """A to_mastra() step reduced to the summary the expected files record (and its reasoning
    entries and tripwire, which the oracle's records have too)."""
    s = {
        "stepType": step["stepType"], "text": step["text"], "reasoningText": step["reasoningText"],
        "finishReason": step["finishReason"], "usage": step["usage"],
        "toolCallIds": [c["payload"]["toolCallId"] for c in step["toolCalls"]],
        "toolResultIds": [c["payload"]["toolCallId"] for c in step["toolResults"]],
        "sources": len(step["sources"]), "files": len(step["files"]),
    }
    if "providerMetadata" in step:
        s["providerMetadata"] = step["providerMetadata"]
    if oracle:
        s["reasoning"] = step["reasoning"]
        if "tripwire" in step:
            s["tripwire"] = step["tripwire"]
    s["warnings"] = step["warnings"]
    s["responseId"] = step["response"]["id"]
    s["responseModelId"] = step["response"]["modelId"]
    return s


def actual_view(out, exp):
    m = out.to_mastra()
    got = {f: m[f] for f in FIELDS}
    want = exp.get("steps")                           # (an expected file's, or its view)
    if isinstance(want, dict):
        want = want["value"] if want["ok"] else None
    oracle = isinstance(want, list) and any("reasoning" in s for s in want)
    got["steps"] = [_step_summary(s, oracle) for s in m["steps"]]
    for f in ("error", "tripwire", "status"):
        got[f] = m[f]
    if "suspendPayload" in exp:
        got["suspendPayload"] = m["suspendPayload"]
    return got


def _check(out, path):
    exp = json.loads(path.with_suffix(".expected.json").read_text())
    want = expected_view(exp)
    got = actual_view(out, exp)
    for f in want:
        assert got[f] == want[f], f"{path.stem}: {f}"


def _sse(path):
    lines = [ln for ln in path.read_bytes().split(b"\n") if ln]
    return b"".join(b"data: " + ln + b"\n\n" for ln in lines) + b"data: [DONE]\n\n"


def test_corpus_scenarios_present():
    assert len(CHUNK_FILES) == 21


@pytest.mark.parametrize("path", CHUNK_FILES, ids=lambda p: p.stem)
def test_add(codec, path):
    acc = codec.Accumulator()
    for chunk in codec.iter_chunks(path.read_bytes(), "ndjson"):
        acc.add(chunk)
    _check(acc.result(), path)


@pytest.mark.parametrize("path", CHUNK_FILES, ids=lambda p: p.stem)
def test_feed_jsonl(codec, path):
    acc = codec.Accumulator()
    acc.feed(path.read_bytes())
    acc.close()
    _check(acc.result(), path)


@pytest.mark.parametrize("path", CHUNK_FILES, ids=lambda p: p.stem)
def test_feed_sse(codec, path):
    acc = codec.Accumulator("sse")
    data = _sse(path)
    step = max(1, len(data) // 97)      # odd pieces: frames, escapes and UTF-8 split anywhere
    for i in range(0, len(data), step):
        acc.feed(data[i:i + step])
    acc.close()
    _check(acc.result(), path)


@pytest.mark.parametrize("path", CHUNK_FILES, ids=lambda p: p.stem)
def test_accumulate_one_run(codec, path):
    runs = codec.accumulate(path.read_bytes())
    assert len(runs) == 1
    _check(runs[0], path)


@pytest.mark.parametrize("path", WIRE_SSE, ids=lambda p: p.stem)
def test_wire_capture_feed_equals_add(codec, path):
    """A real server body fed as bytes gives what adding the chunks client-js decoded gives."""
    decoded = path.with_suffix(".decoded.jsonl").read_bytes()
    acc = codec.Accumulator()
    for chunk in codec.iter_chunks(decoded, "ndjson"):
        acc.add(chunk)
    want = acc.result().to_mastra()
    body = path.read_bytes()
    for step in (len(body), 7, 1):
        fed = codec.Accumulator()
        for i in range(0, len(body), step):
            fed.feed(body[i:i + step])
        fed.close()
        assert fed.result().to_mastra() == want
    assert want["status"] in ("success", "failed", "running")


def test_native_and_reference_agree(both):
    native, reference = both
    for path in CHUNK_FILES + WIRE_SSE:
        a = native.accumulate(path.read_bytes())
        b = reference.accumulate(path.read_bytes())
        assert [msgspec.to_builtins(r) for r in a] == [msgspec.to_builtins(r) for r in b], path.stem
