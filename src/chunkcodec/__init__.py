"""chunkcodec: fast, exact decoding, encoding and reassembly of LLM agent stream chunks.

The native extension is used when it is importable and ``CHUNKCODEC_NO_EXTENSIONS`` is not set;
otherwise the plain-Python reference path, which has the same API and results.
"""

from __future__ import annotations

import os as _os

from . import _reference
from ._results import PartialJSON, RunOutput, StepResult
from ._api import Api as _Api
from ._model import AnyChunk, forget_raw
from .chunks import *  # noqa: F401,F403
from .chunks import __all__ as _chunk_names
from .errors import (ChunkError, DecodeError, EncodeError, FrameTooLarge, InvalidFrame,
                     TruncatedError, ValidationError)

if _os.environ.get("CHUNKCODEC_NO_EXTENSIONS"):
    _impl = _reference
else:
    try:
        from . import _core as _impl
    except ImportError:  # pragma: no cover - a build without the extension
        _impl = _reference

#: "native" or "reference": which implementation this process uses.
IMPLEMENTATION = "reference" if _impl is _reference else "native"

_api = _Api(_impl)
StreamDecoder = _impl.StreamDecoder
Encoder = _impl.Encoder
decode = _impl.decode
loads = _impl.loads
iter_chunks = _api.iter_chunks
iter_dicts = _api.iter_dicts
iter_frames = _api.iter_frames
aiter_chunks = _api.aiter_chunks
encode = _api.encode
encode_stream = _api.encode_stream
Accumulator = _api.Accumulator
accumulate = _api.accumulate
#: The exact JSON text ``encode`` writes for a chunk: for a chunk decoded from bytes and not
#: replaced since, the bytes it was decoded from.
raw_json = _impl.to_json

__version__ = "0.1.0"

__all__ = [
    "Accumulator", "accumulate", "RunOutput", "StepResult", "PartialJSON",
    "StreamDecoder", "Encoder", "decode", "loads", "iter_chunks", "iter_dicts", "iter_frames", "aiter_chunks",
    "encode", "encode_stream", "raw_json", "forget_raw", "AnyChunk", "IMPLEMENTATION",
    "ChunkError", "DecodeError", "ValidationError", "FrameTooLarge", "TruncatedError",
    "EncodeError", "InvalidFrame",
] + list(_chunk_names)
