//! Session items: reading their fields in either spelling, building the items a model call
//! produces, and converting one item between the SDK's shape and the Responses API's.

use serde_json::{json, Value};

pub(super) fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The call id of a function call or tool output, in either spelling.
pub fn call_id(item: &Value) -> Option<&str> {
    str_of(item, "callId").or_else(|| str_of(item, "call_id"))
}

/// The `type` of an item; `message` for the short `{ role, content }` form.
pub fn item_type(item: &Value) -> &str {
    match str_of(item, "type") {
        Some(t) => t,
        None if item.get("role").is_some() => "message",
        None => "",
    }
}

pub fn is_function_call(item: &Value) -> bool {
    item_type(item) == "function_call"
}

pub fn is_tool_output(item: &Value) -> bool {
    matches!(
        item_type(item),
        "function_call_result" | "function_call_output"
    )
}

/// A tool output as text, from any of the shapes it may have.
pub fn output_text(output: Option<&Value>) -> String {
    match output {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(o @ Value::Object(_)) => match (str_of(o, "type"), str_of(o, "text")) {
            (Some("text" | "input_text" | "output_text"), Some(t)) => t.to_string(),
            _ => o.to_string(),
        },
        Some(Value::Array(parts)) => {
            let texts: Vec<&str> = parts.iter().filter_map(|p| str_of(p, "text")).collect();
            if texts.len() == parts.len() {
                texts.concat()
            } else {
                Value::Array(parts.clone()).to_string()
            }
        }
        Some(other) => other.to_string(),
    }
}

/// The text of a message's content: a string, or the text parts of an array.
pub fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| str_of(p, "text").or_else(|| str_of(p, "refusal")))
            .collect::<Vec<_>>()
            .concat(),
        _ => String::new(),
    }
}

pub(super) fn assistant_text_item(text: &str, id: Option<&str>) -> Value {
    let mut m = json!({
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text}],
    });
    if let Some(id) = id {
        m["id"] = json!(id);
    }
    m
}

pub(super) fn function_call_item(call_id: &str, name: &str, arguments: &str) -> Value {
    json!({
        "type": "function_call",
        "callId": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    })
}

/// One session item as a Responses-API input item; `None` for items that API cannot take back.
pub fn to_responses_item(item: &Value) -> Option<Value> {
    let mut out = item.as_object()?.clone();
    out.remove("providerData");
    match item_type(item) {
        "message" => {
            out.insert("type".into(), json!("message"));
            Some(Value::Object(out))
        }
        "function_call" => {
            let id = call_id(item)?.to_string();
            out.remove("callId");
            out.insert("call_id".into(), json!(id));
            Some(Value::Object(out))
        }
        "function_call_result" | "function_call_output" => Some(json!({
            "type": "function_call_output",
            "call_id": call_id(item)?,
            "output": output_text(item.get("output")),
        })),
        "reasoning" => {
            // Sent back only with the id the API gave it; the summary in the API's own shape.
            let id = str_of(item, "id")?;
            let summary = match item.get("summary") {
                Some(s) => s.clone(),
                None => Value::Array(
                    item.get("content")
                        .and_then(Value::as_array)
                        .map(|parts| {
                            parts
                                .iter()
                                .filter_map(|p| str_of(p, "text"))
                                .map(|t| json!({"type": "summary_text", "text": t}))
                                .collect()
                        })
                        .unwrap_or_default(),
                ),
            };
            let mut r = json!({"type": "reasoning", "id": id, "summary": summary});
            if let Some(enc) = item
                .get("providerData")
                .and_then(|p| p.get("encryptedContent"))
                .or_else(|| item.get("encrypted_content"))
            {
                r["encrypted_content"] = enc.clone();
            }
            Some(r)
        }
        _ => Some(Value::Object(out)),
    }
}

/// A Responses-API output item as a session item.
pub fn from_responses_item(item: &Value) -> Value {
    match str_of(item, "type") {
        Some("message") => {
            let content: Vec<Value> = item
                .get("content")
                .and_then(Value::as_array)
                .map(|parts| {
                    parts
                        .iter()
                        .map(|p| match str_of(p, "type") {
                            Some("output_text") => {
                                json!({"type": "output_text", "text": str_of(p, "text").unwrap_or("")})
                            }
                            Some("refusal") => {
                                json!({"type": "refusal", "refusal": str_of(p, "refusal").unwrap_or("")})
                            }
                            _ => p.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let mut m = json!({
                "type": "message",
                "role": "assistant",
                "status": str_of(item, "status").unwrap_or("completed"),
                "content": content,
            });
            if let Some(id) = str_of(item, "id") {
                m["id"] = json!(id);
            }
            m
        }
        Some("function_call") => {
            let mut c = json!({
                "type": "function_call",
                "callId": call_id(item).unwrap_or(""),
                "name": str_of(item, "name").unwrap_or(""),
                "arguments": str_of(item, "arguments").unwrap_or("{}"),
                "status": str_of(item, "status").unwrap_or("completed"),
            });
            if let Some(id) = str_of(item, "id") {
                c["id"] = json!(id);
            }
            c
        }
        Some("reasoning") => {
            let content: Vec<Value> = item
                .get("summary")
                .and_then(Value::as_array)
                .map(|s| {
                    s.iter()
                        .filter_map(|p| str_of(p, "text"))
                        .map(|t| json!({"type": "input_text", "text": t}))
                        .collect()
                })
                .unwrap_or_default();
            let mut r = json!({"type": "reasoning", "content": content});
            if let Some(id) = str_of(item, "id") {
                r["id"] = json!(id);
            }
            if let Some(enc) = str_of(item, "encrypted_content") {
                r["providerData"] = json!({"encryptedContent": enc});
            }
            r
        }
        _ => item.clone(),
    }
}
