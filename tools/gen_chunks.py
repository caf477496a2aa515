"""Writes src/chunkcodec/chunks.py from the compact table below.

The table is the reviewable source of the chunk model: one line per chunk type, with its payload
fields.  Run `python tools/gen_chunks.py` after editing it; the generated module is committed (it is
the typed, importable API that IDEs and type checkers read).

Field syntax: `name` optional Any; `name:T` optional of type T; `name!` / `name!:T` required.
"""
import keyword
import pathlib
import re

PM = "providerMetadata:ProviderMetadata"

# (tag, class name, payload spec or special)
# payload spec: list of fields; "ANY" = payload is any JSON value; None = no payload field.
AGENT = [
    ("start", "Start", ["id:str", "messageId:str"]),
    ("step-start", "StepStart", ["request", "warnings", "messageId:str", "startedAt:int", "inputMessages"]),
    ("response-metadata", "ResponseMetadata", ["signature:str", "type:str", "id:str", "timestamp", "modelId:str", "headers"]),
    ("text-start", "TextStart", ["id!:str", PM]),
    ("text-delta", "TextDelta", ["id!:str", PM, "text!:str"]),
    ("text-end", "TextEnd", ["type:str", "id!:str", PM]),
    ("reasoning-start", "ReasoningStart", ["id!:str", PM, "signature:str"]),
    ("reasoning-delta", "ReasoningDelta", ["id!:str", PM, "text!:str"]),
    ("reasoning-end", "ReasoningEnd", ["id!:str", PM, "signature:str"]),
    ("reasoning-signature", "ReasoningSignature", ["id!:str", "signature!:str", PM]),
    ("redacted-reasoning", "RedactedReasoning", ["id!:str", "data", PM]),
    ("reasoning-file", "ReasoningFile", ["data", "base64:str", "mimeType!:str", PM]),
    ("source", "Source", ["id!:str", "sourceType!:str", "title:str", "mimeType:str", "filename:str", "url:str", PM]),
    ("file", "File", ["data", "base64:str", "mimeType!:str", PM, "filename:str"]),
    ("custom", "Custom", ["kind!:str", PM]),
    ("tool-call", "ToolCall", ["toolCallId!:str", "toolName!:str", "args", "providerExecuted:bool", PM, "output", "dynamic:bool", "observability", "title:str"]),
    ("tool-call-approval", "ToolCallApproval", ["toolCallId!:str", "toolName!:str", "args", "resumeSchema:str"]),
    ("tool-call-suspended", "ToolCallSuspended", ["toolCallId!:str", "toolName!:str", "suspendPayload", "args", "resumeSchema:str"]),
    ("tool-result", "ToolResult", ["args", "toolCallId!:str", "toolName!:str", "result", PM, "isError:bool", "providerExecuted:bool", "dynamic:bool"]),
    ("tool-call-input-streaming-start", "ToolCallInputStreamingStart", ["toolCallId!:str", "toolName!:str", "providerExecuted:bool", PM, "dynamic:bool", "observability", "title:str"]),
    ("tool-call-delta", "ToolCallDelta", ["argsTextDelta!:str", "toolCallId!:str", "toolName:str", PM]),
    ("tool-call-input-streaming-end", "ToolCallInputStreamingEnd", ["toolCallId!:str", PM]),
    ("tool-error", "ToolError", ["error", "args", "toolCallId!:str", "toolName!:str", "id:str", "providerExecuted:bool", PM]),
    ("tool-output-denied", "ToolOutputDenied", ["toolCallId!:str", "toolName!:str", "args", "approval"]),
    ("tool-output", "ToolOutput", ["output", "toolCallId:str", "toolName:str"]),
    ("step-output", "StepOutput", ["output"]),
    ("step-finish", "StepFinish", ["messageId:str", "stepResult", "metadata", "output", "messages", "processorRetryCount", "backgroundTaskPending", "id:str", PM, "totalUsage", "response"]),
    ("finish", "Finish", ["messageId:str", "stepResult", "metadata", "output", "messages", "processorRetryCount", "backgroundTaskPending", "id:str", PM, "totalUsage", "response"]),
    ("error", "Error", ["type:str", "error"]),
    ("raw", "Raw", "ANY"),
    ("abort", "Abort", []),
    ("object", "Object", None),
    ("object-result", "ObjectResult", None),
    ("watch", "Watch", ["workflowState", "eventTimestamp"]),
    ("tripwire", "Tripwire", ["reason:str", "retry:bool", "metadata", "processorId:str", "tripwireReason:str"]),
    ("is-task-complete", "IsTaskComplete", ["iteration", "passed", "results", "duration", "timedOut", "reason", "maxIterationReached", "suppressFeedback"]),
    ("goal", "Goal", ["objective", "iteration", "maxRuns", "passed", "status", "results", "reason", "pausedReason", "waitingForUser", "judgeFailed", "duration", "timedOut", "maxRunsReached", "suppressFeedback", "shouldContinue", "pending", "activity"]),
    ("background-task-started", "BackgroundTaskStarted", ["taskId!:str", "toolName:str", "toolCallId:str"]),
    ("background-task-running", "BackgroundTaskRunning", ["taskId!:str", "toolName:str", "toolCallId:str", "runId:str", "agentId:str", "startedAt", "args"]),
    ("background-task-progress", "BackgroundTaskProgress", ["taskIds", "runningCount", "elapsedMs"]),
    ("background-task-output", "BackgroundTaskOutput", ["taskId!:str", "toolName:str", "toolCallId:str", "runId:str", "agentId:str", "payload"]),
    ("background-task-completed", "BackgroundTaskCompleted", ["taskId!:str", "toolName:str", "toolCallId:str", "agentId:str", "result", "runId:str", "completedAt", "isError:bool"]),
    ("background-task-failed", "BackgroundTaskFailed", ["taskId!:str", "toolName:str", "toolCallId:str", "runId:str", "agentId:str", "error", "completedAt"]),
    ("background-task-suspended", "BackgroundTaskSuspended", ["taskId!:str", "toolName:str", "toolCallId:str", "runId:str", "agentId:str", "args", "suspendPayload", "suspendedAt", "suspendData"]),
    ("background-task-resumed", "BackgroundTaskResumed", ["taskId!:str", "toolName:str", "toolCallId:str", "runId:str", "agentId:str", "startedAt", "args"]),
    ("background-task-cancelled", "BackgroundTaskCancelled", ["taskId!:str", "toolName:str", "toolCallId:str", "runId:str", "agentId:str", "completedAt"]),
]
_EXEC = ["task", "primitiveId", "primitiveType", "prompt", "result", "isComplete", "selectionReason", "iteration", "runId", "usage"]
NETWORK = [
    ("routing-agent-start", "RoutingAgentStart", ["agentId", "networkId", "runId", "inputData"]),
    ("routing-agent-text-start", "RoutingAgentTextStart", ["runId"]),
    ("routing-agent-text-delta", "RoutingAgentTextDelta", ["text:str"]),
    ("routing-agent-end", "RoutingAgentEnd", _EXEC),
    ("routing-agent-abort", "RoutingAgentAbort", ["primitiveType", "primitiveId"]),
    ("agent-execution-start", "AgentExecutionStart", ["agentId", "args", "runId"]),
    ("agent-execution-approval", "AgentExecutionApproval", ["toolCallId", "toolName", "args", "resumeSchema", "agentId", "usage", "runId", "selectionReason"]),
    ("agent-execution-suspended", "AgentExecutionSuspended", ["toolCallId", "toolName", "args", "suspendPayload", "resumeSchema", "agentId", "usage", "runId", "selectionReason"]),
    ("agent-execution-end", "AgentExecutionEnd", ["task", "agentId", "result", "isComplete", "iteration", "usage", "runId"]),
    ("agent-execution-abort", "AgentExecutionAbort", ["agentId", "runId", "primitiveType", "primitiveId"]),
    ("workflow-execution-start", "WorkflowExecutionStart", ["name", "workflowId", "args", "runId"]),
    ("workflow-execution-end", "WorkflowExecutionEnd", ["name", "workflowId", "task", "primitiveId", "primitiveType", "result", "isComplete", "iteration", "usage", "runId"]),
    ("workflow-execution-suspended", "WorkflowExecutionSuspended", ["name", "workflowId", "suspendPayload", "resumeSchema", "usage", "runId", "selectionReason"]),
    ("workflow-execution-abort", "WorkflowExecutionAbort", ["name", "workflowId", "runId", "primitiveType", "primitiveId"]),
    ("tool-execution-start", "ToolExecutionStart", ["args", "runId"]),
    ("tool-execution-end", "ToolExecutionEnd", ["task", "primitiveId", "primitiveType", "result", "isComplete", "iteration", "toolCallId", "toolName"]),
    ("tool-execution-approval", "ToolExecutionApproval", ["toolCallId", "toolName", "args", "resumeSchema", "usage", "runId", "selectionReason"]),
    ("tool-execution-suspended", "ToolExecutionSuspended", ["toolCallId", "toolName", "args", "suspendPayload", "resumeSchema", "usage", "runId", "selectionReason"]),
    ("tool-execution-abort", "ToolExecutionAbort", ["toolCallId", "toolName", "runId", "primitiveType", "primitiveId"]),
    ("network-execution-event-step-finish", "NetworkExecutionEventStepFinish", ["task", "result", "isComplete", "iteration", "runId"]),
    ("network-execution-event-finish", "NetworkExecutionEventFinish", ["task", "primitiveId", "primitiveType", "prompt", "result", "object", "isComplete", "completionReason", "iteration", "threadId", "threadResourceId", "isOneOff", "usage"]),
    ("network-validation-start", "NetworkValidationStart", ["runId", "iteration", "checksCount"]),
    ("network-validation-end", "NetworkValidationEnd", ["runId", "iteration", "passed", "results", "duration", "timedOut", "reason", "maxIterationReached", "suppressFeedback"]),
    ("network-object", "NetworkObject", ["object"]),
    ("network-object-result", "NetworkObjectResult", ["object"]),
]
_STEP = ["id", "stepCallId", "status", "output", "payload", "resumePayload", "suspendPayload", "startedAt", "endedAt", "stepName"]
WORKFLOW = [
    ("workflow-start", "WorkflowStart", ["workflowId"]),
    ("workflow-finish", "WorkflowFinish", ["workflowStatus", "finalWorkflowResult", "output", "metadata", "tripwire"]),
    ("workflow-canceled", "WorkflowCanceled", []),
    ("workflow-paused", "WorkflowPaused", []),
    ("workflow-step-start", "WorkflowStepStart", _STEP),
    ("workflow-step-finish", "WorkflowStepFinish", ["id", "metadata", "stepName"]),
    ("workflow-step-suspended", "WorkflowStepSuspended", _STEP),
    ("workflow-step-waiting", "WorkflowStepWaiting", _STEP),
    ("workflow-step-output", "WorkflowStepOutput", ["output", "runId", "stepName"]),
    ("workflow-step-progress", "WorkflowStepProgress", ["id", "completedCount", "totalCount", "currentIndex", "iterationStatus", "iterationOutput"]),
    ("workflow-step-result", "WorkflowStepResult", _STEP + ["tripwire"]),
]

TYPES = {"str": "str", "bool": "bool", "int": "int", "ProviderMetadata": "ProviderMetadata"}


def field_line(spec):
    req = "!" in spec
    name, _, typ = spec.replace("!", "").partition(":")
    assert name.isidentifier() and not keyword.iskeyword(name), name
    t = TYPES[typ] if typ else "Any"
    if req:
        return f"    {name}: {t}"
    if t == "Any":
        return f"    {name}: Any = UNSET"
    return f"    {name}: Union[{t}, UnsetType] = UNSET"


def section(title, rows, extra_top=None):
    out = [f"\n# {'-' * 96}\n# {title}\n"]
    for tag, cls, spec in rows:
        if isinstance(spec, list):
            specs = spec
            out.append(f"\nclass {cls}Payload(Payload, kw_only=True):")
            out.append(f'    """Payload of ``{tag}``."""\n')
            out.extend(field_line(s) for s in specs)
            out.append("")
            out.append(f"\nclass {cls}(Chunk, tag={tag!r}, kw_only=True):")
            out.append(f'    """``{tag}``"""\n')
            out.append(f"    payload: {cls}Payload")
            out.append("    metadata: Any = UNSET")
            if extra_top and tag in extra_top:
                out.append(extra_top[tag])
        elif spec == "ANY":
            out.append(f"\nclass {cls}(Chunk, tag={tag!r}, kw_only=True):")
            out.append(f'    """``{tag}``: the payload is the provider\'s value as is (object or string)."""\n')
            out.append("    payload: Any = UNSET")
            out.append("    metadata: Any = UNSET")
        else:
            out.append(f"\nclass {cls}(Chunk, tag={tag!r}, kw_only=True):")
            out.append(f'    """``{tag}``: ``object`` at the top level, no payload."""\n')
            out.append("    object: Any = UNSET")
            out.append("    metadata: Any = UNSET")
        out.append("")
    return out


HEADER = '''"""The typed chunk model: one msgspec Struct per Mastra chunk type, tagged on ``type``.

GENERATED by tools/gen_chunks.py from its table; edit the table, not this file.

Field names are exactly those on the wire (``runId``, ``toolCallId``, ``argsTextDelta``...), except the
envelope's ``from``, which is the attribute ``from_`` (encoded as ``from``).  Optional fields default
to ``msgspec.UNSET`` so that a field the producer left out stays left out when encoded:
``msgspec.to_builtins(chunk)`` gives back the JSON object.  Structs are frozen; nested values are
plain ``dict``/``list``.  Fields a producer adds that the model does not know are kept too (see
``chunkcodec._model``).
"""

from __future__ import annotations

from typing import Any, Dict, Union

import msgspec
from msgspec import UNSET, UnsetType

__all__ = ["BaseChunk", "Chunk", "Payload", "DataChunk", "AgentExecutionEvent",
           "WorkflowExecutionEvent", "UnknownChunk", "TAGGED", "ProviderMetadata"]

#: ``providerMetadata``: provider name -> provider specific values.
ProviderMetadata = Dict[str, Any]


class BaseChunk(msgspec.Struct, frozen=True, dict=True, forbid_unknown_fields=True):
    """Root of every chunk class (use it for ``isinstance``)."""


class Chunk(BaseChunk, tag_field="type"):
    """A chunk with a fixed ``type`` and the envelope ``{type, runId, from, payload, metadata}``.

    ``runId``/``from`` are optional: real streams leave them out on some chunks.  Fields are in
    the order Mastra writes them, so a chunk built in Python encodes as Mastra would write it.
    Construct with keywords: ``TextDelta(runId=..., from_="AGENT", payload=TextDeltaPayload(...))``.
    """

    runId: Union[str, UnsetType] = UNSET
    from_: Union[str, UnsetType] = msgspec.field(default=UNSET, name="from")


class Payload(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Root of the payload classes (keyword-only fields, in the order Mastra writes them)."""


class DataChunk(BaseChunk):
    """``data-*``: custom data a tool or workflow wrote; no envelope."""

    type: str
    data: Any = UNSET
    id: Union[str, UnsetType] = UNSET
    transient: Union[bool, UnsetType] = UNSET
    runId: Union[str, UnsetType] = UNSET
    from_: Union[str, UnsetType] = msgspec.field(default=UNSET, name="from")
    metadata: Any = UNSET


class AgentExecutionEvent(BaseChunk):
    """``agent-execution-event-*``: a network wraps a sub-agent's chunk; ``payload`` is that chunk."""

    type: str
    runId: Union[str, UnsetType] = UNSET
    from_: Union[str, UnsetType] = msgspec.field(default=UNSET, name="from")
    payload: Any = UNSET
    metadata: Any = UNSET


class WorkflowExecutionEvent(BaseChunk):
    """``workflow-execution-event-*``: a network wraps a workflow event; ``payload`` is that event."""

    type: str
    runId: Union[str, UnsetType] = UNSET
    from_: Union[str, UnsetType] = msgspec.field(default=UNSET, name="from")
    payload: Any = UNSET
    metadata: Any = UNSET


class UnknownChunk(BaseChunk):
    """A chunk whose ``type`` this version does not know: every key is kept."""

    type: str
    runId: Any = UNSET
    from_: Any = msgspec.field(default=UNSET, name="from")
    payload: Any = UNSET
    metadata: Any = UNSET
'''


def main():
    out = [HEADER]
    out += section("Agent chunks (AgentChunkType)", AGENT)
    out += section("Network chunks (NetworkChunkType)", NETWORK)
    out += section("Workflow events (WorkflowStreamEvent)", WORKFLOW,
                   {"workflow-step-start": "    id: Any = UNSET"})
    names = [c for _, c, _ in AGENT + NETWORK + WORKFLOW]
    out.append("\n#: Every chunk class with a fixed tag, by tag.")
    out.append("TAGGED = {cls.__struct_config__.tag: cls for cls in (")
    for n in names:
        out.append(f"    {n},")
    out.append(")}")
    out.append("")
    out.append("__all__ += [" + ", ".join(repr(n) for n in names) + "]")
    out.append("__all__ += [n + 'Payload' for n in " + repr([c for _, c, s in AGENT + NETWORK + WORKFLOW if isinstance(s, list)]) + "]")
    text = "\n".join(out) + "\n"
    text = re.sub(r"\n{3,}", "\n\n\n", text)
    pathlib.Path(__file__).resolve().parents[1].joinpath("src/chunkcodec/chunks.py").write_text(text)


if __name__ == "__main__":
    main()
