"""Writes samples/agent_runs.ndjson: ten agent runs recorded from real Mastra 1.71
(tests/vectors/corpus/chunks) interleaved as a server handling them at once logs them, one chunk
per line.  The README's main-job command reads it.

    python tools/make_sample_log.py          # (re)write the sample
    python tools/make_sample_log.py --check  # exit 1 if the committed sample is not what this makes

tests/test_bulk.py checks the committed file against this script and its runs against Mastra's
own expected results.
"""
from __future__ import annotations

import pathlib
import random
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHUNKS = ROOT / "tests" / "vectors" / "corpus" / "chunks"
OUT = ROOT / "samples" / "agent_runs.ndjson"
#: one run each, with a runId on every chunk: text, reasoning, tools (parallel, failing, needing
#: approval), a model error, an abort, structured output, sources and files
SCENARIOS = ["a_text_unicode", "b_reasoning_then_text", "c_tool_call_roundtrip", "d_parallel_tool_calls",
             "e_tool_error", "f_model_error_part", "g_abort_signal", "h_structured_output", "j_sources_files",
             "n_tool_approval"]


def sample_log(seed: int = 1771) -> bytes:
    rng = random.Random(seed)
    queues = [[ln for ln in (CHUNKS / f"{s}.jsonl").read_bytes().split(b"\n") if ln.strip()] for s in SCENARIOS]
    out: list[bytes] = []
    while any(queues):
        q = rng.choice([q for q in queues if q])
        out.append(q.pop(0))
    return b"".join(line + b"\n" for line in out)


def main() -> int:
    data = sample_log()
    if "--check" in sys.argv:
        return 0 if OUT.read_bytes() == data else 1
    OUT.write_bytes(data)
    lines = data.count(b"\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(data):,} bytes, {lines:,} chunks, {len(SCENARIOS)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
