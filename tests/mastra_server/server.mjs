// A real Mastra server for tests/test_mastra_server.py: @mastra/core's agents behind @mastra/hono's
// MastraServer on @hono/node-server, listening on 127.0.0.1 (a free port, printed as
// `listening <port>` once it is up).  The agents' models are scripted LanguageModelV3 mocks, so a
// run is the same each time; the agent loop, the tools, the HTTP routes and the SSE writer are
// unmodified Mastra.
//
// Besides Mastra's own routes (POST /api/agents/:id/stream, and a workflow's), one route of ours:
// POST /expected/:id runs the same agent in this process, with the same body, and answers what its
// MastraModelOutput resolved, in the shape of the corpus's .expected.json files (as
// tests/mastra_oracle/oracle.mjs records it): the truth the test holds our accumulation to; and,
// as dbMessages, the messages its message list keeps for the run's response (what memory stores).
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { Mastra } from '@mastra/core/mastra';
import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { createStep, createWorkflow } from '@mastra/core/workflows';
import { MastraServer } from '@mastra/hono';
import { z } from 'zod';

const usage = (input, output) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});
const finish = (unified, input, output) => ({ type: 'finish', finishReason: { unified, raw: unified }, usage: usage(input, output) });
const meta = (id) => ({ type: 'response-metadata', id, modelId: 'mock-model-id', timestamp: new Date(0) });
const text = (id, pieces) => [{ type: 'text-start', id }, ...pieces.map((delta) => ({ type: 'text-delta', id, delta })),
  { type: 'text-end', id }];

// What each model streams: a function of the prompt it is called with (the step is told by the
// tool results in it), never of how often it was called, so the HTTP run and the /expected run of
// an agent see the same streams.
function hasToolResult(prompt) {
  return prompt.some((m) => m.role === 'tool');
}
// a step that calls the tool named `tool`, with text before it, then a step of text
const bgScript = (tool, resp) => (prompt) => hasToolResult(prompt)
  ? [meta(`${resp}2`), ...text('t2', ['It is ', 'on its way.']), finish('stop', 6, 4)]
  : [meta(`${resp}1`), ...text('t1', ['Starting. ']),
     { type: 'tool-call', toolCallId: `c-${tool}`, toolName: tool, input: '{"n":3}' }, finish('tool-calls', 5, 3)];
const SCRIPTS = {
  // a step that streams a tool call's arguments, the tool's run, then a step of text
  weather: (prompt) => hasToolResult(prompt)
    ? [meta('resp-2'), ...text('t2', ['It is ', 'sunny in ', 'Paris, ', '21.5°C ', '☀️.']), finish('stop', 40, 9)]
    : [meta('resp-1'), ...text('t1', ['Let me ', 'check the weather. ']),
       { type: 'tool-input-start', id: 'call-1', toolName: 'weather' },
       { type: 'tool-input-delta', id: 'call-1', delta: '{"ci' },
       { type: 'tool-input-delta', id: 'call-1', delta: 'ty":"Paris, Île-de-France"}' },
       { type: 'tool-input-end', id: 'call-1' },
       { type: 'tool-call', toolCallId: 'call-1', toolName: 'weather', input: '{"city":"Paris, Île-de-France"}' },
       finish('tool-calls', 25, 12)],
  // reasoning with a signature, then text in two blocks with escapes and text past the BMP
  reasoning: () => [meta('resp-r'),
    { type: 'reasoning-start', id: 'r1' },
    { type: 'reasoning-delta', id: 'r1', delta: 'The user says hi; ' },
    { type: 'reasoning-delta', id: 'r1', delta: 'answer "warmly"\n' },
    { type: 'reasoning-delta', id: 'r1', delta: '', providerMetadata: { anthropic: { signature: 'sig-1' } } },
    { type: 'reasoning-end', id: 'r1' },
    ...text('a', ['Hello', ' 世界 ', '👋🏽', ' back\\slash\ttab']), ...text('b', ['\u2028second', ' block']),
    finish('stop', 12, 30)],
  // the provider fails in the middle of the text
  failing: () => [meta('resp-f'), ...text('t', ['partial ', 'answer']),
    { type: 'error', error: { name: 'ProviderError', message: 'upstream closed the stream' } }],
  // two tool calls whose arguments stream interleaved; one tool throws, one writes data-* parts
  tools: (prompt) => hasToolResult(prompt)
    ? [meta('resp-t2'), ...text('t', ['One of ', 'them failed.']), finish('stop', 30, 5)]
    : [meta('resp-t1'),
       { type: 'tool-input-start', id: 'c-a', toolName: 'progress' },
       { type: 'tool-input-start', id: 'c-b', toolName: 'broken' },
       { type: 'tool-input-delta', id: 'c-a', delta: '{"steps":' },
       { type: 'tool-input-delta', id: 'c-b', delta: '{"why":"n' },
       { type: 'tool-input-delta', id: 'c-a', delta: '2}' },
       { type: 'tool-input-delta', id: 'c-b', delta: 'ope"}' },
       { type: 'tool-input-end', id: 'c-a' }, { type: 'tool-input-end', id: 'c-b' },
       { type: 'tool-call', toolCallId: 'c-a', toolName: 'progress', input: '{"steps":2}' },
       { type: 'tool-call', toolCallId: 'c-b', toolName: 'broken', input: '{"why":"nope"}' },
       finish('tool-calls', 20, 8)],
  // a tool that needs approval: the run is suspended
  approval: () => [meta('resp-a'), ...text('t', ['Deleting it.']),
    { type: 'tool-call', toolCallId: 'c-del', toolName: 'remove', input: '{"id":7}' }, finish('tool-calls', 8, 3)],
  // sources and files from the model
  sources: () => [meta('resp-s'),
    { type: 'source', sourceType: 'url', id: 'src-1', url: 'https://example.com/a', title: 'A' },
    { type: 'source', sourceType: 'document', id: 'src-2', mediaType: 'application/pdf', title: 'Doc', filename: 'd.pdf' },
    ...text('t', ['See ', 'the sources.']),
    { type: 'file', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
    finish('stop', 6, 4)],
  // a sub-agent called as a tool: its chunks come nested in the parent's tool-output chunks
  delegating: (prompt, tools) => hasToolResult(prompt)
    ? [meta('resp-d2'), ...text('t', ['The helper ', 'answered.']), finish('stop', 9, 2)]
    : [meta('resp-d1'), { type: 'tool-call', toolCallId: 'c-h', toolName: tools[0], input: '{"prompt":"hi"}' },
       finish('tool-calls', 5, 2)],
  // reasoning, text with provider metadata, a streamed call to a tool that needs approval
  mixed: () => [meta('resp-m'),
    { type: 'reasoning-start', id: 'rs_1', providerMetadata: { openai: { itemId: 'rs_1' } } },
    { type: 'reasoning-delta', id: 'rs_1', delta: 'Think.' },
    { type: 'reasoning-end', id: 'rs_1', providerMetadata: { openai: { itemId: 'rs_1', reasoningEncryptedContent: 'e' } } },
    { type: 'text-start', id: 'msg_1', providerMetadata: { openai: { itemId: 'msg_1' } } },
    { type: 'text-delta', id: 'msg_1', delta: 'I will remove it.' },
    { type: 'text-end', id: 'msg_1', providerMetadata: { openai: { itemId: 'msg_1' } } },
    { type: 'tool-input-start', id: 'c-r', toolName: 'remove' },
    { type: 'tool-input-delta', id: 'c-r', delta: '{"id":' }, { type: 'tool-input-delta', id: 'c-r', delta: '9}' },
    { type: 'tool-input-end', id: 'c-r' },
    { type: 'tool-call', toolCallId: 'c-r', toolName: 'remove', input: '{"id":9}' },
    finish('tool-calls', 11, 7)],
  // text an output processor blocks after the step (a tripwire without retry)
  blocked: () => [meta('resp-b'), ...text('t', ['Something ', 'not allowed.']), finish('stop', 4, 3)],
  // structured output whose first answer an output processor sends back (a step tried again)
  guarded: (prompt) => JSON.stringify(prompt).includes('Say it again')
    ? [meta('resp-g2'), ...text('t', ['{"answer":', '"second"}']), finish('stop', 9, 4)]
    : [meta('resp-g1'), ...text('t', ['{"answer":', '"first"}']), finish('stop', 5, 4)],
  // a tool step, then a text step an output processor sends back to be tried again, then the answer
  retried: (prompt) => !hasToolResult(prompt)
    ? [meta('resp-rt1'), ...text('a', ['Checking. ']),
       { type: 'tool-call', toolCallId: 'c-w', toolName: 'weather', input: '{"city":"Oslo"}' }, finish('tool-calls', 5, 3)]
    : JSON.stringify(prompt).includes('Be brief')
      ? [meta('resp-rt3'), ...text('c', ['Brief.']), finish('stop', 7, 1)]
      : [meta('resp-rt2'), ...text('b', ['A long ', 'answer.']), finish('stop', 6, 2)],
  // reasoning and text sent back twice (the first step opens no step boundary in the message)
  twice: (prompt) => {
    const n = (JSON.stringify(prompt).match(/Try again/g) || []).length;
    return [meta(`resp-tw${n}`), { type: 'reasoning-start', id: `r${n}` },
      { type: 'reasoning-delta', id: `r${n}`, delta: `Thinking ${n}` }, { type: 'reasoning-end', id: `r${n}` },
      ...text(`t${n}`, ['Answer ', `${n}`]), finish('stop', 2 + n, 3)];
  },
  // a retry asked for past maxProcessorRetries: the step ends in a tripwire and stays
  stubborn: (prompt) => {
    const n = (JSON.stringify(prompt).match(/Never good/g) || []).length;
    return [meta(`resp-sb${n}`), ...text(`t${n}`, ['Attempt ', `${n}`]), finish('stop', 2, 2)];
  },
  // a tool step, then one that begins with reasoning and calls the tool again, then text: the
  // message has a step boundary before each step after the first, whatever the step begins with
  chain: (prompt) => {
    const n = prompt.filter((m) => m.role === 'tool').length;
    if (n === 0) return [meta('resp-c1'), { type: 'tool-call', toolCallId: 'c-1', toolName: 'weather', input: '{"city":"Rome"}' },
      finish('tool-calls', 1, 1)];
    if (n === 1) return [meta('resp-c2'), { type: 'reasoning-start', id: 'q' }, { type: 'reasoning-delta', id: 'q', delta: 'Hmm.' },
      { type: 'reasoning-end', id: 'q' }, { type: 'tool-call', toolCallId: 'c-2', toolName: 'weather', input: '{"city":"Oslo"}' },
      finish('tool-calls', 2, 1)];
    return [meta('resp-c3'), ...text('t', ['Both ', 'sunny.']), finish('stop', 3, 2)];
  },
  // a step that finishes for a reason that is not final ("other") goes on without a tool call
  onward: (prompt) => prompt.some((m) => m.role === 'assistant')
    ? [meta('resp-o2'), ...text('b', ['Second ', 'part.']), finish('stop', 4, 2)]
    : [meta('resp-o1'), { type: 'reasoning-start', id: 'r' }, { type: 'reasoning-delta', id: 'r', delta: 'Hm.' },
       { type: 'reasoning-end', id: 'r' }, ...text('a', ['First ', 'part. ']), finish('other', 3, 2)],
  // two text blocks interleaved, reasoning in both steps
  interleave: (prompt) => hasToolResult(prompt)
    ? [meta('resp-i2'), { type: 'reasoning-start', id: 'r2' }, { type: 'reasoning-delta', id: 'r2', delta: 'Again.' },
       { type: 'reasoning-end', id: 'r2' }, ...text('z', ['Done.']), finish('stop', 5, 1)]
    : [meta('resp-i1'), { type: 'reasoning-start', id: 'r1' }, { type: 'reasoning-delta', id: 'r1', delta: 'First.' },
       { type: 'reasoning-end', id: 'r1' }, { type: 'text-start', id: 'x' }, { type: 'text-start', id: 'y' },
       { type: 'text-delta', id: 'x', delta: 'ex1 ' }, { type: 'text-delta', id: 'y', delta: 'why1 ' },
       { type: 'text-delta', id: 'x', delta: 'ex2 ' }, { type: 'text-end', id: 'x' },
       { type: 'text-delta', id: 'y', delta: 'why2' }, { type: 'text-end', id: 'y' },
       { type: 'tool-call', toolCallId: 'c-i', toolName: 'weather', input: '{"city":"Rome"}' }, finish('tool-calls', 4, 6)],
  // a provider-executed tool's call and result, then text in the same step
  provexec: () => [meta('resp-pe'),
    { type: 'tool-call', toolCallId: 'ws-1', toolName: 'web_search', input: '{"q":"mastra"}', providerExecuted: true },
    { type: 'tool-result', toolCallId: 'ws-1', toolName: 'web_search', result: { hits: 3 }, providerExecuted: true },
    ...text('t', ['Found ', 'three.']), finish('stop', 8, 2)],
  // a tool that suspends itself (and, resumed, returns what it was told)
  suspending: (prompt) => hasToolResult(prompt)
    ? [meta('resp-su2'), ...text('u', ['Confirmed.']), finish('stop', 6, 1)]
    : [meta('resp-su'), ...text('t', ['Asking. ']),
       { type: 'tool-call', toolCallId: 'c-s', toolName: 'confirm', input: '{"what":"x"}' }, finish('tool-calls', 4, 2)],
  // the model stops at its token limit
  cutoff: () => [meta('resp-co'), ...text('t', ['This is cut ', 'off']), finish('length', 3, 4)],
  // an output processor aborts on a streamed chunk (a tripwire chunk mid-stream)
  streamcut: () => [meta('resp-sc'), ...text('t', ['Public ', 'secret ', 'more']), finish('stop', 3, 3)],
  // an input processor aborts before the model is called
  inputblock: () => [meta('resp-ib'), ...text('t', ['Never']), finish('stop', 1, 1)],
  // data-* parts an output processor writes while the model streams (the message has them before
  // the step's own parts), and after each step's stream (after them)
  tagged: (prompt) => hasToolResult(prompt) ? [meta('resp-tg2'), ...text('u', ['A', 'B']), finish('stop', 2, 2)]
    : [meta('resp-tg1'), ...text('t', ['Look. ']),
       { type: 'tool-call', toolCallId: 'c-m', toolName: 'weather', input: '{"city":"Oslo"}' }, finish('tool-calls', 1, 1)],
  noted: (prompt) => SCRIPTS.tagged(prompt),
  // after a tool step, a step that goes on (finish reason "other"), one sent back, then the
  // answer: with processors, the run's text is all the message's text after the tool
  onagain: (prompt) => {
    const n = prompt.filter((m) => m.role === 'assistant').length, again = JSON.stringify(prompt).includes('No Y');
    if (!hasToolResult(prompt)) return [meta('resp-oa1'), { type: 'tool-call', toolCallId: 'c-q', toolName: 'weather', input: '{"city":"Oslo"}' },
      finish('tool-calls', 1, 1)];
    if (n === 1) return [meta('resp-oa2'), ...text('x', ['X ']), finish('other', 1, 1)];
    return again ? [meta('resp-oa4'), ...text('z', ['Z']), finish('stop', 1, 1)] : [meta('resp-oa3'), ...text('y', ['Y']), finish('stop', 1, 1)];
  },
  // a step sent back, then a call that needs approval: a run left suspended has all its text
  backoff: (prompt) => JSON.stringify(prompt).includes('Say it twice')
    ? [meta('resp-bo2'), ...text('t', ['Deleting ', 'it.']), { type: 'tool-call', toolCallId: 'c-bo', toolName: 'remove', input: '{"id":3}' },
       finish('tool-calls', 8, 3)]
    : [meta('resp-bo1'), ...text('t', ['Once.']), finish('stop', 1, 1)],
  // an output processor that rewrites the streamed text
  redact: () => [meta('resp-rd'), ...text('t', ['my secret ', 'plan']), finish('stop', 2, 2)],
  // arguments the tool's schema refuses
  badargs: (prompt) => hasToolResult(prompt) ? [meta('resp-ba2'), ...text('t', ['Oops.']), finish('stop', 1, 1)]
    : [meta('resp-ba1'), { type: 'tool-call', toolCallId: 'c-bad', toolName: 'weather', input: '{"town":3}' }, finish('tool-calls', 1, 1)],
  // two calls in a step, one of them needing approval
  twocalls: () => [meta('resp-tc'), { type: 'tool-call', toolCallId: 'c-w1', toolName: 'weather', input: '{"city":"Oslo"}' },
    { type: 'tool-call', toolCallId: 'c-r1', toolName: 'remove', input: '{"id":1}' }, finish('tool-calls', 1, 1)],
  // redacted reasoning
  redacted: () => [meta('resp-rr'), { type: 'reasoning-start', id: 'r', providerMetadata: { anthropic: { redactedData: 'abc' } } },
    { type: 'reasoning-end', id: 'r' }, ...text('t', ['Hi.']), finish('stop', 1, 1)],
  // the same text in two steps, the run stopped by maxSteps (test_a_part_repeated_in_a_later_step)
  repeats: (prompt) => [meta('resp-rp'), ...text('t', ['Again. ']),
    { type: 'tool-call', toolCallId: `c-${prompt.length}`, toolName: 'weather', input: '{"city":"Oslo"}' }, finish('tool-calls', 1, 1)],
  // tool arguments that are not JSON
  malformed: (prompt) => hasToolResult(prompt) ? [meta('resp-mf2'), ...text('t', ['Hm.']), finish('stop', 1, 1)]
    : [meta('resp-mf1'), { type: 'tool-input-start', id: 'c-mf', toolName: 'weather' },
       { type: 'tool-input-delta', id: 'c-mf', delta: '{"city":' }, { type: 'tool-input-end', id: 'c-mf' },
       { type: 'tool-call', toolCallId: 'c-mf', toolName: 'weather', input: '{"city":' }, finish('tool-calls', 1, 1)],
  // a provider error in the step after a tool step
  lateerr: (prompt) => hasToolResult(prompt) ? [meta('resp-le2'), ...text('t', ['Half ']), { type: 'error', error: new Error('boom late') }]
    : [meta('resp-le1'), { type: 'tool-call', toolCallId: 'c-le', toolName: 'weather', input: '{"city":"Rome"}' }, finish('tool-calls', 1, 1)],
  // a tool that yields as it goes (a generator)
  gentool: (prompt) => hasToolResult(prompt) ? [meta('resp-gt2'), ...text('t', ['Streamed.']), finish('stop', 1, 1)]
    : [meta('resp-gt1'), { type: 'tool-call', toolCallId: 'c-gt', toolName: 'counter', input: '{"n":2}' }, finish('tool-calls', 1, 1)],
  // reasoning before a tool call, then a reasoning step sent back once
  reasontool: (prompt) => hasToolResult(prompt)
    ? [meta('resp-rs2'), { type: 'reasoning-start', id: 'b' }, { type: 'reasoning-delta', id: 'b', delta: 'Second thought.' },
       { type: 'reasoning-end', id: 'b' }, ...text('t', ['Ok.']), finish('stop', 1, 1)]
    : [meta('resp-rs1'), { type: 'reasoning-start', id: 'a' }, { type: 'reasoning-delta', id: 'a', delta: 'First thought.' },
       { type: 'reasoning-end', id: 'a' }, { type: 'tool-call', toolCallId: 'c-rt', toolName: 'weather', input: '{"city":"Rome"}' },
       finish('tool-calls', 1, 1)],
  // warnings from the provider (Mastra drops the stream-start that carries them), no
  // response-metadata, usage with cached and reasoning tokens, provider metadata on the finish,
  // over two steps
  warned: (prompt) => {
    const u = (i, c, o, r) => ({ inputTokens: { total: i, noCache: i - c, cacheRead: c, cacheWrite: undefined },
      outputTokens: { total: o, text: o - r, reasoning: r } });
    return hasToolResult(prompt)
      ? [{ type: 'stream-start', warnings: [{ type: 'other', message: 'second step warned' }] },
         ...text('t', ['Warm.']), { type: 'finish', finishReason: { unified: 'stop', raw: 'end_turn' }, usage: u(30, 20, 5, 2),
           providerMetadata: { openai: { responseId: 'resp_2', cachedPromptTokens: 20 } } }]
      : [{ type: 'stream-start', warnings: [{ type: 'unsupported', feature: 'temperature', details: 'not for this model' }] },
         { type: 'tool-call', toolCallId: 'c-wa', toolName: 'weather', input: '{"city":"Nice"}' },
         { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_use' }, usage: u(10, 0, 7, 4),
           providerMetadata: { openai: { responseId: 'resp_1' } } }];
  },
  // a sub-agent that calls a tool of its own (two levels of nesting in tool-output)
  deeper: (prompt, tools) => hasToolResult(prompt)
    ? [meta('resp-dp2'), ...text('t', ['Deep ', 'enough.']), finish('stop', 2, 2)]
    : [meta('resp-dp1'), { type: 'tool-call', toolCallId: 'c-dp', toolName: tools[0], input: '{"prompt":"weather?"}' },
       finish('tool-calls', 1, 1)],
  // a call to a tool the agent does not have
  unknown: (prompt) => hasToolResult(prompt) || prompt.some((m) => m.role === 'assistant')
    ? [meta('resp-un2'), ...text('t', ['No such tool.']), finish('stop', 1, 1)]
    : [meta('resp-un1'), { type: 'tool-call', toolCallId: 'c-un', toolName: 'teleport', input: '{"to":"Mars"}' },
       finish('tool-calls', 1, 1)],
  // a text block left open at the step's end, its id streamed again in the next step
  openspan: (prompt) => hasToolResult(prompt)
    ? [meta('resp-os2'), { type: 'text-delta', id: 't', delta: 'more ' }, { type: 'text-delta', id: 't', delta: 'text' },
       { type: 'text-end', id: 't' }, finish('stop', 1, 1)]
    : [meta('resp-os1'), { type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: 'Open ' },
       { type: 'tool-call', toolCallId: 'c-os', toolName: 'weather', input: '{"city":"Nice"}' }, finish('tool-calls', 1, 1)],
  // a tool without arguments, called with an empty input
  noargs: (prompt) => hasToolResult(prompt) ? [meta('resp-na2'), ...text('t', ['It is noon.']), finish('stop', 1, 1)]
    : [meta('resp-na1'), { type: 'tool-input-start', id: 'c-na', toolName: 'clock' }, { type: 'tool-input-end', id: 'c-na' },
       { type: 'tool-call', toolCallId: 'c-na', toolName: 'clock', input: '' }, finish('tool-calls', 1, 1)],
  // the provider's content filter stops the text
  filtered: () => [meta('resp-cf'), ...text('t', ['I cannot ']), finish('content-filter', 2, 2)],
  // two reasoning blocks with their own signatures, an id reused in the next step
  thoughts: (prompt) => hasToolResult(prompt)
    ? [meta('resp-th2'), { type: 'reasoning-start', id: 'r1' }, { type: 'reasoning-delta', id: 'r1', delta: 'Later.' },
       { type: 'reasoning-end', id: 'r1', providerMetadata: { anthropic: { signature: 's3' } } }, ...text('t', ['Fine.']), finish('stop', 1, 1)]
    : [meta('resp-th1'), { type: 'reasoning-start', id: 'r1' }, { type: 'reasoning-delta', id: 'r1', delta: 'One.' },
       { type: 'reasoning-end', id: 'r1', providerMetadata: { anthropic: { signature: 's1' } } },
       { type: 'reasoning-start', id: 'r2' }, { type: 'reasoning-delta', id: 'r2', delta: 'Two.' },
       { type: 'reasoning-end', id: 'r2', providerMetadata: { anthropic: { signature: 's2' } } },
       { type: 'tool-call', toolCallId: 'c-th', toolName: 'weather', input: '{"city":"Nice"}' }, finish('tool-calls', 1, 1)],
  // a tool whose output fails its outputSchema
  badout: (prompt) => hasToolResult(prompt) ? [meta('resp-bo2'), ...text('t', ['Odd.']), finish('stop', 1, 1)]
    : [meta('resp-bo1'), { type: 'tool-call', toolCallId: 'c-bo', toolName: 'liar', input: '{"x":1}' }, finish('tool-calls', 1, 1)],
  // reasoning left open at the step's end, its id streamed again (and ended) in the next step; a
  // reasoning-start with no delta; a text-start whose providerMetadata waits for a delta that
  // comes only in the next step
  openthought: (prompt) => hasToolResult(prompt)
    ? [meta('resp-ot2'), { type: 'reasoning-delta', id: 'r', delta: ' and more' },
       { type: 'reasoning-end', id: 'r', providerMetadata: { anthropic: { signature: 'late' } } },
       { type: 'text-delta', id: 'u', delta: 'Then.' }, { type: 'text-end', id: 'u' }, finish('stop', 1, 1)]
    : [meta('resp-ot1'), { type: 'reasoning-start', id: 'r' }, { type: 'reasoning-delta', id: 'r', delta: 'Open thought' },
       { type: 'reasoning-start', id: 'e', providerMetadata: { anthropic: { signature: 'empty' } } },
       { type: 'text-start', id: 'u', providerMetadata: { openai: { itemId: 'msg_u' } } },
       { type: 'tool-call', toolCallId: 'c-ot', toolName: 'weather', input: '{"city":"Nice"}' }, finish('tool-calls', 1, 1)],
  // a tool with no execute (the client runs it): the run ends at the call
  clienttool: () => [meta('resp-ct'), ...text('t', ['Opening ', 'the map. ']),
    { type: 'tool-call', toolCallId: 'c-ct', toolName: 'openMap', input: '{"place":"Rome"}' }, finish('tool-calls', 2, 2)],
  // a step sent back, then text and a client tool's call: the run's text read from the message
  retryclient: (prompt) => JSON.stringify(prompt).includes('Show it')
    ? [meta('resp-rc2'), ...text('t', ['Okay. ']),
       { type: 'tool-call', toolCallId: 'c-rc', toolName: 'openMap', input: '{"place":"Oslo"}' }, finish('tool-calls', 2, 2)]
    : [meta('resp-rc1'), ...text('t', ['Sure.']), finish('stop', 1, 1)],
  // a provider that reports no usage
  nousage: () => [meta('resp-nu'), ...text('t', ['No ', 'count.']),
    { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' },
      usage: { inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
               outputTokens: { total: undefined, text: undefined, reasoning: undefined } } }],
  // control characters, a line separator and a surrogate pair split across two deltas
  controls: () => [meta('resp-cc'), ...text('t', ['a\u0000b\u001fc\u007f ', 'x\ud83d', '\ude00y ', '\u2029\\"q"']),
    finish('stop', 1, 1)],
  // structured output made by a second model from the first one's text
  structured: () => [meta('resp-so'), ...text('t', ['The answer ', 'is 42.']), finish('stop', 3, 3)],
  // a call that waits for approval, then the answer once the tool ran (or was declined)
  approveme: (prompt) => hasToolResult(prompt) ? [meta('resp-am2'), ...text('u', ['Done ', 'with 5.']), finish('stop', 6, 2)]
    : [meta('resp-am1'), ...text('t', ['Removing 5. ']),
       { type: 'tool-call', toolCallId: 'c-am', toolName: 'remove', input: '{"id":5}' }, finish('tool-calls', 4, 3)],
  // blocks numbered per response: the same id in both steps
  numbered: (prompt) => hasToolResult(prompt) ? [meta('resp-nb2'), ...text('0', ['Done.']), finish('stop', 1, 1)]
    : [meta('resp-nb1'), ...text('0', ['Checking. ']),
       { type: 'tool-call', toolCallId: 'c-nb', toolName: 'weather', input: '{"city":"Oslo"}' }, finish('tool-calls', 1, 1)],
  // a sub-agent that fails
  subfail: (prompt, tools) => hasToolResult(prompt) || prompt.some((m) => m.role === 'assistant')
    ? [meta('resp-sf2'), ...text('t', ['It failed.']), finish('stop', 1, 1)]
    : [meta('resp-sf1'), { type: 'tool-call', toolCallId: 'c-sf', toolName: tools[0], input: '{"prompt":"go"}' },
       finish('tool-calls', 1, 1)],
  // tools that return nothing, a string, null, and write tool-output chunks that are no agent's
  voidtool: (prompt) => hasToolResult(prompt) ? [meta('resp-vt2'), ...text('t', ['Fine.']), finish('stop', 1, 1)]
    : [meta('resp-vt1'), { type: 'tool-call', toolCallId: 'c-v1', toolName: 'nothing', input: '{}' },
       { type: 'tool-call', toolCallId: 'c-v2', toolName: 'words', input: '{}' },
       { type: 'tool-call', toolCallId: 'c-v3', toolName: 'nil', input: '{}' }, finish('tool-calls', 1, 1)],
  // reasoning only, then nothing at all
  thinkonly: () => [meta('resp-to'), { type: 'reasoning-start', id: 'r' }, { type: 'reasoning-delta', id: 'r', delta: 'Just thinking.' },
    { type: 'reasoning-end', id: 'r' }, finish('stop', 1, 1)],
  empty: () => [meta('resp-em'), finish('stop', 1, 0)],
  // a tool that writes the same data part (by id) twice, as a status that changes
  status: (prompt) => hasToolResult(prompt) ? [meta('resp-st2'), ...text('t', ['Ready.']), finish('stop', 1, 1)]
    : [meta('resp-st1'), { type: 'tool-call', toolCallId: 'c-st', toolName: 'stepper', input: '{}' }, finish('tool-calls', 1, 1)],
  // a provider-executed tool whose call and result carry different Responses item ids, streamed
  // input with metadata on its start
  itemids: () => [meta('resp-ii'),
    { type: 'tool-input-start', id: 'ws-2', toolName: 'web_search', providerExecuted: true, providerMetadata: { openai: { itemId: 'ws_call' } } },
    { type: 'tool-input-delta', id: 'ws-2', delta: '{"q":"x"}' }, { type: 'tool-input-end', id: 'ws-2' },
    { type: 'tool-call', toolCallId: 'ws-2', toolName: 'web_search', input: '{"q":"x"}', providerExecuted: true,
      providerMetadata: { openai: { itemId: 'ws_call' } } },
    { type: 'tool-result', toolCallId: 'ws-2', toolName: 'web_search', result: { hits: 1 }, providerExecuted: true,
      providerMetadata: { openai: { itemId: 'ws_out' } } },
    { type: 'text-start', id: 'msg_9', providerMetadata: { openai: { itemId: 'msg_9' } } },
    { type: 'text-delta', id: 'msg_9', delta: 'One hit.' }, { type: 'text-end', id: 'msg_9' }, finish('stop', 2, 2)],
  // a provider that numbers tool call ids per response: the same id in two steps
  reuse: (prompt) => {
    const n = prompt.filter((m) => m.role === 'tool').length;
    if (n === 0) return [meta('resp-ru1'), { type: 'tool-call', toolCallId: 'call_0', toolName: 'weather', input: '{"city":"Rome"}' }, finish('tool-calls', 1, 1)];
    if (n === 1) return [meta('resp-ru2'), { type: 'tool-input-start', id: 'call_0', toolName: 'weather' },
      { type: 'tool-input-delta', id: 'call_0', delta: '{"city":"Oslo"}' }, { type: 'tool-input-end', id: 'call_0' },
      { type: 'tool-call', toolCallId: 'call_0', toolName: 'weather', input: '{"city":"Oslo"}' }, finish('tool-calls', 1, 1)];
    return [meta('resp-ru3'), ...text('t', ['Both.']), finish('stop', 1, 1)];
  },
  // a tool whose output the model is sent in another form (toModelOutput)
  modelout: (prompt) => hasToolResult(prompt) ? [meta('resp-mo2'), ...text('t', ['Seen.']), finish('stop', 1, 1)]
    : [meta('resp-mo1'), { type: 'tool-call', toolCallId: 'c-mo', toolName: 'lookup', input: '{"q":"a"}' },
       { type: 'tool-call', toolCallId: 'c-mn', toolName: 'lookupnil', input: '{}', providerMetadata: { openai: { itemId: 'fc_1' } } },
       finish('tool-calls', 1, 1)],
  // structured output, then a provider error (without and with an output processor)
  objerr: () => [meta('resp-oe'), ...text('t', ['{"answer":', '"x"}']), { type: 'error', error: new Error('late failure') }],
  objerrp: () => SCRIPTS.objerr(),
  // structured output with an output processor that never trips
  objproc: () => [meta('resp-op'), ...text('t', ['{"answer":', '"y"}']), finish('stop', 1, 1)],
  // cache writes reported (Anthropic's cache creation), over two steps
  cachewrite: (prompt) => {
    const u = (i, w, o) => ({ inputTokens: { total: i, noCache: i - w, cacheRead: 0, cacheWrite: w },
      outputTokens: { total: o, text: o, reasoning: undefined } });
    return hasToolResult(prompt)
      ? [meta('resp-cw2'), ...text('t', ['Cached.']), { type: 'finish', finishReason: { unified: 'stop', raw: 'end_turn' }, usage: u(9, 0, 2),
          providerMetadata: { anthropic: { cacheCreationInputTokens: 0 } } }]
      : [meta('resp-cw1'), { type: 'tool-call', toolCallId: 'c-cw', toolName: 'weather', input: '{"city":"Bern"}' },
         { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_use' }, usage: u(12, 7, 3),
           providerMetadata: { anthropic: { cacheCreationInputTokens: 7 } } }];
  },
  // a tool with a title of its own, its arguments streamed
  titled: (prompt) => hasToolResult(prompt) ? [meta('resp-ti2'), ...text('t', ['Titled.']), finish('stop', 1, 1)]
    : [meta('resp-ti1'), { type: 'tool-input-start', id: 'c-ti', toolName: 'forecast' },
       { type: 'tool-input-delta', id: 'c-ti', delta: '{"city":"Lyon"}' }, { type: 'tool-input-end', id: 'c-ti' },
       { type: 'tool-call', toolCallId: 'c-ti', toolName: 'forecast', input: '{"city":"Lyon"}' }, finish('tool-calls', 1, 1)],
  // tools that run as background tasks (the Mastra below has them enabled): one left running
  // (its result a placeholder; the stream ends before it does), one the loop waits for, one with
  // an output for the model, one that fails, one that returns null
  later: bgScript('later', 'resp-bl'),
  waited: bgScript('waited', 'resp-bw'),
  bgmodel: bgScript('bgmodel', 'resp-bm'),
  bgfail: bgScript('bgfail', 'resp-bf'),
  bgnull: bgScript('bgnull', 'resp-bn'),
  // a list of models whose first fails before it streams: the next one answers
  fallback: () => [meta('resp-fb'), ...text('t', ['From the ', 'backup.']), finish('stop', 3, 2)],
  // what the wire does not show (test_what_the_wire_does_not_show): an output processor that
  // aborts once the run is over, and one that never trips
  final: () => [meta('resp-fi'), ...text('t', ['All ', 'done.']), finish('stop', 3, 2)],
  quiet: (prompt) => SCRIPTS.onward(prompt),
};

function mockModel(script) {
  return {
    specificationVersion: 'v3', provider: 'mock-provider', modelId: 'mock-model-id', supportedUrls: {},
    async doGenerate() { throw new Error('these tests only stream'); },
    async doStream(options) {
      const tools = (options.tools || []).map((t) => t.name);
      const scripted = script(options.prompt, tools);
      const parts = scripted[0]?.type === 'stream-start' ? scripted : [{ type: 'stream-start', warnings: [] }, ...scripted];
      return { stream: new ReadableStream({ start(c) { for (const p of parts) c.enqueue(p); c.close(); } }) };
    },
  };
}

const weatherTool = createTool({
  id: 'weather', description: 'The weather in a city',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, tempC: 21.5, sky: 'sunny' }),
});
const progressTool = createTool({
  id: 'progress', description: 'Reports progress as it goes',
  inputSchema: z.object({ steps: z.number() }),
  execute: async ({ steps }, { writer }) => {
    for (let i = 1; i <= steps; i++) await writer.custom({ type: 'data-progress', data: { done: i, of: steps } });
    return { done: steps };
  },
});
const brokenTool = createTool({
  id: 'broken', description: 'Always fails', inputSchema: z.object({ why: z.string() }),
  execute: async ({ why }) => { throw new Error(`broken: ${why}`); },
});
const removeTool = createTool({
  id: 'remove', description: 'Deletes a thing', inputSchema: z.object({ id: z.number() }), requireApproval: true,
  execute: async ({ id }) => ({ removed: id }),
});
const confirmTool = createTool({
  id: 'confirm', description: 'Asks before it acts', inputSchema: z.object({ what: z.string() }),
  suspendSchema: z.object({ reason: z.string() }), resumeSchema: z.object({ ok: z.boolean() }),
  execute: async ({ what }, ctx) => {
    if (ctx.agent?.resumeData) return { confirmed: what, ok: ctx.agent.resumeData.ok };
    await ctx.agent.suspend({ reason: `confirm ${what}` });
  },
});
const counterTool = createTool({
  id: 'counter', description: 'Counts, yielding as it goes', inputSchema: z.object({ n: z.number() }),
  execute: async function* ({ n }) {
    for (let i = 1; i <= n; i++) yield { at: i };
    return { done: n };
  },
});
const helper = new Agent({
  id: 'helper', name: 'helper', description: 'Answers what it is asked', instructions: 'You help.',
  model: mockModel(() => [meta('resp-h'), ...text('h', ['Helper ', 'says hi.']), finish('stop', 3, 2)]),
});
const clockTool = createTool({
  id: 'clock', description: 'The time', inputSchema: z.object({}),
  execute: async () => ({ time: '12:00' }),
});
const liarTool = createTool({
  id: 'liar', description: 'Returns the wrong shape', inputSchema: z.object({ x: z.number() }),
  outputSchema: z.object({ y: z.string() }),
  execute: async ({ x }) => ({ y: x }),
});
const deepHelper = new Agent({
  id: 'deephelper', name: 'deephelper', description: 'Looks things up', instructions: 'You look up.',
  model: mockModel((prompt) => hasToolResult(prompt) ? [meta('resp-dh2'), ...text('h', ['Sunny ', 'there.']), finish('stop', 2, 2)]
    : [meta('resp-dh1'), { type: 'tool-call', toolCallId: 'c-dh', toolName: 'weather', input: '{"city":"Bern"}' }, finish('tool-calls', 1, 1)]),
  tools: { weather: weatherTool },
});
const openMapTool = createTool({
  id: 'openMap', description: 'Opens a map in the client', inputSchema: z.object({ place: z.string() }),
});
const failHelper = new Agent({
  id: 'failhelper', name: 'failhelper', description: 'Fails', instructions: 'You fail.',
  model: mockModel(() => [meta('resp-fh'), ...text('h', ['Half ']), { type: 'error', error: new Error('helper broke') }]),
});
const nothingTool = createTool({
  id: 'nothing', description: 'Returns nothing', inputSchema: z.object({}),
  execute: async (_, { writer }) => { await writer?.write({ type: 'progress', pct: 50 }); },
});
const wordsTool = createTool({ id: 'words', description: 'A string', inputSchema: z.object({}), execute: async () => 'just words' });
const nilTool = createTool({ id: 'nil', description: 'null', inputSchema: z.object({}), execute: async () => null });
const stepperTool = createTool({
  id: 'stepper', description: 'Reports a status that changes', inputSchema: z.object({}),
  execute: async (_, { writer }) => {
    await writer.custom({ type: 'data-status', id: 'st-1', data: { state: 'working' } });
    await writer.custom({ type: 'data-status', id: 'st-1', data: { state: 'done' } });
    await writer.custom({ type: 'data-note', data: { n: 1 }, transient: true });
    return { ok: true };
  },
});
const lookupTool = createTool({
  id: 'lookup', description: 'Looks up, answers the model in short', inputSchema: z.object({ q: z.string() }),
  execute: async ({ q }) => ({ q, rows: [1, 2, 3] }),
  toModelOutput: (output) => ({ type: 'text', value: `${output.rows.length} rows` }),
});
const lookupNilTool = createTool({
  id: 'lookupnil', description: 'Finds nothing', inputSchema: z.object({}), execute: async () => null,
  toModelOutput: () => ({ type: 'text', value: 'nothing' }),
});
const forecastTool = createTool({
  id: 'forecast', title: 'Weather forecast', description: 'A forecast', inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, tomorrow: 'rain' }),
});
// background tasks: deferred (the tool's result is a placeholder; this one never ends), awaited
// (the loop waits for the task), with a toModelOutput, failing
const bgTool = (id, background, execute, more) => createTool({
  id, description: `${id} in the background`, inputSchema: z.object({ n: z.number() }), background, execute, ...more });
const laterTool = bgTool('later', { enabled: true }, async () => new Promise(() => {}));
const waitedTool = bgTool('waited', { enabled: true, defaultDisposition: 'awaited' }, async ({ n }) => ({ n, squared: n * n }));
const bgmodelTool = bgTool('bgmodel', { enabled: true, defaultDisposition: 'awaited' }, async ({ n }) => ({ n }),
  { toModelOutput: (o) => ({ type: 'text', value: `n is ${o.n}` }) });
const bgfailTool = bgTool('bgfail', { enabled: true, defaultDisposition: 'awaited' },
  async ({ n }) => { throw new Error(`no luck with ${n}`); });
const bgnullTool = bgTool('bgnull', { enabled: true, defaultDisposition: 'awaited' }, async () => null);
// a model that fails as it is called (no stream): the agent falls back to the next in its list
const downModel = { ...mockModel(() => []), modelId: 'down-model', async doStream() { throw new Error('primary down'); } };
const EXTRA = {
  fallback: { model: [{ model: downModel, maxRetries: 0 }, { model: mockModel(SCRIPTS.fallback), maxRetries: 0 }] },
  later: { tools: { later: laterTool } },
  waited: { tools: { waited: waitedTool } },
  bgmodel: { tools: { bgmodel: bgmodelTool } },
  bgfail: { tools: { bgfail: bgfailTool } },
  bgnull: { tools: { bgnull: bgnullTool } },
  titled: { tools: { forecast: forecastTool } },
  cachewrite: { tools: { weather: weatherTool } },
  objerr: { defaultOptions: { structuredOutput: { schema: z.object({ answer: z.string() }) } } },
  objerrp: { defaultOptions: { structuredOutput: { schema: z.object({ answer: z.string() }) } },
    outputProcessors: [{ id: 'noop2', processOutputStep: async () => {} }] },
  objproc: { defaultOptions: { structuredOutput: { schema: z.object({ answer: z.string() }) } },
    outputProcessors: [{ id: 'noop3', processOutputStep: async () => {} }] },
  modelout: { tools: { lookup: lookupTool, lookupnil: lookupNilTool } },
  reuse: { tools: { weather: weatherTool } },
  status: { tools: { stepper: stepperTool } },
  numbered: { tools: { weather: weatherTool } },
  subfail: { agents: { failhelper: failHelper } },
  voidtool: { tools: { nothing: nothingTool, words: wordsTool, nil: nilTool } },
  approveme: { tools: { remove: removeTool } },
  clienttool: { tools: { openMap: openMapTool } },
  retryclient: {
    tools: { openMap: openMapTool }, maxProcessorRetries: 1,
    outputProcessors: [{ id: 'showit', processOutputStep: async ({ retryCount, toolCalls, abort }) => { if (!retryCount && !toolCalls?.length) abort('Show it', { retry: true }); } }],
  },
  structured: {
    defaultOptions: { structuredOutput: { schema: z.object({ answer: z.number() }),
      model: mockModel(() => [meta('resp-so2'), ...text('s', ['{"answer":', '42}']), finish('stop', 5, 2)]) } },
  },
  openthought: { tools: { weather: weatherTool } },
  warned: { tools: { weather: weatherTool } },
  deeper: { agents: { deephelper: deepHelper } },
  unknown: { tools: { weather: weatherTool } },
  openspan: { tools: { weather: weatherTool } },
  noargs: { tools: { clock: clockTool } },
  thoughts: { tools: { weather: weatherTool } },
  badout: { tools: { liar: liarTool } },
  retried: {
    tools: { weather: weatherTool }, maxProcessorRetries: 2,
    outputProcessors: [{
      id: 'brevity',
      processOutputStep: async ({ toolCalls, retryCount, abort }) => { if (!toolCalls?.length && !retryCount) abort('Be brief', { retry: true }); },
    }],
  },
  twice: {
    maxProcessorRetries: 3,
    outputProcessors: [{ id: 'picky', processOutputStep: async ({ retryCount, abort }) => { if (retryCount < 2) abort('Try again', { retry: true }); } }],
  },
  stubborn: {
    maxProcessorRetries: 1,
    outputProcessors: [{ id: 'never', processOutputStep: async ({ abort }) => abort('Never good', { retry: true }) }],
  },
  chain: { tools: { weather: weatherTool } },
  interleave: { tools: { weather: weatherTool } },
  suspending: { tools: { confirm: confirmTool } },
  streamcut: {
    outputProcessors: [{
      id: 'nosecrets',
      processOutputStream: async ({ part, abort }) => {
        if (part.type === 'text-delta' && part.payload.text.includes('secret')) abort('No secrets');
        return part;
      },
    }],
  },
  inputblock: { inputProcessors: [{ id: 'gate', processInput: async ({ abort }) => abort('Bad input', { metadata: { k: 1 } }) }] },
  final: { outputProcessors: [{ id: 'ender', processOutputResult: async ({ abort }) => abort('Rejected at the end') }] },
  quiet: { outputProcessors: [{ id: 'noop', processOutputStep: async () => {} }] },
  redact: {
    outputProcessors: [{
      id: 'redactor',
      processOutputStream: async ({ part }) => (part.type === 'text-delta'
        ? { ...part, payload: { ...part.payload, text: part.payload.text.replace('secret', '******') } } : part),
    }],
  },
  badargs: { tools: { weather: weatherTool } },
  malformed: { tools: { weather: weatherTool } },
  lateerr: { tools: { weather: weatherTool } },
  gentool: { tools: { counter: counterTool } },
  reasontool: {
    tools: { weather: weatherTool }, maxProcessorRetries: 1,
    outputProcessors: [{
      id: 'rethink', processOutputStep: async ({ retryCount, abort, stepNumber }) => { if (stepNumber === 1 && !retryCount) abort('Again', { retry: true }); },
    }],
  },
  twocalls: { tools: { weather: weatherTool, remove: removeTool } },
  repeats: { tools: { weather: weatherTool }, defaultOptions: { maxSteps: 2 } },
  onagain: {
    tools: { weather: weatherTool }, maxProcessorRetries: 2,
    outputProcessors: [{ id: 'noy', processOutputStep: async ({ text, retryCount, abort }) => { if (text === 'Y' && !retryCount) abort('No Y', { retry: true }); } }],
  },
  backoff: {
    tools: { remove: removeTool }, maxProcessorRetries: 2,
    outputProcessors: [{ id: 'twice', processOutputStep: async ({ retryCount, abort }) => { if (!retryCount) abort('Say it twice', { retry: true }); } }],
  },
  tagged: {
    tools: { weather: weatherTool },
    outputProcessors: [{
      id: 'tagger',
      processOutputStream: async ({ part, writer }) => {
        if (part.type === 'text-delta' && (part.payload.text === 'B' || part.payload.text === 'Look. '))
          await writer.custom({ type: 'data-tag', data: { at: part.payload.text } });
        return part;
      },
    }],
  },
  noted: {
    tools: { weather: weatherTool },
    outputProcessors: [{ id: 'noter', processOutputStep: async ({ writer, stepNumber }) => { await writer?.custom({ type: 'data-note', data: { step: stepNumber } }); } }],
  },
  delegating: { agents: { helper } },
  blocked: {
    outputProcessors: [{
      id: 'censor', processOutputStep: async ({ abort }) => abort('Not allowed here', { metadata: { rule: 7 } }),
    }],
  },
  weather: { tools: { weather: weatherTool } },
  tools: { tools: { progress: progressTool, broken: brokenTool } },
  approval: { tools: { remove: removeTool } },
  mixed: { tools: { remove: removeTool } },
  guarded: {
    outputProcessors: [{
      id: 'once-more',
      processOutputStep: async ({ retryCount, abort }) => { if (!retryCount) abort('Say it again', { retry: true }); },
    }],
    maxProcessorRetries: 2,
    defaultOptions: { structuredOutput: { schema: z.object({ answer: z.string() }) } },
  },
};
const agents = Object.fromEntries(Object.entries(SCRIPTS).map(([id, script]) => [id, new Agent({
  id, name: id, instructions: 'You are a test agent.', model: mockModel(script), ...EXTRA[id],
})]));
// A workflow (POST /api/workflows/shout/stream, records ended by 0x1E): a step that writes its
// progress, then one that runs the weather agent and writes the agent's chunks to its own writer
// (they come nested in workflow-step-output) and returns what the agent's output resolved.
const upper = createStep({
  id: 'upper', inputSchema: z.object({ text: z.string() }), outputSchema: z.object({ text: z.string() }),
  execute: async ({ inputData, writer }) => {
    await writer.write({ type: 'step-progress', pct: 50 });
    return { text: inputData.text.toUpperCase() };
  },
});
const ask = createStep({
  id: 'ask', inputSchema: z.object({ text: z.string() }), outputSchema: z.object({ runId: z.string(), resolved: z.any() }),
  execute: async ({ inputData, mastra: m, writer }) => {
    const out = await m.getAgent('weather').stream(inputData.text);
    await out.fullStream.pipeTo(writer);
    return { runId: out.runId, resolved: await resolved(out) };
  },
});
const shout = createWorkflow({
  id: 'shout', inputSchema: z.object({ text: z.string() }), outputSchema: z.object({ runId: z.string(), resolved: z.any() }),
}).then(upper).then(ask).commit();
// a workflow whose step is an agent itself (createStep(agent)), after a step that maps the input
const toPrompt = createStep({
  id: 'to-prompt', inputSchema: z.object({ city: z.string() }), outputSchema: z.object({ prompt: z.string() }),
  execute: async ({ inputData }) => ({ prompt: `What is the weather in ${inputData.city}?` }),
});
const asked = createWorkflow({
  id: 'asked', inputSchema: z.object({ city: z.string() }), outputSchema: z.object({ text: z.string() }),
}).then(toPrompt).then(createStep(agents.weather)).commit();
const mastra = new Mastra({ agents: { ...agents, helper, deephelper: deepHelper, failhelper: failHelper }, workflows: { shout, asked },
  backgroundTasks: { enabled: true }, logger: false });

const FIELDS = ['text', 'reasoningText', 'reasoning', 'toolCalls', 'toolResults', 'usage', 'totalUsage',
  'finishReason', 'object', 'sources', 'files', 'warnings', 'providerMetadata', 'steps'];
function recorded(v) {
  return v === undefined ? { __undefined: true } : JSON.parse(JSON.stringify(v));
}
// (as tests/mastra_oracle/oracle.mjs summarizes a step)
function stepSummary(s) {
  const o = {
    stepType: s.stepType, text: s.text, reasoningText: s.reasoningText, finishReason: s.finishReason,
    usage: s.usage, toolCallIds: (s.toolCalls || []).map((c) => c.payload?.toolCallId),
    toolResultIds: (s.toolResults || []).map((c) => c.payload?.toolCallId),
    sources: (s.sources || []).length, files: (s.files || []).length,
  };
  if ('providerMetadata' in s) o.providerMetadata = s.providerMetadata;
  o.reasoning = s.reasoning;
  o.tripwire = s.tripwire;
  o.warnings = s.warnings;
  o.responseId = s.response?.id;
  o.responseModelId = s.response?.modelId;
  return o;
}

const app = new Hono();
app.post('/expected/:id', async (c) => {
  const body = await c.req.json();
  const out = await mastra.getAgent(c.req.param('id')).stream(body.messages, { runId: body.runId });
  await out.consumeStream();
  return c.json(await resolved(out));
});
// A run that stops (agent.stream: a tool call waits for approval, or a tool suspends itself), then
// the stream that goes on from it (`next`): what that second stream's MastraModelOutput resolves.
const afterStop = (next) => async (c) => {
  const body = await c.req.json();
  const agent = mastra.getAgent(c.req.param('id'));
  const first = await agent.stream(body.messages, { runId: body.runId });
  await first.consumeStream();
  const out = await next(agent, body);
  await out.consumeStream();
  return c.json(await resolved(out));
};
app.post('/expected-approved/:id', afterStop((agent, b) => (b.decline
  ? agent.declineToolCall({ runId: b.runId, toolCallId: b.toolCallId })
  : agent.approveToolCall({ runId: b.runId, toolCallId: b.toolCallId }))));
app.post('/expected-resumed/:id', afterStop((agent, b) => agent.resumeStream(b.resumeData,
  { runId: b.runId, toolCallId: b.toolCallId })));
await new MastraServer({ app, mastra }).init();

// What a MastraModelOutput resolved, in the shape of the corpus's .expected.json files.
async function resolved(out) {
  const res = {};
  for (const f of FIELDS) {
    try {
      const v = await out[f];
      res[f] = { ok: true, value: recorded(f === 'steps' ? v.map(stepSummary) : v) };
    } catch (e) {
      res[f] = { ok: false, error: { name: e?.name, message: e?.message } };
    }
  }
  res.error = out.error ? { name: out.error.name, message: out.error.message } : null;
  res.tripwire = out.tripwire ?? null;
  res.status = out.status;
  res.dbMessages = recorded(out.messageList.get.response.db());
  // (as the corpus records it: the value, for a suspended run only)
  if (out.status === 'suspended') res.suspendPayload = recorded(await out.suspendPayload);
  return res;
}

const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info) => {
  process.stdout.write(`listening ${info.port}\n`);
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => server.close(() => process.exit(0)));
