"""The command line."""

import subprocess
import sys

from conftest import CORPUS

SSE = CORPUS / "wire" / "agent_tool_roundtrip.sse"


def run(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "chunkcodec", *args], input=stdin, capture_output=True)


def test_cat_reframes_identically():
    body = SSE.read_bytes()
    r = run("cat", str(SSE), "--to", "sse")
    assert r.returncode == 0 and r.stdout == body
    nd = run("cat", str(SSE)).stdout
    back = run("cat", "-", "--from", "ndjson", "--to", "sse", stdin=nd)
    assert back.stdout == body


def test_cat_pretty():
    r = run("cat", str(SSE), "--to", "pretty")
    assert r.returncode == 0
    assert b"tool-call-delta" in r.stdout and b'"Sunny, 21.5\xc2\xb0C."' in r.stdout


def test_cat_bad_input_exit_code_and_message():
    bad = b'data: {"type":"text-delta","payload":{"id":"1","text":"x"}}\n\ndata: {oops}\n\n'
    r = run("cat", "-", stdin=bad)
    where = f"byte {bad.index(b'{oops}') + 1}, frame 1".encode()
    assert r.returncode == 1 and where in r.stderr and r.stdout.count(b"\n") == 1
    k = run("cat", "-", "--errors", "keep", stdin=bad)
    assert k.returncode == 1 and b"skipped bad frame 1" in k.stderr


def test_usage_error():
    assert run("cat").returncode == 2
    assert b"examples" in run("cat", "--help").stdout


def test_reconstruct_cat_and_bench_start_without_numpy():
    # numpy takes longer to import than the bundled sample takes to reconstruct: the commands
    # that make no index columns must not pull it in (scan and stats do, and must still work)
    probe = (
        "import os, sys\n"
        "from chunkcodec import cli\n"
        "out, sys.stdout = sys.stdout, open(os.devnull, 'w')\n"
        "code = cli.main(sys.argv[1:])\n"
        "sys.stdout = out\n"
        "print(code, 'numpy' in sys.modules)\n"
    )
    for args in (["reconstruct", str(SSE)], ["cat", str(SSE)], ["bench", str(SSE), "--repeat", "1"],
                 ["stats", str(SSE)]):
        r = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == [b"0", b"True" if args[0] == "stats" else b"False"], (args, r.stdout)
