"""Agents streamed over HTTP from a live Mastra server, read as a Python service reads them.

tests/mastra_server/server.mjs runs real Mastra (@mastra/core 1.71.0's agents and loop behind
@mastra/hono's routes on @hono/node-server, the versions the corpus was recorded with, pinned by
its package-lock.json) on 127.0.0.1, with scripted mock models: a tool call streamed and run then
a second step, reasoning with a signature and text past the BMP, a provider error mid-text,
structured output whose first answer an output processor sends back to be tried again, two tool
calls streamed interleaved (one tool throws, one writes data-* parts), an approval, sources and
files, a sub-agent called as a tool, text an output processor blocks, reasoning and text with
OpenAI-style provider metadata before a streamed call that needs approval; steps tried again
after a tool step, twice, and past the processor's retry limit; steps that begin with reasoning
after a tool step; a step that goes on for a finish reason that is not final; interleaved text
blocks; a provider-executed tool; a tool that suspends itself; a model cut off at its token
limit; processors that abort on a streamed chunk and before the model is called; processors
that write data-* parts while the model streams and after each step; after a tool step, a step
that goes on, one sent back, then the answer; a step sent back before a call that needs
approval; a processor that rewrites the streamed text; arguments the tool's schema refuses; two
calls in a step, one needing approval; redacted reasoning; tool arguments that are not JSON; a
provider error after a tool step; a tool that yields as it goes; a reasoning step sent back;
the provider's warnings, no response metadata, cached and reasoning tokens and provider metadata
on the finish; a sub-agent that calls a tool of its own; a call to a tool the agent does not
have; text and reasoning left open at a step's end and streamed on in the next step, a
reasoning-start with no delta, a text-start's metadata waiting across the step's end; a tool
without arguments; a content filter; two signed reasoning blocks, an id reused in the next step;
a tool whose output fails its schema; a tool the client runs (no execute), after a step sent
back too; a provider that reports no usage; control characters and a surrogate pair split across
two deltas; structured output made by a model of its own; text blocks numbered per response,
the same ids in both steps; a sub-agent that fails; tools that return nothing, a string and null,
one writing tool-output that is no agent's chunk; reasoning and nothing else; no output at all;
a tool that writes a data part twice under one id, and a transient one; a provider-executed
tool whose call and result carry different Responses item ids; tools whose output the model is
sent in another form (toModelOutput), one of them returning null; structured output with an
output processor, and followed by a provider error, with and without one; cache writes
reported over two steps; a tool with a title of its own; tools run as background tasks: one left
running (a placeholder result), awaited ones that complete, with and without an output for the
model, and one that fails.  Each agent's
`POST /api/agents/:id/stream` body is read with httpx as it arrives and fed to an Accumulator
piece by piece, on both paths; what we reassemble
must be what the server's own MastraModelOutput resolves for the same agent, body and runId (its
/expected route), every field the corpus's expected files record (the ids Mastra draws at random
aside); and our message parts are held to the message the server keeps.  A workflow whose step
runs an agent is streamed too (its records ended by 0x1E), the agent's run nested in it; and a
run stopped for a tool call's approval, then approved or declined, the stream after the decision
fed to the same Accumulator, and one stopped by a tool that suspended itself, then resumed with
resumeData; and a workflow whose step is an agent itself.

Needs node and npm (the packages are installed once, from the npm registry); skipped without them
unless CHUNKCODEC_REQUIRE_ORACLE is set, as .ci/run sets it.
"""

import contextlib
import io
import json
import pathlib
import re
import selectors
import subprocess
import tempfile
import time
import uuid

import pytest

from test_accumulate import actual_view, expected_view
from util import NODE_ENV, mastra_unavailable, npm_project

httpx = pytest.importorskip("httpx")

HERE = pathlib.Path(__file__).parent / "mastra_server"
FILES = ("package.json", "package-lock.json", "server.mjs")


@pytest.fixture(scope="module")
def server():
    """The server's base URL, the server started for this module and stopped after it."""
    d = npm_project(HERE, FILES)
    err = tempfile.TemporaryFile()                # (a pipe nobody reads could fill and stop it)
    proc = subprocess.Popen(["node", "server.mjs"], cwd=d, stdout=subprocess.PIPE, stderr=err, env=NODE_ENV)
    try:
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        line = b""
        deadline = time.monotonic() + 60
        while not line.endswith(b"\n") and time.monotonic() < deadline and proc.poll() is None:
            if sel.select(timeout=1):
                b = proc.stdout.read1(1)
                if not b:
                    break
                line += b
        if not line.startswith(b"listening "):
            proc.kill()
            proc.wait()
            err.seek(0)
            mastra_unavailable(f"the Mastra server did not start: {line!r} {err.read()[-2000:]!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        err.close()


AGENTS = {
    "weather": "What is the weather in Paris?",
    "reasoning": "Say hi",
    "failing": "Tell me something",
    "guarded": "Answer in JSON",
    "tools": "Run both tools",
    "approval": "Delete thing 7",
    "sources": "Cite your sources",
    "delegating": "Ask the helper",
    "blocked": "Say something not allowed",
    "mixed": "Think, then remove thing 9",
    "retried": "What is the weather in Oslo?",
    "twice": "Answer",
    "stubborn": "Try",
    "chain": "Rome, then Oslo",
    "onward": "Go on",
    "interleave": "Think and write",
    "provexec": "Search for it",
    "suspending": "Do x",
    "cutoff": "Write a lot",
    "streamcut": "Tell me",
    "inputblock": "Hi",
    "tagged": "Look it up",
    "noted": "Look it up",
    "onagain": "Go on",
    "backoff": "Delete thing 3",
    "redact": "Tell me the plan",
    "badargs": "Weather?",
    "twocalls": "Weather, then delete 1",
    "redacted": "Think in secret",
    "malformed": "Weather?",
    "lateerr": "Weather in Rome?",
    "gentool": "Count to two",
    "reasontool": "Think, then look it up",
    "warned": "Weather in Nice?",
    "deeper": "Go deep",
    "unknown": "Teleport me",
    "openspan": "Go",
    "openthought": "Go",
    "noargs": "Time?",
    "filtered": "Say it",
    "thoughts": "Think",
    "badout": "Lie",
    "clienttool": "Show Rome",
    "retryclient": "Show Oslo",
    "nousage": "Hi",
    "controls": "Hi",
    "structured": "What is it?",
    "numbered": "Oslo?",
    "subfail": "Go",
    "voidtool": "Go",
    "thinkonly": "Hm",
    "empty": "Hm",
    "status": "Go",
    "itemids": "Search",
    "modelout": "Look",
    "objerr": "Go",
    "objerrp": "Go",
    "objproc": "Go",
    "cachewrite": "Bern",
    "titled": "Lyon",
    "fallback": "Hi",
    "later": "Go",
    "waited": "Go",
    "bgmodel": "Go",
    "bgfail": "Go",
    "bgnull": "Go",
}


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _ids_alike(x):
    """x with the ids Mastra draws at random for each run (a sub-agent's runId, thread and resource
    ids) made one: the HTTP run and the /expected run of an agent differ only there."""
    return json.loads(_UUID.sub("<uuid>", json.dumps(x)))


def _run(runs, run_id):
    (run,) = [r for r in runs if r.run_id == run_id]
    return run


def _served(server, codec, agent, messages):
    """The agent's run read from its HTTP stream as it arrives (accumulate()), and what the same
    agent, body and runId resolve to in the server (its /expected route)."""
    body = {"messages": messages, "runId": f"run-{agent}"}
    with httpx.stream("POST", f"{server}/api/agents/{agent}/stream", json=body, timeout=60) as r:
        out = _run(codec.accumulate(r.iter_raw()), body["runId"])
    return out, httpx.post(f"{server}/expected/{agent}", json=body, timeout=60).json()


@pytest.mark.parametrize("agent", AGENTS)
def test_an_agent_streamed_over_http_reassembles_as_the_server_resolves_it(server, codec, agent):
    body = {"messages": AGENTS[agent], "runId": f"run-{agent}"}
    acc = codec.Accumulator()                     # (the framing found from the first bytes)
    raw = bytearray()
    with httpx.stream("POST", f"{server}/api/agents/{agent}/stream", json=body, timeout=60) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        for piece in r.iter_raw():                # as the network delivers it
            raw += piece
            acc.feed(piece)
    acc.close()
    assert raw.endswith(b"data: [DONE]\n\n")
    exp = httpx.post(f"{server}/expected/{agent}", json=body, timeout=60).json()
    out = acc.result()
    assert out.run_id == body["runId"] and not out.invalid_frames
    want, got = _ids_alike(expected_view(exp)), _ids_alike(actual_view(out, exp))
    for f in want:
        assert got[f] == want[f], f
    # the body whole, as accumulate() takes it: the same run (a sub-agent's is a run of its own)
    runs = codec.accumulate(bytes(raw))
    assert _ids_alike(actual_view(_run(runs, body["runId"]), exp)) == got
    # (and no other run: a structuring model's object chunks carry its run id, but are this run's)
    assert len(runs) == (2 if agent in ("delegating", "deeper", "subfail") else 1), [r.run_id for r in runs]
    if agent == "subfail":
        (sub,) = [r for r in runs if r.run_id != body["runId"]]
        assert (sub.text, sub.status, sub.error["message"], out.text) == ("Half ", "failed", "helper broke", "It failed.")
    if agent in ("delegating", "deeper"):
        (sub,) = [r for r in runs if r.run_id != body["runId"]]
        assert (sub.text, out.text) == {"delegating": ("Helper says hi.", "The helper answered."),
                                        "deeper": ("Sunny there.", "Deep enough.")}[agent]
        # (the sub-agent's own tool call is its, not the parent's)
        assert [c.payload.toolCallId for c in sub.tool_calls] == ([] if agent == "delegating" else ["c-dh"])
        assert [c.payload.toolCallId for c in out.tool_calls] == ["c-h" if agent == "delegating" else "c-dp"]


def _persisted(exp):
    """The parts of the message the server keeps for the run (its message list's response, as
    memory would store it), without their createdAt times."""
    return [{k: v for k, v in p.items() if k != "createdAt"} for m in exp["dbMessages"] for p in m["content"]["parts"]]


@pytest.mark.parametrize("agent", AGENTS)
def test_the_message_parts_are_those_the_server_keeps(server, codec, agent):
    """RunOutput.parts follows buildMessagesFromChunks with the loop's step boundaries and
    rollbacks (the oracle checks that), plus the data-* parts where they arrive; the server's own
    message holds the same parts, data-* at the same places, but where the wire does not say what
    it knows (README, "parts"): a model error is an error part there; a tool error's errorText is
    the Error's message, which JSON leaves out of the tool-error chunk (a message is no own
    enumerable property)."""
    out, exp = _served(server, codec, agent, AGENTS[agent])
    ours, theirs = _ids_alike(out.parts), _ids_alike(_persisted(exp))
    if agent in ("failing", "lateerr", "objerr", "objerrp"):
        error = {"failing": {"name": "ProviderError", "message": "upstream closed the stream"},
                 "lateerr": {"name": "Error", "message": "boom late"}}.get(agent, {"name": "Error", "message": "late failure"})
        assert theirs == ours + [{"type": "error", "error": error}]
    else:
        if agent in ("tools", "unknown", "subfail"):
            # (the server's errorText is the Error's message; the chunk has only its name for a
            # tool the agent lacks, ToolNotFoundError, whose message is in the next step-finish's
            # history, which we do not read, and for a sub-agent that failed its cause's; the
            # server may give that failed call the sub-agent's thread and resource ids as a
            # result, in some runs and not others)
            call, text, their_text = {
                "tools": ("c-b", "broken: nope", "broken: nope"),
                "unknown": ("c-un", '{"name":"ToolNotFoundError"}', 'Tool "teleport" not found. '),
                "subfail": ("c-sf", "Failed agent tool execution", "[Agent:subfail] - Failed agent tool execution")}[agent]
            (failed,) = [p["toolInvocation"] for p in ours if p.get("toolInvocation", {}).get("toolCallId") == call]
            (their,) = [p["toolInvocation"] for p in theirs if p.get("toolInvocation", {}).get("toolCallId") == call]
            assert text in failed["errorText"] and their["errorText"].startswith(their_text), (failed, their)
            failed["errorText"] = their["errorText"]
            if agent == "subfail" and "result" in their:
                assert set(their["result"]) == {"subAgentThreadId", "subAgentResourceId"} and "result" not in failed
                failed["result"] = their["result"]
        assert ours == theirs
    assert any(p["type"].startswith("data-") for p in theirs) == (agent in ("tools", "tagged", "noted", "status"))


def test_the_scripted_runs_are_what_they_are_meant_to_be(server):
    """The scenarios hold what the module says they do (else a passing test above says little)."""
    runs = {a: httpx.post(f"{server}/expected/{a}", json={"messages": m, "runId": "r"}, timeout=60).json()
            for a, m in AGENTS.items()}
    w = runs["weather"]
    assert [s["finishReason"] for s in w["steps"]["value"]] == ["tool-calls", "stop"]
    assert w["toolResults"]["value"][0]["payload"]["result"]["sky"] == "sunny"
    assert w["usage"]["value"]["inputTokens"] == 65
    r = runs["reasoning"]
    assert r["reasoning"]["value"][0]["payload"]["providerMetadata"] == {"anthropic": {"signature": "sig-1"}}
    assert "👋🏽" in r["text"]["value"] and "\u2028" in r["text"]["value"]
    f = runs["failing"]
    assert f["status"] == "failed" and f["error"]["message"] == "upstream closed the stream"
    g = runs["guarded"]
    assert [(s["finishReason"], s.get("tripwire")) for s in g["steps"]["value"]] == [
        ("retry", {"reason": "Say it again", "retry": True, "processorId": "once-more"}), ("stop", None)]
    assert g["object"]["value"] == {"answer": "second"}
    t = runs["tools"]
    assert [r["payload"]["toolCallId"] for r in t["toolResults"]["value"]] == ["c-a"]     # (c-b threw)
    assert [p["type"] for p in _persisted(t)].count("data-progress") == 2
    a = runs["approval"]
    assert a["status"] == "suspended" and a["suspendPayload"]["toolCallId"] == "c-del"
    fb = runs["fallback"]     # (the first model of its list throws: the run is the second's)
    assert (fb["status"], fb["text"]["value"], fb["steps"]["value"][0]["responseModelId"]) == (
        "success", "From the backup.", "mock-model-id")
    src = runs["sources"]
    assert (len(src["sources"]["value"]), len(src["files"]["value"])) == (2, 1)
    d = runs["delegating"]
    assert d["toolResults"]["value"][0]["payload"]["result"]["text"] == "Helper says hi."
    b = runs["blocked"]
    assert b["tripwire"]["processorId"] == "censor" and b["steps"]["value"][0]["finishReason"] == "tripwire"
    m = runs["mixed"]
    assert m["status"] == "suspended" and m["suspendPayload"]["args"] == {"id": 9}
    assert m["reasoning"]["value"][0]["payload"]["providerMetadata"]["openai"]["reasoningEncryptedContent"] == "e"
    reasons = {a: [s["finishReason"] for s in runs[a]["steps"]["value"]] for a in
               ("retried", "twice", "stubborn", "chain", "onward", "interleave")}
    assert reasons == {"retried": ["tool-calls", "retry", "stop"], "twice": ["retry", "retry", "stop"],
                       "stubborn": ["retry", "tripwire"], "chain": ["tool-calls", "tool-calls", "stop"],
                       "onward": ["other", "stop"], "interleave": ["tool-calls", "stop"]}
    kinds = {a: [p["type"] for p in _persisted(runs[a])] for a in ("retried", "twice", "chain", "onward")}
    assert kinds == {"retried": ["text", "tool-invocation", "step-start", "text"], "twice": ["reasoning", "text"],
                     "chain": ["tool-invocation", "step-start", "reasoning", "tool-invocation", "step-start", "text"],
                     "onward": ["reasoning", "text", "step-start", "text"]}
    assert runs["stubborn"]["tripwire"]["retry"] is True and runs["stubborn"]["text"]["value"] == "Attempt 1"
    assert [p.get("providerExecuted") for p in _persisted(runs["provexec"])][:1] == [True]
    assert runs["suspending"]["status"] == "suspended"
    assert runs["suspending"]["suspendPayload"]["suspendPayload"] == {"reason": "confirm x"}
    assert runs["cutoff"]["finishReason"]["value"] == "length"
    assert runs["streamcut"]["tripwire"]["processorId"] == "nosecrets" and runs["streamcut"]["text"]["value"] == "Public "
    assert runs["inputblock"]["tripwire"] == {"reason": "Bad input", "metadata": {"k": 1}, "processorId": "gate"}
    assert [s["finishReason"] for s in runs["onagain"]["steps"]["value"]] == ["tool-calls", "other", "retry", "stop"]
    assert runs["onagain"]["text"]["value"] == "X Z" and runs["onagain"]["steps"]["value"][-1]["text"] == "X Z"
    assert runs["backoff"]["status"] == "suspended" and runs["backoff"]["text"]["value"] == "Once.Deleting it."
    assert runs["redact"]["text"]["value"] == "my ****** plan"
    (bad,) = runs["badargs"]["toolResults"]["value"]          # (the refusal is the tool's result)
    assert "validationErrors" in json.dumps(bad["payload"]["result"]) and runs["badargs"]["text"]["value"] == "Oops."
    assert runs["twocalls"]["status"] == "suspended" and runs["twocalls"]["suspendPayload"]["toolCallId"] == "c-r1"
    assert [p["type"] for p in _persisted(runs["redacted"])] == ["reasoning", "text"]
    assert runs["malformed"]["toolCalls"]["value"][0]["payload"]["args"] == {}      # (not JSON: Mastra's {})
    assert runs["lateerr"]["status"] == "failed" and runs["lateerr"]["error"]["message"] == "boom late"
    assert [r["payload"]["toolCallId"] for r in runs["gentool"]["toolResults"]["value"]] == ["c-gt"]
    assert [s["finishReason"] for s in runs["reasontool"]["steps"]["value"]] == ["tool-calls", "retry", "stop"]
    kinds = {a: [p["type"] for p in _persisted(runs[a])] for a in ("tagged", "noted")}
    assert kinds == {"tagged": ["data-tag", "text", "tool-invocation", "step-start", "data-tag", "text"],
                     "noted": ["text", "tool-invocation", "data-note", "step-start", "text", "data-note"]}
    w = runs["warned"]
    assert (w["usage"]["value"]["cachedInputTokens"], w["usage"]["value"]["reasoningTokens"]) == (20, 6)
    assert w["providerMetadata"]["value"] == {"openai": {"responseId": "resp_2", "cachedPromptTokens": 20}}
    # (Mastra drops the model's stream-start, and the warnings in it, before the wire)
    assert w["warnings"]["value"] == [] and _UUID.fullmatch(w["steps"]["value"][0]["responseId"])
    (sub,) = runs["deeper"]["toolResults"]["value"]
    assert [r["toolCallId"] for r in sub["payload"]["result"]["subAgentToolResults"]] == ["c-dh"]
    (unknown,) = [p["toolInvocation"] for p in _persisted(runs["unknown"]) if p["type"] == "tool-invocation"]
    assert unknown["state"] == "output-error" and unknown["errorText"].startswith('Tool "teleport" not found')
    parts = {a: [(p["type"], p.get("text", p.get("reasoning")), p.get("providerMetadata")) for p in _persisted(runs[a])]
             for a in ("openspan", "openthought")}
    assert parts == {
        "openspan": [("text", "Open ", None), ("tool-invocation", None, None), ("step-start", None, None),
                     ("text", "more text", None)],
        "openthought": [("reasoning", "Open thought", None), ("tool-invocation", None, None),
                        ("reasoning", "", {"anthropic": {"signature": "empty"}}), ("step-start", None, None),
                        ("reasoning", " and more", {"anthropic": {"signature": "late"}}), ("text", "Then.", None)]}
    assert runs["noargs"]["toolCalls"]["value"][0]["payload"]["args"] == {}
    assert runs["filtered"]["finishReason"]["value"] == "content-filter"
    th = runs["thoughts"]
    assert [(r["payload"]["id"], r["payload"]["providerMetadata"]["anthropic"]["signature"]) for r in th["reasoning"]["value"]] \
        == [("r1", "s3"), ("r2", "s2")]
    assert [r["payload"]["providerMetadata"]["anthropic"]["signature"] for r in th["steps"]["value"][0]["reasoning"]] == ["s1", "s2"]
    (bad,) = runs["badout"]["toolResults"]["value"]
    assert bad["payload"]["result"]["error"] is True and "validation failed" in bad["payload"]["result"]["message"]
    ct = runs["clienttool"]
    assert (ct["status"], ct["finishReason"]["value"], ct["toolResults"]["value"]) == ("success", "tool-calls", [])
    rc = runs["retryclient"]
    assert [s["finishReason"] for s in rc["steps"]["value"]] == ["retry", "tool-calls"] and rc["text"]["value"] == "Okay. "
    assert [p["toolInvocation"]["state"] for p in _persisted(rc) if p["type"] == "tool-invocation"] == ["call"]
    assert runs["nousage"]["usage"]["value"] == {"totalTokens": 0, "raw": {"inputTokens": {}, "outputTokens": {}}}
    assert runs["controls"]["text"]["value"] == 'a\x00b\x1fc\x7f x\U0001f600y \u2029\\"q"'
    assert runs["structured"]["object"]["value"] == {"answer": 42}
    nb = [(p["type"], p.get("text")) for p in _persisted(runs["numbered"])]
    assert nb == [("text", "Checking. "), ("tool-invocation", None), ("step-start", None), ("text", "Done.")]
    assert runs["subfail"]["toolResults"]["value"] == [] and runs["subfail"]["text"]["value"] == "It failed."
    vt = {p["toolInvocation"]["toolCallId"]: (p["toolInvocation"]["state"], p["toolInvocation"].get("result"))
          for p in _persisted(runs["voidtool"])}
    assert vt == {"c-v1": ("call", None), "c-v2": ("result", "just words"), "c-v3": ("result", None)}
    assert (runs["thinkonly"]["text"]["value"], runs["thinkonly"]["reasoningText"]["value"]) == ("", "Just thinking.")
    assert (runs["empty"]["text"]["value"], _persisted(runs["empty"])) == ("", [])
    # (the server keeps both data parts of the one id, without the id, and not the transient one)
    assert [p.get("data") for p in _persisted(runs["status"]) if p["type"].startswith("data-")] == [
        {"state": "working"}, {"state": "done"}]
    (ws,) = [p for p in _persisted(runs["itemids"]) if p["type"] == "tool-invocation"]
    assert ws["providerMetadata"] == {"openai": {"itemId": "ws_call", "resultItemId": "ws_out"}}
    mo = {p["toolInvocation"]["toolCallId"]: p.get("providerMetadata") for p in _persisted(runs["modelout"])
          if p["type"] == "tool-invocation"}
    assert mo == {"c-mo": {"mastra": {"modelOutput": {"type": "text", "value": "3 rows"}}}, "c-mn": {"openai": {"itemId": "fc_1"}}}
    # (an error after the object rejects it, processors or not)
    assert [(runs[a]["object"]["ok"], runs[a]["status"]) for a in ("objerr", "objerrp")] == [(False, "failed")] * 2
    assert runs["objproc"]["object"]["value"] == {"answer": "y"}
    cw = runs["cachewrite"]["usage"]["value"]
    assert (cw["inputTokens"], cw["cacheCreationInputTokens"]) == (21, 7)
    assert [p.get("title") for p in _persisted(runs["titled"]) if p["type"] == "tool-invocation"] == ["Weather forecast"]
    # background tasks: a placeholder result while the task runs; an awaited task's result twice
    # (the task's hook and the loop each send it), the message's invocation written by the hook
    bg = {a: ([(r["payload"]["result"], r["payload"]["providerMetadata"]["mastra"]["backgroundTask"]["status"])
               for r in runs[a]["toolResults"]["value"]],
              [(p["toolInvocation"].get("result", p["toolInvocation"].get("errorText")), p.get("providerMetadata"))
               for p in _ids_alike(_persisted(runs[a])) if p["type"] == "tool-invocation"])
          for a in ("later", "waited", "bgmodel", "bgfail", "bgnull")}
    ((placeholder, status),) = bg["later"][0]
    assert placeholder.startswith("Background task started. Task ID: ") and status == "running"
    done = {"taskId": "<uuid>", "status": "completed"}
    assert bg["waited"] == ([({"n": 3, "squared": 9}, "completed")] * 2,
                            [({"n": 3, "squared": 9}, {"mastra": {"modelOutput": None, "backgroundTask": done}})])
    assert bg["bgmodel"][1] == [({"n": 3}, {"mastra": {"modelOutput": {"type": "text", "value": "n is 3"}, "backgroundTask": done}})]
    assert bg["bgfail"] == ([], [("no luck with 3", {"mastra": {"modelOutput": None, "backgroundTask": dict(done, status="failed")}})])
    assert bg["bgnull"] == ([(None, "completed")] * 2, [(None, {"mastra": {"modelOutput": None, "backgroundTask": done}})])


def test_what_the_wire_does_not_show(server, codec):
    """Two agents whose output processors act where no chunk tells of it; what we give for them
    is pinned here, and the README says so ("What the wire does not show").  "final": a
    processOutputResult that aborts once the run is over (the stream ends as usual): Mastra
    resolves the text "", finish reason "other" and the tripwire, we the run as the wire shows it.
    "quiet": a processOutputStep that never trips, on a run that goes on without a tool call:
    Mastra re-reads the text from its message list at the finish and gives the last step all of
    it, we the step's own text (nothing says the agent has processors)."""
    for agent, theirs, ours in (
            ("final", {"text": "", "finishReason": "other",
                       "tripwire": {"reason": "Rejected at the end", "processorId": "ender"}},
             {"text": "All done.", "finishReason": "stop", "tripwire": None}),
            ("quiet", {"lastStepText": "First part. Second part."}, {"lastStepText": "Second part."})):
        out, exp = _served(server, codec, agent, "Go")
        want, got = _ids_alike(expected_view(exp)), _ids_alike(actual_view(out, exp))
        differ = {f for f in want if got[f] != want[f]}
        if agent == "final":
            assert differ == {"text", "finishReason", "tripwire"}, differ
            assert {f: want[f] for f in differ} == theirs and {f: got[f] for f in differ} == ours
        else:
            assert differ == {"steps"}, differ
            assert want["steps"][:-1] == got["steps"][:-1]
            assert {k: v for k, v in want["steps"][-1].items() if k != "text"} == \
                {k: v for k, v in got["steps"][-1].items() if k != "text"}
            assert {"lastStepText": want["steps"][-1]["text"]} == theirs
            assert {"lastStepText": got["steps"][-1]["text"]} == ours


def test_a_part_repeated_in_a_later_step(server, codec):
    """Where we part from the server on purpose: its message list merges each step's parts into
    the message by content (MessageMerger.pushNewPart: a part whose text, reasoning, file or data
    the message already holds as often is not added), so a step that repeats a text of an
    earlier step word for word loses it there; we keep it, as the stream has it (README,
    "parts").  The run's fields agree."""
    out, exp = _served(server, codec, "repeats", "Go")
    want, got = _ids_alike(expected_view(exp)), _ids_alike(actual_view(out, exp))
    assert got == want and [s["text"] for s in want["steps"]] == ["Again. ", "Again. "]
    ours, theirs = _ids_alike(out.parts), _ids_alike(_persisted(exp))
    assert [p["type"] for p in ours] == ["text", "tool-invocation", "step-start", "text", "tool-invocation"]
    assert theirs == ours[:3] + ours[4:]


def test_a_tool_call_id_reused_in_a_later_step(server, codec):
    """Where we part from the server on purpose, a second time: a provider that numbers its tool
    call ids per response ("reuse": call_0 in each step).  The server's message list keeps one
    invocation per toolCallId, so the second call merges into the first: the kept part has the
    first call's arguments and the last call's result, and the model, sent that history, never
    sees its second call answered and calls again until maxSteps.  The run's fields agree; our
    parts keep one invocation per call, as the stream has them (README, "parts")."""
    out, exp = _served(server, codec, "reuse", "Rome and Oslo")
    want, got = _ids_alike(expected_view(exp)), _ids_alike(actual_view(out, exp))
    assert got == want and [s["finishReason"] for s in want["steps"]] == ["tool-calls"] * 5
    theirs = _persisted(exp)
    assert [p["type"] for p in theirs] == ["tool-invocation", "step-start"]
    assert (theirs[0]["toolInvocation"]["args"], theirs[0]["toolInvocation"]["result"]["city"]) == ({"city": "Rome"}, "Oslo")
    calls = [p["toolInvocation"] for p in out.parts if p["type"] == "tool-invocation"]
    assert [c["args"]["city"] for c in calls] == ["Rome"] + ["Oslo"] * 4
    assert [p["type"] for p in out.parts] == ["tool-invocation", "step-start"] * 4 + ["tool-invocation"]


def test_a_workflow_streamed_over_http_gives_its_agents_run(server, codec):
    """A workflow's stream (records ended by 0x1E, the framing told from the first bytes) read
    piece by piece as it arrives: every record decodes to its typed chunk and encodes back to its
    exact bytes; and the agent a step runs, whose chunks come nested in workflow-step-output,
    reassembles as its own run to what its MastraModelOutput resolved in the server (the step
    returns that), every field the corpus records, and the workflow's run stays empty."""
    acc, raw, wf = codec.Accumulator(), bytearray(), f"wf-{codec.name}"   # (a workflow run id is used once)
    with httpx.stream("POST", f"{server}/api/workflows/shout/stream?runId={wf}",
                      json={"inputData": {"text": "What is the weather in Paris?"}}, timeout=60) as r:
        assert r.status_code == 200
        for piece in r.iter_raw():
            raw += piece
            acc.feed(piece)
    acc.close()
    records = [x for x in bytes(raw).split(b"\x1e") if x]
    chunks = list(codec.iter_chunks(bytes(raw)))
    assert len(chunks) == len(records) > 10
    for rec, chunk in zip(records, chunks):
        assert type(chunk).__name__.startswith("Workflow") and codec.encode(chunk, "rs") == rec + b"\x1e"
    (step,) = [c for c in chunks if type(c).__name__ == "WorkflowStepResult" and c.payload.id == "ask"]
    agent_run, exp = step.payload.output["runId"], step.payload.output["resolved"]
    runs = acc.results()
    assert list(runs) == [wf, agent_run] and not acc.result().invalid_frames
    assert (runs[wf].text, runs[wf].steps, runs[wf].parts) == ("", [], [])
    out = runs[agent_run]
    assert actual_view(out, exp) == expected_view(exp) and out.text == "It is sunny in Paris, 21.5°C ☀️."
    assert {r.run_id: r.to_mastra() for r in codec.accumulate(bytes(raw))} == {k: v.to_mastra() for k, v in runs.items()}


def test_a_workflow_whose_step_is_an_agent_gives_the_agents_run(server, codec):
    """A workflow step made of an agent itself (createStep(agent), "asked"): Mastra streams the
    agent's chunks nested in workflow-step-output, the chunks the agent route sends, and they
    reassemble as the agent's own run, to what the same agent resolves for the same prompt there
    (its /expected route), every field the corpus records.  Where the wire does not show what
    the server does (README): inside the workflow Mastra resolves the agent's text as the text of
    all its steps (the step's output is that), not the last step's after a tool step."""
    wf = f"wf-asked-{codec.name}"
    body = httpx.post(f"{server}/api/workflows/asked/stream?runId={wf}", json={"inputData": {"city": "Paris"}},
                      timeout=60).content
    runs = {r.run_id: r for r in codec.accumulate(body)}
    (agent_run,) = [k for k in runs if k != wf]
    (step,) = [c for c in codec.iter_chunks(body)
               if type(c).__name__ == "WorkflowStepResult" and c.payload.id == "weather"]
    out = runs[agent_run]
    assert out.text == "It is sunny in Paris, 21.5°C ☀️."
    assert step.payload.output["text"] == "Let me check the weather. " + out.text
    exp = httpx.post(f"{server}/expected/weather", json={"messages": AGENTS["weather"], "runId": str(uuid.uuid4())},
                     timeout=60).json()
    assert _UUID.fullmatch(agent_run)
    assert _ids_alike(actual_view(out, exp)) == _ids_alike(expected_view(exp))
    assert (runs[wf].text, runs[wf].steps) == ("", [])


def _resumed(server, codec, agent, message, route, body, expected, **told):
    """A run that stops (status suspended), then the stream after it (POST /api/agents/<agent>/
    <route> with body and the run id): one Accumulator fed both streams as they arrive, its
    result, held to what the server resolves of the same two calls (POST /<expected>/<agent>,
    told body and `told` too), every field.  The parts of the server's message come with it: the
    stream after the stop goes into a message of its own, which no step-start opens, and (Mastra
    1.71) repeats the first message's parts after its own; we keep one list, as the stream has it
    (README, "parts"), checked here."""
    run_id = str(uuid.uuid4())
    acc = codec.Accumulator()
    with httpx.stream("POST", f"{server}/api/agents/{agent}/stream", json={"messages": message, "runId": run_id},
                      timeout=60) as r:
        for piece in r.iter_raw():
            acc.feed(piece)
    assert acc.result().status == "suspended"
    with httpx.stream("POST", f"{server}/api/agents/{agent}/{route}", json={"runId": run_id, **body}, timeout=60) as r:
        assert r.status_code == 200
        for piece in r.iter_raw():
            acc.feed(piece)
    acc.close()
    exp = httpx.post(f"{server}/{expected}/{agent}",
                     json={"messages": message, "runId": str(uuid.uuid4()), **body, **told}, timeout=60).json()
    out = acc.result()
    assert out.run_id == run_id and list(acc.results()) == [run_id] and not out.invalid_frames
    assert _ids_alike(actual_view(out, exp)) == _ids_alike(expected_view(exp))
    first, second = [[{k: v for k, v in p.items() if k != "createdAt"} for p in m["content"]["parts"]]
                     for m in exp["dbMessages"]]
    assert _ids_alike(second[1:]) == _ids_alike(first)
    assert _ids_alike(out.parts) == _ids_alike(first + [{"type": "step-start"}] + second[:1])
    return out


@pytest.mark.parametrize("decision", ["approve", "decline"])
def test_an_approval_and_the_stream_after_it_reassemble_as_the_server_resolves_them(server, codec, decision):
    """A tool call that waits for approval ("approveme"), then POST /approve-tool-call (or
    /decline-tool-call): its stream starts where the first stopped (a tool-result or
    tool-output-denied, no start chunk), and its MastraModelOutput resolves the whole run, the
    first stream's step included.  One Accumulator fed both streams, as they arrive, gives the
    same, every field, and the message's parts; the run ids are drawn at random, a UUID each, as
    a client's would be.  The call's invocation has the decision: a result with the grant, or
    output-denied with the chunk's."""
    out = _resumed(server, codec, "approveme", "Remove 5", f"{decision}-tool-call", {"toolCallId": "c-am"},
                   "expected-approved", decline=decision == "decline")
    # (the text is the whole run's, as a run that was suspended has it)
    assert (out.text, out.status, [s.text for s in out.steps]) == (
        "Removing 5. Done with 5.", "success", ["Removing 5. ", "Done with 5."])
    assert [r.payload.result for r in out.tool_results] == ([{"removed": 5}] if decision == "approve" else [])
    (inv,) = [p["toolInvocation"] for p in out.parts if p["type"] == "tool-invocation"]
    assert inv["state"] == ("result" if decision == "approve" else "output-denied")
    assert inv["approval"] == ({"id": "c-am", "approved": True} if decision == "approve" else
                               {"id": "c-am", "approved": False, "reason": "Tool call was not approved by the user"})


def test_a_tool_that_suspended_itself_and_was_resumed_reassembles_as_the_server_resolves_it(server, codec):
    """A tool that suspends itself ("suspending": tool-call-suspended), then POST /resume-stream
    with resumeData: the tool runs again with it and returns, and the model goes on.  Both
    streams into one Accumulator: the whole run, as agent.resumeStream's output resolves it."""
    out = _resumed(server, codec, "suspending", AGENTS["suspending"], "resume-stream",
                   {"resumeData": {"ok": True}, "toolCallId": "c-s"}, "expected-resumed")
    assert (out.text, out.status, out.finish_reason) == ("Asking. Confirmed.", "success", "stop")
    assert [r.payload.result for r in out.tool_results] == [{"confirmed": "x", "ok": True}]
    (inv,) = [p["toolInvocation"] for p in out.parts if p["type"] == "tool-invocation"]
    assert inv["state"] == "result" and "approval" not in inv


def test_the_readme_reads_an_agent_so(server):
    """The README's httpx example, pointed at this server: it prints the run's text."""
    readme = (HERE.parent.parent / "README.md").read_text()
    (code,) = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "httpx.stream(" in b]
    assert "http://127.0.0.1:4111" in code
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.replace("http://127.0.0.1:4111", server), "README httpx", "exec"),
             {"chunkcodec": __import__("chunkcodec")})
    assert out.getvalue() == "It is sunny in Paris, 21.5°C ☀️.\n"
