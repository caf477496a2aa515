"""accumulate() pauses the garbage collector while the package works (chunkcodec/_gc.py): it must
leave the collector as it found it and never pause a caller's code, on both paths.  (That it
builds nothing the collector would have to free: test_memory.py.)"""

import gc
import os
import sys
import threading

import pytest

from test_memory import _interleaved_log as _log

from chunkcodec._api import PAUSE_BYTES
from chunkcodec._gc import PAUSED
from chunkcodec.errors import DecodeError


@pytest.fixture
def collector():
    """The collector on, with a low threshold (collections every 50 new containers, so that
    accumulating a small log without the pause is sure to trigger some); restored after."""
    was, threshold = gc.isenabled(), gc.get_threshold()
    gc.enable()
    gc.set_threshold(50, 10, 10)
    yield
    gc.set_threshold(*threshold)
    (gc.enable if was else gc.disable)()


class Collections:
    """Counts the collections that start while `counting` is true."""

    def __init__(self):
        self.counting = False
        self.n = 0

    def __call__(self, phase, info):
        if phase == "start" and self.counting:
            self.n += 1

    def __enter__(self):
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc):
        gc.callbacks.remove(self)


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_left_as_it_was(codec, collector, enabled):
    (gc.enable if enabled else gc.disable)()
    data = _log()
    codec.accumulate(data)
    assert gc.isenabled() is enabled
    codec.accumulate(iter([data[:70000], data[70000:]]))
    assert gc.isenabled() is enabled
    with pytest.raises(DecodeError):
        codec.accumulate(data + b'{"type":"text-delta",\n')
    assert gc.isenabled() is enabled


def test_no_collection_while_accumulating_data(codec, collector):
    data = _log()
    with Collections() as seen:
        seen.counting = True
        runs = codec.accumulate(data)
        seen.counting = False
    assert len(runs) == 30
    # at most the one that the objects made meanwhile trigger when the collector is back on
    assert seen.n <= 1
    # a list of small pieces (a body read in pieces) is the package's alone too
    with Collections() as seen:
        seen.counting = True
        runs = codec.accumulate([data[i:i + 4096] for i in range(0, len(data), 4096)])
        seen.counting = False
    assert len(runs) == 30 and seen.n <= 1
    # and the same work unpaused would have triggered many (the count above can fail)
    acc = codec.Accumulator()
    with Collections() as seen:
        seen.counting = True
        acc.feed(data)
        acc.close()
        list(acc.pop_results())
        seen.counting = False
    assert seen.n > 10


def test_a_callers_iterator_runs_with_the_collector_on(codec, collector):
    """An iterator (or file object) is the caller's code: it runs unpaused; a big piece it gives
    is accumulated paused, a small one as it comes."""
    data = _log()
    assert len(data) > 3 * PAUSE_BYTES
    states = []
    big, small = Collections(), Collections()

    def pieces():
        states.append(gc.isenabled())
        big.counting = True
        yield data[:2 * PAUSE_BYTES]                   # big: paused
        big.counting = False
        states.append(gc.isenabled())
        rest = data[2 * PAUSE_BYTES:]
        small.counting = True
        for i in range(0, len(rest), 4096):            # small: as they come
            yield rest[i:i + 4096]
            states.append(gc.isenabled())
        small.counting = False

    with big, small:
        runs = codec.accumulate(pieces())
    assert len(runs) == 30
    assert len(states) > 10 and all(states)
    assert big.n <= 1          # (the one when the collector is back on)
    assert small.n > 1         # the small pieces were not paused


def test_pauses_nest_across_threads():
    was = gc.isenabled()
    gc.enable()
    try:
        inside, release = threading.Event(), threading.Event()

        def other():
            with PAUSED:
                inside.set()
                release.wait(10)

        t = threading.Thread(target=other)
        with PAUSED:
            assert not gc.isenabled()
            t.start()
            assert inside.wait(10)
        assert not gc.isenabled()          # the other thread's pause is still under way
        release.set()
        t.join(10)
        assert gc.isenabled()
        gc.disable()
        with PAUSED:
            with PAUSED:
                assert not gc.isenabled()
        assert not gc.isenabled()          # off before: left off
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="fork: Linux only here")
def test_a_child_forked_during_a_pause_starts_without_it():
    was = gc.isenabled()
    gc.enable()
    try:
        with PAUSED:
            pid = os.fork()
            if pid == 0:                                   # the child: report through the exit code
                ok = gc.isenabled()
                with PAUSED:
                    ok = ok and not gc.isenabled()
                os._exit(0 if ok and gc.isenabled() else 1)
            _, status = os.waitpid(pid, 0)
            assert not gc.isenabled()                      # the parent's pause goes on
        assert os.waitstatus_to_exitcode(status) == 0
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
