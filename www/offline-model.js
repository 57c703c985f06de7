// The demo's built-in offline model.
//
// This is not a language model. It is a small, deterministic stand-in that lets the demo run with
// no server and no network: `offlineFetch` has the signature of `fetch` and is passed to
// `new Runner({ baseUrl, api: 'chat_completions', fetch: offlineFetch })`, so the real runner
// builds a real Chat Completions request (history from the session included) and this module
// answers it in the same wire format a server would: one JSON body, or a Server-Sent Events stream
// (a ReadableStream with a short pause between tokens) when the request asks for `stream: true`.
//
// The answers make the history visible:
// - "my X is Y" (in any user message so far) is remembered: "what is my X?" gets "Your X is Y.",
//   and "I don't know…" when the history it was sent holds no such statement;
// - "say: …" (or "repeat: …", "echo: …") answers with the text after the colon, verbatim;
// - a message containing "story" gets a longer answer (handy to try the Stop button);
// - every answer ends by saying how many earlier items (messages before the new question) it got.
//
// It plays the demo's agents and their handoffs too. A request offers the handoffs of the agent
// answering as tools named `transfer_to_…` (described "Handoff to the <name> agent…"): when the
// user's new message names one of those agents, or says a word of its name ("plan a trip" for
// the Trip planner, "back to the assistant" for the Assistant), the answer is a call of that tool
// (with no arguments), and the runner hands the run to that agent. An agent whose instructions
// say "You are the <name> agent" answers as that agent: "<name> here.", the answer, and how to go
// back (the agents it can hand off to). Any agent answers "a trip to <Place>" with a short plan.
//
// It also does the runner's background work after a reply, told apart by the request's
// instructions (its system messages): a request that asks for a summary gets one built from the
// conversation it was given (the "my X is Y" facts, the summary so far included, and the latest
// message), as JSON `{ "summary", "topics" }` when the instructions mention JSON, else as plain
// text; a request that asks for a title gets the first words of the conversation's first user
// message.

/** Any URL works as the runner's `baseUrl`: requests never leave the page. */
export const OFFLINE_BASE_URL = 'http://offline-model.invalid/v1';
export const OFFLINE_MODEL_NAME = 'offline-demo-model';

/** Milliseconds between two streamed tokens. */
export let tokenDelayMs = 35;
export function setTokenDelay(ms) {
  tokenDelayMs = ms;
}

/** The text of a Chat Completions message's `content`: a string or an array of parts. */
function textOf(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p?.text === 'string' ? p.text : '')).join('');
  return '';
}

const clean = (s) => s.trim().replace(/\s+/g, ' ').replace(/[.!?,;:]+$/, '').trim();

/** "my X is Y" statements, in order; a later statement about the same X wins. */
function factsIn(texts) {
  const facts = new Map();
  const pattern = /\bmy\s+([a-z][a-z0-9' -]{0,40}?)\s+(?:is|are|was)\s+([^.!?\n]+)/gi;
  for (const text of texts) {
    // Questions ("what is my hobby?") are not statements.
    if (/\?\s*$/.test(text.trim()) && /^\s*(what|who|where|when|which|how|do|does|is|are)\b/i.test(text)) continue;
    for (const m of text.matchAll(pattern)) {
      const key = clean(m[1]).toLowerCase();
      const value = clean(m[2]);
      if (key && value) facts.set(key, value);
    }
  }
  return facts;
}

const SAY = /^(?:say|repeat|echo)\s*:\s*([\s\S]+)$/i;

/** The answer to the last user message, given the messages (and the tools) the runner sent. */
export function reply(messages, tools = []) {
  const chat = messages.filter((m) => m.role !== 'system');
  let lastUser = -1;
  chat.forEach((m, i) => {
    if (m.role === 'user') lastUser = i;
  });
  const question = lastUser >= 0 ? textOf(chat[lastUser].content).trim() : '';
  const earlier = lastUser >= 0 ? chat.slice(0, lastUser) : chat;
  const earlierUserTexts = earlier.filter((m) => m.role === 'user').map((m) => textOf(m.content));
  const n = earlier.length;
  const given = `(I was given ${n} earlier item${n === 1 ? '' : 's'}.)`;
  // Answering as a named agent: who it is, and how to go back.
  const name = agentName(messages);
  const back = handoffsIn(tools).map((h) => h.agent.toLowerCase());
  const frame = (core) =>
    [name && `${name} here.`, core, name && back.length && `To go back, ask for the ${back.join(' or the ')}.`, given].filter(Boolean).join(' ');

  const say = SAY.exec(question);
  if (say) return frame(say[1]);

  const ask = /^\s*(?:what|who|where|which)(?:'s|\s+is|\s+are|\s+was)\s+my\s+([a-z][a-z0-9' -]{0,40}?)\s*\??\s*$/i.exec(question);
  if (ask) {
    const key = clean(ask[1]).toLowerCase();
    const facts = factsIn(earlierUserTexts);
    if (facts.has(key)) return frame(`Your ${key} is ${facts.get(key)}.`);
    return frame(`I don't know your ${key}: nothing in this conversation's history says it. Tell me with "my ${key} is …".`);
  }

  const trip = /\btrip\s+to\s+(\p{Lu}[\p{L}'’-]*(?:\s+\p{Lu}[\p{L}'’-]*)*)/u.exec(question);
  if (trip) {
    const place = trip[1];
    return frame(
      `A three-day plan for ${place}: day 1, walk the old town and find a view; day 2, a museum in the ` +
        'morning and the market at lunch; day 3, a day out of town by train. Pack comfortable shoes.',
    );
  }

  const stated = factsIn([question]);
  if (stated.size > 0) {
    const parts = [...stated].map(([k, v]) => `your ${k} is ${v}`);
    const [first] = stated.keys();
    return frame(`Noted: ${parts.join(', and ')}. Ask me "what is my ${first}?" later, even after a reload.`);
  }

  if (/\bstory\b/i.test(question)) {
    return frame(
      'Once upon a time, a small chat page kept its memories in a database inside the browser. ' +
        'Every question and every answer went into IndexedDB, one item at a time, in order. ' +
        'When the page was closed and opened again, nothing was lost: the history was read back ' +
        'and sent to the model with the next question, so the conversation simply carried on. ' +
        'And when someone pressed Stop in the middle of a sentence, the half-finished answer was ' +
        'dropped and the question stayed, so the story could be asked for again. The end.',
    );
  }

  const facts = factsIn([...earlierUserTexts]);
  const known = facts.size ? ` I know ${facts.size} thing${facts.size === 1 ? '' : 's'} about you from this chat.` : '';
  const echo = question.length > 80 ? `${question.slice(0, 77)}…` : question;
  return frame(
    `I am the offline demo model: I only remember what this chat's history tells me.${known} ` +
      `You said "${echo}". Try "my favourite colour is green", then "what is my favourite colour?".`,
  );
}

/** The name of the agent a request is for: "You are the <name> agent" in its instructions; else
 * null. */
function agentName(messages) {
  return /\bYou are the (.+?) agent\b/.exec(instructionsOf(messages))?.[1] ?? null;
}

/** The handoffs a request offers: `[{ tool, agent }]`, from its tools named `transfer_to_…`; the
 * agent's name is the one the runner's description of the tool gives ("Handoff to the <name>
 * agent to handle the request."), else the tool's name with spaces for its underscores. */
export function handoffsIn(tools) {
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((t) => {
    // Chat Completions nests the function; the Responses style does not.
    const f = t?.function ?? t;
    const tool = typeof f?.name === 'string' ? f.name : '';
    if (!tool.startsWith('transfer_to_')) return [];
    const described = /^Handoff to the (.+?) agent to handle the request\b/.exec(typeof f.description === 'string' ? f.description : '');
    return [{ tool, agent: described ? described[1] : tool.slice('transfer_to_'.length).replace(/_/g, ' ') }];
  });
}

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The handoff `text` asks for: the first of `handoffs` whose agent's name, or a word of it of
 * four letters or more (or its plural), `text` says; else null. */
export function askedFor(text, handoffs) {
  for (const h of handoffs) {
    const words = [h.agent, ...h.agent.split(/[^\p{L}\p{N}]+/u).filter((w) => w.length >= 4)];
    const says = (w) => new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegExp(w)}s?(?![\\p{L}\\p{N}])`, 'iu').test(text);
    if (words.some(says)) return h;
  }
  return null;
}

/** The handoff call that answers a reply request, or null: when the request's last message is
 * the user's (not the output of a handoff just taken) and asks for an agent it offers a handoff
 * to. ("say: …" is always said, never handed off.) */
export function handoffCall(messages, tools) {
  if (taskOf(messages) !== 'reply') return null;
  const last = messages.filter((m) => m.role !== 'system' && m.role !== 'developer').at(-1);
  if (last?.role !== 'user') return null;
  const text = textOf(last.content).trim();
  if (SAY.test(text)) return null;
  const h = askedFor(text, handoffsIn(tools));
  return h ? { name: h.tool, arguments: '{}' } : null;
}

/** The instructions of a request: its system and developer messages, without the blocks a runner
 * adds to them about the session (its summary, its state), which are context, not the task. */
function instructionsOf(messages) {
  return messages
    .filter((m) => m.role === 'system' || m.role === 'developer')
    .map((m) => textOf(m.content))
    .join('\n')
    .replace(/<session_(summary|state)>[\s\S]*?<\/session_\1>/g, '');
}

/** What a request asks for: `'title'`, `'summary'` or `'reply'` (an answer in the chat). When the
 * instructions mention both a title and a summary, the one they mention first is the task. */
export function taskOf(messages) {
  const text = instructionsOf(messages);
  const title = text.search(/\btitle\b/i);
  const summary = text.search(/\bsummar(?:y|ies|ise|ize)/i);
  if (title < 0 && summary < 0) return 'reply';
  if (summary < 0 || (title >= 0 && title < summary)) return 'title';
  return 'summary';
}

/** What a summary or title request is about: the conversation's messages (`[{ role, text }]`)
 * and whatever text came before them (a summary so far). A transcript ("User: …" and
 * "Assistant: …" lines, a message's later lines following its first) is read line by line; other
 * messages are taken as they are. */
function conversationOf(messages) {
  const turns = [];
  const before = [];
  for (const m of messages) {
    if (m.role === 'system' || m.role === 'developer') continue;
    const text = textOf(m.content);
    if (!/^(?:user|assistant):/im.test(text)) {
      if (m.role === 'user' || m.role === 'assistant') turns.push({ role: m.role, text });
      continue;
    }
    let last = null;
    for (const line of text.split('\n')) {
      const said = /^(user|assistant):\s?(.*)$/i.exec(line);
      if (said) {
        last = { role: said[1].toLowerCase(), text: said[2] };
        turns.push(last);
      } else if (/^(?:tool call|tool result)\b/i.test(line)) {
        last = null;
      } else if (last) {
        last.text += `\n${line}`;
      } else {
        before.push(line);
      }
    }
  }
  return { turns, before: before.join('\n') };
}

/** The facts a summary this model wrote states ("The user's X is Y."). */
function factsInSummary(text) {
  const facts = new Map();
  for (const m of text.matchAll(/\bthe user's\s+([a-z][a-z0-9' -]{0,40}?)\s+(?:is|are)\s+([^.\n]+)\./gi)) {
    facts.set(clean(m[1]).toLowerCase(), clean(m[2]));
  }
  return facts;
}

/** A summary of the conversation a request gives: the facts the user stated (those of the
 * summary so far, then the newer ones), and the latest user message. */
export function summarise(messages) {
  const { turns, before } = conversationOf(messages);
  const userTexts = turns.filter((t) => t.role === 'user').map((t) => t.text.trim()).filter(Boolean);
  const facts = factsInSummary(before);
  for (const [key, value] of factsIn(userTexts)) {
    facts.delete(key);
    facts.set(key, value);
  }
  const sentences = [...facts].map(([key, value]) => `The user's ${key} is ${value}.`);
  const latest = userTexts.at(-1);
  if (latest) {
    const one = latest.replace(/\s+/g, ' ');
    sentences.push(`Latest message: “${one.length > 60 ? `${one.slice(0, 59)}…` : one}”.`);
  }
  return { summary: sentences.join(' ') || 'Nothing has been said yet.', topics: [...facts.keys()] };
}

/** A title for the conversation a request gives: the first six words of its first user message. */
export function titleFor(messages) {
  const first = conversationOf(messages).turns.find((t) => t.role === 'user' && t.text.trim());
  if (!first) return 'New conversation';
  return first.text.trim().split(/\s+/).slice(0, 6).join(' ').replace(/[.!?,;:]+$/, '') || 'New conversation';
}

/** The text that answers a request: a reply, a summary or a title. `tools`: the request's. */
export function answer(messages, tools = []) {
  switch (taskOf(messages)) {
    case 'title':
      return titleFor(messages);
    case 'summary': {
      const summary = summarise(messages);
      return /\bjson\b/i.test(instructionsOf(messages)) ? JSON.stringify(summary) : summary.summary;
    }
    default:
      return reply(messages, tools);
  }
}

/** Splits an answer into word-sized tokens (each keeps its trailing space). */
function tokens(text) {
  return text.match(/\s*\S+\s*/g) ?? [];
}

const sleep = (ms, signal) =>
  new Promise((ok, fail) => {
    const t = setTimeout(ok, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        fail(signal.reason);
      },
      { once: true },
    );
  });

function abortError(signal) {
  return signal?.reason ?? new DOMException('The operation was aborted.', 'AbortError');
}

/** A `fetch` that answers Chat Completions requests in the page. */
export async function offlineFetch(url, init = {}) {
  const signal = init.signal;
  if (signal?.aborted) throw abortError(signal);
  if (!String(url).endsWith('/chat/completions')) {
    return new Response(JSON.stringify({ error: { message: `the offline model only speaks Chat Completions, not ${url}` } }), {
      status: 404,
      headers: { 'content-type': 'application/json' },
    });
  }
  let body;
  try {
    body = JSON.parse(init.body);
  } catch {
    return new Response(JSON.stringify({ error: { message: 'the request body is not JSON' } }), {
      status: 400,
      headers: { 'content-type': 'application/json' },
    });
  }
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const id = `offline-${Date.now().toString(36)}`;
  // A handoff (a call of a `transfer_to_…` tool), else an answer in text.
  const handoff = handoffCall(messages, tools);
  const call = handoff && { id: `call_${id}`, type: 'function', function: handoff };
  const text = call ? '' : answer(messages, tools);
  const created = Math.floor(Date.now() / 1000);
  const model = body.model ?? OFFLINE_MODEL_NAME;
  const parts = tokens(text);
  const usage = {
    prompt_tokens: messages.reduce((sum, m) => sum + tokens(textOf(m.content)).length, 0),
    completion_tokens: call ? 1 : parts.length,
  };
  usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;

  if (!body.stream) {
    await sleep(tokenDelayMs, signal);
    const json = {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [
        call
          ? { index: 0, message: { role: 'assistant', content: null, tool_calls: [call] }, finish_reason: 'tool_calls' }
          : { index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' },
      ],
      usage,
    };
    return new Response(JSON.stringify(json), { status: 200, headers: { 'content-type': 'application/json' } });
  }

  const encoder = new TextEncoder();
  const event = (data) => encoder.encode(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
  const chunk = (delta, finish = null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  let cancelled = false;
  const stream = new ReadableStream({
    async start(controller) {
      try {
        if (call) {
          await sleep(tokenDelayMs, signal);
          if (cancelled) return;
          controller.enqueue(event(chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, ...call }] })));
        }
        for (const [i, part] of parts.entries()) {
          await sleep(tokenDelayMs, signal);
          if (cancelled) return;
          controller.enqueue(event(chunk(i === 0 ? { role: 'assistant', content: part } : { content: part })));
        }
        controller.enqueue(event(chunk({}, call ? 'tool_calls' : 'stop')));
        if (body.stream_options?.include_usage) {
          controller.enqueue(event({ id, object: 'chat.completion.chunk', created, model, choices: [], usage }));
        }
        controller.enqueue(event('[DONE]'));
        controller.close();
      } catch (e) {
        // Aborted: the reader sees the abort reason, as with a real fetch.
        if (!cancelled) controller.error(e);
      }
    },
    cancel() {
      cancelled = true;
    },
  });
  return new Response(stream, {
    status: 200,
    headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
  });
}
