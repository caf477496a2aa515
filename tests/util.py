"""Helpers shared by the tests."""

import hashlib
import os
import pathlib
import shutil
import subprocess

import msgspec
import pytest

from chunkcodec import InvalidFrame


def outcome(fn):
    """Run fn; return ("ok", result) or ("err", exception class, message) for comparisons."""
    try:
        return ("ok", fn())
    except Exception as exc:  # noqa: BLE001 - we compare whatever was raised
        return ("err", type(exc).__name__, str(exc))


def normalize(items, codec):
    """Chunks -> comparable values: builtins plus the concrete class name and the JSON text."""
    out = []
    for c in items:
        if isinstance(c, InvalidFrame):
            out.append(("invalid", c.raw, type(c.error).__name__, str(c.error), c.frame_index, c.pos,
                        c.dropped))
        elif isinstance(c, msgspec.Struct):
            out.append((type(c).__name__, msgspec.to_builtins(c), codec.impl.to_json(c)))
        else:
            out.append(c)
    return out


def decode_all(codec, data, framing="auto", splits=None, **opts):
    """Feed data whole or cut at the given positions; return normalized results."""
    dec = codec.StreamDecoder(framing, **opts)
    got = []
    if splits is None:
        got += dec.feed(data)
    else:
        prev = 0
        for s in list(splits) + [len(data)]:
            got += dec.feed(data[prev:s])
            prev = s
    got += dec.close()
    return normalize(got, codec)


#: What the corruption fuzz tests insert: structure, bad escapes, bad UTF-8, control bytes,
#: members that change a frame's type or run, keys msgspec cannot name.
JUNK = [b"\\", b'"', b"{", b"}", b"[", b"]", b":", b",", b" ", b"\xff", b"\xc3", b"\x01", b"\\u00", b'\\"', b"0",
        b"null", b'"type":"x",', b'"runId":"q",', b'"type":1,', b'"typ\\u0065":"finish",', b'"runId":"a\\q",',
        b"\\ud800", b'"k\\"ey":1,']

#: (framing, what goes before a frame, what ends it)
FRAMINGS = (("ndjson", b"", b"\n"), ("rs", b"", b"\x1e"), ("sse", b"data: ", b"\n\n"))


def corrupted(rng, frames, k, p=1.0):
    """k frames drawn from frames, each (with probability p) with one or two random edits: bytes
    deleted, JUNK inserted, a byte overwritten.  Separator bytes are blanked so that a frame stays
    one frame in every framing."""
    out = []
    for f in rng.sample(frames, k):
        f = bytearray(f)
        if rng.random() < p:
            for _ in range(rng.randrange(1, 3)):
                op, i = rng.randrange(3), rng.randrange(len(f))
                if op == 0:
                    del f[i:i + rng.randrange(1, 4)]
                elif op == 1:
                    f[i:i] = rng.choice(JUNK)
                else:
                    f[i] = rng.randrange(256)
        out.append(bytes(f).replace(b"\n", b" ").replace(b"\r", b" ").replace(b"\x1e", b" "))
    return out


def corrupted_logs(seed, logs, k, p):
    """logs sets of k corrupted frames (from the generated agent runs), each framed three ways:
    (rng, framing, data); rng is the test's, for any further random choice."""
    import random

    import gen  # bench/, put on the path by the test modules that call this
    rng = random.Random(seed)
    frames = gen.interleaved(6, 12, 5)
    for _ in range(logs):
        fs = corrupted(rng, frames, k, p)
        for framing, pre, sep in FRAMINGS:
            yield rng, framing, b"".join(pre + f + sep for f in fs)


def kept_head_frames():
    """Delta frames whose head (all before the text) repeats an earlier valid frame's, the case
    the native delta loops read from the text on: after it, each of the tricky texts and endings
    (bad escapes, bad UTF-8, raw control bytes, frames past 1 KB or with 33 escapes, other bytes or
    more after the text), then a valid one again.  600 runs, more than the head table holds,
    interleaved so that heads share sets and are evicted; heads of seven shapes: text and
    reasoning, a runId with an escape (never kept), a non-ASCII id, one too long to keep, text
    with json.dumps's spaces after its colons and commas, and text with sorted keys (kept as a
    template, head and tail, with tricky tails: more keys, the text's key twice, quotes)."""
    bad = [rb"\x", rb"\ud800", rb"\udc00x", b"\t", b"a\x01", b"\xff", b"\xc3", b"a\xed\xa0\x80", b"\xf4\x90\x80\x80",
           b"\\", b"x" * 1100, rb"\n" * 33, rb"\n" * 32, rb'\"', rb"\\", rb"\ud83d\ude00", "é😀".encode(), rb"a\/b"]
    ends = [b'"}}', b'"}} ', b'"},"x":1}', b'"}}}', b'"}', b'","x":"y"}}', b'"]}', b'"}]', b'"}"', b"'}}"]
    runs = []
    for i in range(600):
        rid = "%08x-0000-4000-8000-%012x" % (i * 2654435761 % 2**32, i)
        kind = "reasoning-delta" if i % 5 == 1 else "text-delta"
        if i % 5 == 2:
            rid = "r\\u0041" + rid
        key = "é-%d" % i if i % 5 == 3 else "txt-0"
        if i % 5 == 4:
            rid = rid * 8
        head = ('{"type":"%s","runId":"%s","from":"AGENT","payload":{"id":"%s","text":"' % (kind, rid, key)).encode()
        end, more = ends[0], ends
        if i % 10 == 5:                        # json.dumps's spaces: kept by the other shapes' reader
            head = head.replace(b'":', b'": ').replace(b',"', b', "')
        elif i % 10 == 0:                      # sorted keys: a template
            head = ('{"from":"AGENT","payload":{"id":"%s","text":"' % key).encode()
            end = ('"},"runId":"%s","type":"%s"}' % (rid, kind)).encode()
            more = [end + b" ", end[:-1] + b',"x":1}', b'","x":"y' + end, b'","text":"y' + end, end + b"}",
                    end[:-1], b"'" + end[1:], end.replace(b'"type"', b'"type" '), end.replace(b"-delta", b"-end")]
        frames = [head + b"hello" + end]
        for j in range(3):
            frames.append(head + bad[(3 * i + j) % len(bad)] + end)
        frames.append(head + b"x" + more[i % len(more)])
        frames.append(head + b"bye" + end)
        runs.append(frames)
    return [runs[i][j] for j in range(6) for i in range(600)]


# -- random agent streams: every chunk type the accumulator handles, in orders no server writes --

_TEXTS = ["", "a", "hé", "😀", '"q"', "\\", "\n", "tab\t", "世界", "\u2028", "é" * 5, "x" * 70,
          "\ud800", "a\udc00"]    # (lone surrogates: \u escapes in the ascii style, else bytes not UTF-8)
_LONG = ["x" * 1100, "\\n" * 40, "é" * 300]      # past what the delta loops take: the general path
_PMS = [{"openai": {"itemId": "i1"}}, {"anthropic": {"signature": "s"}}, {}]


def _usage(rng):
    u = {}
    for k in ("inputTokens", "outputTokens", "totalTokens", "reasoningTokens", "cachedInputTokens"):
        r = rng.random()
        if r < 0.6:
            u[k] = rng.randrange(300)
        elif r < 0.65:
            u[k] = None
        elif r < 0.68:
            u[k] = 1.5
    if rng.random() < 0.5:
        u["raw"] = {"x": rng.randrange(9)}
    return u


def _run_chunks(rng, rid, nested=True):
    """One run's chunks: a random walk over the chunk types, part ids and call ids reused, ends
    before starts, deltas with no start, steps finished twice, a sub-run's chunks in tool-output,
    chunks without runId; a finish at the end, mostly."""
    env = {"runId": rid, "from": rng.choice(["AGENT", "AGENT", "USER", "NETWORK"])}
    ids, calls = ["t0", "t1", "r0", "é"], ["c1", "c2", "c3"]

    def pm(p):
        if rng.random() < 0.25:
            p["providerMetadata"] = rng.choice(_PMS)
        return p

    def text():
        return rng.choice(_LONG) if rng.random() < 0.03 else rng.choice(_TEXTS)

    out = []
    for _ in range(rng.randrange(3, 40)):
        k = rng.random()
        if k < 0.05:
            out.append({"type": "start", **env, "payload": {"id": "agent", "messageId": "m"}})
        elif k < 0.12:
            out.append({**env, "type": "step-start",
                        "payload": {"request": {}, "warnings": rng.choice([[], [{"w": 1}]]), "messageId": "m"}})
        elif k < 0.18:
            out.append({"type": "text-start", **env, "payload": pm({"id": rng.choice(ids)})})
        elif k < 0.40:
            out.append({"type": "text-delta", **env, "payload": pm({"id": rng.choice(ids), "text": text()})})
        elif k < 0.45:
            out.append({"type": "text-end", **env, "payload": pm({"type": "text-end", "id": rng.choice(ids)})})
        elif k < 0.48:
            out.append({"type": "reasoning-start", **env, "payload": pm({"id": rng.choice(ids)})})
        elif k < 0.56:
            out.append({"type": "reasoning-delta", **env, "payload": pm({"id": rng.choice(ids), "text": text()})})
        elif k < 0.59:
            out.append({"type": "reasoning-end", **env, "payload": pm({"id": rng.choice(ids)})})
        elif k < 0.62:
            out.append({"type": "tool-call-input-streaming-start", **env,
                        "payload": {"toolCallId": rng.choice(calls), "toolName": rng.choice(["w", "get"])}})
        elif k < 0.68:
            p = {"argsTextDelta": rng.choice(['{"a"', ":1", "}", '"x', "[", "]", "é", ""]),
                 "toolCallId": rng.choice(calls)}
            if rng.random() < 0.7:
                p["toolName"] = "w"
            out.append({"type": "tool-call-delta", **env, "payload": p})
        elif k < 0.71:
            out.append({"type": "tool-call-input-streaming-end", **env, "payload": {"toolCallId": rng.choice(calls)}})
        elif k < 0.74:
            out.append({"type": "tool-call", **env, "payload": {
                "toolCallId": rng.choice(calls), "toolName": "w", "args": rng.choice([{"a": 1}, {}, {"b": "é"}])}})
        elif k < 0.77:
            p = {"toolCallId": rng.choice(calls), "toolName": "w", "result": rng.choice([{"t": 1}, None, "s", [1]])}
            if rng.random() < 0.5:
                p["args"] = {"a": 1}
            out.append({"type": "tool-result", **env, "payload": p})
        elif k < 0.78:
            out.append({"type": "tool-error", **env, "payload": {
                "toolCallId": rng.choice(calls), "toolName": "w", "error": rng.choice(["boom", {"message": "m"}])}})
        elif k < 0.80:
            out.append({"type": "source", **env,
                        "payload": {"id": "s", "sourceType": "url", "url": "http://x", "title": "t"}})
        elif k < 0.81:
            out.append({"type": "file", **env, "payload": {"data": "AAA", "mimeType": "image/png"}})
        elif k < 0.89:
            fin = {"stepResult": {"reason": rng.choice(["stop", "tool-calls", "length"]), "warnings": []},
                   "metadata": {"id": "resp", "modelId": "m", "timestamp": "t"},
                   "output": {"text": "x", "usage": _usage(rng)},
                   "messages": {"all": [{"role": "user", "content": "q"}]}}
            if rng.random() < 0.2:
                fin["providerMetadata"] = {"p": {"q": 1}}
            out.append({"type": "step-finish", **env, "payload": fin})
        elif k < 0.90:
            out.append({"type": "error", **env,
                        "payload": {"error": rng.choice([{"message": "bad"}, "str", {"name": "E", "message": "m"}])}})
        elif k < 0.905:
            out.append({"type": "abort", **env, "payload": {}})
        elif k < 0.91:
            out.append({"type": "tripwire", **env, "payload": {"tripwireReason": "no"}})
        elif k < 0.913:
            out.append({"type": "tool-call-approval", **env, "payload": {"toolCallId": "c1", "toolName": "w", "args": {}}})
        elif k < 0.915:
            p = {"toolCallId": rng.choice(calls), "toolName": "w"}
            if rng.random() < 0.7:
                p["approval"] = {"id": p["toolCallId"], "approved": False, "reason": "no"}
            out.append({"type": "tool-output-denied", **env, "payload": p})
        elif k < 0.93:
            out.append({"type": "data-x", "data": {"v": rng.randrange(5)}})
        elif k < 0.95 and nested:
            for c in _run_chunks(rng, rid + "-sub", nested=False)[:3]:
                out.append({"type": "tool-output", **env, "payload": {"output": c, "toolCallId": "c1", "toolName": "a"}})
        elif k < 0.96:
            out.append({"type": "object-result", **env, "object": {"o": 1}})
        else:
            out.append({"type": "text-delta", "payload": {"id": rng.choice(ids), "text": text()}})   # no runId
    if rng.random() < 0.8:
        out.append({"type": "finish", **env, "payload": {"stepResult": {"reason": rng.choice(["stop", "tool-calls"])},
                                                         "output": {"usage": _usage(rng)}, "metadata": {}}})
    return out


#: Payload keys a chunk may leave out (a tool that returned undefined has no result...), which
#: random_stream drops now and then.
_OPTIONAL = {"tool-call": ("args",), "tool-result": ("result", "args"), "tool-error": ("error",),
             "error": ("error",), "step-finish": ("output", "metadata", "stepResult", "messages"),
             "finish": ("output", "metadata", "stepResult"), "source": ("url", "title")}


def random_stream(rng):
    """(framing, data, corrupted) of one to four random runs interleaved chunk by chunk, each run's
    chunks in order; written in one of several JSON styles (Mastra's, json.dumps's spaces, sorted
    keys, \\u escapes, an unknown key), framed one of several ways (CRLF, SSE fields before the
    data line...), optional payload keys left out now and then; corrupted: some frames have bytes
    deleted, inserted or overwritten, or are not UTF-8 (a lone surrogate written as bytes)."""
    import json
    import re

    runs = [_run_chunks(rng, "run-%d" % i) for i in range(rng.randrange(1, 5))]
    objs, pos = [], [0] * len(runs)
    live = list(range(len(runs)))
    while live:
        r = rng.choice(live)
        objs.append(runs[r][pos[r]])
        pos[r] += 1
        if pos[r] == len(runs[r]):
            live.remove(r)
    for o in objs:
        keys = _OPTIONAL.get(o["type"])
        if keys and rng.random() < 0.15:
            o["payload"] = {k: v for k, v in o["payload"].items() if k not in keys or rng.random() < 0.5}
    style = rng.choice(["mastra", "mastra", "spaces", "sorted", "ascii", "unknown key"])

    def dump(o):
        if style == "unknown key":
            o = dict(o, seq=1)
        return json.dumps(o, ensure_ascii=style == "ascii", sort_keys=style == "sorted",
                          separators=(", ", ": ") if style == "spaces" else (",", ":")).encode("utf-8", "surrogatepass")

    bodies = [dump(o) if rng.random() < 0.8 else
              json.dumps(o, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
              for o in objs]
    bad = rng.random() < 0.4
    if bad:     # (corrupted() also shuffles them: the two paths must agree on any order)
        bodies = corrupted(rng, bodies, len(bodies), 0.15)
    bad = bad or any(re.search(rb"\xed[\xa0-\xbf]", b) for b in bodies)    # a lone surrogate's bytes
    framing, pre, sep = rng.choice([("sse", b"data: ", b"\n\n"), ("sse", b"data: ", b"\r\n\r\n"),
                                    ("sse", b"data:", b"\n\n"), ("sse", b"id: 1\nevent: m\ndata: ", b"\n\n"),
                                    ("rs", b"", b"\x1e"), ("ndjson", b"", b"\n"), ("ndjson", b"", b"\r\n")])
    data = b"".join(pre + b + sep for b in bodies)
    if framing == "sse" and rng.random() < 0.5:
        data += b"data: [DONE]\n\n"
    return framing, data, bad


def random_log(rng, size):
    """(framing, data): random streams of one framing, one after another, till size bytes: a log
    of them (random_stream)."""
    fr = rng.choice(["sse", "ndjson", "rs"])
    parts = []
    while sum(map(len, parts)) < size:
        framing, data, _ = random_stream(rng)
        if framing == fr:
            parts.append(data)
    return fr, b"".join(parts)


# --------------------------------------------------------------------------------------------
# Runs shaped like what Mastra's agent loop hands MastraModelOutput (test_mastra_oracle.py)

_M_TEXTS = ["", "a", "hé", "😀", '"q"', "\\", "\n", "tab\t", "世界", "\u2028", "x" * 30, " Hello", "."]
_M_PMS = [{"openai": {"itemId": "i1"}}, {"anthropic": {"signature": "sig"}}, {},
          {"google": {"thoughtSignature": "t"}}]
_M_NO_MESSAGES = {"all": [], "user": [], "nonUser": []}


def _m_usage(rng, full, low=0):
    """A step's usage: mostly the three totals, some missing, some detail counters and raw."""
    u = {}
    if rng.random() < full:
        i, o = rng.randrange(low, 100), rng.randrange(low, 100)
        u = {"inputTokens": i, "outputTokens": o, "totalTokens": i + o}
        if rng.random() < 0.2:
            del u["totalTokens"]
        if rng.random() < 0.1:
            del u["inputTokens"]
    else:
        for k in ("inputTokens", "outputTokens", "totalTokens"):
            if rng.random() < 0.5:
                u[k] = rng.randrange(1, 50)
    for k in ("reasoningTokens", "cachedInputTokens", "cacheCreationInputTokens"):
        if rng.random() < 0.2:
            u[k] = rng.randrange(40)
    if rng.random() < 0.6:
        u["raw"] = {"inputTokens": {"total": rng.randrange(9)}}
    return u


def _m_goal(rng, c):
    """A goal chunk of a goal loop's judge: the run goes on (shouldContinue), or not."""
    p = {"objective": "o", "iteration": rng.randrange(3), "passed": False, "status": "active"}
    cont = rng.choice([True, True, False, None])
    if cont is not None:
        p["shouldContinue"] = cont
    return c("goal", p)


def mastra_run(rng, rid="run-0", nested=True, goals=False):
    """The chunks of one agent run as Mastra's loop writes them, before MastraModelOutput (which
    adds the call it makes at each tool-call-input-streaming-end, drops the provider's own, fills
    in tool-call-delta names and rewrites the finish's usage): 1-3 steps of text and reasoning
    parts (ids reused, parts left open, empty deltas, signatures), tool calls streamed or not,
    results, errors, a sub-agent's chunks in tool-output, sources, files, data-* and raw chunks;
    ended by a finish, or an error or abort (then a finish), a tripwire, a suspension, or a step
    that tripped.  Only what the wire shows: a streamed call's own tool-call repeats what the
    call Mastra makes has (what it would fill in is lost on the wire, as is a finish's usage a
    step did not report, which Mastra writes as 0: README), and call ids are not reused.
    goals: goal chunks too, between and inside steps, some continuing the run (the other runs
    are the same streams either way)."""
    import json
    env = {"runId": rid, "from": "AGENT"}

    def c(t, payload):
        return {"type": t, **env, "payload": payload}

    def pm(p, prob=0.3):
        if rng.random() < prob:
            p["providerMetadata"] = rng.choice(_M_PMS)
        return p

    out = [c("start", {"id": "agent", "messageId": "m"})]
    nsteps = rng.randrange(1, 4)
    calls = 0
    end = rng.choices(["finish", "error", "abort", "tripwire", "approval", "suspended", "steptrip"],
                      [10, 2, 2, 1, 1, 1, 1])[0]
    end_step = rng.randrange(nsteps)
    last_reason = "stop"
    for s in range(nsteps):
        out.append({**env, "type": "step-start", "payload": {"request": {"body": "{}"}, "warnings": [], "messageId": "m"}})
        items = rng.randrange(0, 7)
        tools = False
        stop_here = end in ("error", "abort", "tripwire", "approval", "suspended") and s == end_step
        cut = rng.randrange(items + 1) if stop_here else None
        for it in range(items):
            if cut == it:
                break
            if goals and rng.random() < 0.12:
                out.append(_m_goal(rng, c))
            k = rng.random()
            if k < 0.35:        # a text part
                id_ = rng.choice(["txt-0", "0", "1", "t%d" % it])
                if rng.random() < 0.9:
                    out.append(c("text-start", pm({"id": id_})))
                for _ in range(rng.randrange(0, 5)):
                    out.append(c("text-delta", pm({"id": id_, "text": rng.choice(_M_TEXTS)}, 0.15)))
                if rng.random() < 0.9:
                    out.append(c("text-end", pm({"type": "text-end", "id": id_}, 0.2)))
            elif k < 0.5:       # a reasoning part
                id_ = rng.choice(["r0", "reasoning-0", "1"])
                if rng.random() < 0.9:
                    out.append(c("reasoning-start", pm({"id": id_})))
                for _ in range(rng.randrange(0, 4)):
                    out.append(c("reasoning-delta", pm({"id": id_, "text": rng.choice(_M_TEXTS)}, 0.2)))
                if rng.random() < 0.3:      # an Anthropic signature
                    out.append(c("reasoning-delta", {"id": id_, "text": "", "providerMetadata": {
                        "anthropic": {"signature": "s%d" % rng.randrange(9)}}}))
                if rng.random() < 0.9:
                    out.append(c("reasoning-end", pm({"id": id_}, 0.4)))
            elif k < 0.72:      # a tool call
                calls += 1
                tools = True
                cid, name = "call_%d" % calls, rng.choice(["weather", "search"])
                args = rng.choice([{"city": "Paris"}, {}, {"q": "é", "n": [1, 2]}, {"deep": {"a": None}}])
                text = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
                broken = rng.random() < 0.1
                if broken:
                    text = text[:-1]        # not JSON: the call's arguments are {}
                extra = {}
                if rng.random() < 0.2:
                    extra["providerExecuted"] = True
                if rng.random() < 0.2:
                    extra["dynamic"] = rng.choice([True, False])
                if rng.random() < 0.7:
                    start = pm({"toolCallId": cid, "toolName": name, **extra}, 0.2)
                    out.append(c("tool-call-input-streaming-start", start))
                    pos = 0
                    while pos < len(text):
                        n = rng.randrange(1, 8)
                        out.append(c("tool-call-delta", {"argsTextDelta": text[pos:pos + n], "toolCallId": cid}))
                        pos += n
                    out.append(c("tool-call-input-streaming-end", {"toolCallId": cid}))
                    if rng.random() < 0.8:
                        own = {"toolCallId": cid, "toolName": name,
                               "args": {} if broken else args, **extra}
                        if "providerMetadata" in start:
                            own["providerMetadata"] = start["providerMetadata"]
                        out.append(c("tool-call", own))
                else:
                    out.append(c("tool-call", pm({"toolCallId": cid, "toolName": name, "args": args, **extra}, 0.2)))
                r = rng.random()
                if r < 0.6:
                    p = {"toolCallId": cid, "toolName": name, "result": rng.choice([{"t": 21.5}, "ok", None, [1], 0])}
                    if rng.random() < 0.5:
                        p["args"] = args
                    if rng.random() < 0.2:
                        p["isError"] = False
                    if rng.random() < 0.15:
                        del p["result"]         # a tool that returned undefined
                    if nested and rng.random() < 0.2:
                        for sub in mastra_run(rng, rid + "-sub", False)[:rng.randrange(1, 6)]:
                            out.append(c("tool-output", {"output": sub, "toolCallId": cid, "toolName": name}))
                    out.append(c("tool-result", p))
                elif r < 0.75:
                    out.append(c("tool-error", {"toolCallId": cid, "toolName": name,
                                                "error": rng.choice([{"name": "Error", "message": "boom"}, "bad"])}))
            elif k < 0.78:
                out.append(c("source", {"id": "s%d" % it, "sourceType": "url", "url": "https://x/%d" % it, "title": "t"}))
            elif k < 0.82:
                out.append(c("file", {"data": "AAAA", "base64": "AAAA", "mimeType": "image/png"}))
            elif k < 0.86:
                out.append({"type": "data-progress", "data": {"v": rng.randrange(5)}})
            elif k < 0.88:
                out.append(c("tool-result", {"toolCallId": "orphan", "toolName": "x", "result": 1}))
            elif k < 0.9:
                out.append(c("raw", {"x": 1}))
            elif k < 0.95:
                out.append(c("response-metadata", {"id": "resp-x", "modelId": "mm"}))
            else:
                out.append({"type": "object-result", **env, "object": {"o": it}})
        if stop_here:
            if end == "error":
                out.append(c("error", {"error": rng.choice([{"name": "Error", "message": "Overloaded"},
                                                            {"message": "m"}, "str"])}))
                out.append(c("step-finish", {"stepResult": {"reason": "error", "warnings": []}, "output": {"usage": {}},
                                             "metadata": {"id": "r", "modelId": "m"}, "messages": _M_NO_MESSAGES}))
                out.append(c("finish", {"stepResult": {"reason": rng.choice(["error", "stop"])}, "output": {"usage": {}},
                                        "metadata": {}, "messages": _M_NO_MESSAGES}))
            elif end == "abort":
                out.append(c("abort", {}))
                out.append(c("finish", {"stepResult": {"reason": rng.choice(["stop", "tripwire"])}, "output": {"usage": {}},
                                        "metadata": {}, "messages": _M_NO_MESSAGES}))
            elif end == "tripwire":
                out.append({"type": "tripwire", "payload": rng.choice([
                    {"reason": "blocked", "metadata": {"w": 1}, "processorId": "p"}, {"retry": True}, {"reason": ""}])})
            else:
                calls += 1
                out.append(c("tool-call-approval" if end == "approval" else "tool-call-suspended",
                             {"toolCallId": "call_%d" % calls, "toolName": "del", "args": {"id": 1}, "resumeSchema": "{}"}))
            return out
        reason = "tool-calls" if tools and s < nsteps - 1 else rng.choice(["stop", "length", "stop"])
        sf = {"stepResult": {"reason": reason, "warnings": rng.choice([[], [{"type": "other", "message": "w"}]]),
                             "isContinued": s < nsteps - 1},
              "output": {"text": "", "usage": _m_usage(rng, 0.8)},
              "metadata": {"id": "resp-%d" % s, "modelId": "mock", "timestamp": "2026-01-01T00:00:00.000Z"},
              "messages": _M_NO_MESSAGES}
        if end == "steptrip" and s == nsteps - 1:
            sf["output"]["steps"] = [{"tripwire": rng.choice([{"reason": "step blocked", "retry": False}, {}])}]
            reason = "tripwire"
            sf["stepResult"]["reason"] = reason
        elif s < nsteps - 1 and rng.random() < 0.15:
            # a processor had the step tried again (the message Mastra keeps rolls it back)
            sf["output"]["steps"] = [{"tripwire": {"reason": "try again", "retry": True, "processorId": "p"}}]
            reason = sf["stepResult"]["reason"] = "retry"
        if rng.random() < 0.2:
            sf["metadata"]["providerMetadata"] = rng.choice(_M_PMS)
        if rng.random() < 0.1:
            sf["providerMetadata"] = rng.choice(_M_PMS)
        out.append(c("step-finish", sf))
        if goals and rng.random() < 0.3:
            out.append(_m_goal(rng, c))
        last_reason = reason
    fin = {"stepResult": {"reason": last_reason}, "output": {"usage": _m_usage(rng, 0.3, 1) if rng.random() < 0.5 else {}},
           "metadata": {"id": "resp-f", "modelId": "mock"}, "messages": _M_NO_MESSAGES}
    if end == "steptrip" and rng.random() < 0.5:
        fin["output"]["steps"] = [{"tripwire": {"reason": "run blocked", "processorId": "p"}}]
    if rng.random() < 0.2:
        fin["metadata"]["providerMetadata"] = rng.choice(_M_PMS)
    if rng.random() < 0.1:
        fin["providerMetadata"] = rng.choice(_M_PMS)
    out.append(c("finish", fin))
    return out


# --------------------------------------------------------------------------------------------
# Node projects that run Mastra itself (tests/mastra_oracle, tests/mastra_server)

#: node and npm run without the sanitizer runtime .ci/sanitize preloads into the tests' Python
NODE_ENV = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}


def mastra_unavailable(why):
    """Skip a test that runs Mastra, or fail it where CHUNKCODEC_REQUIRE_ORACLE says it must run
    (.ci/run sets it)."""
    if os.environ.get("CHUNKCODEC_REQUIRE_ORACLE"):
        pytest.fail(f"Mastra is required here (CHUNKCODEC_REQUIRE_ORACLE) but {why}")
    pytest.skip(why)


def npm_project(here, files):
    """A directory with the files of the Node project at `here` and its node_modules: installed
    once per version of the files (npm ci, from the lock file), under CHUNKCODEC_ORACLE_CACHE or
    ~/.cache/chunkcodec-mastra-oracle."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        mastra_unavailable("node or npm is not on PATH")
    digest = hashlib.sha256(b"".join((here / f).read_bytes() for f in files)).hexdigest()[:16]
    root = pathlib.Path(os.environ.get("CHUNKCODEC_ORACLE_CACHE")
                        or pathlib.Path.home() / ".cache" / "chunkcodec-mastra-oracle")
    d = root / digest
    if not d.exists():
        # installed beside it, then renamed into place: two test runs at once (CI runs the suite
        # under a sanitizer beside the other stages) never see a half-made directory
        tmp = root / f"{digest}.{os.getpid()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for f in files:
            shutil.copy(here / f, tmp / f)
        p = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=tmp,
                           capture_output=True, text=True, timeout=600, env=NODE_ENV)
        if p.returncode:
            shutil.rmtree(tmp, ignore_errors=True)
            mastra_unavailable(f"npm ci failed: {p.stderr[-2000:]}")
        try:
            os.rename(tmp, d)
        except OSError:         # (the other run was first)
            shutil.rmtree(tmp, ignore_errors=True)
    return d
