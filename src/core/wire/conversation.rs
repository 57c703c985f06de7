//! Items as the Conversations API stores them (`POST /conversations/{id}/items`,
//! `GET /conversations/{id}/items`), and back in the shapes `@openai/agents` keeps in a session,
//! as the SDK's `OpenAIConversationsSession` converts them.

use serde_json::{json, Map, Value};

use super::items::{from_responses_item, item_type, str_of, to_responses_item};

/// A session item as the Conversations API takes it: the Responses input shape, without the ids
/// another conversation gave it (the server gives its own; a reasoning item keeps its id, which
/// its encrypted content refers to). `None` for an item the API cannot hold (a call without id).
pub fn to_conversation_item(item: &Value) -> Option<Value> {
    let mut out = to_responses_item(item)?;
    if item_type(&out) != "reasoning" {
        if let Some(o) = out.as_object_mut() {
            o.remove("id");
        }
    }
    Some(out)
}

/// What the Conversations API listed, in the shape of the items the SDK keeps: user, system and
/// developer messages with their content parts, assistant messages, calls and outputs as
/// `@openai/agents` writes them (`callId`, output `{ type: 'text', text }`). The server's `id` is
/// kept, so an item can be deleted again.
pub fn from_conversation_item(item: &Value) -> Value {
    match (str_of(item, "type"), str_of(item, "role")) {
        (Some("message"), Some(role @ ("user" | "system" | "developer"))) => {
            let content: Value = match item.get("content") {
                Some(Value::Array(parts)) => Value::Array(
                    parts
                        .iter()
                        .map(|p| match str_of(p, "type") {
                            Some("input_text") => {
                                json!({"type": "input_text", "text": str_of(p, "text").unwrap_or("")})
                            }
                            Some("input_image") => match p.get("image_url") {
                                Some(url) => json!({"type": "input_image", "image": url}),
                                None => p.clone(),
                            },
                            _ => p.clone(),
                        })
                        .collect(),
                ),
                Some(other) => other.clone(),
                None => json!([]),
            };
            let mut m = Map::new();
            if let Some(id) = item.get("id") {
                m.insert("id".into(), id.clone());
            }
            m.insert("type".into(), json!("message"));
            m.insert("role".into(), json!(role));
            m.insert("content".into(), content);
            Value::Object(m)
        }
        (Some("function_call_output"), _) => {
            let call_id = str_of(item, "call_id").unwrap_or("");
            let text = match item.get("output") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => super::items::output_text(Some(other)),
                None => String::new(),
            };
            let mut r = json!({
                "type": "function_call_result",
                "callId": call_id,
                "name": str_of(item, "name").unwrap_or(call_id),
                "status": str_of(item, "status").unwrap_or("completed"),
                "output": {"type": "text", "text": text},
            });
            if let Some(id) = item.get("id") {
                r["id"] = id.clone();
            }
            r
        }
        _ => from_responses_item(item),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_go_to_the_api_without_their_ids_and_come_back_in_the_sdk_shapes() {
        let user = json!({"id": "msg_old", "role": "user", "content": "Weather in Oslo?"});
        let call = json!({"type": "function_call", "id": "fc_1", "callId": "c1", "name": "weather", "arguments": "{}", "status": "completed"});
        let out = json!({"type": "function_call_result", "callId": "c1", "name": "weather", "status": "completed", "output": {"type": "text", "text": "Rainy"}});
        assert_eq!(
            to_conversation_item(&user).unwrap(),
            json!({"type": "message", "role": "user", "content": "Weather in Oslo?"})
        );
        assert_eq!(
            to_conversation_item(&call).unwrap(),
            json!({"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}", "status": "completed"})
        );
        assert_eq!(
            to_conversation_item(&out).unwrap(),
            json!({"type": "function_call_output", "call_id": "c1", "output": "Rainy"})
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
            json!({"id": "fco_1", "type": "function_call_result", "callId": "c1", "name": "c1", "status": "completed", "output": {"type": "text", "text": "Rainy"}})
        );
        let listed_call = json!({"id": "fc_2", "type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}", "status": "completed"});
        assert_eq!(from_conversation_item(&listed_call)["callId"], "c1");
        let listed_answer = json!({"id": "msg_10", "type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Rainy.", "annotations": []}]});
        let answer = from_conversation_item(&listed_answer);
        assert_eq!(answer["id"], "msg_10");
        assert_eq!(
            answer["content"][0],
            json!({"type": "output_text", "text": "Rainy."})
        );
    }
}
