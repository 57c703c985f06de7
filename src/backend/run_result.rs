//! A run's outcome as the JS objects the caller sees: the `RunResult` and its approval items.

use crate::core::json::Value;
use js_sys::Array;
use wasm_bindgen::JsValue;

use crate::core::run::RunState;
use crate::core::wire::call_id;

use super::js::{json_to_js, object};

/// A tool call waiting for approval, as a `ToolApprovalItem`: `agent` is the agent whose tool it
/// is (the SDK's `interruption.agent`, which its approval prompts name).
pub fn interruption(call: &Value, agent: &JsValue) -> JsValue {
    let text = |key: &str, default: &'static str| -> JsValue {
        call.get(key)
            .and_then(Value::as_str)
            .unwrap_or(default)
            .into()
    };
    object(&[
        ("type", "tool_approval_item".into()),
        ("callId", call_id(call).unwrap_or("").into()),
        ("name", text("name", "")),
        ("arguments", text("arguments", "{}")),
        ("rawItem", json_to_js(call)),
        ("agent", agent.clone()),
    ])
    .into()
}

/// Items as a JS array (the result's lists, and what a run's events and callbacks are given).
pub fn items(values: &[Value]) -> JsValue {
    values.iter().map(json_to_js).collect::<Array>().into()
}

fn optional(text: Option<&str>) -> JsValue {
    text.map(JsValue::from).unwrap_or(JsValue::UNDEFINED)
}

/// The `RunResult` of a run that reached `state`, waiting for `interruptions` (none when it
/// finished); `state_object` is the `RunState` object to resume from, `background` the promise of
/// the work left for after the answer.
pub fn result_object(
    state: &RunState,
    interruptions: &[Value],
    state_object: JsValue,
    background: JsValue,
    last_agent: JsValue,
    guardrails: (Vec<JsValue>, Vec<JsValue>),
) -> JsValue {
    let final_output = match (interruptions, &state.final_json) {
        ([], Some(value)) => json_to_js(value),
        ([], None) => optional(state.final_output.as_deref()),
        _ => JsValue::UNDEFINED,
    };
    object(&[
        ("finalOutput", final_output),
        ("newItems", items(state.new_items())),
        // (The SDK's `output`: its `newItems` as items, which these are already.)
        ("output", items(state.new_items())),
        // As the SDK's: what the first model call was sent (the session's history the run read
        // and the new input, or what `sessionInputCallback` made of them), and with `newItems`,
        // the whole conversation.
        ("input", items(&state.model_input)),
        (
            "history",
            state
                .model_input
                .iter()
                .chain(state.new_items())
                .map(json_to_js)
                .collect::<Array>()
                .into(),
        ),
        ("usage", super::runner::usage_object(&state.usage)),
        (
            "lastResponseId",
            optional(state.last_response_id.as_deref()),
        ),
        (
            "interruptions",
            interruptions
                .iter()
                .map(|call| interruption(call, &last_agent))
                .collect::<Array>()
                .into(),
        ),
        ("state", state_object),
        ("background", background),
        // As the SDK's: each guardrail that ran and let the run go on (one that tripped ended
        // it, with its result in the error).
        (
            "inputGuardrailResults",
            guardrails.0.into_iter().collect::<Array>().into(),
        ),
        (
            "outputGuardrailResults",
            guardrails.1.into_iter().collect::<Array>().into(),
        ),
        // (The SDK's other name of it.)
        ("activeAgent", last_agent.clone()),
        ("lastAgent", last_agent),
    ])
    .into()
}
