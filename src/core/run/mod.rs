//! The run loop's state and rules, free of JavaScript: what the model is sent, what is saved to
//! the session and when, which tool calls are pending, when the run is over.
//!
//! A run alternates model calls and tool calls until the model answers without calling a tool.
//! Its [`RunState`] is plain data: it serialises to a string so a run paused for approval
//! survives a page reload, and it never holds a credential.
//!
//! - [`history`]: which history a run sends, and which of its input is new to the session;
//! - [`server`]: a conversation the server keeps instead of the session;
//! - [`metadata`]: summaries, titles and state of the session, Agno style;
//! - [`retry`]: which failed model calls are retried, and when.

pub mod history;
pub mod http;
pub mod metadata;
pub mod retry;
pub mod server;
mod state_json;

#[cfg(test)]
use std::collections::BTreeMap;

use crate::core::json::{json, Value};
#[cfg(test)]
use serde::{Deserialize, Serialize};

use super::wire::{
    answer_text, call_id, is_function_call, is_tool_output, item_type, ModelOutput, OutputType,
    Usage,
};

pub use history::{
    at_most_turns, from_response_start, input_items_from_text, new_turn_items, newest_turns,
    select_history, select_returned, Origin,
};
pub use server::ServerConversation;

/// The shape version of a serialised [`RunState`].
pub const STATE_VERSION: u32 = 1;

pub const DEFAULT_MAX_TURNS: u32 = 10;

/// The output a rejected tool call reports to the model, as in `@openai/agents`.
pub const REJECTION_MESSAGE: &str = "Tool execution was not approved.";

// The JSON of a saved state is written by hand (state_json.rs); the derive is the tests'
// reference for it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(test, derive(Serialize, Deserialize))]
#[cfg_attr(test, serde(tag = "decision", rename_all = "camelCase"))]
pub enum Decision {
    Approved,
    Rejected { message: Option<String> },
}

#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(test, derive(Serialize, Deserialize))]
#[cfg_attr(test, serde(rename_all = "camelCase"))]
pub struct RunState {
    pub version: u32,
    pub agent_name: String,
    /// The new input of the run, as given.
    pub input: Vec<Value>,
    /// What the first model call was sent: the selected history and the new input (or what the
    /// session input callback made of them).
    pub model_input: Vec<Value>,
    /// The items of `model_input` that belong to this turn and are saved to the session.
    pub turn_input: Vec<Value>,
    pub input_saved: bool,
    /// Items the run produced: model output and tool outputs, in order.
    pub generated: Vec<Value>,
    /// How many of `generated` are already in the session.
    pub saved: usize,
    pub turns: u32,
    pub max_turns: u32,
    pub usage: Usage,
    /// The part of `usage` already given to the session: a run resumed after its usage was
    /// stored (its turns used up, a failed call) stores only what it adds.
    #[cfg_attr(test, serde(default))]
    pub usage_stored: Usage,
    pub last_response_id: Option<String>,
    /// The conversation the server keeps, where the run began in one (`conversationId`,
    /// `previousResponseId`): a resumed run goes on in it without being told again.
    #[cfg_attr(test, serde(default))]
    pub conversation_id: Option<String>,
    #[cfg_attr(test, serde(default))]
    pub previous_response_id: Option<String>,
    pub final_output: Option<String>,
    /// Approval decisions by call id.
    pub decisions: Decisions,
    /// Names this run's writes to the session: their operation ids are `{run_id}:{n}`.
    #[cfg_attr(test, serde(default))]
    pub run_id: String,
    /// How many of this run's saves reached the session.
    #[cfg_attr(test, serde(default))]
    pub saves: u64,
    /// The newest item this run saved: a later save expects the history to still end with it.
    #[cfg_attr(test, serde(default))]
    pub last_saved: Option<Value>,
    /// The agent answering now, after a handoff; `None`: the agent the run started with.
    #[cfg_attr(test, serde(default))]
    pub current_agent: Option<String>,
    /// Calls the run answers as handoffs (they never wait for approval).
    #[cfg_attr(test, serde(default))]
    pub handoff_calls: Vec<String>,
    /// What a handoff's input filter made of the run's input so far: the model is sent these
    /// items and what the run generated after them (the session still gets everything).
    #[cfg_attr(test, serde(default))]
    pub filtered: Option<FilteredInput>,
    /// The final output parsed as JSON, for an agent with an output schema.
    #[cfg_attr(test, serde(default))]
    pub final_json: Option<Value>,
    /// The agents (by name) that ran a tool in this run.
    #[cfg_attr(test, serde(default))]
    pub tools_used: Vec<String>,
    /// Where the latest model response starts in `generated`.
    #[cfg_attr(test, serde(default))]
    pub response_at: usize,
    /// Whether the final output is a tool's (`toolUseBehavior`), not the model's answer.
    #[cfg_attr(test, serde(default))]
    pub final_from_tool: bool,
    /// Whether the run saved its items to a session: resumed without one, what it goes on with
    /// would be saved nowhere, and the session would keep its calls without their outputs.
    #[cfg_attr(test, serde(default))]
    pub session_saved: bool,
}

/// Approval decisions by call id, in id order, as in a `BTreeMap`: a sorted list, because a
/// `BTreeMap` brings all of its code into the module for a handful of entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(test, derive(Serialize, Deserialize))]
#[cfg_attr(
    test,
    serde(
        from = "BTreeMap<String, Decision>",
        into = "BTreeMap<String, Decision>"
    )
)]
pub struct Decisions(Vec<(String, Decision)>);

impl Decisions {
    fn find(&self, id: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(id))
    }

    pub fn get(&self, id: &str) -> Option<&Decision> {
        self.find(id).ok().map(|i| &self.0[i].1)
    }

    pub fn contains_key(&self, id: &str) -> bool {
        self.find(id).is_ok()
    }

    /// Sets the decision for `id`, replacing an earlier one.
    pub fn insert(&mut self, id: String, decision: Decision) {
        match self.find(&id) {
            Ok(i) => self.0[i].1 = decision,
            Err(i) => self.0.insert(i, (id, decision)),
        }
    }

    /// Forgets the decision for `id`, if there is one.
    pub fn remove(&mut self, id: &str) {
        if let Ok(i) = self.find(id) {
            self.0.remove(i);
        }
    }

    /// The decisions in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Decision)> {
        self.0.iter().map(|(k, d)| (k.as_str(), d))
    }
}

#[cfg(test)]
impl From<BTreeMap<String, Decision>> for Decisions {
    fn from(map: BTreeMap<String, Decision>) -> Self {
        Decisions(map.into_iter().collect())
    }
}

#[cfg(test)]
impl From<Decisions> for BTreeMap<String, Decision> {
    fn from(d: Decisions) -> Self {
        d.0.into_iter().collect()
    }
}

/// The model input a handoff's input filter gave: `items`, then `generated[from..]`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(test, derive(Serialize, Deserialize))]
pub struct FilteredInput {
    pub items: Vec<Value>,
    pub from: usize,
}

/// One write of a run's new items to its session. To a session that takes history
/// transactions it is one: applied once whatever the retries (its operation id is the same
/// until it succeeds), and refused if the history no longer ends with what this run saved
/// last (another tab wrote in between), instead of interleaving the two.
#[derive(Debug, Clone, PartialEq)]
pub struct Save {
    pub items: Vec<Value>,
    pub operation_id: String,
    /// Empty for the run's first save; else the item it saved last.
    pub expected_suffix: Vec<Value>,
    /// Whether the save holds the input only (what a failing run keeps).
    input_only: bool,
}

impl Save {
    /// The transaction: `append_items` for a first save, else `replace_suffix` of the item saved
    /// last by itself and the new items.
    pub fn transaction(&self) -> Value {
        if self.expected_suffix.is_empty() {
            return json!({"type": "append_items", "items": self.items});
        }
        let replacement: Vec<&Value> = self.expected_suffix.iter().chain(&self.items).collect();
        json!({
            "type": "replace_suffix",
            "expectedSuffix": self.expected_suffix,
            "replacement": replacement,
        })
    }
}

/// Why a serialised [`RunState`] cannot be resumed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateError {
    /// Not the JSON of a run state; carries the parser's message.
    NotAState(String),
    /// More items marked saved than the run generated.
    Inconsistent,
    /// Written by another version of the state's shape.
    Version(u32),
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateError::NotAState(e) => write!(f, "not a serialised run state ({e})"),
            StateError::Inconsistent => {
                f.write_str("not a consistent run state (more items saved than generated)")
            }
            StateError::Version(v) => write!(
                f,
                "run state version {v} is not supported (this version reads {STATE_VERSION})"
            ),
        }
    }
}

/// What the loop does next.
#[derive(Debug, Clone, PartialEq)]
pub enum NextStep {
    /// Call the model with [`RunState::model_input_now`].
    CallModel,
    /// These function calls have no output yet.
    RunTools(Vec<Value>),
    /// The model answered; the run is over.
    Done(String),
    /// The model wants another turn but `max_turns` were used.
    MaxTurnsExceeded,
}

impl RunState {
    /// Refuses to resume this state with another agent than the one its run started with:
    /// another agent has other tools and instructions, and would answer this one's approved
    /// calls.
    pub fn check_agent(&self, agent_name: &str) -> Result<(), crate::core::error::RunnerError> {
        if self.agent_name == agent_name {
            return Ok(());
        }
        Err(crate::core::error::RunnerError::new(
            crate::core::error::RunnerErrorCode::InvalidRunState,
            format!(
                "this state belongs to agent \"{}\", not \"{agent_name}\": resume it with the agent its run started with",
                self.agent_name
            ),
        ))
    }

    pub fn new(
        agent_name: &str,
        input: Vec<Value>,
        model_input: Vec<Value>,
        turn_input: Vec<Value>,
        max_turns: u32,
    ) -> Self {
        RunState {
            version: STATE_VERSION,
            agent_name: agent_name.to_string(),
            input,
            model_input,
            turn_input,
            input_saved: false,
            generated: Vec::new(),
            saved: 0,
            turns: 0,
            max_turns,
            usage: Usage::default(),
            usage_stored: Usage::default(),
            last_response_id: None,
            conversation_id: None,
            previous_response_id: None,
            final_output: None,
            decisions: Decisions::default(),
            run_id: String::new(),
            saves: 0,
            last_saved: None,
            current_agent: None,
            handoff_calls: Vec::new(),
            filtered: None,
            final_json: None,
            tools_used: Vec::new(),
            response_at: 0,
            final_from_tool: false,
            session_saved: false,
        }
    }

    pub fn to_json(&self) -> String {
        state_json::to_json(self)
    }

    pub fn from_json(text: &str) -> Result<RunState, StateError> {
        let value: Value =
            crate::core::json::from_str(text).map_err(|e| StateError::NotAState(e.to_string()))?;
        let state = state_json::from_value(value).map_err(StateError::NotAState)?;
        if state.saved > state.generated.len() {
            return Err(StateError::Inconsistent);
        }
        if state.version != STATE_VERSION {
            return Err(StateError::Version(state.version));
        }
        Ok(state)
    }

    /// The input of the next model call.
    pub fn model_input_now(&self) -> Vec<Value> {
        match &self.filtered {
            Some(f) => f
                .items
                .iter()
                .chain(self.generated.get(f.from..).unwrap_or(&[]))
                .cloned()
                .collect(),
            None => self
                .model_input
                .iter()
                .chain(&self.generated)
                .cloned()
                .collect(),
        }
    }

    /// The usage the session has not been given yet, `None` when there is none.
    pub fn unstored_usage(&self) -> Option<Usage> {
        let (u, s) = (&self.usage, &self.usage_stored);
        let unstored = Usage {
            requests: u.requests.saturating_sub(s.requests),
            input_tokens: u.input_tokens.saturating_sub(s.input_tokens),
            output_tokens: u.output_tokens.saturating_sub(s.output_tokens),
            total_tokens: u.total_tokens.saturating_sub(s.total_tokens),
        };
        (unstored != Usage::default()).then_some(unstored)
    }

    pub fn record_model_output(&mut self, output: ModelOutput) {
        self.turns += 1;
        self.usage.add(&output.usage);
        if output.response_id.is_some() {
            self.last_response_id = output.response_id;
        }
        let calls = output.items.iter().any(is_function_call);
        // A call is decided after the response that made it: a decision already there for its
        // id was for an earlier call (a server that reuses ids), not for this one.
        for id in output
            .items
            .iter()
            .filter(|i| is_function_call(i))
            .filter_map(call_id)
        {
            self.decisions.remove(id);
            // Nor is a handoff of that id this call: it stays an interruption where it waits.
            self.handoff_calls.retain(|h| h != id);
        }
        // A response of other items only (reasoning, with no message and no call), or whose
        // message holds no text and no refusal (no part at all, empty refusals, an image only),
        // is not an answer: the model is called again, as the SDK does. One with nothing at all
        // (an empty answer) ends the run with empty text.
        let answer = output.items.iter().rev().find(|i| is_answer(i));
        let answered = answer.is_some_and(|m| holds_answer(m.get("content")));
        // An earlier answer's structured form is not this one's (it is made again from it).
        self.final_json = None;
        if !calls && (answered || output.items.is_empty()) {
            // Its text, as the SDK takes it: a refusal is no part of it (see [`Self::refusal`]).
            self.final_output = Some(
                answer
                    .map(|m| answer_text(m.get("content")))
                    .unwrap_or_default(),
            );
            // (The model's answer, not a tool's: a state read back that said otherwise would
            // skip the checks of it.)
            self.final_from_tool = false;
        }
        self.response_at = self.generated.len();
        self.generated.extend(output.items);
    }

    /// What the latest answer refused with, where it holds a refusal and no text: the run then
    /// fails with a `ModelRefusalError`, as the SDK's. `None` for an answer a tool gave.
    pub fn refusal(&self) -> Option<String> {
        if self.final_from_tool {
            return None;
        }
        let response = self.generated.get(self.response_at..)?;
        refusal_only(
            response
                .get(failing_answer(response, None)?)?
                .get("content"),
        )
    }

    /// Marks the calls among `calls` to the tools named `handoffs` as handoffs, which never wait
    /// for a human (see [`Self::interruptions`]).
    pub fn mark_handoffs(&mut self, calls: &[Value], handoffs: &[&str]) {
        for call in calls {
            let name = call.get("name").and_then(Value::as_str).unwrap_or("");
            let id = call_id(call).unwrap_or("");
            if handoffs.contains(&name) && !self.handoff_calls.iter().any(|h| h == id) {
                self.handoff_calls.push(id.to_string());
            }
        }
    }

    /// Removes the latest response's function calls with these ids (handoffs the run does not
    /// take). Only that response's: a server that numbers its calls per response (`call_0` in
    /// each) gives an earlier response's call, whose output stays, the same id.
    pub fn drop_calls(&mut self, ids: &[String]) {
        if ids.is_empty() {
            return;
        }
        let mut index = 0;
        let kept = self.saved.max(self.response_at);
        self.generated.retain(|item| {
            index += 1;
            index <= kept
                || !(is_function_call(item)
                    && call_id(item).is_some_and(|id| ids.iter().any(|d| d == id)))
        });
    }

    /// The input a handoff's input filter is given: the history and new input (or what an
    /// earlier filter made of them).
    pub fn input_history(&self) -> &[Value] {
        match &self.filtered {
            Some(f) => &f.items,
            None => &self.model_input,
        }
    }

    /// What the run generated before the latest model response (since an earlier filter), and
    /// the items from that response on, the handoff's output included.
    pub fn handoff_split(&self) -> (&[Value], &[Value]) {
        let from = self
            .filtered
            .as_ref()
            .map_or(0, |f| f.from)
            .min(self.generated.len());
        let at = self.response_at.clamp(from, self.generated.len());
        (&self.generated[from..at], &self.generated[at..])
    }

    /// From now on the model is sent `items` and what the run generates after this point.
    pub fn filter_input(&mut self, items: Vec<Value>) {
        self.filtered = Some(FilteredInput {
            items,
            from: self.generated.len(),
        });
    }

    /// Forgets the unsaved items after the last tool output: the answer an output guardrail
    /// blocked.
    pub fn drop_final_answer(&mut self) {
        let keep = self
            .generated
            .iter()
            .rposition(is_tool_output)
            .map_or(0, |i| i + 1)
            .max(self.saved);
        self.generated.truncate(keep);
        self.final_output = None;
        // Its structured form too, or a run resumed (or handed off) after it would end with it.
        self.final_json = None;
        // The answer given next is the model's, checked against the output type again.
        self.final_from_tool = false;
    }

    /// Function calls of this run that have no output yet, in order.
    pub fn pending_calls(&self) -> Vec<Value> {
        // A call is answered by an output of its id that comes after it: a server that reuses
        // ids across responses (some local ones do) gets its new call run, not taken for the old.
        let g = &self.generated;
        g.iter()
            .enumerate()
            .filter(|(_, i)| is_function_call(i))
            .filter(|(k, i)| {
                call_id(i).is_some_and(|id| {
                    !g[k + 1..]
                        .iter()
                        .any(|o| is_tool_output(o) && call_id(o) == Some(id))
                })
            })
            .map(|(_, i)| i.clone())
            .collect()
    }

    /// Pending calls that wait for a human decision: all but the decided ones and handoffs.
    pub fn interruptions(&self) -> Vec<Value> {
        self.pending_calls()
            .into_iter()
            .filter(|c| {
                call_id(c).is_some_and(|id| {
                    !self.decisions.contains_key(id) && !self.handoff_calls.iter().any(|h| h == id)
                })
            })
            .collect()
    }

    /// Records a handoff: `call` is answered with the SDK's transfer message, and `agent` answers
    /// from the next model call on.
    pub fn hand_off(&mut self, call: &Value, agent: &str) {
        let message = crate::core::json::json!({ "assistant": agent }).to_string();
        self.record_tool_output(call, message);
        self.current_agent = Some(agent.to_string());
    }

    /// Ends the run with `text` as its final output (a tool's output, with
    /// `toolUseBehavior: 'stop_on_first_tool'`).
    pub fn finish_with(&mut self, text: String) {
        self.final_output = Some(text);
        self.final_json = None;
        self.final_from_tool = true;
    }

    pub fn next_step(&self) -> NextStep {
        let pending = self.pending_calls();
        if !pending.is_empty() {
            return NextStep::RunTools(pending);
        }
        if let Some(text) = &self.final_output {
            return NextStep::Done(text.clone());
        }
        if self.turns >= self.max_turns {
            return NextStep::MaxTurnsExceeded;
        }
        NextStep::CallModel
    }

    /// Records a tool's text output for a call.
    pub fn record_tool_output(&mut self, call: &Value, output: String) {
        self.record_output(call, text_output(output));
    }

    /// Records a tool's output for a call: `{ type: 'text', text }` or an array of `input_*`
    /// parts (see [`super::wire::structured_tool_output`]).
    pub fn record_output(&mut self, call: &Value, output: Value) {
        self.generated.push(tool_output_item(call, output));
    }

    /// Gives the run the id its saves are named by, unless it has one (a state saved by an
    /// earlier version has none).
    pub fn ensure_run_id(&mut self, make: impl FnOnce() -> String) {
        if self.run_id.is_empty() {
            self.run_id = make();
        }
    }

    /// What the session does not have yet: the input (once) and, unless `input_only`, what the
    /// run generated since the last save. `None` when there is nothing. A failing run saves the
    /// input only: the user's input is kept, nothing the run half-produced is.
    pub fn next_save(&self, input_only: bool) -> Option<Save> {
        let mut items = if self.input_saved {
            Vec::new()
        } else {
            self.turn_input.clone()
        };
        if !input_only {
            items.extend(
                self.generated
                    .get(self.saved..)
                    .unwrap_or(&[])
                    .iter()
                    .cloned(),
            );
        }
        if items.is_empty() {
            return None;
        }
        Some(Save {
            items,
            operation_id: format!("{}:{}", self.run_id, self.saves),
            expected_suffix: self.last_saved.iter().cloned().collect(),
            input_only,
        })
    }

    /// Records that `save` reached the session.
    pub fn saved(&mut self, save: &Save) {
        self.input_saved = true;
        if !save.input_only {
            self.saved = self.generated.len();
        }
        self.saves += 1;
        self.last_saved = save.items.last().cloned();
    }

    /// The run's items beyond the input (`result.newItems`).
    pub fn new_items(&self) -> &[Value] {
        &self.generated
    }
}

/// Gives each function call of one response an id of its own where the server gave none, or
/// one an earlier call of the same response has (some OpenAI-compatible servers do): approvals
/// and outputs are paired with calls by id, so two calls sharing one would share a decision,
/// and one's output would answer the other. `run` (the run's id: its first 8 characters are
/// used) and `turn` make the new ids unique in the session. Not for a conversation the server
/// keeps, whose calls must be answered by the ids it gave.
pub fn unique_call_ids(items: &mut [Value], run: &str, turn: u32) {
    for k in 0..items.len() {
        let Some((item, earlier)) = items[..=k].split_last_mut() else {
            continue;
        };
        let id = call_id(item).unwrap_or("");
        let own = !id.is_empty()
            && !earlier
                .iter()
                .any(|e| is_function_call(e) && call_id(e) == Some(id));
        if !is_function_call(item) || own {
            continue;
        }
        let key = match item.get("call_id") {
            Some(_) => "call_id",
            None => "callId",
        };
        if let Some(fields) = item.as_object_mut() {
            fields.insert(key.into(), format!("call_{run:.8}_{turn}_{k}").into());
        }
    }
}

/// A tool's text output, as `@openai/agents` stores it.
pub fn text_output(text: String) -> Value {
    json!({"type": "text", "text": text})
}

/// The item that reports a tool's output, in the shape `@openai/agents` stores.
pub fn tool_output_item(call: &Value, output: Value) -> Value {
    json!({
        "type": "function_call_result",
        "name": call.get("name").and_then(Value::as_str).unwrap_or(""),
        "callId": call_id(call).unwrap_or(""),
        "status": "completed",
        "output": output,
    })
}

/// Whether `item` is an assistant message: a response's answer.
fn is_answer(item: &Value) -> bool {
    item_type(item) == "message" && item.get("role").and_then(Value::as_str) == Some("assistant")
}

/// Where, among a response's `items`, the answer a run fails with is (no call beside it): a
/// refusal and no text (a `ModelRefusalError`), or, with an `output_type`, text that does not fit
/// it (a `ModelBehaviorError`). It is not kept, nor told as an item.
pub fn failing_answer(items: &[Value], output_type: Option<&OutputType>) -> Option<usize> {
    if items.iter().any(is_function_call) {
        return None;
    }
    let at = items.iter().rposition(is_answer)?;
    let content = items[at].get("content");
    let misfit = || {
        output_type.is_some_and(|t| {
            holds_answer(content) && structured_output(t, &answer_text(content)).is_err()
        })
    };
    (refusal_only(content).is_some() || misfit()).then_some(at)
}

/// The final output `text` read as `output_type` asks: its JSON value, or why it is not one.
pub fn structured_output(output_type: &OutputType, text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Err("Model returned no final output for the structured output type.".into());
    }
    let value = crate::core::json::from_str(text)
        .map_err(|e| format!("Invalid output type: the final output is not JSON ({e})"))?;
    super::json_schema::check(&output_type.schema, &value).map_err(|v| {
        format!(
            "Invalid output type: the final output does not match the schema \"{}\" ({v})",
            output_type.name
        )
    })?;
    Ok(value)
}

/// Whether an answer's `content` is one the SDK reads as an answer: text (a string, or a text
/// part, empty or not), or a refusal that is not empty.
fn holds_answer(content: Option<&Value>) -> bool {
    match content {
        Some(Value::Array(parts)) => parts.iter().any(|p| {
            p.get("text").is_some()
                || p.get("refusal")
                    .and_then(Value::as_str)
                    .is_some_and(|r| !r.is_empty())
        }),
        _ => true,
    }
}

/// The refusal of an answer whose `content` holds refusal parts and no text part, joined; `None`
/// for any other.
fn refusal_only(content: Option<&Value>) -> Option<String> {
    let Some(Value::Array(parts)) = content else {
        return None;
    };
    let mut refusal: Option<String> = None;
    for part in parts {
        if part.get("text").is_some() {
            return None;
        }
        if let Some(r) = part.get("refusal").and_then(Value::as_str) {
            refusal.get_or_insert_with(String::new).push_str(r);
        }
    }
    // (An empty refusal is none, as the SDK tells: the model is called again.)
    refusal.filter(|r| !r.is_empty())
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! Items and states the tests of the run modules share.
    use super::*;

    pub fn call(id: &str) -> Value {
        json!({"type": "function_call", "callId": id, "name": "f", "arguments": "{}"})
    }

    pub fn out(id: &str) -> Value {
        tool_output_item(&call(id), text_output("ok".into()))
    }

    pub fn user(t: &str) -> Value {
        json!({"role": "user", "content": t})
    }

    pub fn answer(t: &str) -> Value {
        json!({"type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": t}]})
    }

    pub fn state() -> RunState {
        RunState::new(
            "agent",
            vec![user("q")],
            vec![user("old"), user("q")],
            vec![user("q")],
            3,
        )
    }

    pub fn out_with(id: &str, text: &str) -> Value {
        tool_output_item(&call(id), text_output(text.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    #[test]
    fn calls_of_one_response_get_ids_of_their_own() {
        let call = |id: Option<&str>| match id {
            Some(id) => {
                json!({"type": "function_call", "callId": id, "name": "f", "arguments": "{}"})
            }
            None => json!({"type": "function_call", "name": "f", "arguments": "{}"}),
        };
        let mut items = vec![
            call(Some("a")),
            json!({"type": "message", "role": "assistant", "content": "x"}),
            call(Some("a")),
            call(Some("")),
            call(None),
            call(Some("b")),
        ];
        unique_call_ids(&mut items, "0b1c2d3e-4f50-4a6b", 3);
        let ids: Vec<&str> = items.iter().filter_map(call_id).collect();
        assert_eq!(
            ids,
            [
                "a",
                "call_0b1c2d3e_3_2",
                "call_0b1c2d3e_3_3",
                "call_0b1c2d3e_3_4",
                "b"
            ]
        );
        // Ids already unique are left as they are.
        let mut unique = vec![call(Some("x")), call(Some("y"))];
        unique_call_ids(&mut unique, "run", 1);
        assert_eq!(unique, vec![call(Some("x")), call(Some("y"))]);
    }

    #[test]
    fn a_run_calls_tools_until_the_model_answers() {
        let mut s = state();
        assert_eq!(s.next_step(), NextStep::CallModel);
        s.record_model_output(ModelOutput {
            items: vec![call("c1"), call("c2")],
            usage: Usage {
                requests: 1,
                input_tokens: 5,
                output_tokens: 2,
                total_tokens: 7,
            },
            response_id: Some("r1".into()),
        });
        assert_eq!(
            s.next_step(),
            NextStep::RunTools(vec![call("c1"), call("c2")])
        );
        s.record_tool_output(&call("c1"), "one".into());
        assert_eq!(s.next_step(), NextStep::RunTools(vec![call("c2")]));
        s.record_tool_output(&call("c2"), "two".into());
        assert_eq!(s.next_step(), NextStep::CallModel);
        assert_eq!(s.model_input_now().len(), 2 + 4);
        s.record_model_output(ModelOutput {
            items: vec![answer("done")],
            usage: Usage {
                requests: 1,
                input_tokens: 9,
                output_tokens: 1,
                total_tokens: 10,
            },
            response_id: Some("r2".into()),
        });
        assert_eq!(s.next_step(), NextStep::Done("done".into()));
        assert_eq!(
            s.usage,
            Usage {
                requests: 2,
                input_tokens: 14,
                output_tokens: 3,
                total_tokens: 17
            }
        );
        assert_eq!(s.last_response_id.as_deref(), Some("r2"));
        // Stored after the first call (a failed second one, say): only the second is unstored.
        s.usage_stored = Usage {
            requests: 1,
            input_tokens: 5,
            output_tokens: 2,
            total_tokens: 7,
        };
        assert_eq!(
            s.unstored_usage(),
            Some(Usage {
                requests: 1,
                input_tokens: 9,
                output_tokens: 1,
                total_tokens: 10
            })
        );
        s.usage_stored = s.usage;
        assert_eq!(s.unstored_usage(), None);
    }

    #[test]
    fn a_decision_is_for_the_call_it_was_made_for_not_a_later_one_with_its_id() {
        let mut s = state();
        let respond = |s: &mut RunState, id: &str| {
            s.record_model_output(ModelOutput {
                items: vec![call(id)],
                ..ModelOutput::default()
            })
        };
        respond(&mut s, "c0");
        s.decisions.insert("c0".into(), Decision::Approved);
        s.decisions.insert("other".into(), Decision::Approved);
        s.record_tool_output(&call("c0"), "sent".into());
        // A server that reuses ids calls "c0" again: that call is not decided yet.
        respond(&mut s, "c0");
        assert_eq!(s.decisions.get("c0"), None);
        assert_eq!(s.decisions.get("other"), Some(&Decision::Approved));
        assert_eq!(s.next_step(), NextStep::RunTools(vec![call("c0")]));
    }

    #[test]
    fn a_call_reusing_a_handoffs_id_is_an_interruption() {
        let mut s = state();
        s.record_model_output(ModelOutput {
            items: vec![call("call_0")],
            ..ModelOutput::default()
        });
        s.handoff_calls.push("call_0".into());
        s.hand_off(&call("call_0"), "B");
        // The next agent's tool call, under the same id (a server that numbers calls per response).
        s.record_model_output(ModelOutput {
            items: vec![call("call_0")],
            ..ModelOutput::default()
        });
        assert_eq!(s.interruptions(), vec![call("call_0")]);
    }

    #[test]
    fn max_turns_stops_a_run_that_keeps_calling_tools() {
        let mut s = state();
        for i in 0..3 {
            assert_eq!(s.next_step(), NextStep::CallModel);
            let id = format!("c{i}");
            s.record_model_output(ModelOutput {
                items: vec![call(&id)],
                ..ModelOutput::default()
            });
            s.record_tool_output(&call(&id), "x".into());
        }
        assert_eq!(s.next_step(), NextStep::MaxTurnsExceeded);
    }

    /// Saves what is unsaved, as a session that took it would.
    fn save(s: &mut RunState) -> Save {
        let save = s.next_save(false).unwrap();
        s.saved(&save);
        save
    }

    #[test]
    fn saving_is_incremental_and_never_repeats() {
        let mut s = state();
        s.ensure_run_id(|| "run".into());
        s.ensure_run_id(|| "other".into());
        let first = save(&mut s);
        assert_eq!(first.items, vec![user("q")]);
        assert_eq!(first.operation_id, "run:0");
        assert_eq!(
            first.transaction(),
            json!({"type": "append_items", "items": [user("q")]})
        );
        s.record_model_output(ModelOutput {
            items: vec![call("c")],
            ..ModelOutput::default()
        });
        let second = save(&mut s);
        assert_eq!(second.items, vec![call("c")]);
        // Each later save is chained on what the run saved last.
        assert_eq!(
            second.transaction(),
            json!({"type": "replace_suffix", "expectedSuffix": [user("q")], "replacement": [user("q"), call("c")]})
        );
        s.record_tool_output(&call("c"), "r".into());
        s.record_model_output(ModelOutput {
            items: vec![answer("a")],
            ..ModelOutput::default()
        });
        let third = s.next_save(false).unwrap();
        // Until it succeeds, a save is the same save: a retry repeats its operation id.
        assert_eq!(s.next_save(false), Some(third.clone()));
        s.saved(&third);
        assert_eq!(third.items, vec![out_with("c", "r"), answer("a")]);
        assert_eq!(third.operation_id, "run:2");
        assert_eq!(s.next_save(false), None);
    }

    #[test]
    fn a_failing_run_saves_its_input_only() {
        let mut s = state();
        s.record_model_output(ModelOutput {
            items: vec![call("c")],
            ..ModelOutput::default()
        });
        let input = s.next_save(true).unwrap();
        assert_eq!(input.items, vec![user("q")]);
        s.saved(&input);
        assert_eq!(s.next_save(true), None);
        assert_eq!(s.next_save(false).unwrap().items, vec![call("c")]);
    }

    #[test]
    fn dropping_a_handoff_keeps_an_earlier_responses_call_of_the_same_id() {
        let mut s = state();
        s.record_model_output(ModelOutput {
            items: vec![call("call_0"), call("call_1")],
            ..ModelOutput::default()
        });
        s.record_tool_output(&call("call_0"), "a".into());
        s.record_tool_output(&call("call_1"), "b".into());
        let handoff = json!({"type": "function_call", "callId": "call_0", "name": "transfer_to_B", "arguments": "{}"});
        let ignored = json!({"type": "function_call", "callId": "call_1", "name": "transfer_to_B", "arguments": "{}"});
        s.record_model_output(ModelOutput {
            items: vec![handoff.clone(), ignored],
            ..ModelOutput::default()
        });
        s.drop_calls(&["call_1".into()]);
        assert_eq!(
            s.generated,
            vec![
                call("call_0"),
                call("call_1"),
                out_with("call_0", "a"),
                out_with("call_1", "b"),
                handoff
            ]
        );
        // The latest response still starts where it did.
        assert_eq!(s.handoff_split().1.len(), 1);
    }

    #[test]
    fn a_handoff_answers_its_call_drops_the_others_and_never_waits_for_approval() {
        let mut s = state();
        let handoff = json!({"type": "function_call", "callId": "h1", "name": "transfer_to_B", "arguments": "{}"});
        let ignored = json!({"type": "function_call", "callId": "h2", "name": "transfer_to_B", "arguments": "{}"});
        s.record_model_output(ModelOutput {
            items: vec![call("c"), handoff.clone(), ignored],
            ..ModelOutput::default()
        });
        let pending = s.pending_calls();
        s.mark_handoffs(&pending, &["transfer_to_B"]);
        s.mark_handoffs(&pending, &["transfer_to_B"]);
        assert_eq!(s.handoff_calls, ["h1", "h2"], "each once");
        assert_eq!(s.interruptions(), vec![call("c")]);
        s.drop_calls(&["h2".into()]);
        assert_eq!(s.generated, vec![call("c"), handoff.clone()]);
        assert_eq!(
            s.interruptions(),
            vec![call("c")],
            "a handoff is never an interruption"
        );
        s.record_tool_output(&call("c"), "ok".into());
        s.hand_off(&handoff, "B");
        assert_eq!(s.current_agent.as_deref(), Some("B"));
        assert_eq!(
            s.generated.last().unwrap()["output"]["text"],
            "{\"assistant\":\"B\"}"
        );
        assert_eq!(s.next_step(), NextStep::CallModel);
        // The input filter sees the response's items apart from what came before.
        let (before, latest) = s.handoff_split();
        assert!(before.is_empty());
        assert_eq!(latest.len(), 4);
        assert_eq!(s.input_history(), &s.model_input[..]);
        s.filter_input(vec![user("q")]);
        s.record_model_output(ModelOutput {
            items: vec![answer("a")],
            ..ModelOutput::default()
        });
        assert_eq!(s.model_input_now(), vec![user("q"), answer("a")]);
        // The session still gets everything the run generated.
        assert_eq!(s.next_save(false).unwrap().items.len(), 1 + 5);
    }

    #[test]
    fn a_blocked_answer_is_dropped_and_the_tool_outputs_before_it_kept() {
        let mut s = state();
        s.record_model_output(ModelOutput {
            items: vec![call("c")],
            ..ModelOutput::default()
        });
        s.record_tool_output(&call("c"), "ok".into());
        s.record_model_output(ModelOutput {
            items: vec![answer("secret")],
            ..ModelOutput::default()
        });
        // (Its structured form, read by the runner, goes with it.)
        s.final_json = Some(crate::core::json::json!({"secret": true}));
        s.drop_final_answer();
        assert_eq!(s.generated, vec![call("c"), out("c")]);
        assert_eq!((s.final_output.clone(), s.final_json.clone()), (None, None));
        let mut stop = state();
        stop.record_model_output(ModelOutput {
            items: vec![call("c")],
            ..ModelOutput::default()
        });
        stop.record_tool_output(&call("c"), "first".into());
        stop.final_json = Some(crate::core::json::json!({"earlier": true}));
        stop.finish_with("first".into());
        assert_eq!(
            stop.final_json, None,
            "a tool's text, not an earlier answer's JSON"
        );
        assert_eq!(stop.next_step(), NextStep::Done("first".into()));
        // A tool's final output blocked: the next answer is the model's, not the tool's.
        stop.drop_final_answer();
        assert!(!stop.final_from_tool);
        assert_eq!(stop.final_output, None);
    }

    #[test]
    fn state_round_trips_and_rejects_other_versions() {
        let mut s = state();
        s.decisions.insert(
            "c".into(),
            Decision::Rejected {
                message: Some("no".into()),
            },
        );
        s.decisions.insert("d".into(), Decision::Approved);
        let text = s.to_json();
        assert_eq!(RunState::from_json(&text).unwrap(), s);
        let other = text.replace("\"version\":1", "\"version\":99");
        assert_eq!(
            RunState::from_json(&other).unwrap_err(),
            StateError::Version(99)
        );
        assert!(RunState::from_json("{}").is_err());
    }

    #[test]
    fn a_response_of_reasoning_only_is_not_an_answer() {
        let mut s = state();
        s.record_model_output(ModelOutput {
            items: vec![
                crate::core::json::json!({"type": "reasoning", "id": "rs_1", "content": []}),
            ],
            ..Default::default()
        });
        assert_eq!(s.final_output, None);
        assert!(matches!(s.next_step(), NextStep::CallModel));
        s.record_model_output(ModelOutput {
            items: vec![crate::core::json::json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Here."}]})],
            ..Default::default()
        });
        assert_eq!(s.final_output.as_deref(), Some("Here."));
    }

    #[test]
    fn an_answer_of_a_refusal_and_no_text_is_refused_and_a_refusal_beside_text_is_no_part_of_it() {
        let answer = |content: Value| {
            let mut s = state();
            s.record_model_output(ModelOutput {
                items: vec![json!({"type": "message", "role": "assistant", "content": content})],
                ..Default::default()
            });
            (s.final_output.clone(), s.refusal())
        };
        assert_eq!(
            answer(
                json!([{"type": "refusal", "refusal": "No."}, {"type": "refusal", "refusal": " Sorry."}])
            ),
            (Some(String::new()), Some("No. Sorry.".into()))
        );
        assert_eq!(
            answer(
                json!([{"type": "output_text", "text": "Partly:"}, {"type": "refusal", "refusal": "no more"}])
            ),
            (Some("Partly:".into()), None)
        );
        assert_eq!(answer(json!("plain")), (Some("plain".into()), None));
        // An empty refusal is no answer: the model is called again.
        assert_eq!(
            answer(json!([{"type": "refusal", "refusal": ""}])),
            (None, None)
        );
        // So is a message of no part, or of parts without text (the SDK reads no text there).
        assert_eq!(answer(json!([])), (None, None));
        assert_eq!(
            answer(json!([{"type": "output_image", "image_url": "data:,"}])),
            (None, None)
        );
        assert_eq!(
            answer(json!([{"type": "output_text", "text": ""}])),
            (Some(String::new()), None)
        );
        // A tool's output that is the final answer is no refusal.
        let mut s = state();
        s.record_model_output(ModelOutput {
            items: vec![json!({"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]})],
            ..Default::default()
        });
        s.final_from_tool = true;
        assert_eq!(s.refusal(), None);
        // Where it is among a response's items (not told as an item), beside reasoning; none
        // beside a call (the answer is not final), or where the text answers.
        let refusal = json!({"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]});
        let reasoning = json!({"type": "reasoning", "id": "rs_1", "content": []});
        assert_eq!(failing_answer(&[reasoning, refusal.clone()], None), Some(1));
        assert_eq!(failing_answer(&[call("c"), refusal], None), None);
        assert_eq!(failing_answer(&[fixtures::answer("Yes.")], None), None);
        // With an output type: text that does not fit it fails too.
        let typed = OutputType {
            name: "x".into(),
            schema: json!({"type": "object"}),
            strict: false,
        };
        assert_eq!(
            failing_answer(&[fixtures::answer("Yes.")], Some(&typed)),
            Some(0)
        );
        assert_eq!(
            failing_answer(&[fixtures::answer("{}")], Some(&typed)),
            None
        );
    }

    #[test]
    fn a_call_id_used_again_by_a_later_response_is_a_new_call() {
        let mut s = state();
        s.record_model_output(ModelOutput {
            items: vec![call("call_0")],
            ..Default::default()
        });
        s.record_tool_output(&call("call_0"), "first".into());
        assert!(s.pending_calls().is_empty());
        s.record_model_output(ModelOutput {
            items: vec![call("call_0")],
            ..Default::default()
        });
        let pending = s.pending_calls();
        assert_eq!(pending.len(), 1, "the new call waits for its own output");
        s.record_tool_output(&call("call_0"), "second".into());
        assert!(s.pending_calls().is_empty());
    }
}
