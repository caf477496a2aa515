// Mastra's own MastraModelOutput (@mastra/core, the version package.json pins), run on streams
// the tests make: tests/test_mastra_oracle.py.
//
// stdin: a JSON array of streams, each an array of chunk JSON texts: what Mastra's agent loop
// hands MastraModelOutput.  stdout: a JSON array with, for each stream, what a client receives
// (`wire`: each chunk of fullStream as JSON.stringify wrote it when it arrived, as the corpus was
// recorded) and what Mastra resolved, in the shape of the corpus's .expected.json files; and
// `parts`, the parts of the message Mastra keeps for that wire (persistedParts).  With the argument
// `partial`: what Mastra's parsePartialJson makes of tool arguments cut short (below).
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { MastraModelOutput } from '@mastra/core/stream';
import { MessageList } from '@mastra/core/agent/message-list';

// A function of @mastra/core that no entry point exports: the dist file whose export list names
// it, and the name it is exported under there (the pinned version's files are what they are).
async function internal(name) {
  const dist = createRequire(import.meta.url).resolve('@mastra/core/stream').replace(/\/dist\/.*$/, '/dist/');
  for (const f of readdirSync(dist)) {
    if (!f.endsWith('.js')) continue;
    const m = readFileSync(dist + f, 'utf8').match(new RegExp(`\\b${name} as ([\\w$]+)\\b`));
    if (m) return (await import(pathToFileURL(dist + f).href))[m[1]];
  }
  throw new Error(`@mastra/core has no ${name}`);
}
const buildMessagesFromChunks = await internal('buildMessagesFromChunks');

const FIELDS = ['text', 'reasoningText', 'reasoning', 'toolCalls', 'toolResults', 'usage', 'totalUsage',
  'finishReason', 'object', 'sources', 'files', 'warnings', 'providerMetadata', 'steps', 'suspendPayload'];

// As the corpus recorder wrote a value: JSON.stringify's view, a top-level undefined as a marker.
function recorded(v) {
  if (v === undefined) return { __undefined: true };
  return JSON.parse(JSON.stringify(v));
}

// The per-step summary the expected files record.
function stepSummary(s) {
  const o = {
    stepType: s.stepType, text: s.text, reasoningText: s.reasoningText, finishReason: s.finishReason,
    usage: s.usage, toolCallIds: (s.toolCalls || []).map(c => c.payload?.toolCallId),
    toolResultIds: (s.toolResults || []).map(c => c.payload?.toolCallId),
    sources: (s.sources || []).length, files: (s.files || []).length,
  };
  if ('providerMetadata' in s) o.providerMetadata = s.providerMetadata;
  o.reasoning = s.reasoning;      // (these two not in the expected files: the oracle's own)
  o.tripwire = s.tripwire;
  o.warnings = s.warnings;
  o.responseId = s.response?.id;
  o.responseModelId = s.response?.modelId;
  return o;
}

function errorOf(e) {
  return { name: e?.name, message: e?.message };
}

// The parts of the message the agent loop keeps, built as the loop builds them: each step's parts
// are buildMessagesFromChunks of that step's chunks alone (so a text or reasoning part left open at
// a step's end ends there), added to the message once the model's stream for the step has ended
// (here: at its step-finish, or the stream's end); each step after the first opens with a step
// boundary (MessageList.openStepBoundary: a step-start part, unless the message is empty or
// already ends in one); a step a processor had tried again (its step-finish's reason "retry") is
// rolled back (rollbackToStepBoundary: to before its boundary, or the whole message when it opened
// none).  A data-* chunk that is not transient is a part {type, data} added as it arrives: one
// that came while the model was still streaming the step (text or reasoning, a tool call, a source
// or a file after it in the step) goes before the step's parts, one that came after after them.
const MODEL = (ch) => ((ch.type === 'text-delta' || ch.type === 'reasoning-delta') && ch.payload?.text) ||
  ch.type === 'tool-call' || ch.type === 'source' || ch.type === 'file';
function persistedParts(chunks) {
  let started = false;
  const boundary = chunks.map((ch) => {    // each step-start but the first
    if (ch.type !== 'step-start') return false;
    const b = started;
    started = true;
    return b;
  });
  const out = [];
  let at = -1;        // the boundary of the step being read, or -1
  let step = [];      // the step's chunks so far
  let late = [];      // data parts that go after the step's parts
  const endStep = () => {
    const msgs = buildMessagesFromChunks({ chunks: step, messageId: 'msg-oracle' });
    // (the result of a tool the loop ran is merged into the message by the loop, not by
    // buildMessagesFromChunks, which leaves a null one out)
    const nulls = new Set(step.filter((ch) => ch.type === 'tool-result' && ch.payload?.result === null &&
      ch.payload?.providerExecuted !== true).map((ch) => ch.payload.toolCallId));
    for (const p of msgs.length ? msgs[0].content.parts : []) {
      if (p.type === 'tool-invocation' && p.toolInvocation.state === 'call' && nulls.has(p.toolInvocation.toolCallId)) {
        p.toolInvocation = { ...p.toolInvocation, state: 'result', result: null };
      }
    }
    if (msgs.length) out.push(...msgs[0].content.parts);
    out.push(...late);
    step = [];
    late = [];
  };
  for (const [i, ch] of chunks.entries()) {
    if (boundary[i]) {
      out.push(...late);
      late = [];
      if (out.length) {
        if (out[out.length - 1].type !== 'step-start') out.push({ type: 'step-start' });
        at = out.length - 1;
      } else {
        at = -1;
      }
    }
    if (typeof ch.type === 'string' && ch.type.startsWith('data-')) {
      if (ch.transient === true) continue;
      let early = false;
      for (let j = i + 1; j < chunks.length && !boundary[j] && !early; j++) early = !!MODEL(chunks[j]);
      (early ? out : late).push({ type: ch.type, data: ch.data });
      continue;
    }
    step.push(ch);
    if (ch.type === 'step-finish') {
      endStep();
      if (ch.payload?.stepResult?.reason === 'retry') out.splice(Math.max(at, 0));
    }
  }
  endStep();
  return recorded(out);
}

async function run(texts) {
  const chunks = texts.map(t => JSON.parse(t));
  const stream = new ReadableStream({ start(c) { for (const ch of chunks) c.enqueue(ch); c.close(); } });
  const out = new MastraModelOutput({
    model: { modelId: 'mock-model-id', provider: 'mock-provider', version: 'v3' },
    stream, messageList: new MessageList({}), messageId: 'msg-oracle',
    options: { runId: 'oracle-run' },
  });
  const res = { wire: [], fullStreamThrew: null };
  try {
    for await (const ch of out.fullStream) res.wire.push(JSON.stringify(ch));
  } catch (e) {
    res.fullStreamThrew = errorOf(e);
  }
  // (read after the stream ended, as the recorder did: a promise rejected by an error chunk and
  // resolved again by the finish after it is read as resolved)
  for (const f of FIELDS) {
    let timer;
    const late = new Promise((_, rej) => { timer = setTimeout(() => rej(new Error('not settled')), 5000); });
    try {
      const v = await Promise.race([out[f], late]);
      res[f] = { ok: true, value: recorded(f === 'steps' ? v.map(stepSummary) : v) };
    } catch (e) {
      res[f] = { ok: false, error: errorOf(e) };
    } finally {
      clearTimeout(timer);
    }
  }
  res.parts = persistedParts(res.wire.map(w => JSON.parse(w)));
  res.error = out.error ? errorOf(out.error) : null;
  res.tripwire = out.tripwire ? recorded(out.tripwire) : null;
  res.status = out.status;
  // the expected files have suspendPayload only for a suspended run, and unwrapped
  const sp = res.suspendPayload;
  delete res.suspendPayload;
  if (sp.ok && !sp.value?.__undefined) res.suspendPayload = sp.value;
  return res;
}

let input = '';
process.stdin.setEncoding('utf8');
for await (const d of process.stdin) input += d;
const results = [];
if (process.argv[2] === 'partial') {
  // `node oracle.mjs partial`: stdin a JSON array of texts (tool arguments as far as they have
  // streamed); stdout what Mastra's parsePartialJson makes of each ({value} or {failed: state})
  const parsePartialJson = await internal('parsePartialJson');
  for (const t of JSON.parse(input)) {
    const r = await parsePartialJson(t);
    results.push(r.value === undefined ? { failed: r.state } : { value: r.value });
  }
} else {
  for (const s of JSON.parse(input)) {
    try {
      results.push(await run(s));
    } catch (e) {
      results.push({ oracleError: String(e?.stack || e) });
    }
  }
}
process.stdout.write(JSON.stringify(results));
