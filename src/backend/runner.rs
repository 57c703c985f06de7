//! The run loop against JavaScript: sessions (ours or any object with the session methods),
//! function tools, the session input callback, events of a streamed run. The rules it follows
//! live in [`crate::core::run`].

use std::cell::RefCell;
use std::rc::Rc;

use crate::core::json::Value;
use js_sys::{Array, Function};
use wasm_bindgen::{JsCast, JsValue};

use crate::core::error::{RunnerError, RunnerErrorCode};
use crate::core::history::{Limit, Window};
use crate::core::run::metadata::{
    instructions_with, merge_state, state_tool_parameters, MetadataOptions, PartialMetadataOptions,
    STATE_TOOL, STATE_TOOL_DESCRIPTION,
};
use crate::core::run::{
    at_most_turns, failing_answer, from_response_start, new_turn_items, newest_turns,
    select_history, select_returned, structured_output, text_output, unique_call_ids, Decision,
    NextStep, Origin, RunState, ServerConversation, REJECTION_MESSAGE,
};
use crate::core::wire::{
    call_id, is_function_call, is_tool_output, items::structured_tool_output, output_text,
    request_body, Api, ModelRequest, ModelSettings, OutputType, ToolSpec,
};

use super::js::{
    self, call_method, describe, error_text, js_to_json, json_to_js, object, resolve_value,
    settling, Settling, Unresolved,
};
use super::model::{aborted, CallError, ModelClient, ModelFailure};
use super::run_options::refuse_unsendable;
use super::run_result::items;

/// A function tool defined in JS.
pub struct Tool {
    pub spec: ToolSpec,
    /// `execute(args, context)`.
    pub execute: js_sys::Function,
    /// `needsApproval`: absent/false, true, or `(context, args, callId) => boolean | Promise`.
    pub needs_approval: JsValue,
    /// `errorFunction(context, error)`: what the model is told when `execute` throws.
    pub error_function: Option<js_sys::Function>,
    pub object: JsValue,
}

pub struct AgentSpec {
    pub name: String,
    pub instructions: Option<String>,
    /// `instructions` given as a function: `(context, agent) => string | Promise<string>`,
    /// called before every model call of this agent.
    pub instructions_fn: Option<Function>,
    /// Added to the description of the handoffs to this agent.
    pub handoff_description: Option<String>,
    pub model: Option<String>,
    pub settings: ModelSettings,
    pub tools: Vec<Tool>,
    /// Summaries, titles and state of the session.
    pub metadata: MetadataOptions,
    /// The schema of the final answer; `None`: text.
    pub output_type: Option<OutputType>,
    /// Run before the first model call of a run that starts with this agent.
    pub input_guardrails: Vec<Guardrail>,
    /// Run on the final output when this agent gives it.
    pub output_guardrails: Vec<Guardrail>,
    pub tool_use: ToolUse,
    /// Whether its `toolChoice` is forced only until it used a tool (the SDK's `resetToolChoice`,
    /// by default).
    pub reset_tool_choice: bool,
    /// The agents this one can hand the conversation to (set after construction, so two agents
    /// can hand off to each other).
    pub handoffs: RefCell<Vec<Handoff>>,
}

/// A handoff, offered to the model as a tool.
#[derive(Clone)]
pub struct Handoff {
    pub target: Rc<AgentSpec>,
    /// The target's JS `Agent` (what `lastAgent` and the events name).
    pub object: JsValue,
    pub tool: ToolSpec,
    /// `({ inputHistory, preHandoffItems, newItems }) => same`: what the next agent is sent.
    pub input_filter: Option<Function>,
}

/// An input or output guardrail: `{ name, execute({ input | output, context, agent }) }`.
pub struct Guardrail {
    pub name: String,
    pub execute: Function,
    pub object: JsValue,
}

/// What happens after the tools of a model response ran.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolUse {
    /// The model is called again with their outputs.
    RunLlmAgain,
    /// The first tool's output is the final answer.
    StopOnFirstTool,
    /// The output of the first of these tools that ran is the final answer.
    StopAt(Vec<String>),
}

pub struct RunOptions {
    pub session: Option<JsValue>,
    /// The history a run reads, when its options say (`sessionSettings`); else the session's
    /// own `getItems()` decides.
    pub session_window: Option<Window>,
    pub input_callback: Option<js_sys::Function>,
    pub max_turns: u32,
    /// Whether the call gave `maxTurns` (a resumed run keeps its own limit otherwise).
    pub max_turns_given: bool,
    pub signal: Option<JsValue>,
    pub context: JsValue,
    pub server: ServerConversation,
    pub stream: bool,
    /// The run's own say on summaries, titles and state, over the agent's.
    pub metadata: PartialMetadataOptions,
}

pub enum RunInput {
    Items(Vec<Value>),
    Resume(Box<RunState>),
}

/// Which guardrail stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardrailKind {
    Input,
    Output,
}

pub enum RunError {
    /// Wrong use of the runner (bad options, no model, a session with a server conversation).
    Usage(RunnerError),
    Model(ModelFailure),
    MaxTurns(u32),
    Aborted(JsValue),
    /// An error thrown by the session or the input callback, passed on unchanged.
    Thrown(JsValue),
    /// The final answer is a refusal, with no text: what the model refused with.
    Refusal(String),
    /// The final answer does not parse or does not match the agent's `outputType`.
    ModelBehavior {
        message: String,
        raw: String,
    },
    /// A guardrail's tripwire was triggered: its name, what it returned (as it returned it) and
    /// its `outputInfo`, and for an output guardrail the agent and the output it blocked.
    Tripwire {
        kind: GuardrailKind,
        name: String,
        returned: JsValue,
        info: JsValue,
        agent: JsValue,
        output: JsValue,
    },
}

impl From<CallError> for RunError {
    fn from(e: CallError) -> Self {
        match e {
            CallError::Failed(f) => RunError::Model(f),
            CallError::Aborted(reason) => RunError::Aborted(reason),
        }
    }
}

/// A run that failed, with the state it reached once it had started: resuming from that state
/// neither repeats the input nor runs again a tool whose output it already has.
pub struct RunFailure {
    pub error: RunError,
    pub state: Option<RunState>,
}

impl RunFailure {
    fn before_start(error: RunError) -> Self {
        RunFailure { error, state: None }
    }
}

pub struct RunOutcome {
    pub state: RunState,
    /// The JS `Agent` that gave the final answer (or is waiting for approvals).
    pub last_agent: JsValue,
    /// Calls waiting for approval; empty when the run finished.
    pub interruptions: Vec<Value>,
    /// What the run does with the session's metadata (for the work after the turn).
    pub metadata: MetadataOptions,
    /// The results of the input and the output guardrails that ran.
    pub guardrail_results: (Vec<JsValue>, Vec<JsValue>),
}

/// A caller's function whose result did not resolve: its rejection passes through unchanged, as
/// its throw does; a result that throws when read is wrong use of the runner (`code`).
fn unresolved(e: Unresolved, code: RunnerErrorCode, what: &str) -> RunError {
    match e {
        Unresolved::Rejected(reason) => RunError::Thrown(reason),
        Unresolved::Unreadable(thrown) => RunError::Usage(RunnerError::new(
            code,
            format!(
                "{what} returned a value that throws when it is read ({})",
                error_text(&thrown)
            ),
        )),
    }
}

/// The session's summary and state, from `getInfo()` where the session has it.
async fn read_metadata(session: &JsValue) -> Result<(Option<String>, Value), RunError> {
    if !js::has_method(session, "getInfo") {
        return Ok((None, Value::Null));
    }
    let info = call_session(session, "getInfo", &[]).await?;
    let summary = js::get(&info, "summary").ok().and_then(|s| s.as_string());
    let state = js::get(&info, "state").unwrap_or(JsValue::NULL);
    let state = match state.is_object() {
        true => js_to_json(&state, "the session's state")
            .map_err(|m| RunError::Usage(RunnerError::new(RunnerErrorCode::InvalidSession, m)))?,
        false => Value::Null,
    };
    Ok((summary, state))
}

/// Calls `session[method](...args)` and awaits its result. What the method throws or rejects
/// with passes through unchanged; a result that throws when read is `INVALID_SESSION`.
pub async fn call_session(
    session: &JsValue,
    method: &'static str,
    args: &[JsValue],
) -> Result<JsValue, RunError> {
    let value = call_method(session, method, args).map_err(RunError::Thrown)?;
    resolve_value(value).await.map_err(|e| {
        unresolved(
            e,
            RunnerErrorCode::InvalidSession,
            &format!("session.{method}()"),
        )
    })
}

struct Run<'a> {
    client: &'a ModelClient,
    /// The agent the run started with (its name is the state's, its metadata options apply).
    first: &'a AgentSpec,
    /// The agent answering now, and its JS `Agent`.
    current: RefCell<(Rc<AgentSpec>, JsValue)>,
    options: &'a RunOptions,
    /// The conversation the server keeps: the options', else (resumed) the state's.
    server: ServerConversation,
    /// Receives each event: a streamed run's, and the lifecycle events `runner.on` listens to.
    on_event: Option<&'a Function>,
    /// The agent's metadata options with the run's over them.
    metadata: MetadataOptions,
    /// The session's summary and state, read at the start where the run uses them; the state
    /// follows `update_session_state`.
    summary: Option<String>,
    session_state: RefCell<Value>,
    /// Whether the session refused one of the run's saves (another tab wrote, say): its newest
    /// turn may then be another run's.
    save_refused: std::cell::Cell<bool>,
    /// Call ids whose output an earlier resumption of the same state saved (`saved_output`):
    /// a session without history transactions is not given it again.
    found_saved: RefCell<Vec<String>>,
    /// The results of the input and the output guardrails that ran, for the run's result.
    guardrail_results: RefCell<(Vec<JsValue>, Vec<JsValue>)>,
}

/// The output of a handoff call the run does not take, where the server keeps the
/// conversation (the SDK's words).
const MULTIPLE_HANDOFFS: &str = "Multiple handoffs detected, ignoring this one.";

/// What the model is told of a tool that threw, without an `errorFunction` (the SDK's words).
const TOOL_FAILED: &str = "An error occurred while running the tool. Please try again.";

/// The output a tool stopped with the run is saved with, as the SDK saves it: no answer.
const ABORTED_OUTPUT: &str = "aborted";

/// A tool call of one model response on its way to an output.
enum Answer {
    /// The output is known (a rejection, an unknown tool, arguments that are not JSON...).
    Ready(Value),
    /// The agent's tool at this index runs with these arguments.
    Run(usize, JsValue),
}

/// A decided call once the tools started: its output, or the started tool at this index and what
/// its `execute` returned (or threw).
enum Started {
    Ready(Value),
    Tool(usize, Result<Settling, JsValue>),
}

/// An item as a session gives it back: through JS (a number the model wrote `1.0` is `1`).
fn given_back(item: &Value) -> Option<Value> {
    super::js::js_to_json(&json_to_js(item), "an item").ok()
}

impl Run<'_> {
    /// Whether the run's session has history transactions (ours do): its saves are named, and
    /// each expects the history to end as the run left it.
    fn transactional(&self) -> bool {
        self.options
            .session
            .as_ref()
            .is_some_and(|s| js::has_method(s, "applyHistoryTransaction"))
    }

    fn emit(&self, kind: &str, fields: &[(&str, JsValue)]) {
        if let Some(on_event) = self.on_event {
            let event = object(&[("type", kind.into())]);
            for (key, value) in fields {
                let _ = js_sys::Reflect::set(&event, &(*key).into(), value);
            }
            // The listener is the package's own dispatcher (js/runner.js); it does not throw.
            let _ = on_event.call1(&JsValue::UNDEFINED, &event);
        }
    }

    fn agent(&self) -> Rc<AgentSpec> {
        self.current.borrow().0.clone()
    }

    fn agent_object(&self) -> JsValue {
        self.current.borrow().1.clone()
    }

    async fn session_call(
        &self,
        method: &'static str,
        args: &[JsValue],
    ) -> Result<JsValue, RunError> {
        match &self.options.session {
            Some(session) => call_session(session, method, args).await,
            None => Ok(JsValue::UNDEFINED),
        }
    }

    /// Saves what the session does not have yet (the input only, with `input_only`): as one
    /// history transaction where the session takes them (so a retry never writes it twice, and
    /// a history another tab changed in between is refused), else with `addItems`.
    async fn save(&self, state: &mut RunState, input_only: bool) -> Result<(), RunError> {
        self.save_with_usage(state, input_only, false)
            .await
            .map(|_| ())
    }

    /// [`Self::save`], and with `usage`, the run's usage in the same history transaction where
    /// the session stores usage that way (this package's sessions do, and say so with the
    /// `agent-sessions.transactionUsage` symbol): the answer and what it cost are written
    /// together, and a save a retry finds applied adds nothing. `true` when the usage went with
    /// the save.
    async fn save_with_usage(
        &self,
        state: &mut RunState,
        input_only: bool,
        usage: bool,
    ) -> Result<bool, RunError> {
        let Some(save) = state.next_save(input_only) else {
            return Ok(false);
        };
        let mut with_usage = false;
        if let Some(session) = &self.options.session {
            if self.transactional() {
                let mut fields = vec![
                    ("operationId", save.operation_id.as_str().into()),
                    ("transaction", json_to_js(&save.transaction())),
                ];
                let unstored = state.unstored_usage().filter(|_| usage);
                with_usage = usage && takes_usage_in_transactions(session);
                if let Some(u) = unstored.as_ref().filter(|_| with_usage) {
                    fields.push(("usage", usage_object(u)));
                }
                self.session_call("applyHistoryTransaction", &[object(&fields).into()])
                    .await
                    .inspect_err(|_| self.save_refused.set(true))?;
                if with_usage {
                    state.usage_stored = state.usage;
                }
            } else {
                let found = |id: &str| self.found_saved.borrow().iter().any(|f| f == id);
                let items: Array = save
                    .items
                    .iter()
                    .filter(|i| !(is_tool_output(i) && call_id(i).is_some_and(found)))
                    .map(json_to_js)
                    .collect();
                // Only this save holds those outputs: a later call reusing an id is saved.
                self.found_saved.borrow_mut().clear();
                self.session_call("addItems", &[items.into()])
                    .await
                    .inspect_err(|_| self.save_refused.set(true))?;
            }
            state.session_saved = true;
        }
        state.saved(&save);
        Ok(with_usage)
    }

    /// The history the run sends before `input`: the newest turns through `getRecentTurns` where
    /// the session has it (else selected from every item, `getItems(Number.MAX_SAFE_INTEGER)`),
    /// the newest `n` items through `getItems(n)` (`getItems(n + 1)` on the Responses API), or
    /// what the session's own `getItems()` gives.
    async fn read_history(
        &self,
        session: &JsValue,
        input: &[Value],
    ) -> Result<Vec<Value>, RunError> {
        // (At most `Number.MAX_SAFE_INTEGER`, which a session may check a limit against.)
        let count =
            |n: u64| JsValue::from_f64(n.min(crate::core::session::MAX_SAFE_INTEGER) as f64);
        // On the Responses API, a window of the newest `n` items is read with the item before
        // it, to tell one that begins inside a model response (see `from_response_start`): the
        // session's own `settings.limit` too, where it reads no turns by default.
        let responses = self.client.api == Api::Responses;
        let newest = |n: u64| match n {
            0 => ("getItems", count(0), None, Some(0)),
            n => ("getItems", count(n.saturating_add(1)), None, Some(n)),
        };
        let (method, arg, turns, items_window) = match self.options.session_window {
            None => match own_limit(session).filter(|_| responses) {
                Some(n) => newest(n),
                None => ("getItems", JsValue::UNDEFINED, None, None),
            },
            // (`Infinity`: every item, whatever window the session's own settings take.)
            Some(Window::Items(Limit::All)) | Some(Window::Turns(Limit::All)) => {
                ("getItems", count(u64::MAX), None, None)
            }
            Some(Window::Items(Limit::Newest(n))) if responses => newest(n),
            // (Cut to `n` here too: a session that ignores its argument gives every item.)
            Some(Window::Items(Limit::Newest(n))) => ("getItems", count(n), None, Some(n)),
            Some(Window::Turns(Limit::Newest(n))) => {
                if js::has_method(session, "getRecentTurns") {
                    // (Cut to `n` too where it gives more: one that ignores its argument.)
                    ("getRecentTurns", count(n), Some(n), None)
                } else {
                    // Every item: the session's own default window could start mid-turn.
                    ("getItems", count(u64::MAX), Some(n), None)
                }
            }
        };
        let items = self.session_call(method, &[arg]).await?;
        if !js::is_array(&items).unwrap_or(false) {
            return Err(RunError::Usage(RunnerError::new(
                RunnerErrorCode::InvalidSession,
                format!(
                    "session.{method}() must resolve to an array, got {}",
                    describe(&items)
                ),
            )));
        }
        let items = js_to_json(&items, "the session's items")
            .map_err(|m| RunError::Usage(RunnerError::new(RunnerErrorCode::InvalidSession, m)))?;
        let mut items = items.as_array().cloned().unwrap_or_default();
        let newest = items_window.and_then(|n| usize::try_from(n).ok());
        if let Some(cut) = newest.and_then(|n| items.len().checked_sub(n)) {
            let window = items.split_off(cut);
            // (Chat Completions refuses no call sent without its reasoning: a window is sent as
            // it is.)
            let before = items.last().filter(|_| responses);
            return Ok(from_response_start(before, window, input));
        }
        Ok(match turns {
            Some(n) if method == "getRecentTurns" => at_most_turns(items, n),
            Some(n) => newest_turns(items, n),
            None => items,
        })
    }

    /// Reads the history and builds the state of a new run.
    async fn start(&self, input: Vec<Value>) -> Result<RunState, RunError> {
        // (A call the new input answers, a run's output sent by hand, stays with it.)
        let history = match &self.options.session {
            Some(session) => select_history(self.read_history(session, &input).await?, &input),
            None => Vec::new(),
        };
        // Without a session there is no history to combine, and the callback is not called, as
        // in the SDK.
        let callback = self.options.input_callback.as_ref();
        let (model_input, turn_input) = match callback.filter(|_| self.options.session.is_some()) {
            None => {
                let all: Vec<Value> = history.iter().chain(&input).cloned().collect();
                (all, input.clone())
            }
            Some(callback) => {
                let to_js =
                    |items: &[Value]| -> Vec<JsValue> { items.iter().map(json_to_js).collect() };
                let history_js = to_js(&history);
                let input_js = to_js(&input);
                let returned = callback
                    .call2(
                        &JsValue::UNDEFINED,
                        &history_js.iter().collect::<Array>(),
                        &input_js.iter().collect::<Array>(),
                    )
                    .map_err(RunError::Thrown)?;
                let returned = resolve_value(returned).await.map_err(|e| {
                    unresolved(
                        e,
                        RunnerErrorCode::InvalidRunOptions,
                        "sessionInputCallback",
                    )
                })?;
                let invalid = |message: String| {
                    RunError::Usage(RunnerError::new(
                        RunnerErrorCode::InvalidRunOptions,
                        message,
                    ))
                };
                if !js::is_array(&returned).unwrap_or(false) {
                    return Err(invalid(format!(
                        "sessionInputCallback must return an array of items, got {}",
                        describe(&returned)
                    )));
                }
                let elements = js::elements(&returned).map_err(|e| {
                    invalid(format!(
                        "what sessionInputCallback returned threw when it was read ({})",
                        error_text(&e)
                    ))
                })?;
                let same = |pool: &[JsValue], item: &JsValue| {
                    pool.iter().position(|p| js_sys::Object::is(p, item))
                };
                for (i, item) in elements.iter().enumerate() {
                    if !js::is_plain_object(item).unwrap_or(false) {
                        return Err(invalid(format!(
                            "sessionInputCallback returned an array whose item {i} is not an \
                             object: got {}",
                            describe(item)
                        )));
                    }
                }
                let origins: Vec<Origin> = elements
                    .iter()
                    .map(|item| match same(&history_js, item) {
                        Some(h) => Origin::History(h),
                        None if same(&input_js, item).is_some() => Origin::NewInput,
                        None => Origin::Made,
                    })
                    .collect();
                let returned =
                    js_to_json(&returned, "what sessionInputCallback returned").map_err(invalid)?;
                let model_input = returned.as_array().cloned().unwrap_or_default();
                let turn_input = new_turn_items(&history, &model_input, &origins);
                // What it made is checked as a run's input is (see `check_input`).
                refuse_unsendable(self.client.api, &turn_input, |i| {
                    format!("the new item {i} sessionInputCallback returned")
                })
                .map_err(RunError::Usage)?;
                // (A copy of a history item, unchanged, counts as one, as for the save.)
                let from_history: Vec<bool> = origins
                    .iter()
                    .zip(&model_input)
                    .map(|(o, item)| match o {
                        Origin::History(_) => true,
                        Origin::Made => history.contains(item),
                        Origin::NewInput => false,
                    })
                    .collect();
                (select_returned(model_input, &from_history), turn_input)
            }
        };
        Ok(RunState::new(
            &self.first.name,
            input,
            model_input,
            turn_input,
            self.options.max_turns,
        ))
    }

    /// The instructions of `agent` for the next model call: its text, or what its function
    /// returns for this run's context.
    async fn instructions(&self, agent: &AgentSpec) -> Result<Option<String>, RunError> {
        let Some(f) = &agent.instructions_fn else {
            return Ok(agent.instructions.clone());
        };
        let r = f
            .call2(
                &JsValue::UNDEFINED,
                &self.options.context,
                &self.agent_object(),
            )
            .map_err(RunError::Thrown)?;
        let r = resolve_value(r)
            .await
            .map_err(|e| unresolved(e, RunnerErrorCode::InvalidAgent, "agent.instructions()"))?;
        match r.as_string() {
            Some(text) => Ok(Some(text)),
            None if r.is_undefined() || r.is_null() => Ok(None),
            None => Err(RunError::Usage(RunnerError::new(
                RunnerErrorCode::InvalidAgent,
                format!(
                    "agent \"{}\": instructions() must return a string, got {}",
                    agent.name,
                    describe(&r)
                ),
            ))),
        }
    }

    async fn call_model(&self, state: &mut RunState) -> Result<(), RunError> {
        let agent = self.agent();
        // (Checked before the run saved anything; a listener may have set handoffs since.)
        let model = agent
            .model
            .as_deref()
            .ok_or_else(|| RunError::Usage(no_model(&agent)))?;
        let (input, previous) = state.next_request(&self.server);
        let mut tools: Vec<ToolSpec> = agent.tools.iter().map(|t| t.spec.clone()).collect();
        tools.extend(agent.handoffs.borrow().iter().map(|h| h.tool.clone()));
        // (An agent handed off to is checked here; the first, before anything is saved.)
        self.state_tool_clash(&agent)?;
        if self.metadata.agentic_state {
            tools.push(ToolSpec {
                name: STATE_TOOL.to_string(),
                description: STATE_TOOL_DESCRIPTION.to_string(),
                parameters: state_tool_parameters(),
                strict: false,
            });
        }
        let own = self.instructions(&agent).await?;
        let state_now = self.session_state.borrow().clone();
        let instructions = instructions_with(
            own.as_deref(),
            self.summary
                .as_deref()
                .filter(|_| self.metadata.add_summary_to_context),
            Some(&state_now).filter(|_| self.metadata.add_state_to_context),
        );
        // Once the agent used a tool, its toolChoice is not forced again (the SDK's
        // resetToolChoice), so a forced tool cannot loop.
        let mut settings = agent.settings.clone();
        if agent.reset_tool_choice
            && settings.tool_choice.as_deref() != Some("none")
            && state.tools_used.contains(&agent.name)
        {
            settings.tool_choice = None;
        }
        let body = request_body(
            self.client.api,
            &ModelRequest {
                model,
                instructions: instructions.as_deref(),
                settings: &settings,
                tools: &tools,
                input: &input,
                stream: self.options.stream,
                previous_response_id: previous.as_deref(),
                conversation_id: self.server.conversation_id.as_deref(),
                output_type: agent.output_type.as_ref(),
            },
        );
        let body = crate::core::json::to_string(&body);
        let mut on_delta = |text: &str| self.emit("text_delta", &[("delta", text.into())]);
        let spent = std::cell::Cell::default();
        let output = self
            .client
            .call(
                &body,
                self.options.stream,
                self.options.signal.as_ref(),
                &mut on_delta,
                &spent,
            )
            .await
            // A response that stopped short spent its tokens: the run's usage counts them.
            .inspect_err(|_| state.usage.add(&spent.get()))?;
        // A response's handoffs after its first are dropped from the run (see `run_tools`), so
        // no event tells of them, unless the server keeps the conversation and they are answered.
        // (The names are copied: a listener may set the agent's handoffs.)
        let handoffs: Vec<String> = agent
            .handoffs
            .borrow()
            .iter()
            .map(|h| h.tool.name.clone())
            .collect();
        let dropping = !self.server.is_used();
        let mut output = output;
        if dropping {
            unique_call_ids(&mut output.items, &state.run_id, state.turns);
        }
        let mut handoff_taken = false;
        let agent = self.agent_object();
        // A response whose answer the run fails with (a refusal, text that does not fit the
        // output type) is not told, nor kept: none of its items (as the SDK tells no item of a
        // turn it does not resolve).
        if failing_answer(&output.items, self.agent().output_type.as_ref()).is_some() {
            state.record_model_output(output);
            return Ok(());
        }
        for item in &output.items {
            let name = item.get("name").and_then(Value::as_str).unwrap_or("");
            let is_handoff = is_function_call(item) && handoffs.iter().any(|h| h == name);
            // A response's handoffs after its first are not taken: dropped, or (where the server
            // keeps the conversation) answered, as calls of no handoff.
            if dropping && is_handoff && handoff_taken {
                continue;
            }
            let handoff = is_handoff && !handoff_taken;
            handoff_taken |= is_handoff;
            let js = json_to_js(item);
            self.emit(
                "item_added",
                &[("item", js.clone()), ("agent", agent.clone())],
            );
            if is_function_call(item) {
                self.emit(
                    "tool_call",
                    &[
                        ("item", js),
                        ("agent", agent.clone()),
                        ("handoff", handoff.into()),
                    ],
                );
            }
        }
        state.record_model_output(output);
        Ok(())
    }

    async fn needs_approval(
        &self,
        tool: &Tool,
        args: &JsValue,
        call: &Value,
    ) -> Result<bool, RunError> {
        let flag = &tool.needs_approval;
        if flag.is_function() {
            let f: &js_sys::Function = flag.unchecked_ref();
            let id = JsValue::from(call_id(call).unwrap_or(""));
            let r = f
                .call3(&tool.object, &self.options.context, args, &id)
                .map_err(RunError::Thrown)?;
            let r = resolve_value(r).await.map_err(|e| {
                unresolved(e, RunnerErrorCode::InvalidAgent, "a tool's needsApproval")
            })?;
            Ok(r.is_truthy())
        } else {
            Ok(flag.is_truthy())
        }
    }

    /// Starts `tool` (its `execute` is called now, so the tools of one response run at once).
    fn start_tool(&self, tool: &Tool, args: &JsValue, call: &Value) -> Result<Settling, JsValue> {
        let id = call_id(call).unwrap_or("");
        self.emit(
            "tool_start",
            &[
                ("agent", self.agent_object()),
                ("tool", tool.object.clone()),
                ("item", json_to_js(call)),
            ],
        );
        // The third argument: the call's id and the call itself (the SDK's `toolCall`), the
        // session's state (Agno's `session_state`) and the run's signal, so that a long tool can
        // stop when the run is aborted (the run waits for its tools: an output a tool gave is
        // never lost).
        let details = object(&[
            ("callId", id.into()),
            ("toolCall", json_to_js(call)),
            ("sessionState", json_to_js(&self.session_state.borrow())),
            (
                "signal",
                self.options.signal.clone().unwrap_or(JsValue::UNDEFINED),
            ),
        ]);
        // Listened to from now: the run awaits its tools in call order, and a later one's
        // rejection meanwhile is the run's to handle, not the page's.
        tool.execute
            .call3(&tool.object, args, &self.options.context, &details)
            .and_then(|v| settling(v).map_err(Unresolved::into_value))
    }

    /// What a started tool gives the model, once it settled: its text (as the `tool_end` event
    /// reports it) and the output item's `output` (that text, or the `input_*` parts of a
    /// structured output: images, files, text).
    async fn tool_output(
        &self,
        tool: &Tool,
        started: Result<Settling, JsValue>,
    ) -> (String, Value) {
        let result = match started {
            Ok(r) => r.value().await.map_err(Unresolved::into_value),
            Err(e) => Err(e),
        };
        let text = match result {
            Ok(v) if v.is_string() => v.as_string().unwrap_or_default(),
            Ok(v) if v.is_undefined() => String::new(),
            // JSON for objects and numbers; values JSON cannot hold (a bigint, a function, a
            // circular object) are described instead of failing the run.
            Ok(v) => match js_sys::JSON::stringify(&v).ok().and_then(|s| s.as_string()) {
                Some(json) => {
                    let parsed = crate::core::json::from_str(&json).ok();
                    if let Some(parts) = parsed.as_ref().and_then(structured_tool_output) {
                        return (json, parts);
                    }
                    json
                }
                None => format!("The tool returned {}, which is not JSON.", describe(&v)),
            },
            // A tool that stopped with the run (Stop aborted the `signal` it was given: it threw
            // the signal's reason, or an AbortError) is told as the SDK tells it, not as a
            // failure the model should try again.
            Err(e)
                if aborted(self.options.signal.as_ref()).is_some_and(|reason| {
                    reason == e
                        || js::get(&e, "name")
                            .ok()
                            .and_then(|n| n.as_string())
                            .as_deref()
                            == Some("AbortError")
                }) =>
            {
                ABORTED_OUTPUT.to_string()
            }
            // As the SDK 0.20 does: a fixed message, the error itself (a URL with a token, a
            // user's data) is neither sent to the model nor saved, unless the tool's
            // `errorFunction` says what to tell the model.
            Err(e) => {
                let told = match &tool.error_function {
                    Some(f) => match f.call2(&tool.object, &self.options.context, &e) {
                        // (What it gives is told as a tool's result is: text, else its JSON.)
                        Ok(v) => resolve_value(v).await.ok().and_then(|v| {
                            v.as_string().or_else(|| {
                                js_sys::JSON::stringify(&v).ok().and_then(|s| s.as_string())
                            })
                        }),
                        Err(_) => None,
                    },
                    None => None,
                };
                told.unwrap_or_else(|| TOOL_FAILED.to_string())
            }
        };
        (text.clone(), text_output(text))
    }

    /// How one call is answered: by running a tool, at once, or `None` when it waits for
    /// approval. `decided` is set when a call the user decided on is answered (an approved tool
    /// run, a rejection, or the output an earlier resumption saved taken): its output is saved
    /// at once, the same save as an earlier resumption's, so that the saves after it are
    /// numbered alike every time the same state is resumed.
    async fn answer(
        &self,
        state: &RunState,
        agent: &AgentSpec,
        call: &Value,
        decided: &mut bool,
    ) -> Result<Option<Answer>, RunError> {
        let name = call.get("name").and_then(Value::as_str).unwrap_or("");
        let id = call_id(call).unwrap_or("");
        if name == STATE_TOOL && self.metadata.agentic_state {
            return Ok(Some(Answer::Ready(text_output(
                self.update_state(call).await?,
            ))));
        }
        let Some(index) = agent.tools.iter().position(|t| t.spec.name == name) else {
            let mut names: Vec<&str> = agent.tools.iter().map(|t| t.spec.name.as_str()).collect();
            let handoffs = agent.handoffs.borrow();
            names.extend(handoffs.iter().map(|h| h.tool.name.as_str()));
            return Ok(Some(Answer::Ready(text_output(format!(
                "Tool \"{name}\" is not defined; the available tools are: {}.",
                names.join(", ")
            )))));
        };
        let tool = &agent.tools[index];
        let arguments = call
            .get("arguments")
            .and_then(Value::as_str)
            .unwrap_or("{}");
        let args = match js_sys::JSON::parse(if arguments.trim().is_empty() {
            "{}"
        } else {
            arguments
        }) {
            Ok(a) => a,
            Err(e) => {
                return Ok(Some(Answer::Ready(text_output(format!(
                "The arguments are not valid JSON ({}); call the tool again with a JSON object.",
                error_text(&e)
            )))))
            }
        };
        let decision = state.decisions.get(id).cloned();
        if decision.is_none() && self.needs_approval(tool, &args, call).await? {
            return Ok(None);
        }
        Ok(Some(match decision {
            // Saved by an earlier resumption of the same state (see below), a rejection's
            // output is not saved twice either.
            Some(Decision::Rejected { message }) => {
                *decided = true;
                let newest = self.newest_items().await?;
                match saved_output(&newest, id)? {
                    Some(output) => {
                        self.found_saved.borrow_mut().push(id.to_string());
                        Answer::Ready(output)
                    }
                    None => {
                        self.check_not_moved_on(state, &newest, id)?;
                        Answer::Ready(text_output(
                            message.unwrap_or_else(|| REJECTION_MESSAGE.to_string()),
                        ))
                    }
                }
            }
            Some(Decision::Approved) => {
                // Saved at once either way: the same save as the resumption before, if any.
                *decided = true;
                let newest = self.newest_items().await?;
                match saved_output(&newest, id)? {
                    // An earlier resumption rejected it (with the default message): approving
                    // it now cannot run it, its rejection being what the model was told.
                    // (As text: a server's session may give a text part back as a string.)
                    Some(output) if output_text(Some(&output)) == REJECTION_MESSAGE => {
                        return Err(RunError::Usage(RunnerError::new(
                            RunnerErrorCode::InvalidRunState,
                            format!(
                                "this state was resumed before with the call \"{id}\" rejected, \
                                 and its rejection is saved: approving it now cannot run it \
                                 (nothing was run or saved; ask for it again in a new turn)"
                            ),
                        )));
                    }
                    // The same state was resumed before (kept, say, in localStorage, and resumed
                    // again after that run failed): the tool ran then, and is not run twice.
                    Some(output) => {
                        self.found_saved.borrow_mut().push(id.to_string());
                        Answer::Ready(output)
                    }
                    None => {
                        self.check_not_moved_on(state, &newest, id)?;
                        Answer::Run(index, args)
                    }
                }
            }
            None => Answer::Run(index, args),
        }))
    }

    /// Refuses a run resumed with no call waiting on a decision made in it (none approved or
    /// rejected, or those answered already: the `error.state` of a resumption that ran them and
    /// then failed, after a failed model call or a callback that threw) where the session was written to since it
    /// stopped (another question, another tab's turn): it would go on from the history it read,
    /// its model paid and its tools run, before its save was refused. Where the session has history transactions: the newest item is the
    /// one the run saved last, or the newest the run made (a save that reached the session,
    /// though its reply was lost: the run saves it again, and it is applied once).
    async fn check_resumable(&self, state: &RunState) -> Result<(), RunError> {
        let (Some(session), Some(last)) = (&self.options.session, &state.last_saved) else {
            return Ok(());
        };
        if !self.transactional() {
            return Ok(());
        }
        let newest = call_session(session, "getItems", &[1.into()]).await?;
        let newest = super::js::js_to_json(&newest, "session.getItems()").ok();
        let known = |newest: &Value| {
            [Some(last), state.generated.last()]
                .into_iter()
                .flatten()
                .any(|item| given_back(item).as_ref() == Some(newest))
        };
        match newest {
            Some(Value::Array(items)) if !items.last().is_some_and(known) => {
                Err(RunError::Usage(RunnerError::new(
                    RunnerErrorCode::InvalidRunState,
                    "the session was written to since this run stopped: resumed, it would answer the history it read before (nothing was sent or run); ask again in a new run",
                )))
            }
            _ => Ok(()),
        }
    }

    /// Refuses to run approved call `id` where the session was written to since the run paused
    /// (the user went on chatting, or cleared the chat): its newest item is no longer the one
    /// this run saved last, so the call's output could not be saved after it (the save's history
    /// transaction would be refused) and the tool would have run for nothing. A session without
    /// history transactions may give items back converted (a server's): there, a user message
    /// after the call says the chat went on (its output, appended after that turn, would be
    /// sent apart from its call, which Chat Completions refuses for good).
    /// `newest`: the session's newest items ([`Self::newest_items`]).
    fn check_not_moved_on(
        &self,
        state: &RunState,
        newest: &Option<Vec<Value>>,
        id: &str,
    ) -> Result<(), RunError> {
        let (Some(_), Some(last), Some(items)) = (&self.options.session, &state.last_saved, newest)
        else {
            return Ok(()); // not read as a list: left to the save's own check
        };
        let same = if self.transactional() {
            let last = given_back(last);
            last.is_none() || items.last() == last.as_ref()
        } else {
            // (A call no longer among them: the chat was cleared, or went on far.)
            items
                .iter()
                .rposition(|i| is_function_call(i) && call_id(i) == Some(id))
                .is_some_and(|at| {
                    !items[at + 1..].iter().any(|i| {
                        crate::core::session::starts_turn(
                            i.get("role").and_then(Value::as_str),
                            i.get("type").and_then(Value::as_str),
                        )
                    })
                })
        };
        if same {
            return Ok(());
        }
        Err(RunError::Usage(RunnerError::new(
            RunnerErrorCode::InvalidRunState,
            format!(
                "the session was written to since this run paused for approval: the call \
                 \"{id}\" was not answered (no tool ran) and nothing was saved"
            ),
        )))
    }

    /// The session's newest 100 items, where it has a session that reads as a list.
    async fn newest_items(&self) -> Result<Option<Vec<Value>>, RunError> {
        const NEWEST: u32 = 100;
        let Some(session) = &self.options.session else {
            return Ok(None);
        };
        let items = call_session(session, "getItems", &[NEWEST.into()]).await?;
        Ok(match super::js::js_to_json(&items, "session.getItems()") {
            Ok(Value::Array(items)) => Some(items),
            _ => None,
        })
    }

    /// Runs the pending calls that may run, all at once, and records their outputs in call
    /// order; then hands off, or ends the run with a tool's output where the agent's
    /// `toolUseBehavior` says so. Returns the calls waiting for approval, and whether a call
    /// the user decided on was answered (see [`Self::answer`]). Every call is decided (approvals asked, arguments read) before any
    /// tool starts, and once one started nothing fails before all their outputs are recorded:
    /// a tool that ran always has its output in the state, so a resumed run never runs it again.
    async fn run_tools(
        &self,
        state: &mut RunState,
        calls: Vec<Value>,
    ) -> Result<(Vec<Value>, bool), RunError> {
        let agent = self.agent();
        let who = self.agent_object();
        let handoffs = agent.handoffs.borrow().clone();
        let handoff_of = |call: &Value| {
            let name = call.get("name").and_then(Value::as_str).unwrap_or("");
            handoffs.iter().find(|h| h.tool.name == name)
        };
        // Only a response's first handoff is taken. The others are dropped from the run (and
        // so from the session), as the SDK does; where the server keeps the conversation it
        // holds those calls, so they are answered instead.
        let mut handoff: Option<(Value, Handoff)> = None;
        let mut ignored = Vec::new();
        let mut answers = Vec::new();
        let mut waiting = Vec::new();
        let mut decided = false;
        // Handoffs never wait for a human, so they are never the state's interruptions: marked
        // before anything can stop this loop (a run stopped where the server keeps the
        // conversation leaves its calls pending in the state).
        let names: Vec<&str> = handoffs.iter().map(|h| h.tool.name.as_str()).collect();
        state.mark_handoffs(&calls, &names);
        for call in calls {
            if let Some(reason) = aborted(self.options.signal.as_ref()) {
                return Err(RunError::Aborted(reason));
            }
            if let Some(h) = handoff_of(&call) {
                if handoff.is_none() {
                    handoff = Some((call, h.clone()));
                } else {
                    ignored.push(call);
                }
                continue;
            }
            match self.answer(state, &agent, &call, &mut decided).await? {
                Some(answer) => answers.push((call, answer)),
                None => waiting.push(call),
            }
        }
        // Stopped while the last call was decided (an async `needsApproval`): no tool starts.
        if let Some(reason) = aborted(self.options.signal.as_ref()) {
            return Err(RunError::Aborted(reason));
        }
        if !self.server.is_used() {
            let ids: Vec<String> = ignored
                .iter()
                .filter_map(|c| call_id(c).map(str::to_string))
                .collect();
            state.drop_calls(&ids);
            ignored.clear();
        }
        // The agent used its tools (a handoff is one, as in the SDK): a forced toolChoice is not
        // sent to it again, so that two agents forced to call one cannot hand off for good.
        let called = !answers.is_empty() || !waiting.is_empty() || handoff.is_some();
        if called && !state.tools_used.contains(&agent.name) {
            state.tools_used.push(agent.name.clone());
        }
        // Every tool starts now, so the tools of one response run at once; their outputs are
        // awaited in call order.
        let started: Vec<(Value, Started)> = answers
            .into_iter()
            .map(|(call, answer)| {
                let started = match answer {
                    Answer::Run(index, args) => {
                        Started::Tool(index, self.start_tool(&agent.tools[index], &args, &call))
                    }
                    Answer::Ready(text) => Started::Ready(text),
                };
                (call, started)
            })
            .collect();
        for (call, started) in started {
            let output = match started {
                Started::Ready(text) => text,
                Started::Tool(index, started) => {
                    let (text, output) = self.tool_output(&agent.tools[index], started).await;
                    self.emit(
                        "tool_end",
                        &[
                            ("agent", self.agent_object()),
                            ("tool", agent.tools[index].object.clone()),
                            ("item", json_to_js(&call)),
                            ("output", text.into()),
                        ],
                    );
                    output
                }
            };
            self.record(state, &call, output, &who);
        }
        // Stopped while the tools ran: the run rejects, as it does when stopped anywhere else,
        // their outputs saved, where it would have paused for the calls still waiting for a
        // decision, handed off, or ended with a tool's output (a tool that did not heed the
        // signal returned all the same).
        if let Some(reason) = aborted(self.options.signal.as_ref()) {
            // The handoff not taken goes with the Stop, as a call that did not run, rather than
            // saved without its output (where the server keeps the conversation it stays
            // pending in the state, as every call of its last response does).
            let id = handoff.as_ref().and_then(|(c, _)| call_id(c));
            if let (Some(id), false) = (id, self.server.is_used()) {
                state.drop_calls(&[id.to_string()]);
            }
            return Err(RunError::Aborted(reason));
        }
        if !waiting.is_empty() {
            return Ok((waiting, decided));
        }
        if let Some((call, h)) = handoff {
            // The outputs of decided calls are saved before the handoff's filter runs (it may
            // fail): a retry must never run them again.
            if decided {
                self.save(state, false).await?;
            }
            self.hand_off(state, &call, &h).await?;
        } else if let Some(output) = self.stopping_output(state, &agent) {
            state.finish_with(output);
        }
        for call in &ignored {
            // (The handoff taken has changed the agent: these are the one's that asked.)
            self.record(
                state,
                call,
                text_output(MULTIPLE_HANDOFFS.to_string()),
                &who,
            );
        }
        Ok((waiting, decided))
    }

    /// Refuses an agent with a tool of its own named as the one `agenticState` adds: its calls
    /// go to the built-in tool, so the agent's would never run.
    fn state_tool_clash(&self, agent: &AgentSpec) -> Result<(), RunError> {
        match self.metadata.agentic_state && agent.tools.iter().any(|t| t.spec.name == STATE_TOOL) {
            true => Err(RunError::Usage(RunnerError::new(
                RunnerErrorCode::InvalidAgent,
                format!(
                    "agent \"{}\" has a tool named \"{STATE_TOOL}\", the name of the tool agenticState adds: rename it",
                    agent.name
                ),
            ))),
            false => Ok(()),
        }
    }

    /// The output that ends the run under the agent's `toolUseBehavior`, once every call of the
    /// latest response has its output: the first (in call order) of a tool that ran (not one
    /// the user rejected, nor one stopped with the run), or of a listed tool.
    fn stopping_output(&self, state: &RunState, agent: &AgentSpec) -> Option<String> {
        if agent.tool_use == ToolUse::RunLlmAgain {
            return None;
        }
        let latest = state.generated.get(state.response_at..).unwrap_or(&[]);
        // In the order of the calls, not of their outputs: an approved call's output comes
        // after those of the calls that ran at once.
        latest
            .iter()
            .filter(|i| is_function_call(i))
            .find_map(|call| {
                let id = call_id(call)?;
                let item = latest
                    .iter()
                    .find(|i| is_tool_output(i) && call_id(i) == Some(id))?;
                let name = item.get("name").and_then(Value::as_str)?;
                let tool_ran = agent.tools.iter().any(|t| t.spec.name == name)
                    && !matches!(state.decisions.get(id), Some(Decision::Rejected { .. }));
                let listed = match &agent.tool_use {
                    ToolUse::StopAt(names) => names.iter().any(|n| n == name),
                    _ => true,
                };
                // A tool stopped with the run (`aborted`) gave no answer: the run goes on, to
                // reject with the stop (the outputs saved), or, resumed, to ask the model.
                (tool_ran && listed)
                    .then(|| output_text(item.get("output")))
                    .filter(|text| text != ABORTED_OUTPUT)
            })
    }

    /// Hands the run to `h`'s agent: the call's output item, the input filter, the events.
    async fn hand_off(
        &self,
        state: &mut RunState,
        call: &Value,
        h: &Handoff,
    ) -> Result<(), RunError> {
        let from = self.agent_object();
        // Nothing changes until the input filter succeeded: a filter that throws leaves the
        // handoff pending, to be taken again (filter and all) when the run is resumed.
        let mut next = state.clone();
        next.hand_off(call, &h.target.name);
        if let Some(filter) = &h.input_filter {
            let filtered = self.filter_input(&next, filter).await?;
            next.filter_input(filtered);
        }
        *state = next;
        if let Some(item) = state.generated.last() {
            self.emit(
                "tool_output",
                &[
                    ("item", json_to_js(item)),
                    ("agent", from.clone()),
                    ("handoff", true.into()),
                ],
            );
        }
        *self.current.borrow_mut() = (h.target.clone(), h.object.clone());
        self.emit("handoff", &[("from", from), ("to", h.object.clone())]);
        self.emit(
            "agent_start",
            &[
                ("agent", h.object.clone()),
                ("turnInput", items(&state.model_input_now())),
            ],
        );
        Ok(())
    }

    /// Calls a handoff's `inputFilter` with `{ inputHistory, preHandoffItems, newItems,
    /// runContext }`; what it returns (the same shape) is what the next agent is sent.
    async fn filter_input(
        &self,
        state: &RunState,
        filter: &Function,
    ) -> Result<Vec<Value>, RunError> {
        let (before, latest) = state.handoff_split();
        // (With the SDK's `runContext`, holding the run's context: SDK filters read it there.)
        let data = object(&[
            ("inputHistory", items(state.input_history())),
            ("preHandoffItems", items(before)),
            ("newItems", items(latest)),
            (
                "runContext",
                object(&[("context", self.options.context.clone())]).into(),
            ),
        ]);
        let r = filter
            .call1(&JsValue::UNDEFINED, &data)
            .map_err(RunError::Thrown)?;
        let r = resolve_value(r)
            .await
            .map_err(|e| unresolved(e, RunnerErrorCode::InvalidAgent, "a handoff's inputFilter"))?;
        let invalid =
            |m: String| RunError::Usage(RunnerError::new(RunnerErrorCode::InvalidAgent, m));
        let mut items = Vec::new();
        for key in ["inputHistory", "preHandoffItems", "newItems"] {
            let part = match r.is_object() {
                true => js::get(&r, key).map_err(|e| {
                    invalid(format!(
                        "inputFilter's result.{key} threw when read ({})",
                        error_text(&e)
                    ))
                })?,
                false => JsValue::UNDEFINED,
            };
            if let Some(text) = part.as_string() {
                items.extend(crate::core::run::input_items_from_text(&text));
                continue;
            }
            match js_to_json(&part, "what inputFilter returned") {
                Ok(Value::Array(list)) if list.iter().all(Value::is_object) => items.extend(list),
                _ => {
                    return Err(invalid(format!(
                        "a handoff's inputFilter must return {{ inputHistory, preHandoffItems, newItems }} (arrays of items), got {} for {key}",
                        describe(&part)
                    )))
                }
            }
        }
        Ok(items)
    }

    /// Runs `guardrails` at once with `args` (plus `context` and `agent`); the first (in order)
    /// whose tripwire is triggered stops the run.
    async fn guardrails(
        &self,
        kind: GuardrailKind,
        guardrails: &[Guardrail],
        args: &[(&str, JsValue)],
        output: JsValue,
    ) -> Result<(), RunError> {
        let argument = object(&[
            ("context", self.options.context.clone()),
            ("agent", self.agent_object()),
        ]);
        for (key, value) in args {
            let _ = js_sys::Reflect::set(&argument, &(*key).into(), value);
        }
        // Each listened to as it starts (see `Settling`): the first to fail or trip ends the
        // run, and the others' rejections are not the page's to report.
        let started: Vec<Result<Result<Settling, Unresolved>, JsValue>> = guardrails
            .iter()
            .map(|g| g.execute.call1(&g.object, &argument).map(settling))
            .collect();
        for (g, started) in guardrails.iter().zip(started) {
            let settled = match started.map_err(RunError::Thrown)? {
                Ok(s) => s.value().await,
                Err(e) => Err(e),
            };
            let r = settled.map_err(|e| {
                unresolved(e, RunnerErrorCode::InvalidAgent, "a guardrail's execute")
            })?;
            let read = |key: &'static str| match r.is_object() {
                true => js::get(&r, key).map_err(|e| {
                    RunError::Usage(RunnerError::new(
                        RunnerErrorCode::InvalidAgent,
                        format!(
                            "guardrail \"{}\" returned a value whose {key} throws when read ({})",
                            g.name,
                            error_text(&e)
                        ),
                    ))
                }),
                false => Err(RunError::Usage(RunnerError::new(
                    RunnerErrorCode::InvalidAgent,
                    format!(
                        "guardrail \"{}\" must return {{ tripwireTriggered, outputInfo }}, got {}",
                        g.name,
                        describe(&r)
                    ),
                ))),
            };
            if read("tripwireTriggered")?.is_truthy() {
                return Err(RunError::Tripwire {
                    kind,
                    name: g.name.clone(),
                    info: read("outputInfo")?,
                    returned: r,
                    agent: self.agent_object(),
                    output,
                });
            }
            // Kept for the run's result, as the SDK's `inputGuardrailResults` and
            // `outputGuardrailResults` (what the guardrail returned, as it returned it).
            let result =
                super::error::guardrail_result(kind, &g.name, r, &self.agent_object(), &output);
            let mut results = self.guardrail_results.borrow_mut();
            match kind {
                GuardrailKind::Input => results.0.push(result),
                GuardrailKind::Output => results.1.push(result),
            }
        }
        Ok(())
    }

    /// The final output of `state` as the agent's `outputType` says: parsed and checked against
    /// its schema (a `ModelBehaviorError` otherwise), or the text.
    fn final_value(&self, state: &mut RunState, text: &str) -> Result<JsValue, RunError> {
        let agent = self.agent();
        let Some(output_type) = agent
            .output_type
            .as_ref()
            .filter(|_| !state.final_from_tool)
        else {
            return Ok(text.into());
        };
        let value =
            structured_output(output_type, text).map_err(|message| RunError::ModelBehavior {
                message,
                raw: text.to_string(),
            })?;
        let js = json_to_js(&value);
        state.final_json = Some(value);
        Ok(js)
    }

    /// `update_session_state(updates)`: a shallow merge into the session's state, stored with
    /// `update({ state })` at once. What the model is told back.
    async fn update_state(&self, call: &Value) -> Result<String, RunError> {
        let arguments = call
            .get("arguments")
            .and_then(Value::as_str)
            .unwrap_or("{}");
        let updates: Value = match crate::core::json::from_str(arguments) {
            Ok(v) => v,
            Err(e) => return Ok(format!("The arguments are not valid JSON ({e}).")),
        };
        let mut merged = match merge_state(&self.session_state.borrow(), &updates) {
            Some(merged) => merged,
            None => return Ok("Give the keys to change as an object in \"updates\".".into()),
        };
        if let Some(session) = &self.options.session {
            if js::has_method(session, "update") && js::has_method(session, "getInfo") {
                // Merged into the state as stored now (a tool or another tab may have written it
                // since the run read it), key by key on the stored object: its other values stay
                // as they are (a Date stays a Date, the keys keep their order).
                let info = call_session(session, "getInfo", &[]).await?;
                let stored = js::get(&info, "state").unwrap_or(JsValue::NULL);
                let next = js_sys::Object::new();
                if stored.is_object() && !js::is_array(&stored).unwrap_or(false) {
                    js_sys::Object::assign(&next, stored.unchecked_ref());
                }
                let changed = updates.get("updates").unwrap_or(&updates);
                for (key, value) in changed.as_object().into_iter().flatten() {
                    let _ = js_sys::Reflect::set(&next, &key.as_str().into(), &json_to_js(value));
                }
                let changes = object(&[("state", next.clone().into())]);
                call_session(session, "update", &[changes.into()]).await?;
                if let Ok(now) = js_to_json(&next, "the session's state") {
                    merged = now;
                }
            } else if js::has_method(session, "update") {
                let changes = object(&[("state", json_to_js(&merged))]);
                call_session(session, "update", &[changes.into()]).await?;
            }
        }
        let text = format!("The session state is now: {merged}");
        *self.session_state.borrow_mut() = merged;
        Ok(text)
    }

    /// Records the usage of the run's calls not stored yet against the turn it saved, where the
    /// session keeps usage (`storeRunUsage`, as `IndexedDbSession` does). The turn is saved by
    /// then: a failure here leaves it as it is, and only the usage figures miss this run.
    async fn store_usage(&self, state: &mut RunState) {
        let (Some(session), Some(unstored)) = (&self.options.session, state.unstored_usage())
        else {
            return;
        };
        if !js::has_method(session, "storeRunUsage") {
            return;
        }
        let usage = usage_object(&unstored);
        if call_session(session, "storeRunUsage", &[usage])
            .await
            .is_ok()
        {
            state.usage_stored = state.usage;
        }
    }

    /// Records `call`'s output, an item of `agent`'s.
    fn record(&self, state: &mut RunState, call: &Value, output: Value, agent: &JsValue) {
        state.record_output(call, output);
        if let Some(item) = state.generated.last() {
            self.emit(
                "tool_output",
                &[("item", json_to_js(item)), ("agent", agent.clone())],
            );
        }
    }

    /// Saves what a run blocked by an output guardrail keeps: to a session with history
    /// transactions, the tool calls and outputs before the blocked answer (the SDK's
    /// `blocked_append`); to any other session, nothing more than the input already saved. The
    /// run's usage goes with it: the model was called.
    async fn save_blocked(&self, state: &mut RunState) -> Result<(), RunError> {
        if !self.transactional() {
            self.store_usage(state).await;
            return Ok(());
        }
        state.drop_final_answer();
        self.save_last(state).await
    }

    /// The last save of a run that ran to its end (an answer, or its turns used up): what is
    /// unsaved, with the run's usage, in one history transaction where the session takes it
    /// so, else stored after.
    async fn save_last(&self, state: &mut RunState) -> Result<(), RunError> {
        if !self.save_with_usage(state, false, true).await? {
            self.store_usage(state).await;
        }
        Ok(())
    }

    async fn drive(&self, state: &mut RunState) -> Result<Vec<Value>, RunError> {
        loop {
            match state.next_step() {
                NextStep::CallModel => self.call_model(state).await?,
                NextStep::RunTools(calls) => {
                    let (waiting, decided) = self.run_tools(state, calls).await?;
                    if !waiting.is_empty() {
                        // Said as each call waits, as the SDK's stream says it (its approval
                        // prompts open on it).
                        let agent = self.agent_object();
                        for call in &waiting {
                            let item = super::run_result::interruption(call, &agent);
                            self.emit(
                                "tool_approval_requested",
                                &[("agent", agent.clone()), ("item", item)],
                            );
                        }
                        // With what its model calls cost so far: the run may never be resumed.
                        self.save_last(state).await?;
                        return Ok(waiting);
                    }
                    // A decided call was answered: its output is saved now, so that a failure of
                    // the next model call can never lead to running it a second time on a retry
                    // (and a rejection's save is the same whichever resumption makes it).
                    if decided {
                        self.save(state, false).await?;
                    }
                }
                NextStep::Done(text) => {
                    let checked = match state.refusal() {
                        Some(refusal) => Err(RunError::Refusal(refusal)),
                        None => self.final_value(state, &text),
                    };
                    let output = match checked {
                        Ok(output) => output,
                        Err(error) => {
                            // An answer that does not fit the output type, or a refusal, is not
                            // saved; the tool calls the run made before it are, in every
                            // session (a retry would run them again, the model knowing nothing
                            // of it; a `ModelBehaviorError` carries no state to resume from, a
                            // refusal's state asks the model again).
                            state.drop_final_answer();
                            self.save_last(state).await?;
                            return Err(error);
                        }
                    };
                    let agent = self.agent();
                    if !agent.output_guardrails.is_empty() {
                        let checked = self
                            .guardrails(
                                GuardrailKind::Output,
                                &agent.output_guardrails,
                                &[("output", output.clone()), ("agentOutput", output.clone())],
                                output.clone(),
                            )
                            .await;
                        if let Err(error) = checked {
                            if matches!(error, RunError::Tripwire { .. }) {
                                self.save_blocked(state).await?;
                            }
                            return Err(error);
                        }
                        // Stopped while the guardrails checked the answer: not saved, as an
                        // answer stopped while it streamed is not. (A tool's output that is the
                        // answer is saved, as the outputs of tools that ran always are.)
                        if let Some(reason) = aborted(self.options.signal.as_ref()) {
                            return Err(RunError::Aborted(reason));
                        }
                    }
                    self.save_last(state).await?;
                    self.emit(
                        "agent_end",
                        &[("agent", self.agent_object()), ("output", output)],
                    );
                    return Ok(Vec::new());
                }
                NextStep::MaxTurnsExceeded => {
                    self.save_last(state).await?;
                    return Err(RunError::MaxTurns(state.max_turns));
                }
            }
        }
    }
}

/// A run's usage as sessions take it (`storeRunUsage`, a history transaction's `usage`) and as
/// a run's result gives it.
pub(super) fn usage_object(u: &crate::core::wire::Usage) -> JsValue {
    object(&[
        ("requests", (u.requests as f64).into()),
        ("inputTokens", (u.input_tokens as f64).into()),
        ("outputTokens", (u.output_tokens as f64).into()),
        ("totalTokens", (u.total_tokens as f64).into()),
    ])
    .into()
}

/// The newest items a session's `getItems()` gives by default: its `settings.limit`, where it has
/// one and no `settings.turns` (ours, and the wrappers of this package that pass them through).
fn own_limit(session: &JsValue) -> Option<u64> {
    // (Settings that are no object, or getters that throw: the session reads as it reads.)
    let settings = js::get(session, "settings").ok()?;
    let turns = js::get(&settings, "turns").ok()?;
    let limit = js::get(&settings, "limit").ok()?.as_f64()?;
    let limit = crate::core::session::safe_count(limit).filter(|&n| n > 0)?;
    turns.is_null_or_undefined().then_some(limit)
}

/// Whether `session` stores a run's usage given with a history transaction: it says so with
/// `session[Symbol.for('agent-sessions.transactionUsage')] === true`.
fn takes_usage_in_transactions(session: &JsValue) -> bool {
    let key = js_sys::Symbol::for_("agent-sessions.transactionUsage");
    js_sys::Reflect::get(session, &key).is_ok_and(|v| v.as_bool() == Some(true))
}

/// The agent named `name` among those `first` hands off to, directly or not.
pub(crate) fn find_agent(
    first: &Rc<AgentSpec>,
    object: &JsValue,
    name: &str,
) -> Option<(Rc<AgentSpec>, JsValue)> {
    first_reachable(first, object, &|agent| agent.name == name)
}

/// The agent named `name` that a resumed state goes on with, among `first` and those it hands
/// off to. A state names its agent by name: of two agents of that name, the run could go on
/// with the one it did not pause in (its approved tool not found), so two are refused.
fn resume_agent(
    first: &Rc<AgentSpec>,
    object: &JsValue,
    name: &str,
) -> Result<(Rc<AgentSpec>, JsValue), RunnerError> {
    let refused = |why: &str| {
        RunnerError::new(
            RunnerErrorCode::InvalidRunState,
            format!(
                "this state is with agent \"{name}\", {why} agent \"{}\"",
                first.name
            ),
        )
    };
    let count = std::cell::Cell::new(0);
    if first_reachable(first, object, &|a| {
        count.set(count.get() + u32::from(a.name == name));
        count.get() > 1
    })
    .is_some()
    {
        return Err(refused(
            "and two agents of that name (give each its own) can be reached from",
        ));
    }
    find_agent(first, object, name).ok_or_else(|| refused("which is not handed off to by"))
}

/// Refuses a run where an agent it may reach has no model, or a `toolChoice` naming none of its
/// tools and handoffs (the API refuses every request of it), before anything is saved: found at
/// its model call, the handoff to it would fail after the question was saved and the first
/// agent's tools ran.
pub(crate) fn check_agents(first: &Rc<AgentSpec>, object: &JsValue) -> Result<(), RunnerError> {
    if let Some((agent, _)) = first_reachable(first, object, &|agent| agent.model.is_none()) {
        return Err(no_model(&agent));
    }
    let unknown_choice = |agent: &AgentSpec| {
        agent.settings.tool_choice.as_deref().is_some_and(|choice| {
            !matches!(choice, "auto" | "required" | "none")
                && !agent.tools.iter().any(|t| t.spec.name == choice)
                && !agent
                    .handoffs
                    .borrow()
                    .iter()
                    .any(|h| h.tool.name == choice)
        })
    };
    match first_reachable(first, object, &unknown_choice) {
        Some((agent, _)) => Err(RunnerError::new(
            RunnerErrorCode::InvalidAgent,
            format!(
                "agent \"{}\": modelSettings.toolChoice must be 'auto', 'required', 'none' or \
                 the name of one of its tools or handoffs, got \"{}\"",
                agent.name,
                agent.settings.tool_choice.as_deref().unwrap_or_default()
            ),
        )),
        None => Ok(()),
    }
}

/// The first agent `test` holds for among `first` and those it hands off to, directly or not
/// (each looked at once), with its JS object.
fn first_reachable(
    first: &Rc<AgentSpec>,
    object: &JsValue,
    test: &dyn Fn(&AgentSpec) -> bool,
) -> Option<(Rc<AgentSpec>, JsValue)> {
    let mut seen: Vec<Rc<AgentSpec>> = vec![first.clone()];
    let mut queue = vec![(first.clone(), object.clone())];
    while let Some((agent, object)) = queue.pop() {
        if test(&agent) {
            return Some((agent, object));
        }
        for h in agent.handoffs.borrow().iter() {
            if !seen.iter().any(|s| Rc::ptr_eq(s, &h.target)) {
                seen.push(h.target.clone());
                queue.push((h.target.clone(), h.object.clone()));
            }
        }
    }
    None
}

fn no_model(agent: &AgentSpec) -> RunnerError {
    RunnerError::new(
        RunnerErrorCode::InvalidAgent,
        format!(
            "agent \"{}\" has no model: set it with new Agent({{ model }})",
            agent.name
        ),
    )
}

/// Runs an agent: reads the session's history, calls the model and the tools until the model
/// answers (or a tool needs approval), and saves the new turn to the session.
pub async fn run(
    client: &ModelClient,
    agent: &Rc<AgentSpec>,
    agent_object: JsValue,
    input: RunInput,
    options: &RunOptions,
    on_event: Option<&Function>,
) -> Result<RunOutcome, RunFailure> {
    // A run resumed from a state that began in a conversation the server keeps goes on in it,
    // unless this call names one: the SDK's approval loop (`run(agent, result.state)`) does not
    // name it again, and a call sent outside it would leave its tool call unanswered there.
    let server = match &input {
        RunInput::Resume(s) if !options.server.is_used() => ServerConversation {
            conversation_id: s.conversation_id.clone(),
            previous_response_id: s.previous_response_id.clone(),
        },
        _ => options.server.clone(),
    };
    server
        .check(options.session.is_some(), client.api)
        .map_err(|e| RunFailure::before_start(RunError::Usage(e)))?;
    let metadata = agent.metadata.over(options.metadata);
    let (summary, session_state) = match &options.session {
        Some(session) if metadata.reads_metadata() => read_metadata(session)
            .await
            .map_err(RunFailure::before_start)?,
        _ => (None, Value::Null),
    };
    let r = Run {
        client,
        first: agent,
        current: RefCell::new((agent.clone(), agent_object.clone())),
        options,
        on_event,
        metadata,
        summary,
        session_state: RefCell::new(session_state),
        server,
        save_refused: Default::default(),
        found_saved: Default::default(),
        guardrail_results: Default::default(),
    };
    let fresh = matches!(input, RunInput::Items(_));
    let mut state = match input {
        RunInput::Items(items) => r.start(items).await.map_err(RunFailure::before_start)?,
        RunInput::Resume(state) => {
            let mut state = *state;
            state
                .check_agent(&agent.name)
                .map_err(|e| RunFailure::before_start(RunError::Usage(e)))?;
            // A resumed run keeps the limit it started with, unless this call gives one.
            if options.max_turns_given {
                state.max_turns = options.max_turns;
            }
            if let Some(name) = state.current_agent.clone() {
                let found = resume_agent(agent, &agent_object, &name)
                    .map_err(|e| RunFailure::before_start(RunError::Usage(e)))?;
                *r.current.borrow_mut() = found;
            }
            state
        }
    };
    state.conversation_id = r.server.conversation_id.clone();
    state.previous_response_id = r.server.previous_response_id.clone();
    state.ensure_run_id(|| js::fresh_id("run-"));
    r.state_tool_clash(&r.agent())
        .map_err(RunFailure::before_start)?;
    if fresh {
        r.emit(
            "agent_start",
            &[
                ("agent", agent_object.clone()),
                ("turnInput", items(&state.model_input)),
            ],
        );
        // A tripped input guardrail leaves the session as it was, as the SDK does; a guardrail
        // that throws keeps the user's input, as any other failure does.
        if !agent.input_guardrails.is_empty() {
            let checked = r
                .guardrails(
                    GuardrailKind::Input,
                    &agent.input_guardrails,
                    &[("input", items(&state.model_input))],
                    JsValue::UNDEFINED,
                )
                .await;
            match checked {
                Ok(()) => {}
                Err(error @ RunError::Tripwire { .. }) => {
                    return Err(RunFailure::before_start(error))
                }
                // Not resumable: a resumed run would not check its input again. (Stopped
                // meanwhile: the Stop's, nothing saved, as below.)
                Err(error) => {
                    if let Some(reason) = aborted(r.options.signal.as_ref()) {
                        return Err(RunFailure::before_start(RunError::Aborted(reason)));
                    }
                    let _ = r.save(&mut state, true).await;
                    return Err(RunFailure::before_start(error));
                }
            }
        }
    }
    // A run that saved to a session, resumed without one: what it goes on with would be saved
    // nowhere, and the session would keep its calls without their outputs for good.
    if !fresh && state.session_saved && r.options.session.is_none() {
        return Err(RunFailure::before_start(RunError::Usage(RunnerError::new(
            RunnerErrorCode::InvalidRunState,
            "this run saved its items to a session: resume it with that session ({ session }), \
             or what it goes on with is saved nowhere (nothing was sent or run)",
        ))));
    }
    // Stopped before anything was saved (while the history was read, the guardrails ran): the
    // run saves nothing, as one stopped while it waited for the session's lock, and the app
    // that gives the question back to its user is right to.
    if let (Some(reason), true) = (aborted(r.options.signal.as_ref()), fresh) {
        return Err(RunFailure::before_start(RunError::Aborted(reason)));
    }
    // The user's input is kept even when the model call fails (as the SDK's streamed runs keep
    // it; its whole runs save nothing then): a question typed is never lost.
    if let Err(error) = r.save(&mut state, true).await {
        return Err(RunFailure {
            error,
            state: Some(state),
        });
    }
    // (Where a call waiting in the state was approved or rejected, each decided call is checked
    // when it is answered: a state resumed again finds the outputs the resumption before saved.
    // Decisions whose calls were answered already, as in the `error.state` of a resumption that
    // ran them and then failed, check nothing then: the state is checked here.)
    let decided = state
        .pending_calls()
        .iter()
        .filter_map(call_id)
        .any(|id| state.decisions.contains_key(id));
    if !fresh && !decided {
        r.check_resumable(&state)
            .await
            .map_err(RunFailure::before_start)?;
    }
    match r.drive(&mut state).await {
        Ok(interruptions) => Ok(RunOutcome {
            state,
            last_agent: r.agent_object(),
            interruptions,
            metadata,
            guardrail_results: r.guardrail_results.take(),
        }),
        Err(error) => {
            // The calls the model answered were paid for, whatever stopped the run after them
            // (a failed or aborted call, a callback that threw): their usage goes to the turn
            // the run saved, unless the session refused a save (another tab wrote: the newest
            // turn may be that tab's). A run stopped, or whose model call failed, after its tools
            // ran saves their calls and outputs too, as a stopped run in the SDK does: the next
            // turn's model knows what they did (a booking made, a mail sent) instead of doing it
            // again on a retry. (A blocked or unfitting answer, and `maxTurns`, saved them
            // already; a model call is made with no call pending, so a failed one drops none.
            // So does a callback that failed after every call had its output and before an
            // answer, the dynamic `instructions` of the next call say; one that failed before
            // may leave calls pending, which its `error.state` takes again: they stay; one that
            // checked an answer keeps it in `error.state`, to check again; a session without
            // history transactions keeps nothing of a blocked answer's turn, as in the SDK.)
            // (Read only where it decides: not after a refused save, a stop or a failed call.)
            let answered = |state: &RunState| {
                state.final_output.is_none()
                    && !matches!(error, RunError::Tripwire { .. })
                    && state.pending_calls().is_empty()
                    && state.generated.iter().skip(state.saved).any(is_tool_output)
            };
            if !r.save_refused.get() {
                if matches!(error, RunError::Aborted(_) | RunError::Model(_)) || answered(&state) {
                    // Where the server keeps the conversation it holds the last response
                    // whatever happens here: its calls stay pending in the state (a resumed run
                    // answers them; a call left unanswered there fails every later request) and
                    // its answer stays the run's.
                    if !r.server.is_used() {
                        state.drop_final_answer();
                    }
                    let _ = r.save_last(&mut state).await;
                } else {
                    r.store_usage(&mut state).await;
                }
            }
            Err(RunFailure {
                error,
                state: Some(state),
            })
        }
    }
}

/// The output of call `id` where the session's newest items (`newest`) hold it after the call
/// itself (the newest call of that id: a server that reuses ids does not pair a new call with an
/// old output): what an earlier resumption of the same state saved after running the approved
/// tool.
///
/// An earlier resumption that went on past it (an answer saved after the outputs) is refused:
/// this one would answer again, the model paid twice.
fn saved_output(newest: &Option<Vec<Value>>, id: &str) -> Result<Option<Value>, RunError> {
    let Some(items) = newest.as_deref() else {
        return Ok(None);
    };
    let Some(at) = items
        .iter()
        .rposition(|i| is_function_call(i) && call_id(i) == Some(id))
    else {
        return Ok(None);
    };
    let Some(out) = items[at..]
        .iter()
        .position(|i| is_tool_output(i) && call_id(i) == Some(id))
    else {
        return Ok(None);
    };
    let output = &items[at + out];
    if items[at + out..].iter().any(|i| !is_tool_output(i)) {
        return Err(RunError::Usage(RunnerError::new(
            RunnerErrorCode::InvalidRunState,
            format!(
                "this state was resumed before, and that run went on past the call \"{id}\" \
                 (its answer is saved): nothing was run or saved"
            ),
        )));
    }
    Ok(Some(output.get("output").cloned().unwrap_or_default()))
}
