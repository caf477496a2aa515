"""Native vs reference on generated streams and on garbage: same chunks, same errors, no crash."""

import json

import msgspec

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


# Delta frames in any shape a writer other than Mastra may give them: keys in any order at both
# levels, spaces, keys the schema does not know (any JSON value, numbers msgspec refuses, escaped
# names that decode to a known key), providerMetadata on any delta.  Each example writes a few
# frames for two runs and two parts in one shape, so that the native loops' kept heads and
# templates are used, then the same frames in Mastra's shape.
_EXTRA_KEYS = ["seq", "ts", "é", "src", "te\\u0078t", "run\\u0049d", "type\\u0020", "metadata"]
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "é"]), c, max_size=3),
    max_leaves=5).map(lambda v: json.dumps(v, ensure_ascii=False))
_extra_value = _json_values | st.sampled_from(["1e400", "-0", "1E5", "NaN", "[]", "{}", '"\\ud800"', "tru"])
_shapes = st.fixed_dictionaries({
    "kind": st.sampled_from(["text-delta", "reasoning-delta", "tool-call-delta"]),
    "top": st.permutations(range(4)), "payload": st.permutations(range(4)),
    "colon": st.sampled_from([":", ": ", " : "]), "comma": st.sampled_from([",", ", "]),
    "extra": st.lists(st.tuples(st.booleans(), st.sampled_from(_EXTRA_KEYS), _extra_value), max_size=3),
    "pm": st.sampled_from([None, '{"o":{"i":"x"}}', '{ "o" : 1 }', "null", '{"big":1e400}']),
    "name": st.booleans(), "no_from": st.booleans(), "ascii": st.booleans()})


def _shaped(shape, run, key, text):
    """One delta frame written in `shape`."""
    c, comma = shape["colon"], shape["comma"]
    s = lambda v: json.dumps(v, ensure_ascii=shape["ascii"])  # noqa: E731
    tool = shape["kind"] == "tool-call-delta"
    pay = [("argsTextDelta" if tool else "text", s(text)), ("toolCallId" if tool else "id", s(key))]
    if tool and shape["name"]:
        pay.append(("toolName", s("w")))
    if shape["pm"] is not None:
        pay.append(("providerMetadata", shape["pm"]))
    pay = [pay[i] for i in shape["payload"] if i < len(pay)] + [(k, v) for top, k, v in shape["extra"] if not top]
    top = [("type", s(shape["kind"])), ("runId", s(run)), ("from", s("AGENT")),
           ("payload", "{" + comma.join('"%s"%s%s' % (k, c, v) for k, v in pay) + "}")]
    if shape["no_from"]:
        top = [m for m in top if m[0] != "from"]
    top = [top[i] for i in shape["top"] if i < len(top)] + [(k, v) for t, k, v in shape["extra"] if t]
    return ("{" + comma.join('"%s"%s%s' % (k, c, v) for k, v in top) + "}").encode("utf-8", "surrogatepass")


def _args(acc, call_id):
    try:
        return bytes(acc.buffer(call_id))
    except KeyError:
        return None


@SETTINGS
@given(shape=_shapes, texts=st.lists(st.text(max_size=6), min_size=4, max_size=10),
       framing=st.sampled_from(["sse", "rs", "ndjson"]))
def test_delta_frames_in_any_shape(both, monkeypatch, shape, texts, framing):
    """The native delta loops (the accumulator's and the bulk index's), which read deltas of other
    shapes than Mastra's in C, give the reference path's runs, invalid frames and index."""
    from chunkcodec import bulk
    plain = dict(shape, top=(0, 1, 2, 3), payload=(1, 0, 2, 3), colon=":", comma=",", extra=[], no_from=False)
    frames = [_shaped(sh, "run-%d" % (i % 2), "k%d" % (i // 2 % 2), t)
              for sh in (shape, plain) for i, t in enumerate(texts)]
    pre, post = _ENV[framing]
    body = b"".join(pre + f + post for f in frames)
    outs = []
    for api in both:
        acc = api.Accumulator(framing, errors="keep")
        acc.feed(body)
        acc.close()
        outs.append(([msgspec.to_builtins(r) for r in acc.results().values()],
                     [(f.frame_index, type(f.error).__name__) for f in acc.invalid_frames],
                     [_args(acc, k) for k in ("k0", "k1")] if shape["kind"] == "tool-call-delta" else None))
    assert outs[0] == outs[1]
    # (a key with an escape: the one known difference of the two indexes, in the README's bulk notes)
    if not any("\\u" in k for _, k, _ in shape["extra"]):
        cols = []
        for env in (None, "1"):
            with monkeypatch.context() as m:
                if env:
                    m.setenv("CHUNKCODEC_NO_EXTENSIONS", env)
                ix = bulk.scan(body, framing)
                cols.append(tuple(getattr(ix, c).tolist() for c in ("offset", "length", "type", "run", "text_off",
                                                                    "text_len")) + (ix.run_ids,))
        assert cols[0] == cols[1]
