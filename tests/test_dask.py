"""chunkcodec.dask on a local dask.distributed cluster with two worker processes: the same per-run
results and the same chunks as the local path."""

import json
import sys

import pytest

from chunkcodec import bulk

from conftest import CORPUS

pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


def _rows(df):
    import pyarrow as pa
    return sorted(json.dumps(r, sort_keys=True) for r in pa.Table.from_pandas(df, preserve_index=False).to_pylist())


def test_runs_on_a_cluster_equal_the_local_runs(client, tmp_path):
    # the recorded runs one file each, and the sample log of ten interleaved runs
    files = sorted((CORPUS / "chunks").glob("*.jsonl")) + [CORPUS.parents[2] / "samples" / "agent_runs.ndjson"]
    from chunkcodec import dask as cd
    ddf = cd.read_runs(files)
    assert ddf.npartitions == len(files)
    got = client.compute(ddf).result()
    assert len(client.scheduler_info()["workers"]) == 2
    local = []
    for p in files:
        for row in bulk.runs_to_arrow(bulk.reconstruct(p)).to_pylist():
            local.append(json.dumps({"source": str(p), **row}, sort_keys=True))
    assert list(got.columns) == ["source"] + list(bulk.RUN_COLUMNS)
    assert len(got) == len(local) == len(files) - 1 + 10
    assert _rows(got) == sorted(local)


def test_chunks_split_into_byte_ranges_equal_one_scan(client, tmp_path):
    sys.path.insert(0, str(CORPUS.parents[2] / "bench"))
    import gen
    from chunkcodec import dask as cd
    for framing in ("ndjson", "sse", "rs"):
        p = tmp_path / f"log.{framing}"
        p.write_bytes(gen.framed(gen.interleaved(12, 30, seed=4), framing))
        ddf = cd.read_chunks(p, blocksize=20_000)
        assert ddf.npartitions > 5
        got = client.compute(ddf).result().reset_index(drop=True)
        got = got.astype(object).where(got.notna(), None)
        idx = bulk.scan(p)
        assert got["offset"].tolist() == idx.offset.tolist()
        assert got["length"].tolist() == idx.length.tolist()
        assert got["type"].tolist() == [idx.type_names[t] for t in idx.type]
        assert got["run_id"].tolist() == [idx.run_ids[r] if r >= 0 else None for r in idx.run]
        assert got["text"].tolist() == [idx.text(i) for i in range(len(idx))]


def test_read_chunks_takes_a_lone_surrogate(tmp_path):
    """A delta whose text is half of an emoji (a JavaScript chunker cut it; JSON carries it as a
    lone \\udxxx escape): its text is U+FFFD in the Arrow column, which holds UTF-8, in every
    partition (before: UnicodeEncodeError)."""
    import dask
    from chunkcodec import dask as cd
    lines = [{"type": "text-delta", "runId": "r", "from": "AGENT", "payload": {"id": "t", "text": t}}
             for t in ("a\ud83d", "\ude00b", "c")]
    p = tmp_path / "lone.ndjson"
    p.write_bytes(b"".join(json.dumps(d).encode() + b"\n" for d in lines))
    with dask.config.set(scheduler="synchronous"):
        for blocksize in (None, 90):
            df = cd.read_chunks(p, blocksize=blocksize).compute()
            assert list(df["text"]) == ["a\ufffd", "\ufffdb", "c"]


def test_read_chunks_in_small_ranges_of_random_streams_equal_one_scan(tmp_path):
    """Logs of random streams (tests/util.py random_stream: several framings, SSE fields, CRLF,
    corrupt frames, lone surrogates) split into byte ranges of a few KB: the partitions' frames are
    the one scan's, each once, in order."""
    import random
    import dask
    from util import random_log
    from chunkcodec import dask as cd
    rng = random.Random(8)
    with dask.config.set(scheduler="synchronous"):
        for i in range(6):
            fr, data = random_log(rng, 20000)
            p = tmp_path / f"s{i}.{fr}"
            p.write_bytes(data)
            idx = bulk.scan(p, workers=1)
            df = cd.read_chunks(p, blocksize=rng.choice([700, 3000])).compute()
            assert list(zip(df["offset"], df["length"])) == list(zip(idx.offset.tolist(), idx.length.tolist())), i
