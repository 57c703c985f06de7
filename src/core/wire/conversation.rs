//! Items as the Conversations API stores them (`POST /conversations/{id}/items`,
//! `GET /conversations/{id}/items`), and back in the shapes `@openai/agents` keeps in a session,
//! as the SDK's `OpenAIConversationsSession` converts them.
//!
//! Objects are built with the small helpers of [`super::items`], for size (see there).

use crate::core::json::Value;

#[cfg(test)]
use crate::core::json::json;

use super::items::{
    copy, from_responses_item, id_ref, is_bare_reasoning, nonempty_str, responses_input_item, set,
    str_of, string, strings, unknown_item, Take, Unsupported,
};

/// Item types whose ids the Conversations API takes back: a reasoning item's encrypted content
/// refers to its id, and a program's output to its program. Any other id was given by another
/// conversation or response, and the server gives its own.
const TYPES_KEEPING_IDS: &[&str] = &["reasoning", "program", "program_output"];

/// A session item as the Conversations API takes it, as the SDK's `OpenAIConversationsSession`
/// sends it: the Responses input item (see [`responses_input_item`]) without providerData and
/// without the ids the server replaces. `Ok(None)` for an item the SDK leaves out: a reasoning
/// item with neither an id nor encrypted content, which the API could not tie to anything.
pub fn conversation_input_item(item: &Value) -> Result<Option<Value>, Unsupported> {
    // The model that wrote an item is the session's business, not a field the API takes.
    let without_model;
    let item = match item.get("providerData").and_then(Value::as_object) {
        Some(pd) if pd.contains_key("model") => {
            let mut copy = item.as_object().cloned().unwrap_or_default();
            let mut pd = pd.clone();
            pd.remove("model");
            if pd.is_empty() {
                copy.remove("providerData");
            } else {
                copy.insert("providerData".into(), Value::Object(pd));
            }
            without_model = Value::Object(copy);
            &without_model
        }
        _ => item,
    };
    let mut wire = responses_input_item(item)?;
    if is_bare_reasoning(&wire) {
        return Ok(None);
    }
    let Some(out) = wire.as_object_mut() else {
        return Ok(Some(wire));
    };
    let kind = out.get("type").and_then(Value::as_str).unwrap_or("");
    if !TYPES_KEEPING_IDS.contains(&kind) {
        out.remove("id");
    }
    out.remove("providerData");
    out.remove("provider_data");
    Ok(Some(wire))
}

/// [`conversation_input_item`], with `None` both for an item the API cannot take and for one
/// the SDK leaves out.
pub fn to_conversation_item(item: &Value) -> Option<Value> {
    conversation_input_item(item).ok().flatten()
}

/// What the Conversations API listed as the items `@openai/agents` keeps, as the SDK's
/// `OpenAIConversationsSession.getItems()` returns them: user messages with their content parts
/// in the SDK's field names (a part it has no shape for is left out), system messages with their
/// text as one string, everything else as the SDK keeps a Responses output item (see
/// [`super::items::from_responses_item`]). An item that holds output items stands for them. The
/// server's `id` is kept, so an item can be deleted again.
///
/// Where the SDK throws, this gives what it can: a developer message as a system message is
/// given, a user message whose content is a string with that string, any other item the SDK
/// cannot read as `{ type: 'unknown', id, providerData }` (the item whole).
pub fn agent_items(item: &Value) -> Vec<Value> {
    let role = match (str_of(item, "type"), str_of(item, "role")) {
        (Some("message"), Some(role @ ("system" | "developer" | "user"))) => role,
        _ => {
            return match item.get("output") {
                Some(Value::Array(outputs)) if holds_output_items(outputs) => {
                    outputs.iter().map(from_responses_item).collect()
                }
                _ => vec![from_responses_item(item)],
            }
        }
    };
    let content = match item.get("content") {
        _ if role != "user" => Value::String(system_text(item.get("content"))),
        Some(Value::Array(parts)) => Value::Array(parts.iter().filter_map(user_part).collect()),
        Some(text @ Value::String(_)) => text.clone(),
        _ => Value::Array(Vec::new()),
    };
    let mut m = strings(&[("type", "message"), ("role", role)]);
    copy(&mut m, item, Take::Any, &[("id", "id")]);
    set(&mut m, "content", content);
    vec![Value::Object(m)]
}

/// The first of [`agent_items`], for callers that take one item per listed item.
pub fn from_conversation_item(item: &Value) -> Value {
    agent_items(item)
        .into_iter()
        .next()
        .unwrap_or_else(|| unknown_item(item))
}

/// A system message's text: its text parts, one per line.
fn system_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            let mut first = true;
            for part in parts {
                if !matches!(str_of(part, "type"), Some("input_text" | "text")) {
                    continue;
                }
                // A part whose text is null is left out; one without text is an empty line, as
                // JavaScript's `join` writes it.
                let line = match part.get("text") {
                    Some(Value::Null) => continue,
                    Some(Value::String(t)) => t.clone(),
                    None => String::new(),
                    Some(other) => other.to_string(),
                };
                if !first {
                    text.push('\n');
                }
                first = false;
                text.push_str(&line);
            }
            text
        }
        _ => String::new(),
    }
}

/// A user message's part in the SDK's field names; `None` for one the SDK has no shape for (an
/// image listed without its URL or file id, a file without its data, URL or id, audio).
fn user_part(part: &Value) -> Option<Value> {
    let kind = str_of(part, "type")?;
    let mut m = strings(&[("type", kind)]);
    match kind {
        "input_text" => copy(&mut m, part, Take::Any, &[("text", "text")]),
        "input_image" => {
            let image = nonempty_str(part, "image_url")
                .map(string)
                .or_else(|| id_ref(part, &["file_id"]))?;
            set(&mut m, "image", image);
        }
        "input_file" => {
            let file = nonempty_str(part, "file_data")
                .or_else(|| nonempty_str(part, "file_url"))
                .map(string)
                .or_else(|| id_ref(part, &["file_id"]))?;
            set(&mut m, "file", file);
            if let Some(name) = nonempty_str(part, "filename") {
                set(&mut m, "filename", string(name));
            }
        }
        _ => return None,
    }
    Some(Value::Object(m))
}

/// Whether an item's `output` is a list of output items (which the item stands for) rather
/// than a tool's output parts.
fn holds_output_items(outputs: &[Value]) -> bool {
    !outputs.is_empty()
        && outputs.iter().all(|o| {
            matches!(str_of(o, "type"), Some(t) if !t.starts_with("input_")) && o.is_object()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::wire::items::tests::sdk_cases;

    #[test]
    fn items_go_to_the_api_without_their_ids_and_come_back_in_the_sdk_shapes() {
        let user = json!({"id": "msg_old", "role": "user", "content": "Weather in Oslo?"});
        let call = json!({"type": "function_call", "id": "fc_1", "callId": "c1", "name": "weather", "arguments": "{}", "status": "completed"});
        let out = json!({"type": "function_call_result", "callId": "c1", "name": "weather", "status": "completed", "output": {"type": "text", "text": "Rainy"}});
        assert_eq!(
            to_conversation_item(&user).unwrap(),
            json!({"role": "user", "content": "Weather in Oslo?"})
        );
        assert_eq!(
            to_conversation_item(&call).unwrap(),
            json!({"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}", "status": "completed"})
        );
        assert_eq!(
            to_conversation_item(&out).unwrap(),
            json!({"type": "function_call_output", "call_id": "c1", "output": "Rainy", "status": "completed"})
        );
        // As the server lists them.
        let listed_user = json!({"id": "msg_9", "type": "message", "role": "user", "status": "completed", "content": [{"type": "input_text", "text": "Weather in Oslo?"}]});
        assert_eq!(
            from_conversation_item(&listed_user),
            json!({"id": "msg_9", "type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Oslo?"}]})
        );
        let listed_out = json!({"id": "fco_1", "type": "function_call_output", "call_id": "c1", "output": "Rainy", "status": "completed"});
        assert_eq!(
            from_conversation_item(&listed_out),
            json!({"id": "fco_1", "type": "function_call_result", "callId": "c1", "name": "c1", "status": "completed", "output": "Rainy",
                   "providerData": {"id": "fco_1", "type": "function_call_output"}})
        );
        let listed_call = json!({"id": "fc_2", "type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}", "status": "completed"});
        assert_eq!(from_conversation_item(&listed_call)["callId"], "c1");
        let listed_answer = json!({"id": "msg_10", "type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Rainy.", "annotations": []}]});
        let answer = from_conversation_item(&listed_answer);
        assert_eq!(answer["id"], "msg_10");
        assert_eq!(
            answer["content"][0],
            json!({"type": "output_text", "text": "Rainy.", "providerData": {"annotations": []}})
        );
    }

    #[test]
    fn every_session_item_goes_to_a_conversation_as_the_sdk_sends_it() {
        // Where this library sends something else than the SDK (see `responses_input_item`).
        let differences = [
            (
                "developer message",
                Some(json!({"role": "developer", "content": "Be brief."})),
            ),
            (
                "assistant message, string content",
                Some(json!({"role": "assistant", "content": "San Francisco."})),
            ),
            (
                "raw function_call_output",
                Some(
                    json!({"type": "function_call_output", "call_id": "call_1", "output": "Rainy"}),
                ),
            ),
            (
                "function result, object output",
                Some(
                    json!({"type": "function_call_output", "call_id": "call_8", "output": "{\"answer\":42}", "status": "completed"}),
                ),
            ),
        ];
        let mut failures = Vec::new();
        let mut left_out = 0;
        for (name, input, sdk) in sdk_cases("toConversation") {
            let ours = conversation_input_item(&input);
            let sdk = sdk.map(|posted| posted.as_array().and_then(|p| p.first()).cloned());
            if let Some((_, expected)) = differences.iter().find(|(n, _)| *n == name) {
                assert_ne!(
                    sdk.as_ref().ok(),
                    Some(expected),
                    "{name} is the SDK's output now"
                );
                if ours.as_ref().ok() != Some(expected) {
                    failures.push(format!("{name}: ours {ours:?}, expected {expected:?}"));
                }
                continue;
            }
            match (ours, sdk) {
                (Ok(ours), Ok(sdk)) => {
                    left_out += usize::from(sdk.is_none());
                    if ours != sdk {
                        failures.push(format!("{name}:\n  ours {ours:?}\n  sdk  {sdk:?}"));
                    }
                }
                (Err(_), Err(_)) => assert_eq!(to_conversation_item(&input), None),
                (ours, sdk) => failures.push(format!("{name}: ours {ours:?}, sdk {sdk:?}")),
            }
        }
        assert!(left_out > 0, "the corpus has an item the SDK leaves out");
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn every_listed_item_comes_back_as_the_sdk_returns_it() {
        let mut failures = Vec::new();
        for (name, input, sdk) in sdk_cases("fromConversation") {
            let ours = Value::Array(agent_items(&input));
            let expected = match (name.as_str(), sdk) {
                (_, Ok(sdk)) => sdk,
                // Where the SDK throws, what can be read is kept.
                ("user message, string content", Err(_)) => {
                    json!([{"id": "msg_u3", "type": "message", "role": "user", "content": "plain"}])
                }
                ("developer message", Err(_)) => {
                    json!([{"id": "msg_d1", "type": "message", "role": "developer", "content": "Be brief."}])
                }
                (_, Err(_)) => json!([unknown_item(&input)]),
            };
            if ours != expected {
                failures.push(format!("{name}:\n  ours {ours}\n  want {expected}"));
            }
            assert_eq!(Some(&from_conversation_item(&input)), ours.get(0), "{name}");
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn a_reasoning_item_the_api_cannot_tie_to_anything_is_left_out_not_refused() {
        let bare = json!({"type": "reasoning", "content": [{"type": "input_text", "text": "t"}]});
        assert_eq!(conversation_input_item(&bare), Ok(None));
        let unsupported = json!({"type": "widget"});
        assert!(conversation_input_item(&unsupported).is_err());
    }
}
