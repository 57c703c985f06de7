//! The run loop against JavaScript: sessions (ours or any object with the session methods),
//! function tools, the session input callback, events of a streamed run. The rules it follows
//! live in [`crate::core::run`].

use js_sys::{Array, Function};
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};

use crate::core::error::{RunnerError, RunnerErrorCode};
use crate::core::history::{Limit, Window};
use crate::core::run::metadata::{
    instructions_with, merge_state, state_tool_parameters, MetadataOptions, PartialMetadataOptions,
    STATE_TOOL, STATE_TOOL_DESCRIPTION,
};
use crate::core::run::{
    new_turn_items, newest_turns, select_history, Decision, NextStep, Origin, RunState,
    ServerConversation, REJECTION_MESSAGE,
};
use crate::core::session::uuid_v4;
use crate::core::wire::{
    call_id, is_function_call, request_body, ModelRequest, ModelSettings, ToolSpec,
};

use super::js::{
    self, call_method, describe, error_text, js_to_json, json_to_js, object, resolve_value,
    Unresolved,
};
use super::model::{aborted, CallError, ModelClient, ModelFailure};

/// A function tool defined in JS.
pub struct Tool {
    pub spec: ToolSpec,
    /// `execute(args, context)`.
    pub execute: js_sys::Function,
    /// `needsApproval`: absent/false, true, or `(context, args, callId) => boolean | Promise`.
    pub needs_approval: JsValue,
    pub object: JsValue,
}

pub struct AgentSpec {
    pub name: String,
    pub instructions: Option<String>,
    pub model: Option<String>,
    pub settings: ModelSettings,
    pub tools: Vec<Tool>,
    /// Summaries, titles and state of the session.
    pub metadata: MetadataOptions,
}

pub struct RunOptions {
    pub session: Option<JsValue>,
    /// The history a run reads, when its options say (`sessionSettings`); else the session's
    /// own `getItems()` decides.
    pub session_window: Option<Window>,
    pub input_callback: Option<js_sys::Function>,
    pub max_turns: u32,
    pub signal: Option<JsValue>,
    pub context: JsValue,
    pub server: ServerConversation,
    pub stream: bool,
    /// The run's own say on summaries, titles and state, over the agent's.
    pub metadata: PartialMetadataOptions,
}

pub enum RunInput {
    Items(Vec<Value>),
    Resume(RunState),
}

pub enum RunError {
    /// Wrong use of the runner (bad options, no model, a session with a server conversation).
    Usage(RunnerError),
    Model(ModelFailure),
    MaxTurns(u32),
    Aborted(JsValue),
    /// An error thrown by the session or the input callback, passed on unchanged.
    Thrown(JsValue),
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
    /// Calls waiting for approval; empty when the run finished.
    pub interruptions: Vec<Value>,
    /// What the run does with the session's metadata (for the work after the turn).
    pub metadata: MetadataOptions,
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
    if !js::get(session, "getInfo").is_ok_and(|f| f.is_function()) {
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
    method: &str,
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
    agent: &'a AgentSpec,
    options: &'a RunOptions,
    /// Receives each event of a streamed run.
    on_event: Option<&'a Function>,
    /// The agent's metadata options with the run's over them.
    metadata: MetadataOptions,
    /// The session's summary and state, read at the start where the run uses them; the state
    /// follows `update_session_state`.
    summary: Option<String>,
    session_state: std::cell::RefCell<Value>,
}

impl Run<'_> {
    fn emit(&self, kind: &str, field: (&str, JsValue)) {
        if let Some(on_event) = self.on_event {
            let event = object(&[("type", kind.into()), field]);
            // The listener is the package's own event buffer (js/runner.js); it does not throw.
            let _ = on_event.call1(&JsValue::UNDEFINED, &event);
        }
    }

    async fn session_call(&self, method: &str, args: &[JsValue]) -> Result<JsValue, RunError> {
        match &self.options.session {
            Some(session) => call_session(session, method, args).await,
            None => Ok(JsValue::UNDEFINED),
        }
    }

    /// Saves what the session does not have yet (the input only, with `input_only`): as one
    /// history transaction where the session takes them (so a retry never writes it twice, and
    /// a history another tab changed in between is refused), else with `addItems`.
    async fn save(&self, state: &mut RunState, input_only: bool) -> Result<(), RunError> {
        let Some(save) = state.next_save(input_only) else {
            return Ok(());
        };
        if let Some(session) = &self.options.session {
            let transactional = js::get(session, "applyHistoryTransaction")
                .map(|f| f.is_function())
                .unwrap_or(false);
            if transactional {
                let args = object(&[
                    ("operationId", save.operation_id.as_str().into()),
                    ("transaction", json_to_js(&save.transaction())),
                ]);
                self.session_call("applyHistoryTransaction", &[args.into()])
                    .await?;
            } else {
                let items: Array = save.items.iter().map(json_to_js).collect();
                self.session_call("addItems", &[items.into()]).await?;
            }
        }
        state.saved(&save);
        Ok(())
    }

    /// The history the run sends: the newest turns through `getRecentTurns` where the session has
    /// it (else selected from all of `getItems()`), the newest items through `getItems(n)`, or
    /// what the session's own `getItems()` gives.
    async fn read_history(&self, session: &JsValue) -> Result<Vec<Value>, RunError> {
        let count = |n: u64| JsValue::from_f64(n.min(1 << 53) as f64);
        let (method, arg, turns) = match self.options.session_window {
            None | Some(Window::Items(Limit::All)) | Some(Window::Turns(Limit::All)) => {
                ("getItems", JsValue::UNDEFINED, None)
            }
            Some(Window::Items(Limit::Newest(n))) => ("getItems", count(n), None),
            Some(Window::Turns(Limit::Newest(n))) => {
                if js::get(session, "getRecentTurns").is_ok_and(|f| f.is_function()) {
                    ("getRecentTurns", count(n), None)
                } else {
                    ("getItems", JsValue::UNDEFINED, Some(n))
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
        let items = items.as_array().cloned().unwrap_or_default();
        Ok(match turns {
            Some(n) => newest_turns(items, n),
            None => items,
        })
    }

    /// Reads the history and builds the state of a new run.
    async fn start(&self, input: Vec<Value>) -> Result<RunState, RunError> {
        let history = match &self.options.session {
            Some(session) => select_history(self.read_history(session).await?),
            None => Vec::new(),
        };
        let (model_input, turn_input) = match &self.options.input_callback {
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
                (model_input, turn_input)
            }
        };
        Ok(RunState::new(
            &self.agent.name,
            input,
            model_input,
            turn_input,
            self.options.max_turns,
        ))
    }

    fn model(&self) -> Result<&str, RunError> {
        self.agent.model.as_deref().ok_or_else(|| {
            RunError::Usage(RunnerError::new(
                RunnerErrorCode::InvalidAgent,
                format!(
                    "agent \"{}\" has no model: set it with new Agent({{ model }})",
                    self.agent.name
                ),
            ))
        })
    }

    async fn call_model(&self, state: &mut RunState) -> Result<(), RunError> {
        let (input, previous) = state.next_request(&self.options.server);
        let mut tools: Vec<ToolSpec> = self.agent.tools.iter().map(|t| t.spec.clone()).collect();
        if self.metadata.agentic_state {
            tools.push(ToolSpec {
                name: STATE_TOOL.to_string(),
                description: STATE_TOOL_DESCRIPTION.to_string(),
                parameters: state_tool_parameters(),
            });
        }
        let state_now = self.session_state.borrow().clone();
        let instructions = instructions_with(
            self.agent.instructions.as_deref(),
            self.summary
                .as_deref()
                .filter(|_| self.metadata.add_summary_to_context),
            Some(&state_now).filter(|_| self.metadata.add_state_to_context),
        );
        let body = request_body(
            self.client.api,
            &ModelRequest {
                model: self.model()?,
                instructions: instructions.as_deref(),
                settings: &self.agent.settings,
                tools: &tools,
                input: &input,
                stream: self.options.stream,
                previous_response_id: previous.as_deref(),
                conversation_id: self.options.server.conversation_id.as_deref(),
            },
        );
        let body = serde_json::to_string(&body).map_err(|e| {
            RunError::Usage(RunnerError::new(
                RunnerErrorCode::InvalidInput,
                format!("the model request cannot be written as JSON ({e})"),
            ))
        })?;
        let mut on_delta = |text: &str| self.emit("text_delta", ("delta", text.into()));
        let output = self
            .client
            .call(
                &body,
                self.options.stream,
                self.options.signal.as_ref(),
                &mut on_delta,
            )
            .await?;
        for item in &output.items {
            let js = json_to_js(item);
            self.emit("item_added", ("item", js.clone()));
            if is_function_call(item) {
                self.emit("tool_call", ("item", js));
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

    async fn execute(&self, tool: &Tool, args: &JsValue, call_id: &str) -> String {
        // The third argument: the call's id and the session's state (Agno's `session_state`).
        let details = object(&[
            ("callId", call_id.into()),
            ("sessionState", json_to_js(&self.session_state.borrow())),
        ]);
        let result = match tool
            .execute
            .call3(&tool.object, args, &self.options.context, &details)
        {
            Ok(r) => resolve_value(r).await.map_err(Unresolved::into_value),
            Err(e) => Err(e),
        };
        match result {
            Ok(v) if v.is_string() => v.as_string().unwrap_or_default(),
            Ok(v) if v.is_undefined() => String::new(),
            // JSON for objects and numbers; values JSON cannot hold (a bigint, a function, a
            // circular object) are described instead of failing the run.
            Ok(v) => js_sys::JSON::stringify(&v)
                .ok()
                .and_then(|s| s.as_string())
                .unwrap_or_else(|| {
                    format!("The tool returned {}, which is not JSON.", describe(&v))
                }),
            Err(e) => format!(
                "An error occurred while running the tool. Please try again. Error: {}",
                error_text(&e)
            ),
        }
    }

    /// Runs the pending calls that may run; returns the ones waiting for approval, and whether an
    /// approved call ran.
    async fn run_tools(
        &self,
        state: &mut RunState,
        calls: Vec<Value>,
    ) -> Result<(Vec<Value>, bool), RunError> {
        let mut waiting = Vec::new();
        let mut ran_approved = false;
        for call in calls {
            if let Some(reason) = aborted(self.options.signal.as_ref()) {
                return Err(RunError::Aborted(reason));
            }
            let name = call.get("name").and_then(Value::as_str).unwrap_or("");
            let id = call_id(&call).unwrap_or("").to_string();
            if name == STATE_TOOL && self.metadata.agentic_state {
                let output = self.update_state(&call).await?;
                self.record(state, &call, output);
                continue;
            }
            let Some(tool) = self.agent.tools.iter().find(|t| t.spec.name == name) else {
                let output = format!(
                    "Tool \"{name}\" is not defined; the available tools are: {}.",
                    self.agent
                        .tools
                        .iter()
                        .map(|t| t.spec.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                self.record(state, &call, output);
                continue;
            };
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
                    let output = format!("The arguments are not valid JSON ({}); call the tool again with a JSON object.", error_text(&e));
                    self.record(state, &call, output);
                    continue;
                }
            };
            let decision = state.decisions.get(&id).cloned();
            if decision.is_none() && self.needs_approval(tool, &args, &call).await? {
                waiting.push(call);
                continue;
            }
            let output = match decision {
                Some(Decision::Rejected { message }) => {
                    message.unwrap_or_else(|| REJECTION_MESSAGE.to_string())
                }
                Some(Decision::Approved) => {
                    ran_approved = true;
                    self.execute(tool, &args, &id).await
                }
                None => self.execute(tool, &args, &id).await,
            };
            self.record(state, &call, output);
        }
        Ok((waiting, ran_approved))
    }

    /// `update_session_state(updates)`: a shallow merge into the session's state, stored with
    /// `update({ state })` at once. What the model is told back.
    async fn update_state(&self, call: &Value) -> Result<String, RunError> {
        let arguments = call
            .get("arguments")
            .and_then(Value::as_str)
            .unwrap_or("{}");
        let updates: Value = match serde_json::from_str(arguments) {
            Ok(v) => v,
            Err(e) => return Ok(format!("The arguments are not valid JSON ({e}).")),
        };
        let merged = match merge_state(&self.session_state.borrow(), &updates) {
            Some(merged) => merged,
            None => return Ok("Give the keys to change as an object in \"updates\".".into()),
        };
        if let Some(session) = &self.options.session {
            if js::get(session, "update").is_ok_and(|f| f.is_function()) {
                let changes = object(&[("state", json_to_js(&merged))]);
                call_session(session, "update", &[changes.into()]).await?;
            }
        }
        let text = format!("The session state is now: {merged}");
        *self.session_state.borrow_mut() = merged;
        Ok(text)
    }

    /// Records the run's usage against the turn it saved, where the session keeps usage
    /// (`storeRunUsage`, as `IndexedDbSession` does). The turn is saved by then: a failure here
    /// leaves it as it is, and only the usage figures miss this run.
    async fn store_usage(&self, state: &RunState) {
        let Some(session) = &self.options.session else {
            return;
        };
        if !js::get(session, "storeRunUsage").is_ok_and(|f| f.is_function()) {
            return;
        }
        let u = &state.usage;
        let usage = object(&[
            ("requests", (u.requests as f64).into()),
            ("inputTokens", (u.input_tokens as f64).into()),
            ("outputTokens", (u.output_tokens as f64).into()),
            ("totalTokens", (u.total_tokens as f64).into()),
        ]);
        let _ = call_session(session, "storeRunUsage", &[usage.into()]).await;
    }

    fn record(&self, state: &mut RunState, call: &Value, output: String) {
        state.record_tool_output(call, output);
        if let Some(item) = state.generated.last() {
            self.emit("tool_output", ("item", json_to_js(item)));
        }
    }

    async fn drive(&self, state: &mut RunState) -> Result<Vec<Value>, RunError> {
        loop {
            match state.next_step() {
                NextStep::CallModel => self.call_model(state).await?,
                NextStep::RunTools(calls) => {
                    let (waiting, ran_approved) = self.run_tools(state, calls).await?;
                    if !waiting.is_empty() {
                        self.save(state, false).await?;
                        return Ok(waiting);
                    }
                    // An approved call ran: its output is saved now, so that a failure of the
                    // next model call can never lead to running it a second time on a retry.
                    if ran_approved {
                        self.save(state, false).await?;
                    }
                }
                NextStep::Done(_) => {
                    self.save(state, false).await?;
                    self.store_usage(state).await;
                    return Ok(Vec::new());
                }
                NextStep::MaxTurnsExceeded => {
                    self.save(state, false).await?;
                    return Err(RunError::MaxTurns(state.max_turns));
                }
            }
        }
    }
}

/// Runs an agent: reads the session's history, calls the model and the tools until the model
/// answers (or a tool needs approval), and saves the new turn to the session.
pub async fn run(
    client: &ModelClient,
    agent: &AgentSpec,
    input: RunInput,
    options: &RunOptions,
    on_event: Option<&Function>,
) -> Result<RunOutcome, RunFailure> {
    options
        .server
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
        agent,
        options,
        on_event,
        metadata,
        summary,
        session_state: std::cell::RefCell::new(session_state),
    };
    let mut state = match input {
        RunInput::Items(items) => r.start(items).await.map_err(RunFailure::before_start)?,
        RunInput::Resume(mut state) => {
            state.max_turns = state.max_turns.max(options.max_turns);
            state
        }
    };
    state.ensure_run_id(|| match js::random_bytes() {
        Ok(bytes) => uuid_v4(bytes),
        Err(_) => format!("run-{}", js::now()),
    });
    // The user's input is kept even when the model call fails, as the SDK does.
    if let Err(error) = r.save(&mut state, true).await {
        return Err(RunFailure {
            error,
            state: Some(state),
        });
    }
    match r.drive(&mut state).await {
        Ok(interruptions) => Ok(RunOutcome {
            state,
            interruptions,
            metadata,
        }),
        Err(error) => Err(RunFailure {
            error,
            state: Some(state),
        }),
    }
}
