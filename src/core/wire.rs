//! The two OpenAI wire formats: building request bodies from session items, and turning
//! responses (whole or streamed) back into items.
//!
//! Items in sessions use the shapes of `@openai/agents` (camelCase `callId`, tool outputs as
//! `function_call_result`), whichever API produced them, so histories written here continue in
//! that SDK and the other way round. Raw Responses-API items (`call_id`, `function_call_output`)
//! are read too.

use serde_json::{json, Map, Value};

use super::sse::SseEvent;

/// Which HTTP API the model server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    ChatCompletions,
    Responses,
}

impl Api {
    pub fn parse(name: &str) -> Option<Api> {
        match name {
            "chat_completions" => Some(Api::ChatCompletions),
            "responses" => Some(Api::Responses),
            _ => None,
        }
    }

    /// The endpoint path, appended to the runner's `baseUrl`.
    pub fn path(self) -> &'static str {
        match self {
            Api::ChatCompletions => "/chat/completions",
            Api::Responses => "/responses",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelSettings {
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// Everything one model call sends.
#[derive(Debug, Clone)]
pub struct ModelRequest<'a> {
    pub model: &'a str,
    pub instructions: Option<&'a str>,
    pub settings: &'a ModelSettings,
    pub tools: &'a [ToolSpec],
    pub input: &'a [Value],
    pub stream: bool,
    pub previous_response_id: Option<&'a str>,
    pub conversation_id: Option<&'a str>,
}

/// Token counts as the API reports them, summed over the model calls of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub requests: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.requests += other.requests;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.total_tokens += other.total_tokens;
    }
}

/// What one model call produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelOutput {
    pub items: Vec<Value>,
    pub usage: Usage,
    pub response_id: Option<String>,
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
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
fn output_text(output: Option<&Value>) -> String {
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

// ---------------------------------------------------------------------------------------------
// Requests

fn settings_into(body: &mut Map<String, Value>, s: &ModelSettings, max_tokens_key: &str) {
    if let Some(t) = s.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = s.top_p {
        body.insert("top_p".into(), json!(p));
    }
    if let Some(m) = s.max_tokens {
        body.insert(max_tokens_key.into(), json!(m));
    }
}

/// The JSON body of one model call.
pub fn request_body(api: Api, r: &ModelRequest<'_>) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(r.model));
    match api {
        Api::Responses => {
            if let Some(i) = r.instructions {
                body.insert("instructions".into(), json!(i));
            }
            body.insert(
                "input".into(),
                Value::Array(r.input.iter().filter_map(to_responses_item).collect()),
            );
            if !r.tools.is_empty() {
                let tools = r.tools.iter().map(|t| {
                    json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters})
                });
                body.insert("tools".into(), Value::Array(tools.collect()));
            }
            settings_into(&mut body, r.settings, "max_output_tokens");
            if let Some(id) = r.previous_response_id {
                body.insert("previous_response_id".into(), json!(id));
            }
            if let Some(id) = r.conversation_id {
                body.insert("conversation".into(), json!(id));
            }
        }
        Api::ChatCompletions => {
            body.insert(
                "messages".into(),
                Value::Array(to_chat_messages(r.instructions, r.input)),
            );
            if !r.tools.is_empty() {
                let tools = r.tools.iter().map(|t| {
                    json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}})
                });
                body.insert("tools".into(), Value::Array(tools.collect()));
            }
            settings_into(&mut body, r.settings, "max_tokens");
            if r.stream {
                body.insert("stream_options".into(), json!({"include_usage": true}));
            }
        }
    }
    body.insert("stream".into(), json!(r.stream));
    Value::Object(body)
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

fn chat_content(content: Option<&Value>) -> Value {
    match content {
        Some(Value::Array(parts)) => Value::Array(
            parts
                .iter()
                .filter_map(|p| match str_of(p, "type") {
                    Some("input_text" | "output_text" | "text") => {
                        Some(json!({"type": "text", "text": str_of(p, "text").unwrap_or("")}))
                    }
                    Some("input_image") => {
                        let url = str_of(p, "image_url").or_else(|| str_of(p, "image"))?;
                        Some(json!({"type": "image_url", "image_url": {"url": url}}))
                    }
                    _ => None,
                })
                .collect(),
        ),
        Some(other) => other.clone(),
        None => json!(""),
    }
}

/// Session items as Chat Completions messages: system instructions first, function calls
/// folded into the assistant message before them, tool outputs as `tool` messages. Reasoning
/// items have no place in this API and are left out.
pub fn to_chat_messages(instructions: Option<&str>, items: &[Value]) -> Vec<Value> {
    let mut messages: Vec<Value> = Vec::new();
    if let Some(i) = instructions {
        messages.push(json!({"role": "system", "content": i}));
    }
    for item in items {
        match item_type(item) {
            "message" => {
                let role = str_of(item, "role").unwrap_or("user");
                if role == "assistant" {
                    messages.push(
                        json!({"role": "assistant", "content": content_text(item.get("content"))}),
                    );
                } else {
                    messages
                        .push(json!({"role": role, "content": chat_content(item.get("content"))}));
                }
            }
            "function_call" => {
                let Some(id) = call_id(item) else { continue };
                let call = json!({
                    "id": id,
                    "type": "function",
                    "function": {
                        "name": str_of(item, "name").unwrap_or(""),
                        "arguments": str_of(item, "arguments").unwrap_or("{}"),
                    }
                });
                let joins_previous = messages
                    .last()
                    .is_some_and(|m| str_of(m, "role") == Some("assistant"));
                match messages.last_mut() {
                    Some(Value::Object(m)) if joins_previous => {
                        if let Some(Value::Array(calls)) = m.get_mut("tool_calls") {
                            calls.push(call);
                        } else {
                            m.insert("tool_calls".into(), json!([call]));
                        }
                    }
                    _ => messages
                        .push(json!({"role": "assistant", "content": null, "tool_calls": [call]})),
                }
            }
            "function_call_result" | "function_call_output" => {
                let Some(id) = call_id(item) else { continue };
                messages.push(json!({
                    "role": "tool",
                    "tool_call_id": id,
                    "content": output_text(item.get("output")),
                }));
            }
            _ => {}
        }
    }
    messages
}

// ---------------------------------------------------------------------------------------------
// Responses

fn usage_of(api: Api, usage: Option<&Value>) -> Usage {
    let n = |key: &str| {
        usage
            .and_then(|u| u.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let (input, output) = match api {
        Api::Responses => (n("input_tokens"), n("output_tokens")),
        Api::ChatCompletions => (n("prompt_tokens"), n("completion_tokens")),
    };
    let total = match n("total_tokens") {
        0 => input + output,
        t => t,
    };
    Usage {
        requests: 1,
        input_tokens: input,
        output_tokens: output,
        total_tokens: total,
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

fn assistant_text_item(text: &str, id: Option<&str>) -> Value {
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

fn function_call_item(call_id: &str, name: &str, arguments: &str) -> Value {
    json!({
        "type": "function_call",
        "callId": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    })
}

/// A whole (not streamed) response body as items, usage and id.
pub fn parse_response(api: Api, body: &Value) -> Result<ModelOutput, String> {
    match api {
        Api::Responses => {
            let output = body
                .get("output")
                .and_then(Value::as_array)
                .ok_or("the response has no \"output\" array")?;
            Ok(ModelOutput {
                items: output.iter().map(from_responses_item).collect(),
                usage: usage_of(api, body.get("usage")),
                response_id: str_of(body, "id").map(str::to_string),
            })
        }
        Api::ChatCompletions => {
            let message = body
                .get("choices")
                .and_then(|c| c.get(0))
                .and_then(|c| c.get("message"))
                .ok_or("the response has no \"choices[0].message\"")?;
            let mut items = Vec::new();
            if let Some(text) = str_of(message, "content").filter(|t| !t.is_empty()) {
                items.push(assistant_text_item(text, None));
            }
            if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
                for c in calls {
                    let f = c.get("function");
                    items.push(function_call_item(
                        str_of(c, "id").unwrap_or(""),
                        f.and_then(|f| str_of(f, "name")).unwrap_or(""),
                        f.and_then(|f| str_of(f, "arguments")).unwrap_or("{}"),
                    ));
                }
            }
            Ok(ModelOutput {
                items,
                usage: usage_of(api, body.get("usage")),
                response_id: str_of(body, "id").map(str::to_string),
            })
        }
    }
}

/// The message of an error body (`{"error": {"message": ...}}` and its variants), else the
/// body itself, shortened.
pub fn error_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        let found = v
            .get("error")
            .and_then(|e| str_of(e, "message").or_else(|| e.as_str()))
            .or_else(|| str_of(&v, "message"))
            .or_else(|| str_of(&v, "detail"));
        if let Some(m) = found {
            return m.to_string();
        }
    }
    let trimmed = body.trim();
    if trimmed.chars().count() > 300 {
        format!("{}…", trimmed.chars().take(300).collect::<String>())
    } else {
        trimmed.to_string()
    }
}

// ---------------------------------------------------------------------------------------------
// Streaming

/// What a stream event means to the caller.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
}

#[derive(Debug, Default)]
struct ChatToolCall {
    id: String,
    name: String,
    arguments: String,
}

/// Accumulates a streamed response into the same [`ModelOutput`] a whole one gives.
#[derive(Debug)]
pub struct StreamAccumulator {
    api: Api,
    done: bool,
    output: Option<ModelOutput>,
    // Responses API: items completed so far, by output index.
    items: Vec<(u64, Value)>,
    // Chat Completions: text and tool calls by index.
    text: String,
    calls: Vec<(u64, ChatToolCall)>,
    usage: Usage,
    id: Option<String>,
    finished: bool,
}

impl StreamAccumulator {
    pub fn new(api: Api) -> Self {
        StreamAccumulator {
            api,
            done: false,
            output: None,
            items: Vec::new(),
            text: String::new(),
            calls: Vec::new(),
            usage: Usage {
                requests: 1,
                ..Usage::default()
            },
            id: None,
            finished: false,
        }
    }

    /// True once the stream said it is complete.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Takes one server-sent event; returns what the caller should see now.
    pub fn on_event(&mut self, event: &SseEvent) -> Result<Vec<StreamEvent>, String> {
        if event.data == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        if event.data.trim().is_empty() {
            return Ok(Vec::new());
        }
        let v: Value = serde_json::from_str(&event.data)
            .map_err(|e| format!("malformed JSON in a stream event ({e})"))?;
        match self.api {
            Api::Responses => self.on_responses_event(event.event.as_deref(), &v),
            Api::ChatCompletions => self.on_chat_chunk(&v),
        }
    }

    fn on_responses_event(
        &mut self,
        name: Option<&str>,
        v: &Value,
    ) -> Result<Vec<StreamEvent>, String> {
        let kind = str_of(v, "type").or(name).unwrap_or("");
        match kind {
            "response.output_text.delta" => {
                let delta = str_of(v, "delta").unwrap_or("");
                Ok(vec![StreamEvent::TextDelta(delta.to_string())])
            }
            "response.output_item.done" => {
                let index = v
                    .get("output_index")
                    .and_then(Value::as_u64)
                    .unwrap_or(self.items.len() as u64);
                if let Some(item) = v.get("item") {
                    self.items.push((index, from_responses_item(item)));
                }
                Ok(Vec::new())
            }
            "response.completed" => {
                let response = v
                    .get("response")
                    .ok_or("response.completed without a response")?;
                let mut out = parse_response(Api::Responses, response).unwrap_or_default();
                if out.items.is_empty() {
                    self.items.sort_by_key(|(i, _)| *i);
                    out.items = self.items.drain(..).map(|(_, item)| item).collect();
                }
                out.usage.requests = 1;
                self.output = Some(out);
                self.done = true;
                Ok(Vec::new())
            }
            "response.failed" | "response.incomplete" => {
                let response = v.get("response");
                let message = response
                    .and_then(|r| r.get("error"))
                    .and_then(|e| str_of(e, "message"))
                    .or_else(|| {
                        response
                            .and_then(|r| r.get("incomplete_details"))
                            .and_then(|d| str_of(d, "reason"))
                    })
                    .unwrap_or(kind);
                Err(format!("the model failed: {message}"))
            }
            "error" => Err(format!(
                "the model failed: {}",
                str_of(v, "message")
                    .or_else(|| v.get("error").and_then(|e| str_of(e, "message")))
                    .unwrap_or("error event")
            )),
            _ => Ok(Vec::new()),
        }
    }

    fn on_chat_chunk(&mut self, v: &Value) -> Result<Vec<StreamEvent>, String> {
        if let Some(e) = v.get("error") {
            return Err(format!(
                "the model failed: {}",
                str_of(e, "message")
                    .or_else(|| e.as_str())
                    .unwrap_or("error")
            ));
        }
        if self.id.is_none() {
            self.id = str_of(v, "id").map(str::to_string);
        }
        if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
            self.usage = usage_of(Api::ChatCompletions, Some(u));
        }
        let mut events = Vec::new();
        let Some(choice) = v.get("choices").and_then(|c| c.get(0)) else {
            return Ok(events);
        };
        if choice.get("finish_reason").is_some_and(|f| !f.is_null()) {
            self.finished = true;
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(events);
        };
        if let Some(t) = str_of(delta, "content").filter(|t| !t.is_empty()) {
            self.text.push_str(t);
            events.push(StreamEvent::TextDelta(t.to_string()));
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for c in calls {
                let index = c.get("index").and_then(Value::as_u64).unwrap_or(0);
                let pos = match self.calls.iter().position(|(i, _)| *i == index) {
                    Some(p) => p,
                    None => {
                        self.calls.push((index, ChatToolCall::default()));
                        self.calls.len() - 1
                    }
                };
                let call = &mut self.calls[pos].1;
                if let Some(id) = str_of(c, "id") {
                    call.id = id.to_string();
                }
                if let Some(f) = c.get("function") {
                    if let Some(n) = str_of(f, "name") {
                        call.name.push_str(n);
                    }
                    if let Some(a) = str_of(f, "arguments") {
                        call.arguments.push_str(a);
                    }
                }
            }
        }
        Ok(events)
    }

    /// The whole output, once the body ended. A stream that ended before saying it was
    /// complete was cut, and is an error.
    pub fn finish(mut self) -> Result<ModelOutput, String> {
        match self.api {
            Api::Responses => self
                .output
                .take()
                .ok_or_else(|| "the stream ended before the response was complete".to_string()),
            Api::ChatCompletions => {
                if !self.done && !self.finished {
                    return Err("the stream ended before the response was complete".to_string());
                }
                let mut items = Vec::new();
                if !self.text.is_empty() {
                    items.push(assistant_text_item(&self.text, None));
                }
                self.calls.sort_by_key(|(i, _)| *i);
                for (_, c) in &self.calls {
                    let args = if c.arguments.is_empty() {
                        "{}"
                    } else {
                        &c.arguments
                    };
                    items.push(function_call_item(&c.id, &c.name, args));
                }
                Ok(ModelOutput {
                    items,
                    usage: self.usage,
                    response_id: self.id,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::sse::SseParser;

    fn sdk_history() -> Vec<Value> {
        vec![
            json!({"type": "message", "role": "user", "content": "Weather in Paris?"}),
            json!({"type": "message", "role": "assistant", "status": "completed", "id": "msg_1",
                   "content": [{"type": "output_text", "text": "Let me check."}]}),
            json!({"type": "function_call", "callId": "call_1", "name": "weather", "arguments": "{\"city\":\"Paris\"}", "status": "completed"}),
            json!({"type": "function_call_result", "callId": "call_1", "name": "weather", "status": "completed",
                   "output": {"type": "text", "text": "18C"}}),
            json!({"type": "reasoning", "id": "rs_1", "content": [{"type": "input_text", "text": "thinking"}],
                   "providerData": {"encryptedContent": "enc"}}),
            json!({"role": "user", "content": [{"type": "input_text", "text": "thanks"}]}),
        ]
    }

    #[test]
    fn responses_request_uses_the_api_spelling() {
        let settings = ModelSettings {
            temperature: Some(0.5),
            top_p: Some(0.9),
            max_tokens: Some(100),
        };
        let tools = [ToolSpec {
            name: "weather".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        }];
        let input = sdk_history();
        let body = request_body(
            Api::Responses,
            &ModelRequest {
                model: "m",
                instructions: Some("be brief"),
                settings: &settings,
                tools: &tools,
                input: &input,
                stream: true,
                previous_response_id: None,
                conversation_id: None,
            },
        );
        assert_eq!(body["instructions"], "be brief");
        assert_eq!(body["temperature"], 0.5);
        assert_eq!(body["top_p"], 0.9);
        assert_eq!(body["max_output_tokens"], 100);
        assert_eq!(body["stream"], true);
        assert_eq!(
            body["tools"][0],
            json!({"type": "function", "name": "weather", "description": "d", "parameters": {"type": "object"}})
        );
        let input = body["input"].as_array().unwrap();
        assert_eq!(input[2]["call_id"], "call_1");
        assert!(input[2].get("callId").is_none());
        assert_eq!(
            input[3],
            json!({"type": "function_call_output", "call_id": "call_1", "output": "18C"})
        );
        assert_eq!(
            input[4],
            json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking"}], "encrypted_content": "enc"})
        );
        assert_eq!(input[5]["type"], "message");
    }

    #[test]
    fn chat_request_folds_calls_into_the_assistant_message() {
        let settings = ModelSettings {
            max_tokens: Some(7),
            ..ModelSettings::default()
        };
        let input = sdk_history();
        let body = request_body(
            Api::ChatCompletions,
            &ModelRequest {
                model: "m",
                instructions: Some("sys"),
                settings: &settings,
                tools: &[],
                input: &input,
                stream: false,
                previous_response_id: None,
                conversation_id: None,
            },
        );
        assert_eq!(body["max_tokens"], 7);
        assert!(body.get("tools").is_none());
        assert!(body.get("stream_options").is_none());
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": "Let me check.", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
                {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
            ])
        );
    }

    #[test]
    fn raw_responses_items_are_read_too() {
        let raw = [
            json!({"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}),
            json!({"type": "function_call_output", "call_id": "c", "output": "ok"}),
        ];
        let messages = to_chat_messages(None, &raw);
        assert_eq!(messages[0]["tool_calls"][0]["id"], "c");
        assert_eq!(
            messages[1],
            json!({"role": "tool", "tool_call_id": "c", "content": "ok"})
        );
    }

    #[test]
    fn responses_output_becomes_sdk_items() {
        let body = json!({
            "id": "resp_1",
            "output": [
                {"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": "hmm"}]},
                {"type": "message", "id": "msg", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": "Hi", "annotations": []}]},
                {"type": "function_call", "id": "fc", "call_id": "call", "name": "f", "arguments": "{\"a\":1}"},
            ],
            "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
        });
        let out = parse_response(Api::Responses, &body).unwrap();
        assert_eq!(out.response_id.as_deref(), Some("resp_1"));
        assert_eq!(
            out.usage,
            Usage {
                requests: 1,
                input_tokens: 10,
                output_tokens: 5,
                total_tokens: 15
            }
        );
        assert_eq!(
            out.items[0],
            json!({"type": "reasoning", "id": "rs", "content": [{"type": "input_text", "text": "hmm"}]})
        );
        assert_eq!(
            out.items[1],
            json!({"type": "message", "id": "msg", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Hi"}]})
        );
        assert_eq!(
            out.items[2],
            json!({"type": "function_call", "id": "fc", "callId": "call", "name": "f", "arguments": "{\"a\":1}", "status": "completed"})
        );
    }

    #[test]
    fn chat_output_becomes_sdk_items() {
        let body = json!({
            "id": "chatcmpl-1",
            "choices": [{"message": {"role": "assistant", "content": "Sure", "tool_calls": [
                {"id": "call_9", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ]}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
        });
        let out = parse_response(Api::ChatCompletions, &body).unwrap();
        assert_eq!(out.items.len(), 2);
        assert_eq!(out.items[0]["content"][0]["text"], "Sure");
        assert_eq!(out.items[1]["callId"], "call_9");
        assert_eq!(out.usage.total_tokens, 7);
        assert!(parse_response(Api::ChatCompletions, &json!({"choices": []})).is_err());
    }

    #[test]
    fn error_bodies_give_their_message() {
        assert_eq!(
            error_message(r#"{"error":{"message":"Invalid API key","type":"auth"}}"#),
            "Invalid API key"
        );
        assert_eq!(
            error_message(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(error_message("  Bad Gateway \n"), "Bad Gateway");
    }

    fn stream(api: Api, body: &str) -> (Vec<String>, Result<ModelOutput, String>) {
        let mut parser = SseParser::new();
        let mut acc = StreamAccumulator::new(api);
        let mut deltas = Vec::new();
        for ev in parser.feed(body.as_bytes()) {
            match acc.on_event(&ev) {
                Ok(events) => deltas.extend(events.into_iter().map(|StreamEvent::TextDelta(t)| t)),
                Err(e) => return (deltas, Err(e)),
            }
        }
        (deltas, acc.finish())
    }

    #[test]
    fn chat_stream_accumulates_text_and_tool_calls() {
        let body = concat!(
            "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\":1}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":3,\"total_tokens\":5}}\n\n",
            "data: [DONE]\n\n",
        );
        let (deltas, out) = stream(Api::ChatCompletions, body);
        let out = out.unwrap();
        assert_eq!(deltas, ["Hel", "lo"]);
        assert_eq!(out.items[0]["content"][0]["text"], "Hello");
        assert_eq!(out.items[1], function_call_item("call_1", "f", "{\"a\":1}"));
        assert_eq!(out.usage.total_tokens, 5);
        assert_eq!(out.response_id.as_deref(), Some("c1"));
    }

    #[test]
    fn responses_stream_takes_the_completed_response() {
        let body = concat!(
            "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n",
            "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\" there\"}\n\n",
            "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r1\",\"output\":[{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hi there\"}]}],\"usage\":{\"input_tokens\":1,\"output_tokens\":2,\"total_tokens\":3}}}\n\n",
        );
        let (deltas, out) = stream(Api::Responses, body);
        let out = out.unwrap();
        assert_eq!(deltas, ["Hi", " there"]);
        assert_eq!(out.items[0]["content"][0]["text"], "Hi there");
        assert_eq!(out.response_id.as_deref(), Some("r1"));
        assert_eq!(out.usage.total_tokens, 3);
    }

    #[test]
    fn cut_and_failed_streams_are_errors() {
        let cut = "data: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n";
        assert!(stream(Api::Responses, cut)
            .1
            .unwrap_err()
            .contains("ended before"));
        let cut_chat = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n";
        assert!(stream(Api::ChatCompletions, cut_chat)
            .1
            .unwrap_err()
            .contains("ended before"));
        let failed = "data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"message\":\"overloaded\"}}}\n\n";
        assert_eq!(
            stream(Api::Responses, failed).1.unwrap_err(),
            "the model failed: overloaded"
        );
        let garbage = "data: {not json\n\n";
        assert!(stream(Api::ChatCompletions, garbage)
            .1
            .unwrap_err()
            .contains("malformed JSON"));
    }
}
