"""The values the native finish, step-start and tool readers make themselves (_core._plain_value:
usage, warnings, providerMetadata, a tool's args and result...) must be what msgspec decodes from
the same bytes, of the same types and key order; what it does not make (long integers, floats at
the edges of the range, strings it refuses) it leaves to msgspec, and bad JSON is msgspec's
error.  (The reference path decodes these frames with msgspec alone; the corpus and differential
tests compare the two paths on whole frames.)"""

import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import _native


def _typed(v):
    """v with its types and key order spelled out, for an exact comparison."""
    if isinstance(v, dict):
        return ("dict", [(k, _typed(x)) for k, x in v.items()])
    if isinstance(v, list):
        return ("list", [_typed(x) for x in v])
    return (type(v).__name__, v)


def _check(data: bytes):
    want = msgspec.json.decode(data)
    got, made_here = _native().plain_value(data)
    assert _typed(got) == _typed(want), data
    return made_here


# integers of every length up to past 64 bits, text of every width and escapes
_ints = st.one_of(st.integers(-(10 ** 20), 10 ** 20), st.sampled_from([0, -1, 10 ** 17, 10 ** 18 - 1, 10 ** 18,
                                                                       -(10 ** 18) + 1, 2 ** 63 - 1, -(2 ** 63)]))
_scalars = st.one_of(st.none(), st.booleans(), _ints, st.text(max_size=20),
                     st.floats(allow_nan=False, allow_infinity=False))
_values = st.recursive(_scalars, lambda kids: st.one_of(st.lists(kids, max_size=5),
                                                        st.dictionaries(st.text(max_size=8), kids, max_size=5)),
                       max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(_values, st.sampled_from([(",", ":"), (", ", ": "), (" ,\n", " :\t")]), st.booleans())
def test_any_value_as_msgspec_decodes_it(v, seps, ascii_):
    _check(json.dumps(v, separators=seps, ensure_ascii=ascii_).encode())


def test_what_it_makes_itself():
    """Usage objects, warnings and the like are made here, not by msgspec (the point of it)."""
    for data in (b'{"inputTokens":120,"outputTokens":30,"totalTokens":150,'
                 b'"raw":{"inputTokens":{"total":120},"outputTokens":{"total":30,"text":null}}}',
                 b'[]', b'{}', b'[{"type":"other","message":"caf\\u00e9 \\ud83d\\ude00"}]', b'"stop"',
                 b'{"a":1,"a":[true,false,null]}', b'-0', b'999999999999999999', b'{ "k" : [ 1 , 2 ] }',
                 # floats (a tool's result, logprobs in providerMetadata)
                 b'1.5', b'1e3', b'-2.5E-3', b'{"tempC":21.5,"cost":0.0012}', b'1e308', b'-1.25e-300',
                 b'2.2250738585072014e-308', b'0.10000000000000000555111512312578270212'):
        assert _check(data), data


def test_what_it_leaves_to_msgspec():
    for data in (b'1000000000000000000', b'[18446744073709551616]', b'[' * 70 + b']' * 70,
                 # zero, subnormal, past the range, or spelled longer than a double needs
                 b'-0.0', b'0e5', b'1e-400', b'5e-324', b'2.2250738585072009e-308', b'1.7976931348623157e308',
                 b'0.100000000000000005551115123125782702118'):
        assert not _check(data), data
    for data in (b'1e400', b'-1.7976931348623159e308'):    # (msgspec: "Number out of range")
        with pytest.raises(msgspec.ValidationError):
            msgspec.json.decode(data)
        with pytest.raises(msgspec.ValidationError):
            _native().plain_value(data)


# JSON numbers with a fraction or an exponent, spelled every way the grammar allows (and
# shortest-repr doubles, the way JavaScript writes them)
_mantissas = st.tuples(st.sampled_from(["", "-"]),
                       st.one_of(st.just("0"), st.from_regex(r"[1-9][0-9]{0,20}", fullmatch=True)),
                       st.one_of(st.just(""), st.from_regex(r"\.[0-9]{1,25}", fullmatch=True)),
                       st.one_of(st.just(""), st.from_regex(r"[eE][+-]?[0-9]{1,3}", fullmatch=True)))


@settings(max_examples=500, deadline=None)
@given(st.one_of(_mantissas.map("".join), st.floats(allow_nan=False, allow_infinity=False).map(repr)))
def test_float_spellings_as_msgspec_decodes_them(text):
    data = text.encode()
    try:
        msgspec.json.decode(data)
    except msgspec.ValidationError:     # (out of range: msgspec's error, as the reader leaves it to it)
        with pytest.raises(msgspec.ValidationError):
            _native().plain_value(data)
        return
    _check(data)
    _check(b'{"v":[' + data + b']}')


@pytest.mark.parametrize("data", [b'1.', b'.5', b'1.e5', b'1e', b'1e+', b'-.5', b'01.5', b'1.5.2', b'1e5e5',
                                  b'+1.5', b'1.5x', b'1,5'])
def test_bad_float_spellings_are_msgspecs_error(data):
    with pytest.raises(msgspec.DecodeError):
        msgspec.json.decode(data)
    with pytest.raises(msgspec.DecodeError):
        _native().plain_value(data)


@pytest.mark.parametrize("data", [b'[1,]', b'{"a":1,}', b'01', b'-', b'[1 2]', b'{"a" 1}', b'tru', b'nul',
                                  b'nullx', b'{"a":1} x', b'"\xff"', b'"a\x01"', b'{"\xc3":1}', b'[', b'{"a":',
                                  b'"\\x"', b'"\\ud800"', b'{1:2}', b''])
def test_bad_json_is_msgspecs_error(data):
    with pytest.raises((msgspec.DecodeError, UnicodeDecodeError)) as want:
        msgspec.json.decode(data)
    with pytest.raises(want.type):
        _native().plain_value(data)


def test_cached_short_strings_stay_right_across_many_runs():
    """Short ASCII strings (keys, runIds) come from a cache of made strings, by their bytes: many
    distinct ones that share their first, middle and last bytes (UUIDs, numbered ids), read in
    turn as interleaved runs read them, each time give their own text, whatever slot they share."""
    ids = [f"{k:08x}-0000-4000-8000-{k * 7919:012x}" for k in range(3000)]
    ids += [f"agent-run-2025-11-23-{k:06d}" for k in range(3000)] + [f"r{k}" for k in range(300)]
    ids += ["x" * n for n in range(1, 41)]
    for _ in range(2):
        for s in ids:
            got, made_here = _native().plain_value(json.dumps(s).encode())
            assert got == s and made_here


# keys alike in their first eight bytes, prefixes of each other, short and at the end of the bytes
_KEYS = ["inputTokens", "inputTokensX", "inputTok", "inputTo", "total", "totalTokens", "t", "", "raw",
         "outputTokens", "outputTokenDetails", "k" * 40, "k" * 41, "k" * 39, "café", "日本",
         # (written into the JSON as they are: escaped spellings of keys)
         'tot\\u0061l', 'caf\\u00e9', 'a\\"b', 'a\\\\b']


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(_KEYS), st.integers(0, 9)), max_size=6), min_size=1,
                max_size=6),
       st.sampled_from([(",", ":"), (", ", ": ")]))
def test_object_keys_from_their_cache_are_the_keys_read(objs, seps):
    """The keys _plain_value reads come from a cache of made strings keyed by their bytes (the
    first eight, then all of them and the closing quote): keys alike in those bytes, keys that
    are each other's prefixes, escaped spellings of a cached key and keys at the very end of the
    bytes, read one object after another, are each read as msgspec reads them, and here (a key
    taken for another would leave the object to msgspec)."""
    for obj in objs:
        body = seps[0].join('"%s"%s%d' % (k, seps[1], v) for k, v in obj)
        assert _check(("{" + body + "}").encode())
        if obj:
            k, v = obj[-1]
            assert _check(('{"%s":%d}' % (k, v)).encode())     # the key 3-10 bytes from the end
