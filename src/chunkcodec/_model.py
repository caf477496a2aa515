"""Frame -> typed chunk and frame -> dict, over msgspec: shared by the native and the reference path.

The native path sends here every frame its C scanner does not take (everything but the simple
delta chunks); the reference path sends every frame.  Errors are built by
:func:`chunkcodec.errors.from_msgspec` in both, so messages agree.

Keeping unknown fields: the chunk classes forbid unknown fields, so msgspec's fast typed decode
fails on a chunk that carries a key the model does not know.  Such a frame is decoded again into a
subclass of its class that declares the extra keys (built once per set of extra keys and cached),
so ``msgspec.to_builtins`` gives back every key and ``isinstance`` still holds.
"""

from __future__ import annotations

import json
import keyword
import re
from typing import Any, Union, get_type_hints

import msgspec
from msgspec import UNSET

from . import chunks as _c
from .errors import DecodeError, InvalidFrame, from_msgspec

__all__ = ["decode_frame", "loads_frame", "chunk_class_for", "set_raw", "raw_json", "forget_raw",
           "AnyChunk"]

AnyChunk = Union[tuple(_c.TAGGED.values())]  # type: ignore[valid-type]

_typed = msgspec.json.Decoder(AnyChunk)
_untyped = msgspec.json.Decoder()

_PREFIXED = (
    ("data-", _c.DataChunk),
    ("agent-execution-event-", _c.AgentExecutionEvent),
    ("workflow-execution-event-", _c.WorkflowExecutionEvent),
)


def chunk_class_for(type_: str) -> type:
    """The class a chunk of this ``type`` decodes to."""
    cls = _c.TAGGED.get(type_)
    if cls is not None:
        return cls
    for prefix, pcls in _PREFIXED:
        if type_.startswith(prefix):
            return pcls
    return _c.UnknownChunk


def _payload_class(cls: type) -> type | None:
    hint = get_type_hints(cls).get("payload") if "payload" in cls.__struct_fields__ else None
    if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
        return hint
    return None


_PAYLOAD = {cls: _payload_class(cls) for cls in _c.TAGGED.values()}


def _wire_names(cls: type) -> set[str]:
    names = set(cls.__struct_encode_fields__)
    tag_field = cls.__struct_config__.tag_field
    if tag_field:
        names.add(tag_field)
    return names


def _attr_for(key: str, taken: set[str]) -> str:
    """A Python attribute name for a wire key: as is when legal, `class` -> `class_` (like `from_`),
    anything else with its illegal characters replaced by `_`; one underscore where it would start
    with two (msgspec takes no such field name: `__meta` -> `_meta`); then made unique among taken
    by underscores at its end (an `x` after a name of underscores alone, which more of them would
    turn into a dunder).  (Before, a name starting with two underscores was given more underscores
    at its end until it did not: forever.  `{"__meta": 1}` hung the decoder.)"""
    if keyword.iskeyword(key):
        name = key + "_"
    else:
        name = re.sub(r"\W", "_", key)
        if not name or name[0].isdigit():
            name = "_" + name
    if name.startswith("__"):
        name = "_" + name.lstrip("_")
    while name in taken:
        name = name + "_" if name.strip("_") else name + "x"
    taken.add(name)
    return name


_EXTENDED: dict[tuple, type] = {}
#: A stream whose chunks carry ever new sets of unknown keys must not grow the cache without end.
_EXTENDED_MAX = 4096


def _extend(base: type, keys: tuple[str, ...], overrides: list | None = None) -> type:
    """A subclass of `base` that also declares `keys` (Any, optional)."""
    ck = (base, keys, tuple((n, t) for n, t in (overrides or ())))
    cls = _EXTENDED.get(ck)
    if cls is None:
        taken = set(base.__struct_fields__) | set(dir(base))
        fields: list = list(overrides or ())
        for key in keys:
            fields.append((_attr_for(key, taken), Any, msgspec.field(default=UNSET, name=key)))
        cls = msgspec.defstruct(base.__name__, fields, bases=(base,), module=base.__module__,
                                kw_only=True)
        # how to make it again in another process (pickle: _rebuild), where it is not importable
        cls.__cc_recipe__ = (base, keys, tuple((n, _recipe(t)) for n, t in (overrides or ())))
        if len(_EXTENDED) >= _EXTENDED_MAX:
            _EXTENDED.clear()
        _EXTENDED[ck] = cls
    return cls


def _recipe(cls: type) -> Any:
    """cls, or for a class _extend made (which pickle cannot find by its name), what _extend
    makes it from."""
    return cls.__dict__.get("__cc_recipe__", cls)


def _from_recipe(recipe: Any) -> type:
    if isinstance(recipe, type):
        return recipe
    base, keys, overrides = recipe
    return _extend(base, keys, [(n, _from_recipe(t)) for n, t in overrides] or None)


def _reduce(self: Any) -> tuple:
    """pickle's way to a chunk or payload (BaseChunk.__reduce__, Payload.__reduce__): its class by
    recipe, so that a chunk with unknown keys can be pickled too (reconstruct's workers send
    whole RunOutputs), its field values, and the JSON text it was decoded from when kept, so that
    it still re-encodes to those bytes.  (msgspec's own way names the class, and leaves the text
    behind.)"""
    cls = type(self)
    d = getattr(self, "__dict__", None)
    raw = d.get("_raw") if d else None
    recipe = _recipe(cls)
    if raw is None and recipe is cls:
        return _struct_reduce(self)     # (the usual chunk: msgspec's way is as good, and faster)
    return _rebuild, (recipe, tuple(getattr(self, f) for f in cls.__struct_fields__),
                      None if raw is None else bytes(raw))


def _rebuild(recipe: Any, values: tuple, raw: Any) -> Any:
    cls = _from_recipe(recipe)
    obj = cls(**dict(zip(cls.__struct_fields__, values)))
    if raw is not None:
        obj.__dict__["_raw"] = raw
    return obj


_struct_reduce = msgspec.Struct.__reduce__
_c.BaseChunk.__reduce__ = _reduce      # (chunks.py is generated: the hook is set here, beside _extend)
_c.Payload.__reduce__ = _reduce


#: What msgspec cannot take in a field's wire name (a lone surrogate cannot even be encoded).
_ODD_KEY = re.compile('[\\\\"\x00-\x1f\ud800-\udfff]')


def _plain_keys(d: dict, extra: tuple, known: set) -> tuple:
    """(d, extra) with every extra key msgspec cannot name a field by (a quote, a backslash, a
    control character, a lone surrogate) renamed to one it can, unique among d's keys and the known fields: its
    value is kept, under that name (the frame's raw bytes, when kept, still have the key)."""
    if not any(_ODD_KEY.search(k) for k in extra):
        return d, extra
    used = set(d) | known
    names = {}
    for k in extra:
        if _ODD_KEY.search(k):
            n = _ODD_KEY.sub("_", k)
            while n in used:
                n += "_"
            used.add(n)
            names[k] = n
    return {names.get(k, k): v for k, v in d.items()}, tuple(names.get(k, k) for k in extra)


def _class_with_extras(obj: dict) -> tuple:
    """(the chunk class for obj, declaring its unknown keys, top level and payload; obj as that
    class takes it)."""
    type_ = obj.get("type")
    cls = chunk_class_for(type_) if isinstance(type_, str) else _c.UnknownChunk
    known = _wire_names(cls)
    top = tuple(k for k in obj if k not in known)
    pcls = _PAYLOAD.get(cls)
    payload = obj.get("payload")
    pextra: tuple[str, ...] = ()
    if pcls is not None and isinstance(payload, dict):
        pknown = _wire_names(pcls)
        pextra = tuple(k for k in payload if k not in pknown)
    if not top and not pextra:
        return cls, obj
    if pextra:
        plain, pextra = _plain_keys(payload, pextra, pknown)
        if plain is not payload:
            obj = dict(obj, payload=plain)
    obj, top = _plain_keys(obj, top, known)
    overrides = [("payload", _extend(pcls, pextra))] if pextra else None
    return _extend(cls, top, overrides), obj


def _json_obj(frame: Any) -> Any:
    """json.loads semantics at msgspec speed: msgspec first, the stdlib for what msgspec refuses
    (lone surrogate escapes, NaN/Infinity).  Raises msgspec's error when both refuse, and a
    UnicodeDecodeError, as msgspec does, for bytes that are not UTF-8: json.loads of bytes would
    take a lone surrogate written as bytes (it decodes them with surrogatepass), so the text is
    decoded first, strictly -- else such bytes were refused or taken by whether the frame held
    something else msgspec refuses (a lone surrogate escape anywhere in it)."""
    try:
        return _untyped.decode(frame)
    except msgspec.DecodeError as exc:
        text = bytes(frame).decode("utf-8")
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            raise exc from None


def decode_frame(frame: Any, frame_index: int = 0, frame_pos: int = 0) -> Any:
    """Decode one frame's JSON text to its typed chunk (raw bytes not attached)."""
    try:
        try:
            return _typed.decode(frame)
        except (msgspec.ValidationError, msgspec.DecodeError):
            pass  # unknown keys or type, or what only json.loads accepts: decode again below
        obj = _json_obj(frame)
        if not isinstance(obj, dict):
            return _typed.decode(frame)  # raises msgspec's "Expected `object`, got ..." error
        cls, obj = _class_with_extras(obj)
        return msgspec.convert(obj, cls)
    except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError) as exc:
        raise from_msgspec(exc, frame, frame_index, frame_pos) from None


def convert_item(obj: Any, frame_index: int = 0, frame_pos: int = 0) -> Any:
    """A decoded JSON value (one element of a JSON-array document) to its typed chunk."""
    try:
        if not isinstance(obj, dict):
            raise msgspec.ValidationError(f"Expected `object`, got `{type(obj).__name__}`")
        cls, obj = _class_with_extras(obj)
        return msgspec.convert(obj, cls)
    except msgspec.MsgspecError as exc:
        raise from_msgspec(exc, msgspec.json.encode(obj), frame_index, frame_pos) from None


def loads_frame(frame: Any, frame_index: int = 0, frame_pos: int = 0) -> Any:
    """Decode one frame's JSON text to exactly what ``json.loads`` returns."""
    try:
        return _json_obj(frame)
    except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError) as exc:
        raise from_msgspec(exc, frame, frame_index, frame_pos) from None


def set_raw(chunk: Any, raw: Any) -> Any:
    """Remember the JSON text a chunk was decoded from, so that it re-encodes to the same bytes."""
    chunk.__dict__["_raw"] = raw
    return chunk


def raw_json(chunk: Any) -> bytes | None:
    """The JSON text a chunk was decoded from, if it was kept, else None.

    Structs are frozen and ``msgspec.structs.replace`` makes a new chunk without it, so it always
    matches the chunk -- unless a nested dict or list of the chunk was mutated in place; call
    :func:`forget_raw` after doing that.  (The native path does not keep the text of delta chunks
    that are byte for byte what the encoder writes anyway; the public ``chunkcodec.raw_json`` gives
    the same bytes for both.)
    """
    d = getattr(chunk, "__dict__", None)
    raw = d.get("_raw") if d else None
    return bytes(raw) if raw is not None else None


def forget_raw(chunk: Any) -> Any:
    """Drop the kept JSON text, after mutating a nested dict or list of the chunk in place."""
    d = getattr(chunk, "__dict__", None)
    if d:
        d.pop("_raw", None)
    return chunk



def decode_document(buf: bytes, pos: int, as_dicts: bool, keep: bool, out: list) -> int:
    """The ``json`` framing: one JSON document, either one chunk or an array of chunks.

    Appends to `out` and returns how many frames it held.  Array elements carry no raw JSON text,
    so they are re-serialized when encoded.
    """
    if not buf.strip(b" \t\r\n"):
        return 0
    try:
        obj = loads_frame(buf, 0, pos)
    except DecodeError as exc:
        if not keep:
            raise
        out.append(InvalidFrame(buf, exc, 0, pos))
        return 1
    if not isinstance(obj, list):
        try:
            out.append(obj if as_dicts else set_raw(decode_frame(buf, 0, pos), buf.strip(b" \t\r\n")))
        except DecodeError as exc:
            if not keep:
                raise
            out.append(InvalidFrame(buf, exc, 0, pos))
        return 1
    for i, item in enumerate(obj):
        try:
            out.append(item if as_dicts else convert_item(item, i, pos))
        except DecodeError as exc:
            if not keep:
                raise
            out.append(InvalidFrame(msgspec.json.encode(item), exc, i, pos))
    return len(obj)
