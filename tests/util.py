"""Helpers shared by the tests."""

import msgspec

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
