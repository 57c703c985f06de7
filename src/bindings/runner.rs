//! `Agent`, `Runner` and `RunState`: agents that remember, against any OpenAI-compatible API.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Object, Promise, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::backend::js::json_to_js;
use crate::backend::model::ModelClient;
use crate::backend::run_options::{
    parse_agent, parse_input, parse_run_options, parse_runner, run_error, usage_error,
    RUN_STATE_KIND,
};
use crate::backend::runner::{self, AgentSpec, EventQueue, RunOutcome};
use crate::core::run::{Decision, RunState as CoreState};
use crate::core::wire::call_id;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** Sampling settings sent with every model call of an agent. */
export interface ModelSettings {
  temperature?: number;
  topP?: number;
  /** Sent as `max_tokens` (Chat Completions) or `max_output_tokens` (Responses). */
  maxTokens?: number;
}

/** A JSON Schema object describing a tool's arguments. */
export type JsonSchema = { [key: string]: unknown };

/** A function tool the model can call; `execute` runs in the page. */
export interface FunctionTool<TArgs = { [key: string]: unknown }, TContext = unknown> {
  name: string;
  description?: string;
  /** JSON Schema of the arguments; default: an object with no declared properties. */
  parameters?: JsonSchema;
  /** Runs the tool. A string result is sent to the model as is, anything else as JSON. A throw
   * is reported to the model as the tool's output and the run goes on. */
  execute(args: TArgs, context: TContext): unknown;
  /** Pause the run for a human decision before the tool runs: always, or when this says so.
   * (Written as a method type so tools with specific argument types fit `AgentOptions.tools`.) */
  needsApproval?:
    | boolean
    | { check(context: TContext, args: TArgs, callId: string): boolean | Promise<boolean> }['check'];
}

export interface AgentOptions<TContext = unknown> {
  name: string;
  instructions?: string;
  /** The model name the server knows, such as `"gpt-4.1-mini"` or `"llama3.2"`. */
  model?: string;
  modelSettings?: ModelSettings;
  tools?: FunctionTool<{ [key: string]: unknown }, TContext>[];
}

/** A model server that speaks an OpenAI wire API. */
export interface RunnerOptions {
  /** The API's base URL, such as `"https://api.openai.com/v1"` or `"http://localhost:11434/v1"`. */
  baseUrl: string;
  /** Sent only as `Authorization: Bearer …` to `baseUrl`; never stored. */
  apiKey?: string;
  /** Default `"chat_completions"`, which every compatible server speaks. */
  api?: 'chat_completions' | 'responses';
  headers?: { [name: string]: string };
  /** A `fetch` to use instead of the global one. */
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
  /** Retries of a 429 or 5xx answer, with backoff that honours `Retry-After`. Default 2. */
  retries?: number;
}

/** Anything with the session methods: our sessions, the SDK's, or your own. */
export interface SessionLike {
  getItems(limit?: number): Promise<Item[]>;
  addItems(items: Item[]): Promise<void>;
}

export interface RunOptions<TContext = unknown> {
  session?: SessionLike;
  /** Overrides the session's own `settings.limit` for this run. */
  sessionSettings?: SessionSettings;
  /** Builds the model input from the history and the new items (both copies). Items it adds
   * are saved with the turn; history it repeats is not saved again. */
  sessionInputCallback?: (history: Item[], newItems: Item[]) => Item[] | Promise<Item[]>;
  /** Model calls allowed in this run; default 10. */
  maxTurns?: number;
  signal?: AbortSignal;
  /** Passed to tools' `execute` and `needsApproval`. */
  context?: TContext;
  /** Server-side conversation state (Responses API); not together with `session`. */
  previousResponseId?: string;
  conversationId?: string;
}

export interface Usage {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}

/** A tool call waiting for `state.approve()` or `state.reject()`. */
export interface ToolApprovalItem {
  type: 'tool_approval_item';
  callId: string;
  name: string;
  /** The arguments as the model wrote them (a JSON string). */
  arguments: string;
  rawItem: Item;
}

export interface RunResult {
  /** The model's final answer; `undefined` while the run waits for approvals. */
  finalOutput: string | undefined;
  /** Everything the run produced (model output, tool calls and outputs), in order. */
  newItems: Item[];
  /** The run's new input, as items. */
  input: Item[];
  usage: Usage;
  lastResponseId: string | undefined;
  interruptions: ToolApprovalItem[];
  /** The state to resume from after approvals; `state.toString()` survives a reload. */
  state: RunState;
}

export type RunStreamEvent =
  | { type: 'text_delta'; delta: string }
  | { type: 'item_added'; item: Item }
  | { type: 'tool_call'; item: Item }
  | { type: 'tool_output'; item: Item }
  | { type: 'done'; result: RunResult };

/** A streamed run: iterate it for events; `result` settles when the run ends. */
export interface StreamedRun extends AsyncIterable<RunStreamEvent> {
  readonly result: Promise<RunResult>;
}

/** The errors of a run. `ModelError` carries the HTTP `status` (0 when none arrived). */
export interface ModelError extends Error {
  name: 'ModelError';
  status: number;
  serverMessage: string;
  /** Where the run stopped: resume from it with `runner.run(agent, error.state, ...)`; tools
   * whose output it already holds are not run again. Absent if the run had not started. */
  state?: RunState;
}

export interface MaxTurnsExceededError extends Error {
  name: 'MaxTurnsExceededError';
  code: 'MAX_TURNS_EXCEEDED';
  maxTurns: number;
  /** Where the run stopped; resume from it (with a larger `maxTurns`) to go on. */
  state?: RunState;
}

export type RunnerErrorCode =
  | 'INVALID_AGENT'
  | 'INVALID_RUNNER'
  | 'INVALID_RUN_OPTIONS'
  | 'INVALID_INPUT'
  | 'INVALID_RUN_STATE'
  | 'INVALID_SESSION'
  | 'INVALID_LIMIT'
  | 'SESSION_CONFLICT';

export interface RunnerError extends Error {
  name: 'RunnerError';
  code: RunnerErrorCode;
}

export class Agent<TContext = unknown> {
  constructor(options: AgentOptions<TContext>);
  readonly name: string;
  free(): void;
}

export class Runner {
  constructor(options: RunnerOptions);
  run<TContext = unknown>(agent: Agent<TContext>, input: string | Item[] | RunState, options?: RunOptions<TContext>): Promise<RunResult>;
  runStreamed<TContext = unknown>(agent: Agent<TContext>, input: string | Item[] | RunState, options?: RunOptions<TContext>): StreamedRun;
  free(): void;
}

/** A paused (or finished) run. Holds no credential. */
export class RunState {
  static fromString(agent: Agent<any>, text: string): RunState;
  readonly kind: 'agent-sessions.RunState';
  getInterruptions(): ToolApprovalItem[];
  approve(item: ToolApprovalItem | string): void;
  reject(item: ToolApprovalItem | string, message?: string): void;
  toString(): string;
  free(): void;
}
"#;

#[wasm_bindgen(skip_typescript)]
pub struct Agent {
    spec: Rc<AgentSpec>,
}

#[wasm_bindgen]
impl Agent {
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<Agent, JsValue> {
        parse_agent(&options)
            .map(|spec| Agent {
                spec: Rc::new(spec),
            })
            .map_err(usage_error)
    }

    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.spec.name.clone()
    }
}

#[wasm_bindgen(skip_typescript)]
pub struct Runner {
    client: Rc<ModelClient>,
}

fn interruption(call: &Value) -> JsValue {
    let o = Object::new();
    let set = |k: &str, v: JsValue| {
        let _ = Reflect::set(&o, &k.into(), &v);
    };
    set("type", "tool_approval_item".into());
    set("callId", call_id(call).unwrap_or("").into());
    set(
        "name",
        call.get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .into(),
    );
    set(
        "arguments",
        call.get("arguments")
            .and_then(Value::as_str)
            .unwrap_or("{}")
            .into(),
    );
    set("rawItem", json_to_js(call));
    o.into()
}

fn items(values: &[Value]) -> JsValue {
    values.iter().map(json_to_js).collect::<Array>().into()
}

fn result_object(outcome: RunOutcome) -> JsValue {
    let RunOutcome {
        state,
        interruptions,
    } = outcome;
    let o = Object::new();
    let set = |k: &str, v: JsValue| {
        let _ = Reflect::set(&o, &k.into(), &v);
    };
    let finished = interruptions.is_empty();
    set(
        "finalOutput",
        match (&state.final_output, finished) {
            (Some(text), true) => text.as_str().into(),
            _ => JsValue::UNDEFINED,
        },
    );
    set("newItems", items(state.new_items()));
    set("input", items(&state.input));
    // `Usage` is four counters (camelCase by its serde attributes); they always convert.
    set(
        "usage",
        serde_wasm_bindgen::to_value(&state.usage).unwrap_or(JsValue::UNDEFINED),
    );
    set(
        "lastResponseId",
        state
            .last_response_id
            .as_deref()
            .map(JsValue::from)
            .unwrap_or(JsValue::UNDEFINED),
    );
    set(
        "interruptions",
        interruptions
            .iter()
            .map(interruption)
            .collect::<Array>()
            .into(),
    );
    set(
        "state",
        RunState {
            inner: RefCell::new(state),
        }
        .into(),
    );
    o.into()
}

impl Runner {
    fn start(
        &self,
        agent: &Agent,
        input: &JsValue,
        options: &JsValue,
        events: Option<Rc<EventQueue>>,
    ) -> Promise {
        let parsed = parse_input(input)
            .and_then(|i| parse_run_options(options, events.is_some()).map(|o| (i, o)));
        let (input, options) = match parsed {
            Ok(p) => p,
            Err(e) => {
                let error = usage_error(e);
                if let Some(q) = &events {
                    q.close(Some(error.clone()));
                }
                return Promise::reject(&error);
            }
        };
        let client = self.client.clone();
        let spec = agent.spec.clone();
        future_to_promise(async move {
            let outcome = runner::run(&client, &spec, input, &options, events.as_deref()).await;
            match outcome {
                Ok(outcome) => {
                    let result = result_object(outcome);
                    if let Some(q) = &events {
                        let done = Object::new();
                        let _ = Reflect::set(&done, &"type".into(), &"done".into());
                        let _ = Reflect::set(&done, &"result".into(), &result);
                        q.push(done.into());
                        q.close(None);
                    }
                    Ok(result)
                }
                Err(failure) => {
                    let resumable = matches!(
                        failure.error,
                        runner::RunError::Model(_) | runner::RunError::MaxTurns(_)
                    );
                    let error = run_error(failure.error);
                    if let (true, Some(state)) = (resumable, failure.state) {
                        let state: JsValue = RunState {
                            inner: RefCell::new(state),
                        }
                        .into();
                        let _ = Reflect::set(&error, &"state".into(), &state);
                    }
                    if let Some(q) = &events {
                        q.close(Some(error.clone()));
                    }
                    Err(error)
                }
            }
        })
    }
}

#[wasm_bindgen]
impl Runner {
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<Runner, JsValue> {
        parse_runner(&options)
            .map(|client| Runner {
                client: Rc::new(client),
            })
            .map_err(usage_error)
    }

    pub fn run(&self, agent: &Agent, input: JsValue, options: JsValue) -> Promise {
        self.start(agent, &input, &options, None)
    }

    #[wasm_bindgen(js_name = runStreamed)]
    pub fn run_streamed(&self, agent: &Agent, input: JsValue, options: JsValue) -> Object {
        let queue = Rc::new(EventQueue::default());
        let result = self.start(agent, &input, &options, Some(queue.clone()));
        // Whoever only iterates still sees the error there; the result promise counts as handled.
        let ignore = Closure::<dyn FnMut(JsValue)>::new(|_| {}).into_js_value();
        let _ = crate::backend::js::call_method(&result, "catch", &[ignore]);
        let next_queue = queue.clone();
        let next =
            Closure::<dyn FnMut() -> Promise>::new(move || next_queue.next()).into_js_value();
        let stop_queue = queue.clone();
        let ret = Closure::<dyn FnMut() -> Promise>::new(move || {
            stop_queue.stop();
            Promise::resolve(&crate::backend::runner::iter_result(
                JsValue::UNDEFINED,
                true,
            ))
        })
        .into_js_value();
        let iterator = Object::new();
        let _ = Reflect::set(&iterator, &"next".into(), &next);
        let _ = Reflect::set(&iterator, &"return".into(), &ret);
        let iterator: JsValue = iterator.into();
        // `stream[Symbol.asyncIterator]()` gives the iterator (no `eval`, so strict CSP pages work).
        let get_iterator =
            Closure::<dyn FnMut() -> JsValue>::new(move || iterator.clone()).into_js_value();
        let stream = Object::new();
        let _ = Reflect::set(&stream, &"result".into(), &result);
        let _ = Reflect::set(
            &stream,
            &js_sys::Symbol::async_iterator().into(),
            &get_iterator,
        );
        stream
    }
}

#[wasm_bindgen(skip_typescript)]
pub struct RunState {
    inner: RefCell<CoreState>,
}

fn state_error(message: String) -> JsValue {
    usage_error(("INVALID_RUN_STATE", message))
}

/// The call id an approval refers to: an interruption item, a raw function call, or the id.
fn target_call_id(item: &JsValue) -> Option<String> {
    if let Some(id) = item.as_string() {
        return Some(id);
    }
    ["callId", "call_id"].iter().find_map(|k| {
        Reflect::get(item, &(*k).into())
            .ok()
            .and_then(|v| v.as_string())
    })
}

impl RunState {
    fn decide(&self, item: &JsValue, decision: Decision) -> Result<(), JsValue> {
        let id = target_call_id(item).ok_or_else(|| {
            state_error("approve/reject need an interruption item or its callId".into())
        })?;
        let mut state = self.inner.borrow_mut();
        let pending = state.pending_calls();
        if !pending.iter().any(|c| call_id(c) == Some(id.as_str())) {
            return Err(state_error(format!(
                "no tool call \"{id}\" is waiting for approval in this run"
            )));
        }
        state.decisions.insert(id, decision);
        Ok(())
    }
}

#[wasm_bindgen]
impl RunState {
    #[wasm_bindgen(js_name = fromString)]
    pub fn from_string(agent: &Agent, text: JsValue) -> Result<RunState, JsValue> {
        let text = text.as_string().ok_or_else(|| {
            state_error(format!(
                "RunState.fromString needs the string that state.toString() gave, got {}",
                crate::backend::js::describe(&text)
            ))
        })?;
        let state = CoreState::from_json(&text).map_err(state_error)?;
        if state.agent_name != agent.spec.name {
            return Err(state_error(format!(
                "this state belongs to agent \"{}\", not \"{}\"",
                state.agent_name, agent.spec.name
            )));
        }
        Ok(RunState {
            inner: RefCell::new(state),
        })
    }

    #[wasm_bindgen(getter)]
    pub fn kind(&self) -> String {
        RUN_STATE_KIND.to_string()
    }

    #[wasm_bindgen(js_name = getInterruptions)]
    pub fn get_interruptions(&self) -> Array {
        let state = self.inner.borrow();
        state
            .pending_calls()
            .iter()
            .filter(|c| call_id(c).is_some_and(|id| !state.decisions.contains_key(id)))
            .map(interruption)
            .collect()
    }

    pub fn approve(&self, item: JsValue) -> Result<(), JsValue> {
        self.decide(&item, Decision::Approved)
    }

    pub fn reject(&self, item: JsValue, message: Option<String>) -> Result<(), JsValue> {
        self.decide(&item, Decision::Rejected { message })
    }

    #[wasm_bindgen(js_name = toString)]
    pub fn to_string_js(&self) -> String {
        self.inner.borrow().to_json()
    }
}
