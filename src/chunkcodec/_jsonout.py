"""JSON text as JavaScript's JSON.stringify writes it, for values msgspec encodes.

msgspec already writes compact JSON with raw UTF-8, U+2028/U+2029 unescaped and controls as
lowercase ``\\u00xx``, exactly like JSON.stringify.  Two things differ and are fixed here: floats
(``1.0`` -> ``1``, ``1e21`` -> ``1e+21``, ``1e16`` -> ``10000000000000000``, ``-0.0`` -> ``0``) and
lone surrogates, which JSON.stringify writes as ``\\udxxx`` escapes and msgspec cannot encode.
The native path rewrites numbers in C (``cc_js_numbers``); :func:`js_numbers` is its reference.
Python ints are written exactly (JavaScript would round those above 2**53).
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

import msgspec

from .errors import EncodeError

__all__ = ["js_number", "js_numbers", "encode_general"]

_NUM_OR_STR = re.compile(rb'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?', re.S)


def js_number(tok: bytes) -> bytes:
    """A number token as JavaScript prints it (mirrors js_number in csrc/encode.c)."""
    if not any(c in tok for c in b".eE"):
        return tok
    s = tok.decode()
    neg = s.startswith("-")
    s = s.lstrip("-")
    mant, _, e = s.replace("E", "e").partition("e")
    exp = int(e) if e else 0
    ip, _, fp = mant.partition(".")
    digits = (ip + fp).lstrip("0")
    frac = len(fp)
    if not digits:
        return b"0"
    # leading zeros of the fraction were removed from digits; they only shift nothing (value kept)
    stripped = digits.rstrip("0")
    exp += len(digits) - len(stripped)
    digits = stripped
    k = len(digits)
    n = k + exp - frac
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + digits
    else:
        ee = n - 1
        out = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("-" if ee < 0 else "+") + str(abs(ee))
    return (("-" if neg else "") + out).encode()


def js_numbers(text: bytes) -> bytes:
    return _NUM_OR_STR.sub(lambda m: m.group() if m.group()[:1] == b'"' else js_number(m.group()), text)


_SURR = re.compile("[\ud800-\udfff]")


def utf8_json(obj: Any) -> bytes:
    """msgspec.json.encode(obj), but a str's lone surrogates (JavaScript strings may hold them,
    UTF-8 cannot) written as \\udxxx escapes, as JSON.stringify writes them, where msgspec would
    raise UnicodeEncodeError.  (The command line's JSON lines and the Arrow tables' JSON text.)"""
    try:
        return msgspec.json.encode(obj)
    except UnicodeEncodeError:
        s = json.dumps(msgspec.to_builtins(obj), ensure_ascii=False, separators=(",", ":"),
                       allow_nan=True)
        return _SURR.sub(lambda m: "\\u%04x" % ord(m.group()), s).encode("utf-8")


def no_lone_surrogates(v: Any) -> Any:
    """v for an Arrow string column, which holds UTF-8: a str's lone surrogates as U+FFFD (in
    lists, tuples and dicts too)."""
    if isinstance(v, str):
        return _SURR.sub("\ufffd", v)
    if isinstance(v, (list, tuple)):
        return type(v)(no_lone_surrogates(x) for x in v)
    if isinstance(v, dict):
        return {no_lone_surrogates(k): no_lone_surrogates(x) for k, x in v.items()}
    return v


def encode_general(obj: Any, numbers: Callable[[bytes], bytes]) -> bytes:
    """Encode with msgspec, then make floats and lone surrogates read as JSON.stringify's."""
    try:
        text = utf8_json(obj)
    except (TypeError, ValueError, msgspec.EncodeError) as exc:
        raise EncodeError(f"Cannot encode {type(obj).__name__}: {exc}") from None
    return numbers(text)


