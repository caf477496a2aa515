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
