"""Native vs reference on generated streams and on garbage: same chunks, same errors, no crash."""

import json

from hypothesis import HealthCheck, given, settings, strategies as st

from util import decode_all, outcome

FRAMINGS = ["sse", "rs", "ndjson", "auto"]
_ENV = {"sse": (b"data: ", b"\n\n"), "rs": (b"", b"\x1e"), "ndjson": (b"", b"\n")}


def _chunk(kind, text, n):
    if kind == "text":
        return {"type": "text-delta", "runId": "run-1", "from": "AGENT", "payload": {"id": str(n % 3), "text": text}}
    if kind == "reasoning":
        return {"type": "reasoning-delta", "runId": "run-1", "from": "AGENT", "payload": {"id": "r", "text": text}}
    if kind == "tool":
        return {"type": "tool-call-delta", "runId": "run-1", "from": "AGENT",
                "payload": {"argsTextDelta": text, "toolCallId": "c", "toolName": "t"}}
    if kind == "meta":
        return {"type": "text-delta", "payload": {"id": "1", "providerMetadata": {"a": {"n": n}}, "text": text}}
    return {"type": "step-finish", "runId": "run-1", "from": "AGENT",
            "payload": {"stepResult": {"reason": "stop"}, "output": {"text": text, "usage": {"inputTokens": n}}}}


chunk_lists = st.lists(st.tuples(st.sampled_from(["text", "reasoning", "tool", "meta", "finish"]), st.text(max_size=20)),
                       min_size=1, max_size=12)
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(items=chunk_lists, framing=st.sampled_from(["sse", "rs", "ndjson"]), ascii_=st.booleans(),
       cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=6))
def test_generated_streams(both, items, framing, ascii_, cuts):
    native, reference = both
    pre, post = _ENV[framing]
    objs = [_chunk(k, t, i) for i, (k, t) in enumerate(items)]
    body = b"".join(pre + json.dumps(o, ensure_ascii=ascii_, separators=(",", ":")).encode("utf-8", "surrogatepass") + post
                    for o in objs)
    splits = sorted(c % (len(body) + 1) for c in cuts)
    for fr in (framing, "auto"):
        n = outcome(lambda: decode_all(native, body, fr, splits=splits, errors="keep"))
        r = outcome(lambda: decode_all(reference, body, fr, splits=splits, errors="keep"))
        assert n == r
    whole = decode_all(native, body, framing)
    got = [json.loads(json.dumps(g[1])) for g in whole]
    assert got == [json.loads(json.dumps(o)) for o in objs]
    # decoded and not modified -> the identical bytes, escapes and key order included
    for api in (native, reference):
        chunks = list(api.iter_chunks(body, framing))
        assert b"".join(api.Encoder(framing).encode(c) for c in chunks) == body


@SETTINGS
@given(data=st.binary(max_size=300), framing=st.sampled_from(FRAMINGS + ["json"]),
       cuts=st.lists(st.integers(min_value=0, max_value=300), max_size=4), keep=st.booleans())
def test_garbage_never_crashes_and_paths_agree(both, data, framing, cuts, keep):
    native, reference = both
    splits = sorted(c % (len(data) + 1) for c in cuts)
    opts = dict(errors="keep" if keep else "strict", max_frame_bytes=64)
    n = outcome(lambda: decode_all(native, data, framing, splits=splits, **opts))
    r = outcome(lambda: decode_all(reference, data, framing, splits=splits, **opts))
    assert n == r
    if n[0] == "err":
        assert n[1] in ("DecodeError", "ValidationError", "FrameTooLarge", "TruncatedError"), n


json_like = st.sampled_from([b"data: ", b"\n", b"\r\n", b"\x1e", b"{", b"}", b'"type"', b":", b'"text-delta"',
                             b",", b'"payload"', b'{"id":"1","text":"', b'\\u00e9', b'\\ud800', b"\xe4\xb8\x96",
                             b"\xff", b"[DONE]", b": c\n", b" ", b'"runId":"r"', b'"', b"\\"])


@SETTINGS
@given(parts=st.lists(json_like, max_size=40), framing=st.sampled_from(FRAMINGS),
       cuts=st.lists(st.integers(min_value=0, max_value=600), max_size=4), keep=st.booleans())
def test_near_json_garbage(both, parts, framing, cuts, keep):
    native, reference = both
    data = b"".join(parts)
    splits = sorted(c % (len(data) + 1) for c in cuts)
    opts = dict(errors="keep" if keep else "strict")
    assert outcome(lambda: decode_all(native, data, framing, splits=splits, **opts)) == \
        outcome(lambda: decode_all(reference, data, framing, splits=splits, **opts))
