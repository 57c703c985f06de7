// A local, in-memory OpenAI Conversations API server for tests: creates, reads and deletes
// conversations and their items with the real API's shapes and paging, sends CORS headers,
// records every request, and can be switched into faults (offline, error status, slow, dropped
// answers) at any time, so that a session backed by it can be tested against a flaky network.
//
// Routes (all under `url`, which ends in /v1):
//   POST   /conversations                       { items?, metadata? } → conversation
//   GET    /conversations/{id}                  → conversation
//   POST   /conversations/{id}                  { metadata } → conversation (update)
//   DELETE /conversations/{id}                  → { id, object: 'conversation.deleted', deleted: true }
//   POST   /conversations/{id}/items            { items } (1..20) → list of the created items
//   GET    /conversations/{id}/items            ?limit=1..100 (20) &order=asc|desc (desc) &after=item_id
//   GET    /conversations/{id}/items/{item_id}  → item
//   DELETE /conversations/{id}/items/{item_id}  → conversation
import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

/** Ids shaped like OpenAI's: a type prefix and 48 hex digits. */
const newId = (prefix) => `${prefix}_${randomBytes(24).toString('hex')}`;

/** The id prefix OpenAI gives each item type; other types get a generic `item_`. */
const ID_PREFIX = {
  message: 'msg',
  function_call: 'fc',
  function_call_output: 'fco',
  reasoning: 'rs',
  custom_tool_call: 'ctc',
  custom_tool_call_output: 'ctco',
};

/** Item types whose `status` the API fills in ('completed') when it returns them. */
const HAS_STATUS = new Set(['message', 'function_call', 'function_call_output']);

const MAX_ITEMS_PER_CALL = 20;

/** An HTTP error carrying an OpenAI-style error body. */
class ApiError extends Error {
  constructor(status, message, { type, param = null, code = null } = {}) {
    super(message);
    this.status = status;
    this.body = { error: { message, type: type ?? errorType(status), param, code } };
  }
}

function errorType(status) {
  if (status === 429) return 'requests';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/**
 * Faults (see `setFault`; all off by default):
 *   null                                       no fault
 *   { kind: 'offline' }                        not listening: connections are refused
 *   { kind: 'status', status: 500, times?, message?, code?, retryAfter? }
 *                                              non-OPTIONS requests answer that status with an
 *                                              OpenAI-style error body and change nothing
 *   { kind: 'slow', ms, times? }               non-OPTIONS requests wait `ms` before being handled
 *   { kind: 'drop', times?, methods? }         the request takes effect, then its answer is cut
 *                                              after its first bytes (the client sees a network
 *                                              error); only `methods` if given
 * `times` (default: every request) counts down per affected request; at 0 the fault clears.
 * Any fault but offline also takes `methods` (only those) and `skip` (that many matching requests
 * pass before it applies).
 * Preflight OPTIONS requests are never faulted (but are refused while offline, like everything).
 */
export async function startConversationsServer({ host = '127.0.0.1' } = {}) {
  const state = {
    /** Every non-OPTIONS request, in arrival order: { method, path, query, headers, body }. */
    requests: [],
    /** Every CORS preflight: { path, headers }. */
    preflights: [],
    /** id → { id, object, created_at, metadata, items: [stored item, …] } (items oldest first). */
    conversations: new Map(),
    /** The current fault (a copy of what was set, with `times` counting down), or null. */
    fault: null,
  };
  const sockets = new Set();
  let listening = false;
  let closed = false;
  // Fault changes that open or close the listening socket run one after another.
  let transition = Promise.resolve();

  const server = createServer(async (req, res) => {
    res.setHeader('access-control-allow-origin', '*');
    res.setHeader('access-control-allow-headers', 'authorization, content-type, idempotency-key, openai-organization');
    res.setHeader('access-control-allow-methods', 'GET, POST, DELETE, OPTIONS');
    res.setHeader('access-control-expose-headers', 'retry-after');
    const url = new URL(req.url, 'http://x');
    if (req.method === 'OPTIONS') {
      state.preflights.push({ path: url.pathname, headers: req.headers });
      res.writeHead(204).end();
      return;
    }
    const chunks = [];
    try {
      for await (const c of req) chunks.push(c);
    } catch {
      return; // the client went away (or we went offline) while sending the body
    }
    const raw = Buffer.concat(chunks).toString('utf8');
    let body = null;
    let badJson = false;
    if (raw.trim()) {
      try {
        body = JSON.parse(raw);
      } catch {
        badJson = true;
      }
    }
    state.requests.push({ method: req.method, path: url.pathname, query: Object.fromEntries(url.searchParams), headers: req.headers, body });

    const fault = takeFault(req.method);
    if (fault?.kind === 'status') {
      const status = fault.status ?? 500;
      const err = new ApiError(status, fault.message ?? defaultStatusMessage(status), { code: fault.code ?? (status === 429 ? 'rate_limit_exceeded' : null) });
      if (fault.retryAfter !== undefined) res.setHeader('retry-after', String(fault.retryAfter));
      send(res, err.status, err.body);
      return;
    }
    if (fault?.kind === 'slow') {
      await sleep(fault.ms ?? 0);
      // Cut off by going offline while waiting: like a crashed server, it changes nothing.
      if (!listening) return;
    }

    let status = 200;
    let out;
    try {
      if (badJson) {
        throw new ApiError(400, 'We could not parse the JSON body of your request. (HINT: This likely means you aren\'t using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)');
      }
      authorize(req);
      out = route(req.method, url, body);
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError(e instanceof URIError ? 400 : 500, String(e?.message ?? e));
      status = err.status;
      out = err.body;
    }
    if (fault?.kind === 'drop') {
      // The change above is kept; the answer is cut after its first bytes. (A connection closed
      // before any byte of the answer is one a browser may send the request again on, as it
      // does for a reused keep-alive connection the server closed: that would be a second
      // request, not a lost answer.)
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"object": "li');
      setTimeout(() => res.socket?.destroy(), 20);
      return;
    }
    send(res, status, out);
  });

  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  function send(res, status, json) {
    if (res.destroyed || res.socket?.destroyed) return; // the client went away (or we went offline)
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
  }

  function defaultStatusMessage(status) {
    if (status === 429) return 'Rate limit reached for requests. Please try again later.';
    if (status >= 500) return 'The server had an error while processing your request. Sorry about that!';
    return `Request failed with status ${status} (test fault).`;
  }

  /**
   * The fault that applies to this request, counting it down. Offline needs no per-request
   * handling: while offline nothing reaches the handler.
   */
  function takeFault(method) {
    const f = state.fault;
    if (!f || f.kind === 'offline') return null;
    if (f.methods && !f.methods.map((m) => m.toUpperCase()).includes(method)) return null;
    if (typeof f.skip === 'number' && f.skip > 0) {
      f.skip -= 1; // this many matching requests pass first
      return null;
    }
    if (typeof f.times === 'number') {
      f.times -= 1;
      if (f.times <= 0) state.fault = null;
    }
    return f;
  }

  function authorize(req) {
    const auth = req.headers.authorization ?? '';
    if (!/^Bearer\s+\S+/i.test(auth)) {
      throw new ApiError(
        401,
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
      );
    }
  }

  // ---- Routes --------------------------------------------------------------------------------

  function route(method, url, body) {
    const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    const invalid = () => new ApiError(404, `Invalid URL (${method} ${url.pathname})`);
    if (parts[0] !== 'v1' || parts[1] !== 'conversations') throw invalid();
    const [, , convId, sub, itemId, ...rest] = parts;
    if (rest.length || (sub !== undefined && sub !== 'items')) throw invalid();

    if (convId === undefined) {
      if (method === 'POST') return createConversation(body ?? {});
      throw invalid();
    }
    if (sub === undefined) {
      if (method === 'GET') return publicConversation(conversation(convId));
      if (method === 'POST') return updateConversation(conversation(convId), body ?? {});
      if (method === 'DELETE') {
        conversation(convId);
        state.conversations.delete(convId);
        return { id: convId, object: 'conversation.deleted', deleted: true };
      }
      throw invalid();
    }
    if (itemId === undefined) {
      if (method === 'GET') return listItems(conversation(convId), url.searchParams);
      if (method === 'POST') return addItems(conversation(convId), body ?? {});
      throw invalid();
    }
    if (method === 'GET') return item(conversation(convId), itemId);
    if (method === 'DELETE') {
      const conv = conversation(convId);
      const found = item(conv, itemId);
      conv.items.splice(conv.items.indexOf(found), 1);
      return publicConversation(conv);
    }
    throw invalid();
  }

  function conversation(id) {
    const conv = state.conversations.get(id);
    if (!conv) throw new ApiError(404, `Conversation with id '${id}' not found.`, { param: 'conversation_id', code: 'not_found' });
    return conv;
  }

  function item(conv, id) {
    const found = conv.items.find((i) => i.id === id);
    if (!found) throw new ApiError(404, `Item with id '${id}' not found.`, { param: 'item_id', code: 'not_found' });
    return found;
  }

  function publicConversation(conv) {
    return { id: conv.id, object: conv.object, created_at: conv.created_at, metadata: conv.metadata };
  }

  function checkMetadata(metadata) {
    if (metadata === undefined || metadata === null) return {};
    if (typeof metadata !== 'object' || Array.isArray(metadata)) {
      throw new ApiError(400, "Invalid type for 'metadata': expected an object.", { param: 'metadata', code: 'invalid_type' });
    }
    return structuredClone(metadata);
  }

  function createConversation(body) {
    const metadata = checkMetadata(body.metadata);
    const items = body.items == null ? [] : normalizeItems(body.items, 'items');
    const conv = { id: newId('conv'), object: 'conversation', created_at: Math.floor(Date.now() / 1000), metadata, items };
    state.conversations.set(conv.id, conv);
    return publicConversation(conv);
  }

  function updateConversation(conv, body) {
    if (!('metadata' in body)) throw new ApiError(400, "Missing required parameter: 'metadata'.", { param: 'metadata', code: 'missing_required_parameter' });
    conv.metadata = checkMetadata(body.metadata);
    return publicConversation(conv);
  }

  function addItems(conv, body) {
    if (body.items === undefined) throw new ApiError(400, "Missing required parameter: 'items'.", { param: 'items', code: 'missing_required_parameter' });
    const created = normalizeItems(body.items, 'items');
    conv.items.push(...created);
    return list(created, false);
  }

  function list(data, hasMore) {
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore };
  }

  /**
   * Paging as the API does it: the items in `order` (by creation; default newest first), those
   * after the item `after` (in that order), at most `limit` of them; `has_more` says whether
   * more follow.
   */
  function listItems(conv, params) {
    let limit = 20;
    if (params.has('limit')) {
      const raw = params.get('limit');
      limit = Number(raw);
      if (!/^-?\d+$/.test(raw)) throw new ApiError(400, `Invalid 'limit': expected an integer, but got '${raw}' instead.`, { param: 'limit', code: 'invalid_type' });
      if (limit < 1) throw new ApiError(400, `Invalid 'limit': integer below minimum value. Expected a value >= 1, but got ${limit} instead.`, { param: 'limit', code: 'integer_below_min_value' });
      if (limit > 100) throw new ApiError(400, `Invalid 'limit': integer above maximum value. Expected a value <= 100, but got ${limit} instead.`, { param: 'limit', code: 'integer_above_max_value' });
    }
    const order = params.get('order') ?? 'desc';
    if (order !== 'asc' && order !== 'desc') {
      throw new ApiError(400, `Invalid value for 'order': expected one of 'asc' or 'desc', but got '${order}' instead.`, { param: 'order', code: 'invalid_value' });
    }
    let ordered = order === 'asc' ? conv.items.slice() : conv.items.slice().reverse();
    const after = params.get('after');
    if (after) {
      const at = ordered.findIndex((i) => i.id === after);
      if (at < 0) throw new ApiError(400, `Invalid 'after': no item with id '${after}' in this conversation.`, { param: 'after', code: 'invalid_value' });
      ordered = ordered.slice(at + 1);
    }
    return list(ordered.slice(0, limit), ordered.length > limit);
  }

  // ---- Items ---------------------------------------------------------------------------------

  function normalizeItems(items, param) {
    if (!Array.isArray(items)) throw new ApiError(400, `Invalid type for '${param}': expected an array.`, { param, code: 'invalid_type' });
    if (items.length > MAX_ITEMS_PER_CALL) {
      throw new ApiError(400, `Invalid '${param}': array too long. Expected an array with maximum length ${MAX_ITEMS_PER_CALL}, but got an array with length ${items.length} instead.`, { param, code: 'array_above_max_length' });
    }
    return items.map((it, i) => normalizeItem(it, `${param}[${i}]`));
  }

  /** An input item as the API stores and returns it: with an id, a status, content parts. */
  function normalizeItem(input, param) {
    if (!input || typeof input !== 'object' || Array.isArray(input)) {
      throw new ApiError(400, `Invalid type for '${param}': expected an object.`, { param, code: 'invalid_type' });
    }
    const it = structuredClone(input);
    const type = it.type ?? (it.role !== undefined ? 'message' : undefined);
    if (!type) throw new ApiError(400, `Missing required parameter: '${param}.type'.`, { param: `${param}.type`, code: 'missing_required_parameter' });
    const require = (...fields) => {
      for (const f of fields) {
        if (it[f] === undefined) throw new ApiError(400, `Missing required parameter: '${param}.${f}'.`, { param: `${param}.${f}`, code: 'missing_required_parameter' });
      }
    };
    const out = { id: it.id ?? newId(ID_PREFIX[type] ?? 'item'), type };
    if (type === 'message') {
      require('role', 'content');
      const outputRole = it.role === 'assistant';
      const content =
        typeof it.content === 'string'
          ? [{ type: outputRole ? 'output_text' : 'input_text', text: it.content }]
          : Array.isArray(it.content)
            ? it.content
            : null;
      if (!content) throw new ApiError(400, `Invalid type for '${param}.content': expected a string or an array.`, { param: `${param}.content`, code: 'invalid_type' });
      content.forEach((part, j) => {
        if (part?.type === 'output_text' && part.annotations === undefined) part.annotations = [];
        if (part?.type === 'input_image' && typeof part.image_url === 'string' && !/^(https?:|data:)/.test(part.image_url)) {
          const where = `${param}.content[${j}].image_url`;
          throw new ApiError(400, `Invalid '${where}'. Expected a valid URL, but got a value with an invalid format.`, { param: where, code: 'invalid_value' });
        }
      });
      Object.assign(out, it, { id: out.id, type, status: it.status ?? 'completed', role: it.role, content });
      return out;
    }
    if (type === 'function_call') require('call_id', 'name', 'arguments');
    if (type === 'function_call_output') require('call_id', 'output');
    Object.assign(out, it, { id: out.id, type });
    if (HAS_STATUS.has(type)) out.status = it.status ?? 'completed';
    return out;
  }

  // ---- Listening and faults ------------------------------------------------------------------

  function listen(port) {
    return new Promise((ok, fail) => {
      const onError = (e) => {
        server.off('listening', onListening);
        fail(e);
      };
      const onListening = () => {
        server.off('error', onError);
        listening = true;
        ok();
      };
      server.once('error', onError);
      server.once('listening', onListening);
      server.listen(port, host);
    });
  }

  /** Listens on `port` again; retries for a moment if the old socket is still being released. */
  async function relisten(port) {
    for (let attempt = 0; ; attempt++) {
      try {
        await listen(port);
        return;
      } catch (e) {
        if (e.code !== 'EADDRINUSE' || attempt >= 50) throw e;
        await sleep(20);
      }
    }
  }

  /**
   * Stops listening and cuts every open connection (in-flight requests included). Resolves a
   * moment after the last socket closed, so that clients have seen their pooled keep-alive
   * connections end and a new request is refused rather than written into a dying socket.
   */
  async function unlisten() {
    if (!listening) return;
    listening = false;
    await new Promise((ok) => {
      server.close(() => ok());
      for (const s of sockets) s.destroy();
    });
    await sleep(25);
  }

  await listen(0);
  const { port } = server.address();

  /**
   * Sets (or, with null, clears) the fault. Resolves once the server is in the new state: for
   * `offline`, once it no longer listens; when leaving `offline`, once it listens again on the
   * same port.
   */
  function setFault(fault) {
    const next = fault ? { ...fault, ...(fault.methods ? { methods: [...fault.methods] } : {}) } : null;
    state.fault = next;
    transition = transition
      .catch(() => {})
      .then(async () => {
        // Whatever was set last wins, even if several changes were queued.
        if (state.fault?.kind === 'offline') await unlisten();
        else if (!listening && !closed) await relisten(port);
      });
    return transition;
  }

  return {
    url: `http://${host}:${port}/v1`,
    port,
    state,
    /** Same as `state.conversations`: id → { id, object, created_at, metadata, items }. */
    get conversations() {
      return state.conversations;
    },
    /** Same as `state.requests`. */
    get requests() {
      return state.requests;
    },
    /** The current fault (with `times` counting down), or null. */
    get fault() {
      return state.fault;
    },
    /** Sets a fault without waiting; use `await setFault(…)` to wait for offline/online. */
    set fault(fault) {
      setFault(fault).catch(() => {});
    },
    setFault,
    /** Forgets conversations, requests and the fault; resolves once listening again. */
    reset() {
      state.conversations.clear();
      state.requests.length = 0;
      state.preflights.length = 0;
      return setFault(null);
    },
    /** Stops listening and closes every connection. */
    async close() {
      closed = true;
      await transition.catch(() => {});
      await unlisten();
    },
  };
}
