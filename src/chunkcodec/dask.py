"""Dask DataFrames of chunks and of reconstructed runs, so the same code runs on a laptop and on a
Dask cluster (``pip install 'chunkcodec[dask]'``).

``read_chunks``: a row per chunk, one partition per file, or per byte range of a large plain file
(ranges end on frame boundaries, found by each partition itself, so no frame is lost or read
twice).  ``read_runs``: a row per reconstructed run (the columns of ``bulk.runs_to_arrow``), one
partition per file, since a run may span a whole file.  Workers read the files themselves: the
paths must be readable where the workers run.
"""

from __future__ import annotations

import mmap
import os
from typing import Any

import numpy as np

from . import _reference, bulk
from ._jsonout import no_lone_surrogates

__all__ = ["read_chunks", "read_runs", "CHUNK_COLUMNS"]

#: The columns of read_chunks (text: a delta chunk's text, else None).
CHUNK_COLUMNS = ("source", "offset", "length", "type", "run_id", "text")


def _dd() -> Any:
    try:
        import dask.dataframe as dd
    except ImportError:
        raise RuntimeError("chunkcodec.dask needs dask: pip install 'chunkcodec[dask]'") from None
    return dd


def _parse_size(size: Any) -> int | None:
    if size is None or isinstance(size, int):
        return size
    from dask.utils import parse_bytes
    return parse_bytes(size)


def _chunks_frame(path: str, start: int, end: int | None, framing: str) -> Any:
    """One partition of read_chunks: the frames that start in [start, end) of the file, the
    range's ends moved to frame boundaries."""
    import pandas as pd
    import pyarrow as pa
    if path is None:     # the empty frame that gives dask the columns and dtypes
        return pa.table({"source": pa.array([], pa.string()), "offset": pa.array([], pa.int64()),
                         "length": pa.array([], pa.int64()), "type": pa.array([], pa.string()),
                         "run_id": pa.array([], pa.string()), "text": pa.array([], pa.string())}
                        ).to_pandas(types_mapper=pd.ArrowDtype)
    if end is None:
        idx = bulk.scan(path, framing, workers=1)
    else:
        with open(path, "rb") as f:
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        fr = bulk._framing_of(buf, framing)
        a, b = bulk._boundary(buf, start, fr), bulk._boundary(buf, end, fr)
        # a view of the range keeps absolute offsets right: scan it, then shift by a
        idx = bulk._scan(memoryview(buf)[a:b], path, _reference._NAMES[fr], 1)
        idx.offset += a
        idx.text_off[idx.text_off >= 0] += a
        idx.buffer = buf
    run_ids = np.array(idx.run_ids + [None], dtype=object)
    texts = [idx.text(i) for i in range(len(idx))]
    try:
        run_col, text_col = pa.array(run_ids[idx.run], pa.string()), pa.array(texts, pa.string())
    except UnicodeEncodeError:      # a lone surrogate (a half of a pair cut between deltas): U+FFFD
        run_col = pa.array(no_lone_surrogates(list(run_ids[idx.run])), pa.string())
        text_col = pa.array(no_lone_surrogates(texts), pa.string())
    return pa.table({
        "source": pa.array([path] * len(idx), pa.string()), "offset": idx.offset, "length": idx.length,
        "type": pa.array(np.array(bulk.TYPE_NAMES, dtype=object)[idx.type], pa.string()),
        "run_id": run_col, "text": text_col,
    }).to_pandas(types_mapper=pd.ArrowDtype)


def read_chunks(inputs: Any, framing: str = "auto", blocksize: Any = "256MiB") -> Any:
    """A Dask DataFrame with a row per chunk of the logs (columns CHUNK_COLUMNS, Arrow-backed:
    a missing run id or text is <NA>).  Plain files larger than blocksize are split into byte
    ranges; compressed files are one partition each.  Needs pyarrow too."""
    dd = _dd()
    bs = _parse_size(blocksize)
    parts = []
    for path in bulk.iter_sources(inputs):
        if path == "-":
            raise ValueError("read_chunks reads files, not standard input")
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            compressed = bulk._decompressor(path, f.read(4)) is not None
        if bs and not compressed and size > bs:
            parts += [(path, k, min(k + bs, size)) for k in range(0, size, bs)]
        else:
            parts.append((path, 0, None))
    meta = _chunks_frame(None, 0, None, framing)
    return dd.from_map(lambda p: _chunks_frame(p[0], p[1], p[2], framing), parts, meta=meta,
                       enforce_metadata=False)


def _runs_frame(path: str | None, framing: str, strict: bool) -> Any:
    """One partition of read_runs: the runs of one file."""
    import pandas as pd
    runs = [] if path is None else list(bulk.reconstruct(path, framing, strict=strict))
    # Arrow-backed columns: the same dtypes in every partition (a token count missing in one
    # file must not turn that partition's integers into floats) and nested lists kept as lists
    df = bulk.runs_to_arrow(runs).to_pandas(types_mapper=pd.ArrowDtype)
    df.insert(0, "source", pd.array([path] * len(df), dtype=pd.ArrowDtype(__import__("pyarrow").string())))
    return df


def read_runs(inputs: Any, framing: str = "auto", strict: bool = False) -> Any:
    """A Dask DataFrame with a row per reconstructed run (columns "source" and
    bulk.RUN_COLUMNS), one partition per file.  Needs pyarrow too."""
    dd = _dd()
    paths = list(bulk.iter_sources(inputs))
    if "-" in paths:
        raise ValueError("read_runs reads files, not standard input")
    meta = _runs_frame(None, framing, strict)
    return dd.from_map(lambda p: _runs_frame(p, framing, strict), paths, meta=meta, enforce_metadata=False)
