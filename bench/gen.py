"""Generate realistic Mastra agent streams for benchmarks (never committed; deterministic)."""

from __future__ import annotations

import json
import random
import uuid

WORDS = ["the", "agent", "called", "a", "tool", "and", "got", "résumé", "naïve", "café", "世界", "こんにちは",
         "😀", "🇯🇵", "data", "stream", "\"quoted\"", "back\\slash", "tab\there", "line\nbreak", "x", "of", "to"]


def _dump(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def run_frames(rng: random.Random, deltas: int = 300) -> list[bytes]:
    run_id = str(uuid.UUID(int=rng.getrandbits(128)))
    env = {"runId": run_id, "from": "AGENT"}
    msg_id = str(uuid.UUID(int=rng.getrandbits(128)))
    out = [_dump({"type": "start", **env, "payload": {"id": "agent", "messageId": msg_id}}),
           _dump({**env, "type": "step-start", "payload": {"request": {}, "warnings": [], "messageId": msg_id,
                                                          "startedAt": 1795314166040}})]
    texts: list[str] = []
    steps = []
    for step in range(2):
        out.append(_dump({"type": "text-start", **env, "payload": {"id": f"txt-{step}"}}))
        for _ in range(deltas // 2):
            piece = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) + " "
            texts.append(piece)
            out.append(_dump({"type": "text-delta", **env, "payload": {"id": f"txt-{step}", "text": piece}}))
        out.append(_dump({"type": "text-end", **env, "payload": {"type": "text-end", "id": f"txt-{step}"}}))
        if step == 0:
            call = f"call_{rng.getrandbits(32):x}"
            out.append(_dump({"type": "tool-call-input-streaming-start", **env,
                              "payload": {"toolCallId": call, "toolName": "get_weather"}}))
            for part in ['{"ci', 'ty":"Pa', 'ris, Île-de-France"', "}"]:
                out.append(_dump({"type": "tool-call-delta", **env,
                                  "payload": {"argsTextDelta": part, "toolCallId": call, "toolName": "get_weather"}}))
            out.append(_dump({"type": "tool-call-input-streaming-end", **env, "payload": {"toolCallId": call}}))
            out.append(_dump({"type": "tool-call", **env, "payload": {"toolCallId": call, "toolName": "get_weather",
                                                                     "args": {"city": "Paris, Île-de-France"}}}))
            out.append(_dump({"type": "tool-result", **env, "payload": {"args": {"city": "Paris"}, "toolCallId": call,
                                                                       "toolName": "get_weather",
                                                                       "result": {"tempC": 21.5, "sky": "sunny"}}}))
        text = "".join(texts)
        usage = {"inputTokens": 120 + step, "outputTokens": 300, "totalTokens": 420 + step}
        steps.append({"content": [{"type": "text", "text": text}], "finishReason": "stop", "usage": usage,
                      "warnings": [], "request": {}, "response": {"id": "resp", "modelId": "m", "messages": [
                          {"role": "assistant", "content": [{"type": "text", "text": text}]}]}})
        big = {"messageId": msg_id, "stepResult": {"reason": "tool-calls" if step == 0 else "stop", "isContinued": False},
               "metadata": {"id": "resp-1", "timestamp": "2025-01-02T03:04:05.000Z", "modelId": "mock"},
               "output": {"text": text, "toolCalls": [], "usage": usage, "steps": steps},
               "messages": {"all": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": text}],
                            "user": [{"role": "user", "content": "hi"}],
                            "nonUser": [{"role": "assistant", "content": [{"type": "text", "text": text}]}]},
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


def framed(fr: list[bytes], framing: str) -> bytes:
    if framing == "sse":
        return b"".join(b"data: " + f + b"\n\n" for f in fr) + b"data: [DONE]\n\n"
    if framing == "rs":
        return b"".join(f + b"\x1e" for f in fr)
    return b"".join(f + b"\n" for f in fr)
