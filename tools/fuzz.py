"""Long differential campaigns: the suite's random checks over many more seeds than a test run.

    python tools/fuzz.py streams --seeds 0:200000      # both paths, every way of feeding (~15 min)
    python tools/fuzz.py pieces --seeds 0:30000        # the same, fed in pieces of a few bytes
    python tools/fuzz.py decode --seeds 0:100000       # the decoder on both paths
    python tools/fuzz.py bulk --seeds 0:50000          # the bulk index on both paths; reconstruct
    python tools/fuzz.py workers --seeds 0:1000        # reconstruct on several processes
    python tools/fuzz.py oracle --seeds 100000:200000  # Mastra itself (Node and npm) against us
    python tools/fuzz.py oracle --goals --seeds 0:20000
    python tools/fuzz.py short --seeds 2379:30940      # every stream of four pieces, through Mastra

Each campaign is a randomised check of the suite's with its seed range opened up (decode and bulk
check more of each stream than the suite's tests do), run on the installed build (`pip install
'.[test]'` first):

- streams: tests/util.py random_stream (every chunk type, orders no server writes, several JSON
  styles and framings, corrupted frames), as test_random_streams_of_every_type_accumulate_alike_
  every_way checks it: fed in random pieces with results asked for mid-stream, the same on the
  native and the reference path; and, for a stream not corrupted, the same fed whole, through
  add() and through accumulate().
- pieces: random streams fed in pieces of at most 1, 3, 16, 64 or 300 bytes (every frame cut,
  most of them many times), the same on both paths and, on the native one, as fed whole.
- decode: random streams decoded in random pieces (StreamDecoder, strict and keeping bad frames;
  iter_dicts; iter_chunks re-encoded), the same on both paths, framing given or detected.
- bulk: random streams and logs of them: the native bulk index equals the plain-Python one, and
  bulk.reconstruct gives what an Accumulator gives.
- workers: a random log reconstructed on 2-4 processes (its pieces and ranges made small, so that
  runs span them) gives what one process gives, runs and corrupt regions (test_bulk's check of
  its random logs; about 0.3 s a seed, for the processes' start).
- oracle: tests/util.py mastra_run through Mastra's own MastraModelOutput (tests/mastra_oracle),
  as test_random_runs_reassemble_as_mastra_resolves_them checks it, on the native path.
- short: not random: seed k is the k-th stream of a few of test_mastra_oracle's _PIECES (parts
  that open, go on and end across steps and goals; short_names), through Mastra, on both paths.
  The suite checks 0-2378, every stream of up to three; 2379-30939 are those of four (about 100 s),
  30940-402232 of five (about half an hour; all of them passed when this campaign was added).

A seed that fails is printed with what differed; the exit status is the number of failures (at most
100).  Run it under the sanitizer build (.ci/sanitize's venv, with its LD_PRELOAD) for memory errors.
The test suite runs a fixed few hundred seeds of each.  The first campaigns found two bugs its seeds
had missed: in 150,000 streams, a result() asked for between a tool call's -end and its tool-call
chunk that changed the run (test_accumulate_rules: ..._before_the_call_mastra_made_arrives_...);
in 50,000 bulk seeds, 61 with a frame holding a lone surrogate as bytes after a lone surrogate
escape, taken where it must be refused (test_errors: ..._not_utf8_are_refused_whatever_else_...).
The short streams found three more, which no random run had put together: a reasoning part open
across a goal, a tool call after a step-finish and a text, a data part before a step-finish and a
reasoning-start (test_accumulate_rules: ..._open_across_a_goal_..., ..._after_a_step_finish_...).
"""

from __future__ import annotations

import argparse
import functools
import pathlib
import random
import sys
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "bench")]

from chunkcodec import _reference  # noqa: E402
from chunkcodec._api import Api  # noqa: E402


@functools.lru_cache(None)
def _apis():
    """(native, reference): the public API on each path, as the suite's `both` fixture gives them."""
    from chunkcodec import _core
    return Api(_core), Api(_reference)


def streams(seed: int) -> None:
    import test_accumulate_rules as T
    T.check_random_stream(_apis(), seed)


def pieces(seed: int) -> None:
    import test_accumulate_rules as T
    from util import random_stream
    rng = random.Random(seed)
    framing, data, _ = random_stream(rng)
    most = rng.choice([1, 3, 16, 64, 300])
    cuts, at = [], rng.randrange(1, most + 1)
    while at < len(data):
        cuts.append(at)
        at += rng.randrange(1, most + 1)
    outs = []
    for api in _apis():
        acc = api.Accumulator(framing, errors="keep")
        for a, b in zip([0] + cuts, cuts + [len(data)]):
            acc.feed(data[a:b])
        acc.close()
        outs.append(T._everything(acc))
    assert outs[0] == outs[1], f"in pieces of at most {most} bytes: native != reference"
    whole = _apis()[0].Accumulator(framing, errors="keep")
    whole.feed(data)
    whole.close()
    assert T._everything(whole) == outs[0], f"native: in pieces of at most {most} bytes != whole"


def decode(seed: int) -> None:
    from util import decode_all, outcome, random_stream
    rng = random.Random(seed)
    framing, data, _ = random_stream(rng)
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randrange(20))))
    for fr in (framing, "auto"):
        for opts in ({"errors": "keep"}, {}):
            got = [outcome(lambda api=api: decode_all(api, data, fr, cuts, **opts)) for api in _apis()]
            assert got[0] == got[1], f"StreamDecoder({fr!r}, {opts}) in pieces: native != reference"
        got = [outcome(lambda api=api: list(api.iter_dicts(data, fr, errors="keep"))) for api in _apis()]
        assert got[0] == got[1], f"iter_dicts({fr!r}): native != reference"
        native, reference = (outcome(lambda api=api: [api.impl.to_json(c) for c in api.iter_chunks(data, fr)])
                             for api in _apis())
        assert native == reference, f"iter_chunks({fr!r}) re-encoded: native != reference"


def bulk(seed: int) -> None:
    import pytest
    import test_bulk as TB
    from chunkcodec import bulk as B
    from util import random_log, random_stream
    rng = random.Random(seed)
    if seed % 5 == 0:
        framing, data = random_log(rng, rng.randrange(2000, 60000))
    else:
        framing, data, _ = random_stream(rng)
    native = TB._columns(B.scan(data, framing))
    with pytest.MonkeyPatch.context() as mp:          # (as test_bulk's `reference` fixture)
        mp.setenv("CHUNKCODEC_NO_EXTENSIONS", "1")
        assert native == TB._columns(B.scan(data, framing)), "bulk.scan: native != reference"
    acc = _apis()[0].Accumulator(framing, errors="keep")
    acc.feed(data)
    acc.close()
    assert {r.run_id: r.to_mastra() for r in B.reconstruct(data, framing)} == \
        {k: r.to_mastra() for k, r in acc.results().items()}, "reconstruct != Accumulator"


#: workers(): whether each seed's log went to several processes (a chunk without runId where no run
#: is current keeps a log on one)
_PARALLEL: list = []


def workers(seed: int) -> None:
    import tempfile
    import pytest
    import test_bulk as TB
    from chunkcodec import bulk as B
    from util import random_log
    rng = random.Random(seed)
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(B, "MIN_PARALLEL_BYTES", 1)
        framing, data = random_log(rng, rng.randrange(5000, 60000))
        with tempfile.TemporaryDirectory() as d:
            p = pathlib.Path(d) / f"log.{framing}"
            p.write_bytes(data)
            _PARALLEL.append(TB._as_on_one_core(p, rng, rng.randrange(2, 5), mp))
    finally:
        mp.undo()


class Oracle:
    """Mastra's runs, 300 at a time (one Node process each), checked on the native path."""

    def __init__(self, goals: bool) -> None:
        import test_mastra_oracle as O
        from util import npm_project
        self.O, self.goals, self.dir, self.batch = O, goals, npm_project(O.HERE, O.FILES), {}

    def stream(self, seed: int) -> list:
        from util import mastra_run
        return mastra_run(random.Random(seed), goals=self.goals)

    def apis(self) -> tuple:
        return _apis()[:1]

    def __call__(self, seed: int) -> None:
        if seed not in self.batch:
            seeds = range(seed, seed + 300)
            self.batch = dict(zip(seeds, self.O.oracle(self.dir, [self.stream(s) for s in seeds])))
        res = self.batch.pop(seed)
        for api in self.apis():
            self.O.check_run(api, seed, res, random.Random(seed))


class Short(Oracle):
    """Every short stream of parts, steps and goals by its index (test_mastra_oracle.short_names),
    through Mastra, checked on both paths."""

    def stream(self, seed: int) -> list:
        return self.O.short_stream(self.O.short_names(seed))

    def apis(self) -> tuple:
        return _apis()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("campaign", choices=("streams", "pieces", "decode", "bulk", "workers", "oracle", "short"))
    ap.add_argument("--seeds", default="0:10000", help="A:B, the seeds A to B-1")
    ap.add_argument("--goals", action="store_true", help="oracle: runs with goal loops")
    args = ap.parse_args(argv)
    lo, hi = (int(x) for x in args.seeds.split(":"))
    check = {"streams": streams, "pieces": pieces, "decode": decode, "bulk": bulk, "workers": workers}.get(
        args.campaign) or (Short if args.campaign == "short" else Oracle)(args.goals)
    failed = []
    t0 = time.time()
    for seed in range(lo, hi):
        try:
            check(seed)
        except Exception as exc:
            failed.append(seed)
            print(f"seed {seed}: {type(exc).__name__}: {str(exc)[:2000]}", flush=True)
            traceback.print_exc(limit=2)
        if (seed - lo + 1) % 5000 == 0:
            print(f"  {seed - lo + 1} seeds, {time.time() - t0:.0f} s, {len(failed)} failed", flush=True)
    on = f" ({sum(_PARALLEL)} on several processes)" if _PARALLEL else ""
    print(f"{args.campaign}: seeds {lo}-{hi - 1}{on}, {time.time() - t0:.0f} s, failed: {failed or 'none'}")
    return min(len(failed), 100)


if __name__ == "__main__":
    sys.exit(main())
