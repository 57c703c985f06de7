//! The run loop's state and rules, free of JavaScript: what the model is sent, what is saved to
//! the session and when, which tool calls are pending, when the run is over, how to retry.
//!
//! A run alternates model calls and tool calls until the model answers without calling a tool.
//! Its [`RunState`] is plain data: it serialises to a string so a run paused for approval
//! survives a page reload, and it never holds a credential.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::wire::{
    call_id, content_text, is_function_call, is_tool_output, item_type, ModelOutput, Usage,
};

/// The shape version of a serialised [`RunState`].
pub const STATE_VERSION: u32 = 1;

pub const DEFAULT_MAX_TURNS: u32 = 10;

/// The output a rejected tool call reports to the model, as in `@openai/agents`.
pub const REJECTION_MESSAGE: &str = "Tool execution was not approved.";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "camelCase")]
pub enum Decision {
    Approved,
    Rejected { message: Option<String> },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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
    pub last_response_id: Option<String>,
    pub final_output: Option<String>,
    /// Approval decisions by call id.
    pub decisions: BTreeMap<String, Decision>,
}

/// What the loop does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
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
            last_response_id: None,
            final_output: None,
            decisions: BTreeMap::new(),
        }
    }

    pub fn to_json(&self) -> String {
        // A struct of strings, numbers and JSON values always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn from_json(text: &str) -> Result<RunState, String> {
        let state: RunState =
            serde_json::from_str(text).map_err(|e| format!("not a serialised run state ({e})"))?;
        if state.saved > state.generated.len() {
            return Err("not a consistent run state (more items saved than generated)".into());
        }
        if state.version != STATE_VERSION {
            return Err(format!(
                "run state version {} is not supported (this version reads {STATE_VERSION})",
                state.version
            ));
        }
        Ok(state)
    }

    /// The input of the next model call.
    pub fn model_input_now(&self) -> Vec<Value> {
        self.model_input
            .iter()
            .chain(&self.generated)
            .cloned()
            .collect()
    }

    pub fn record_model_output(&mut self, output: ModelOutput) {
        self.turns += 1;
        self.usage.add(&output.usage);
        if output.response_id.is_some() {
            self.last_response_id = output.response_id;
        }
        let calls = output.items.iter().any(is_function_call);
        if !calls {
            let text = output
                .items
                .iter()
                .rev()
                .find(|i| {
                    item_type(i) == "message"
                        && i.get("role").and_then(Value::as_str) == Some("assistant")
                })
                .map(|m| content_text(m.get("content")))
                .unwrap_or_default();
            self.final_output = Some(text);
        }
        self.generated.extend(output.items);
    }

    /// Function calls of this run that have no output yet, in order.
    pub fn pending_calls(&self) -> Vec<Value> {
        let answered: Vec<&str> = self
            .generated
            .iter()
            .filter(|i| is_tool_output(i))
            .filter_map(call_id)
            .collect();
        self.generated
            .iter()
            .filter(|i| is_function_call(i))
            .filter(|i| call_id(i).is_some_and(|id| !answered.contains(&id)))
            .cloned()
            .collect()
    }

    pub fn next_step(&self) -> Step {
        let pending = self.pending_calls();
        if !pending.is_empty() {
            return Step::RunTools(pending);
        }
        if let Some(text) = &self.final_output {
            return Step::Done(text.clone());
        }
        if self.turns >= self.max_turns {
            return Step::MaxTurnsExceeded;
        }
        Step::CallModel
    }

    /// Records a tool's output for a call.
    pub fn record_tool_output(&mut self, call: &Value, output: String) {
        self.generated.push(tool_output_item(call, output));
    }

    /// Items to add to the session now (input first, once), and marks them saved.
    pub fn take_unsaved(&mut self) -> Vec<Value> {
        let mut items = self.take_unsaved_input();
        items.extend(
            self.generated
                .get(self.saved..)
                .unwrap_or(&[])
                .iter()
                .cloned(),
        );
        self.saved = self.generated.len();
        items
    }

    /// The input not yet saved, and marks it saved. Used when a run fails: the user's input is
    /// kept, nothing the run half-produced is.
    pub fn take_unsaved_input(&mut self) -> Vec<Value> {
        if self.input_saved {
            return Vec::new();
        }
        self.input_saved = true;
        self.turn_input.clone()
    }

    /// The run's items beyond the input (`result.newItems`).
    pub fn new_items(&self) -> &[Value] {
        &self.generated
    }
}

/// The item that reports a tool's output, in the shape `@openai/agents` stores.
pub fn tool_output_item(call: &Value, output: String) -> Value {
    json!({
        "type": "function_call_result",
        "name": call.get("name").and_then(Value::as_str).unwrap_or(""),
        "callId": call_id(call).unwrap_or(""),
        "status": "completed",
        "output": {"type": "text", "text": output},
    })
}

/// The history to send: drops tool outputs whose call is not in it (cut off by a limit) and
/// calls without their output, so the model never sees half of a tool exchange.
pub fn select_history(items: Vec<Value>) -> Vec<Value> {
    let calls: Vec<String> = items
        .iter()
        .filter(|i| is_function_call(i))
        .filter_map(|i| call_id(i).map(str::to_string))
        .collect();
    let outputs: Vec<String> = items
        .iter()
        .filter(|i| is_tool_output(i))
        .filter_map(|i| call_id(i).map(str::to_string))
        .collect();
    items
        .into_iter()
        .filter(|i| {
            if is_function_call(i) {
                call_id(i).is_some_and(|id| outputs.iter().any(|o| o == id))
            } else if is_tool_output(i) {
                call_id(i).is_some_and(|id| calls.iter().any(|c| c == id))
            } else {
                true
            }
        })
        .collect()
}

/// Where an item a session input callback returned came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The very history object number `h` the callback was given (it may have edited it).
    History(usize),
    /// The very new-input object the callback was given.
    NewInput,
    /// An object the callback made.
    Made,
}

/// The items of `model_input` that are not history: what a session input callback added or kept
/// of the new input. New-input objects are always new; history objects never are; an object the
/// callback made is history when it equals a history item not yet accounted for (each history
/// item accounts for one at most), so history the callback repeats, reorders or edits is never
/// saved twice, and a new message that repeats an old one is still saved.
pub fn new_turn_items(history: &[Value], model_input: &[Value], origins: &[Origin]) -> Vec<Value> {
    let origin = |i: usize| origins.get(i).copied().unwrap_or(Origin::Made);
    let mut used = vec![false; history.len()];
    for i in 0..model_input.len() {
        if let Origin::History(h) = origin(i) {
            if let Some(u) = used.get_mut(h) {
                *u = true;
            }
        }
    }
    model_input
        .iter()
        .enumerate()
        .filter(|(i, item)| match origin(*i) {
            Origin::History(_) => false,
            Origin::NewInput => true,
            Origin::Made => match (0..history.len()).find(|h| !used[*h] && &history[*h] == *item) {
                Some(h) => {
                    used[h] = true;
                    false
                }
                None => true,
            },
        })
        .map(|(_, item)| item.clone())
        .collect()
}

/// The new input of a run as items: a string becomes one user message.
pub fn input_items_from_text(text: &str) -> Vec<Value> {
    vec![json!({"type": "message", "role": "user", "content": text})]
}

/// Whether an HTTP status is worth retrying.
pub fn is_retryable(status: u16) -> bool {
    status == 408 || status == 409 || status == 429 || status >= 500
}

/// How long to wait before retry number `attempt` (0-based): what the server asked for in
/// `Retry-After` (capped at a minute), else exponential backoff from half a second.
pub fn retry_delay_ms(attempt: u32, retry_after_ms: Option<f64>) -> f64 {
    match retry_after_ms {
        Some(ms) if ms.is_finite() && ms >= 0.0 => ms.min(60_000.0),
        _ => (500.0 * 2f64.powi(attempt.min(6) as i32)).min(8_000.0),
    }
}

/// `Retry-After` given in seconds.
pub fn retry_after_seconds(header: &str) -> Option<f64> {
    header
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| s * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::wire::Usage;

    fn call(id: &str) -> Value {
        json!({"type": "function_call", "callId": id, "name": "f", "arguments": "{}"})
    }
    fn out(id: &str) -> Value {
        tool_output_item(&call(id), "ok".into())
    }
    fn user(t: &str) -> Value {
        json!({"role": "user", "content": t})
    }
    fn answer(t: &str) -> Value {
        json!({"type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": t}]})
    }

    #[test]
    fn history_never_holds_half_a_tool_exchange() {
        let items = vec![
            out("cut"),
            user("q"),
            call("a"),
            out("a"),
            call("dangling"),
            answer("x"),
        ];
        assert_eq!(
            select_history(items),
            vec![user("q"), call("a"), out("a"), answer("x")]
        );
        let raw = vec![
            json!({"type": "function_call", "call_id": "r"}),
            json!({"type": "function_call_output", "call_id": "r", "output": "1"}),
        ];
        assert_eq!(select_history(raw.clone()), raw);
    }

    #[test]
    fn only_items_the_callback_added_are_new() {
        use Origin::*;
        let history = vec![user("a"), answer("b"), user("a")];
        let model_input = vec![
            answer("b"),
            user("a"),
            user("new"),
            user("a"),
            user("extra"),
        ];
        assert_eq!(
            new_turn_items(&history, &model_input, &[]),
            vec![user("new"), user("extra")]
        );
        // Repeating a history item more often than it occurs makes the extra copy new.
        let model_input = vec![answer("b"), answer("b")];
        assert_eq!(
            new_turn_items(&history, &model_input, &[]),
            vec![answer("b")]
        );
        // A history object the callback edited is still history.
        let model_input = vec![user("edited"), user("new")];
        assert_eq!(
            new_turn_items(&history, &model_input, &[History(0), Made]),
            vec![user("new")]
        );
        // The new input is new even when it repeats an earlier message word for word.
        let model_input = vec![answer("b"), user("a")];
        assert_eq!(
            new_turn_items(&history, &model_input, &[History(1), NewInput]),
            vec![user("a")]
        );
    }

    fn state() -> RunState {
        RunState::new(
            "agent",
            vec![user("q")],
            vec![user("old"), user("q")],
            vec![user("q")],
            3,
        )
    }

    #[test]
    fn a_run_calls_tools_until_the_model_answers() {
        let mut s = state();
        assert_eq!(s.next_step(), Step::CallModel);
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
        assert_eq!(s.next_step(), Step::RunTools(vec![call("c1"), call("c2")]));
        s.record_tool_output(&call("c1"), "one".into());
        assert_eq!(s.next_step(), Step::RunTools(vec![call("c2")]));
        s.record_tool_output(&call("c2"), "two".into());
        assert_eq!(s.next_step(), Step::CallModel);
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
        assert_eq!(s.next_step(), Step::Done("done".into()));
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
    }

    #[test]
    fn max_turns_stops_a_run_that_keeps_calling_tools() {
        let mut s = state();
        for i in 0..3 {
            assert_eq!(s.next_step(), Step::CallModel);
            let id = format!("c{i}");
            s.record_model_output(ModelOutput {
                items: vec![call(&id)],
                ..ModelOutput::default()
            });
            s.record_tool_output(&call(&id), "x".into());
        }
        assert_eq!(s.next_step(), Step::MaxTurnsExceeded);
    }

    #[test]
    fn saving_is_incremental_and_never_repeats() {
        let mut s = state();
        assert_eq!(s.take_unsaved(), vec![user("q")]);
        s.record_model_output(ModelOutput {
            items: vec![call("c")],
            ..ModelOutput::default()
        });
        assert_eq!(s.take_unsaved(), vec![call("c")]);
        s.record_tool_output(&call("c"), "r".into());
        s.record_model_output(ModelOutput {
            items: vec![answer("a")],
            ..ModelOutput::default()
        });
        assert_eq!(s.take_unsaved(), vec![out_with("c", "r"), answer("a")]);
        assert!(s.take_unsaved().is_empty());
        assert!(s.take_unsaved_input().is_empty());
    }

    fn out_with(id: &str, text: &str) -> Value {
        tool_output_item(&call(id), text.into())
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
        assert!(RunState::from_json(&other)
            .unwrap_err()
            .contains("version 99"));
        assert!(RunState::from_json("{}").is_err());
    }

    #[test]
    fn retries_follow_the_server_then_back_off() {
        assert!(is_retryable(429) && is_retryable(500) && is_retryable(503));
        assert!(!is_retryable(400) && !is_retryable(401) && !is_retryable(404));
        assert_eq!(retry_delay_ms(0, Some(2000.0)), 2000.0);
        assert_eq!(retry_delay_ms(0, Some(1e9)), 60_000.0);
        assert_eq!(retry_delay_ms(0, None), 500.0);
        assert_eq!(retry_delay_ms(2, None), 2000.0);
        assert_eq!(retry_delay_ms(20, None), 8000.0);
        assert_eq!(retry_after_seconds(" 3 "), Some(3000.0));
        assert_eq!(retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
