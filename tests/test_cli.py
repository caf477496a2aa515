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
