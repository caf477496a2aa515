"""Generate realistic Mastra agent streams for benchmarks (never committed; deterministic)."""

from __future__ import annotations

import json
import random
import uuid

WORDS = ["the", "agent", "called", "a", "tool", "and", "got", "résumé", "naïve", "café", "世界", "こんにちは",
         "😀", "🇯🇵", "data", "stream", "\"quoted\"", "back\\slash", "tab\t", "\n", "x", "of", "to", "weather",
         "Paris", "is", "sunny", "today", "with", "21.5°C", "**bold**", "`code`", "- item", "it's"]


def _dump(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def _text_block(rng: random.Random, env: dict, part: str, n: int, out: list) -> str:
    """A text part of n deltas (1-2 tokens each, with unicode and escapes) appended to out, from
    its text-start to its text-end: its text."""
    out.append(_dump({"type": "text-start", **env, "payload": {"id": part}}))
    pieces = []
    for _ in range(n):
        piece = rng.choice(WORDS) + rng.choice(("", " ", " ", ", ", ". "))
        pieces.append(piece)
        out.append(_dump({"type": "text-delta", **env, "payload": {"id": part, "text": piece}}))
    out.append(_dump({"type": "text-end", **env, "payload": {"type": "text-end", "id": part}}))
    return "".join(pieces)


def run_frames(rng: random.Random, deltas: int = 300) -> list[bytes]:
    """One agent run shaped like the recorded Mastra streams: a short first step that calls a
    tool, a long second step of text deltas (1-2 tokens each, with unicode and escapes), and
    step-finish/finish frames that carry each step's text five times over, as Mastra's do
    (output.text, output.steps[].content, .response.messages, messages.all, messages.nonUser)."""
    run_id = str(uuid.UUID(int=rng.getrandbits(128)))
    env = {"runId": run_id, "from": "AGENT"}
    msg_id = str(uuid.UUID(int=rng.getrandbits(128)))
    out = [_dump({"type": "start", **env, "payload": {"id": "agent", "messageId": msg_id}})]
    steps: list[dict] = []
    all_messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": "What is the weather?"}]}]
    for step, n in enumerate((max(1, deltas // 10), deltas - deltas // 10)):
        out.append(_dump({**env, "type": "step-start", "payload": {"request": {}, "warnings": [], "messageId": msg_id,
                                                                  "startedAt": 1795314166040 + step}}))
        text = _text_block(rng, env, f"txt-{step}", n, out)
        tool_calls = []
        if step == 0:
            call = f"call_{rng.getrandbits(32):x}"
            out.append(_dump({"type": "tool-call-input-streaming-start", **env,
                              "payload": {"toolCallId": call, "toolName": "get_weather"}}))
            for part in ['{"ci', 'ty":"Pa', 'ris, Île-de-France"', "}"]:
                out.append(_dump({"type": "tool-call-delta", **env,
                                  "payload": {"argsTextDelta": part, "toolCallId": call, "toolName": "get_weather"}}))
            out.append(_dump({"type": "tool-call-input-streaming-end", **env, "payload": {"toolCallId": call}}))
            tool_calls = [{"type": "tool-call", "toolCallId": call, "toolName": "get_weather",
                           "input": {"city": "Paris, Île-de-France"}}]
            out.append(_dump({"type": "tool-call", **env, "payload": {"toolCallId": call, "toolName": "get_weather",
                                                                     "args": {"city": "Paris, Île-de-France"}}}))
            out.append(_dump({"type": "tool-result", **env, "payload": {"args": {"city": "Paris"}, "toolCallId": call,
                                                                       "toolName": "get_weather",
                                                                       "result": {"tempC": 21.5, "sky": "sunny"}}}))
        usage = {"inputTokens": 120 + step, "outputTokens": n, "totalTokens": 120 + step + n,
                 "raw": {"inputTokens": {"total": 120 + step}, "outputTokens": {"total": n}}}
        assistant = {"role": "assistant", "content": [{"type": "text", "text": text}]}
        all_messages.append(assistant)
        steps.append({"content": [{"type": "text", "text": text}] + tool_calls,
                      "finishReason": "tool-calls" if step == 0 else "stop", "usage": usage, "warnings": [],
                      "request": {}, "response": {"id": f"resp-{step}", "timestamp": "2025-01-02T03:04:05.000Z",
                                                  "modelId": "mock-model-id", "messages": [assistant]}})
        big = {"messageId": msg_id,
               "stepResult": {"reason": "tool-calls" if step == 0 else "stop", "isContinued": False},
               "metadata": {"id": f"resp-{step}", "timestamp": "2025-01-02T03:04:05.000Z", "modelId": "mock-model-id"},
               "output": {"text": text, "toolCalls": tool_calls, "usage": usage, "steps": list(steps)},
               "messages": {"all": list(all_messages), "user": all_messages[:1], "nonUser": all_messages[1:]},
               "processorRetryCount": 0}
        out.append(_dump({"type": "step-finish", **env, "payload": big}))
    out.append(_dump({"type": "finish", **env, "payload": big}))
    return out


def long_run_frames(rng: random.Random, steps: int = 20, deltas: int = 60) -> list[bytes]:
    """One agent run of many steps, each of text deltas then a tool call and its result, shaped as
    Mastra writes a long tool-calling run (the recorded tool round trips): each step-finish carries
    the history so far -- messages.all and .nonUser one step longer than the frame before,
    output.steps with every step (the previous one's content now holding its tool result), and
    each step's response.messages with every message of the run's response so far -- so the frames
    grow with the run and repeat most of the one before."""
    run_id = str(uuid.UUID(int=rng.getrandbits(128)))
    env = {"runId": run_id, "from": "AGENT"}
    msg_id = str(uuid.UUID(int=rng.getrandbits(128)))
    at = 1795314166000

    def mastra(part: dict) -> dict:
        return {**part, "providerOptions": {"mastra": {"createdAt": at}}}

    out = [_dump({"type": "start", **env, "payload": {"id": "agent", "messageId": msg_id}})]
    user = {"role": "user", "content": [mastra({"type": "text", "text": "Plan my trip, city by city."})]}
    response: list[dict] = []
    steps_out: list[dict] = []
    for step in range(steps):
        at += 17
        out.append(_dump({**env, "type": "step-start", "payload": {"request": {}, "warnings": [], "messageId": msg_id,
                                                                  "startedAt": at}}))
        text = _text_block(rng, env, f"txt-{step}", deltas, out)
        call, args = f"call_{rng.getrandbits(32):x}", {"city": rng.choice(WORDS[7:16]), "unit": "c"}
        result = {"type": "json", "value": {"tempC": round(rng.uniform(-5, 35), 1), "summary": text[:60]}}
        out.append(_dump({"type": "tool-call", **env, "payload": {"toolCallId": call, "toolName": "get_weather",
                                                                 "args": args}}))
        out.append(_dump({"type": "tool-result", **env, "payload": {"args": args, "toolCallId": call,
                                                                   "toolName": "get_weather",
                                                                   "result": result["value"]}}))
        if steps_out:      # the step before now holds its tool's result, as Mastra's next frame has it
            prev = response[-1]["content"][0]
            steps_out[-1]["content"].append({"type": "tool-result", **prev})
        tool_call = {"type": "tool-call", "toolCallId": call, "toolName": "get_weather", "input": args}
        response.append({"role": "assistant", "content": [mastra({"type": "text", "text": text}), tool_call]})
        usage = {"inputTokens": 120 + 40 * step, "outputTokens": deltas, "totalTokens": 120 + 41 * step + deltas,
                 "raw": {"inputTokens": {"total": 120 + 40 * step}, "outputTokens": {"total": deltas}}}
        steps_out.append({"content": [mastra({"type": "text", "text": text}), tool_call], "finishReason": "tool-calls",
                          "usage": usage, "warnings": [], "request": {"body": {"call": step + 1}},
                          "response": {"id": f"resp-{step}", "timestamp": "2025-01-02T03:04:05.000Z",
                                       "modelId": "mock-model-id", "messages": list(response)}})
        response.append({"role": "tool", "content": [{"toolCallId": call, "toolName": "get_weather", "output": result,
                                                       "input": args}]})
        big = {"messageId": msg_id,
               "stepResult": {"reason": "tool-calls", "isContinued": False},
               "metadata": {"id": f"resp-{step}", "timestamp": "2025-01-02T03:04:05.000Z", "modelId": "mock-model-id"},
               "output": {"text": text, "toolCalls": [tool_call], "usage": usage,
                          "steps": json.loads(json.dumps(steps_out))},
               "messages": {"all": [user] + response, "user": [user], "nonUser": list(response)},
               "processorRetryCount": 0}
        out.append(_dump({"type": "step-finish", **env, "payload": big}))
    out.append(_dump({"type": "finish", **env, "payload": big}))
    return out


def frames(runs: int = 20, deltas: int = 300, seed: int = 7) -> list[bytes]:
    rng = random.Random(seed)
    out: list[bytes] = []
    for _ in range(runs):
        out += run_frames(rng, deltas)
    return out


def interleaved(runs: int = 20, deltas: int = 300, seed: int = 7, steps: int = 0) -> list[bytes]:
    """runs runs whose frames are interleaved at random, each run's frames in order: a log
    written by a server handling runs concurrently.  steps: runs of that many steps
    (long_run_frames, deltas a step), instead of run_frames' two."""
    rng = random.Random(seed)
    queues = [long_run_frames(rng, steps, deltas) if steps else run_frames(rng, deltas) for _ in range(runs)]
    pos = [0] * runs
    live = list(range(runs))
    out: list[bytes] = []
    while live:
        k = rng.randrange(len(live))
        r = live[k]
        out.append(queues[r][pos[r]])
        pos[r] += 1
        if pos[r] == len(queues[r]):
            live[k] = live[-1]
            live.pop()
    return out


def framed(fr: list[bytes], framing: str) -> bytes:
    if framing == "sse":
        return b"".join(b"data: " + f + b"\n\n" for f in fr) + b"data: [DONE]\n\n"
    if framing == "rs":
        return b"".join(f + b"\x1e" for f in fr)
    return b"".join(f + b"\n" for f in fr)
