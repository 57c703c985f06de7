//! The run loop against JavaScript: sessions (ours or any object with the session methods),
//! function tools, the session input callback, events of a streamed run. The rules it follows
//! live in [`crate::core::run`].

use std::cell::RefCell;
use std::collections::VecDeque;

use js_sys::{Array, Object, Reflect};
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};

use crate::core::history::Limit;
use crate::core::run::{
    new_turn_items, select_history, Decision, Origin, RunState, Step, REJECTION_MESSAGE,
};
use crate::core::wire::{
    call_id, is_function_call, request_body, ModelRequest, ModelSettings, ToolSpec,
};

use super::js::{call_method, describe, error_text, js_to_json, json_to_js, settle_value};
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
}

pub struct RunOptions {
    pub session: Option<JsValue>,
    pub session_limit: Option<Limit>,
    pub input_callback: Option<js_sys::Function>,
    pub max_turns: u32,
    pub signal: Option<JsValue>,
    pub context: JsValue,
    pub previous_response_id: Option<String>,
    pub conversation_id: Option<String>,
    pub stream: bool,
}

pub enum RunInput {
    Items(Vec<Value>),
    Resume(RunState),
}

pub enum RunError {
    /// Wrong use of the runner (bad options, no model, a session with a server conversation),
    /// with its error code.
    Usage(&'static str, String),
    Model(ModelFailure),
    MaxTurns(u32),
    Aborted(JsValue),
    /// An error thrown by the session or the input callback, passed on unchanged.
    Thrown(JsValue),
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
}

/// Where a streamed run's events go, read by an async iterator (`next()`).
#[derive(Default)]
pub struct EventQueue {
    events: RefCell<VecDeque<JsValue>>,
    /// The `resolve` and `reject` of each `next()` waiting for an event, oldest first.
    waiting: RefCell<VecDeque<(js_sys::Function, js_sys::Function)>>,
    closed: RefCell<bool>,
    error: RefCell<Option<JsValue>>,
}

impl EventQueue {
    pub fn push(&self, event: JsValue) {
        if *self.closed.borrow() {
            return;
        }
        let waiter = self.waiting.borrow_mut().pop_front();
        match waiter {
            Some((resolve, _)) => {
                let _ = resolve.call1(&JsValue::UNDEFINED, &iter_result(event, false));
            }
            None => self.events.borrow_mut().push_back(event),
        }
    }

    /// Ends the stream; with an error, the iterator throws it after the queued events.
    pub fn close(&self, error: Option<JsValue>) {
        if *self.closed.borrow() {
            return;
        }
        *self.closed.borrow_mut() = true;
        let waiters: Vec<_> = self.waiting.borrow_mut().drain(..).collect();
        let mut error = error;
        for (resolve, reject) in waiters {
            match error.take() {
                Some(e) => {
                    let _ = reject.call1(&JsValue::UNDEFINED, &e);
                }
                None => {
                    let _ =
                        resolve.call1(&JsValue::UNDEFINED, &iter_result(JsValue::UNDEFINED, true));
                }
            }
        }
        *self.error.borrow_mut() = error;
    }

    /// The iterator's `return()`: the caller stopped iterating; later events are dropped (the
    /// run itself goes on; its `signal` stops it).
    pub fn stop(&self) {
        self.events.borrow_mut().clear();
        self.close(None);
        self.error.borrow_mut().take();
    }

    /// The iterator's `next()`.
    pub fn next(&self) -> js_sys::Promise {
        if let Some(e) = self.events.borrow_mut().pop_front() {
            return js_sys::Promise::resolve(&iter_result(e, false));
        }
        if *self.closed.borrow() {
            return match self.error.borrow_mut().take() {
                Some(e) => js_sys::Promise::reject(&e),
                None => js_sys::Promise::resolve(&iter_result(JsValue::UNDEFINED, true)),
            };
        }
        js_sys::Promise::new(&mut |resolve, reject| {
            self.waiting.borrow_mut().push_back((resolve, reject));
        })
    }
}

pub fn iter_result(value: JsValue, done: bool) -> JsValue {
    let r = Object::new();
    let _ = Reflect::set(&r, &"value".into(), &value);
    let _ = Reflect::set(&r, &"done".into(), &done.into());
    r.into()
}

fn event(kind: &str, fields: &[(&str, JsValue)]) -> JsValue {
    let e = Object::new();
    let _ = Reflect::set(&e, &"type".into(), &kind.into());
    for (k, v) in fields {
        let _ = Reflect::set(&e, &(*k).into(), v);
    }
    e.into()
}

struct Run<'a> {
    client: &'a ModelClient,
    agent: &'a AgentSpec,
    options: &'a RunOptions,
    events: Option<&'a EventQueue>,
}

impl Run<'_> {
    fn emit(&self, kind: &str, fields: &[(&str, JsValue)]) {
        if let Some(q) = self.events {
            q.push(event(kind, fields));
        }
    }

    async fn session_call(&self, method: &str, args: &[JsValue]) -> Result<JsValue, RunError> {
        let Some(session) = &self.options.session else {
            return Ok(JsValue::UNDEFINED);
        };
        let value = call_method(session, method, args).map_err(RunError::Thrown)?;
        settle_value(value).await.map_err(RunError::Thrown)
    }

    async fn save(&self, items: Vec<Value>) -> Result<(), RunError> {
        if items.is_empty() || self.options.session.is_none() {
            return Ok(());
        }
        let array: Array = items.iter().map(json_to_js).collect();
        self.session_call("addItems", &[array.into()])
            .await
            .map(|_| ())
    }

    /// Reads the history and builds the state of a new run.
    async fn start(&self, input: Vec<Value>) -> Result<RunState, RunError> {
        let history = if self.options.session.is_some() {
            let limit = match self.options.session_limit {
                Some(Limit::Newest(n)) => JsValue::from_f64(n as f64),
                Some(Limit::All) | None => JsValue::UNDEFINED,
            };
            let items = self.session_call("getItems", &[limit]).await?;
            if !Array::is_array(&items) {
                return Err(RunError::Usage(
                    "INVALID_SESSION",
                    format!(
                        "session.getItems() must resolve to an array, got {}",
                        describe(&items)
                    ),
                ));
            }
            let items = js_to_json(&items, "the session's items")
                .map_err(|m| RunError::Usage("INVALID_SESSION", m))?;
            select_history(items.as_array().cloned().unwrap_or_default())
        } else {
            Vec::new()
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
                let returned = settle_value(returned).await.map_err(RunError::Thrown)?;
                if !Array::is_array(&returned) {
                    return Err(RunError::Usage(
                        "INVALID_RUN_OPTIONS",
                        "sessionInputCallback must return an array of items".into(),
                    ));
                }
                let same = |pool: &[JsValue], item: &JsValue| {
                    pool.iter().position(|p| js_sys::Object::is(p, item))
                };
                let origins: Vec<Origin> = returned
                    .unchecked_ref::<Array>()
                    .iter()
                    .map(|item| match same(&history_js, &item) {
                        Some(h) => Origin::History(h),
                        None if same(&input_js, &item).is_some() => Origin::NewInput,
                        None => Origin::Made,
                    })
                    .collect();
                let returned = js_to_json(&returned, "what sessionInputCallback returned")
                    .map_err(|m| RunError::Usage("INVALID_RUN_OPTIONS", m))?;
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
            RunError::Usage(
                "INVALID_AGENT",
                format!(
                    "agent \"{}\" has no model: set it with new Agent({{ model }})",
                    self.agent.name
                ),
            )
        })
    }

    async fn call_model(&self, state: &mut RunState) -> Result<(), RunError> {
        let server_managed =
            self.options.previous_response_id.is_some() || self.options.conversation_id.is_some();
        // With a server-side conversation the server already holds what it was sent: send only
        // what is new since the last response.
        let input = if server_managed {
            if state.turns == 0 {
                state.model_input.clone()
            } else {
                let last_output = state
                    .generated
                    .iter()
                    .rposition(is_function_call)
                    .map(|p| p + 1)
                    .unwrap_or(0);
                state.generated[last_output..].to_vec()
            }
        } else {
            state.model_input_now()
        };
        let previous = if state.turns == 0 || self.options.conversation_id.is_some() {
            self.options.previous_response_id.clone()
        } else if server_managed {
            state.last_response_id.clone()
        } else {
            None
        };
        let tools: Vec<ToolSpec> = self.agent.tools.iter().map(|t| t.spec.clone()).collect();
        let body = request_body(
            self.client.api,
            &ModelRequest {
                model: self.model()?,
                instructions: self.agent.instructions.as_deref(),
                settings: &self.agent.settings,
                tools: &tools,
                input: &input,
                stream: self.options.stream,
                previous_response_id: previous.as_deref(),
                conversation_id: self.options.conversation_id.as_deref(),
            },
        );
        let mut on_delta = |text: &str| self.emit("text_delta", &[("delta", text.into())]);
        let output = self
            .client
            .call(
                &body,
                self.options.stream,
                self.options.signal.as_ref(),
                &mut on_delta,
            )
            .await
            .map_err(|e| match e {
                CallError::Failed(f) => RunError::Model(f),
                CallError::Aborted(reason) => RunError::Aborted(reason),
            })?;
        for item in &output.items {
            let js = json_to_js(item);
            self.emit("item_added", &[("item", js.clone())]);
            if is_function_call(item) {
                self.emit("tool_call", &[("item", js)]);
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
            let r = settle_value(r).await.map_err(RunError::Thrown)?;
            Ok(r.is_truthy())
        } else {
            Ok(flag.is_truthy())
        }
    }

    async fn execute(&self, tool: &Tool, args: &JsValue) -> String {
        let result = match tool
            .execute
            .call2(&tool.object, args, &self.options.context)
        {
            Ok(r) => settle_value(r).await,
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
                    self.execute(tool, &args).await
                }
                None => self.execute(tool, &args).await,
            };
            self.record(state, &call, output);
        }
        Ok((waiting, ran_approved))
    }

    fn record(&self, state: &mut RunState, call: &Value, output: String) {
        state.record_tool_output(call, output);
        if let Some(item) = state.generated.last() {
            self.emit("tool_output", &[("item", json_to_js(item))]);
        }
    }

    async fn drive(&self, state: &mut RunState) -> Result<Vec<Value>, RunError> {
        loop {
            match state.next_step() {
                Step::CallModel => self.call_model(state).await?,
                Step::RunTools(calls) => {
                    let (waiting, ran_approved) = self.run_tools(state, calls).await?;
                    if !waiting.is_empty() {
                        self.save(state.take_unsaved()).await?;
                        return Ok(waiting);
                    }
                    // An approved call ran: its output is saved now, so that a failure of the
                    // next model call can never lead to running it a second time on a retry.
                    if ran_approved {
                        self.save(state.take_unsaved()).await?;
                    }
                }
                Step::Done(_) => {
                    self.save(state.take_unsaved()).await?;
                    return Ok(Vec::new());
                }
                Step::MaxTurnsExceeded => {
                    self.save(state.take_unsaved()).await?;
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
    events: Option<&EventQueue>,
) -> Result<RunOutcome, RunFailure> {
    if options.session.is_some()
        && (options.previous_response_id.is_some() || options.conversation_id.is_some())
    {
        return Err(RunFailure::before_start(RunError::Usage(
            "SESSION_CONFLICT",
            "a session cannot be combined with conversationId or previousResponseId: the session \
             already holds the history; use one or the other"
                .into(),
        )));
    }
    if client.api != crate::core::wire::Api::Responses
        && (options.previous_response_id.is_some() || options.conversation_id.is_some())
    {
        return Err(RunFailure::before_start(RunError::Usage(
            "INVALID_RUN_OPTIONS",
            "previousResponseId and conversationId need a runner with api: \"responses\"; the Chat \
             Completions API keeps no conversation on the server"
                .into(),
        )));
    }
    let r = Run {
        client,
        agent,
        options,
        events,
    };
    let mut state = match input {
        RunInput::Items(items) => r.start(items).await.map_err(RunFailure::before_start)?,
        RunInput::Resume(mut state) => {
            state.max_turns = state.max_turns.max(options.max_turns);
            state
        }
    };
    // The user's input is kept even when the model call fails, as the SDK does.
    if let Err(error) = r.save(state.take_unsaved_input()).await {
        return Err(RunFailure {
            error,
            state: Some(state),
        });
    }
    match r.drive(&mut state).await {
        Ok(interruptions) => Ok(RunOutcome {
            state,
            interruptions,
        }),
        Err(error) => Err(RunFailure {
            error,
            state: Some(state),
        }),
    }
}
