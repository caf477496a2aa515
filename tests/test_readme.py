"""The README's commands and examples are true."""

import os
import pathlib
import re

import pytest

import chunkcodec

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _blocks(lang):
    return re.findall(rf"```{lang}\n(.*?)```", README, re.S)


def test_setup_commands_are_what_ci_runs():
    setup = README.split("## Set-up", 1)[1].split("##", 1)[0]
    commands = [b.strip() for b in re.findall(r"```sh\n(.*?)```", setup, re.S)]
    assert len(commands) == 2
    ci = (ROOT / ".ci" / "run").read_text()
    for cmd in commands:
        assert cmd in ci, f"README command not run by .ci/run: {cmd}"


def _block(marker):
    found = [b for b in _blocks("python") if marker in b]
    assert len(found) == 1, marker
    return found[0]


def test_quickstart_runs(monkeypatch):
    monkeypatch.chdir(ROOT)
    code = _block("dec = chunkcodec.StreamDecoder()")
    exec(compile(code, "README quickstart", "exec"), {})


def test_accumulation_example_runs(monkeypatch):
    monkeypatch.chdir(ROOT)
    code = _block('pathlib.Path("samples/agent_tool_roundtrip.sse").read_bytes()')
    exec(compile(code, "README accumulation", "exec"), {})


def test_ailoop_example_runs(monkeypatch):
    monkeypatch.chdir(ROOT)
    code = _block("from chunkcodec import ailoop")
    exec(compile(code, "README ailoop", "exec"), {})


def test_ailoop_error_examples_are_exact():
    from chunkcodec import ailoop
    section = README.split("## ailoop StreamChunk", 1)[1].split("\n## ", 1)[0]
    shown = re.findall(r"^    (\S.* \(byte \d+, frame \d+\))$", section, re.M)
    assert len(shown) == 2
    with pytest.raises(chunkcodec.DecodeError) as info:
        list(ailoop.iter_events(b'{"TextDelta":{"delta":"a"}}\n' * 3 + b'{"TextDeltas":{"delta":"a"}}\n'))
    assert str(info.value) == shown[0]
    with pytest.raises(chunkcodec.DecodeError) as info:
        ailoop.decode(b'{"RunStarted":{"run_id":"run-1"}}')
    assert str(info.value) == shown[1]


def test_error_examples_are_exact():
    text = _block(">>> ")
    calls = re.findall(r">>> (.*)\n(?:.*\n)*?(chunkcodec\.errors\.\w+: .*)", text)
    assert len(calls) == 2
    for call, shown in calls:
        with pytest.raises(chunkcodec.DecodeError) as info:
            eval(call, {"chunkcodec": chunkcodec})
        assert f"chunkcodec.errors.{type(info.value).__name__}: {info.value}" == shown


def test_sample_file_is_shipped():
    assert (ROOT / "samples" / "agent_tool_roundtrip.sse").stat().st_size > 1000
    assert (ROOT / "samples" / "agent_runs.ndjson").stat().st_size > 10000
    assert os.access(ROOT / ".ci" / "run", os.X_OK)
