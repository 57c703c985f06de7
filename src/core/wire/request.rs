//! The JSON body of one model call, in either API's shape.

use crate::core::json::{json, Map, Value};

use super::items::{
    call_id, content_text, input_part_to_api, item_type, output_text, responses_input_item, str_of,
    to_responses_item, CHAT_REASONING,
};
use super::{Api, ModelSettings, OutputType, ToolSpec};

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
    pub output_type: Option<&'a OutputType>,
}

fn settings_into(body: &mut Map, api: Api, s: &ModelSettings, tools: bool, max_tokens_key: &str) {
    if let Some(t) = &s.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(store) = s.store {
        body.insert("store".into(), json!(store));
    }
    if let Some(r) = &s.prompt_cache_retention {
        // (The SDK's spelling of the API's `in_memory`, as the SDK sends it.)
        let r = if r == "in-memory" { "in_memory" } else { r };
        body.insert("prompt_cache_retention".into(), json!(r));
    }
    match api {
        Api::ChatCompletions => {
            for (key, n) in [
                ("frequency_penalty", &s.frequency_penalty),
                ("presence_penalty", &s.presence_penalty),
            ] {
                if let Some(n) = n {
                    body.insert(key.into(), json!(n));
                }
            }
            // (None given, `null`: not sent, as the SDK sends none.)
            if let Some(effort) = s
                .reasoning
                .as_ref()
                .and_then(|r| r.get("effort"))
                .filter(|e| !e.is_null())
            {
                body.insert("reasoning_effort".into(), effort.clone());
            }
            if let Some(v) = &s.verbosity {
                body.insert("verbosity".into(), json!(v));
            }
        }
        Api::Responses => {
            if let Some(r) = &s.reasoning {
                body.insert("reasoning".into(), Value::Object(r.clone()));
            }
            if let Some(v) = &s.verbosity {
                body.insert("text".into(), json!({"verbosity": v}));
            }
            if let Some(t) = &s.truncation {
                body.insert("truncation".into(), json!(t));
            }
        }
    }
    if let Some(p) = &s.top_p {
        body.insert("top_p".into(), json!(p));
    }
    if let Some(m) = s.max_tokens {
        body.insert(max_tokens_key.into(), json!(m));
    }
    if !tools {
        return;
    }
    if let Some(p) = s.parallel_tool_calls {
        body.insert("parallel_tool_calls".into(), json!(p));
    }
    let choice = match s.tool_choice.as_deref() {
        None => return,
        Some(c @ ("auto" | "required" | "none")) => json!(c),
        Some(name) => match api {
            Api::ChatCompletions => json!({"type": "function", "function": {"name": name}}),
            Api::Responses => json!({"type": "function", "name": name}),
        },
    };
    body.insert("tool_choice".into(), choice);
}

/// The structured output format, in the API's spelling.
fn output_format(api: Api, o: &OutputType) -> (&'static str, Value) {
    match api {
        Api::ChatCompletions => (
            "response_format",
            json!({"type": "json_schema", "json_schema": {"name": o.name, "strict": o.strict, "schema": o.schema}}),
        ),
        Api::Responses => (
            "text",
            json!({"format": {"type": "json_schema", "name": o.name, "strict": o.strict, "schema": o.schema}}),
        ),
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
                    json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters, "strict": t.strict})
                });
                body.insert("tools".into(), Value::Array(tools.collect()));
            }
            settings_into(
                &mut body,
                api,
                r.settings,
                !r.tools.is_empty(),
                "max_output_tokens",
            );
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
                // (Strict mode named only where asked: it is off by default here.)
                let tools = r.tools.iter().map(|t| {
                    let function = match t.strict {
                        true => json!({"name": t.name, "description": t.description, "parameters": t.parameters, "strict": true}),
                        false => json!({"name": t.name, "description": t.description, "parameters": t.parameters}),
                    };
                    json!({"type": "function", "function": function})
                });
                body.insert("tools".into(), Value::Array(tools.collect()));
            }
            settings_into(
                &mut body,
                api,
                r.settings,
                !r.tools.is_empty(),
                "max_tokens",
            );
            if r.stream {
                body.insert("stream_options".into(), json!({"include_usage": true}));
            }
        }
    }
    body.insert("stream".into(), json!(r.stream));
    // Over what is made here, as the SDK spreads them; but, as in the SDK, the settings'
    // reasoning effort and verbosity win on Chat Completions, and on Responses `reasoning` and
    // `text` are merged field by field (theirs over the settings').
    if let Some(extra) = &r.settings.provider_data {
        for (key, value) in extra.iter() {
            let settled = match api {
                Api::ChatCompletions => matches!(key.as_str(), "reasoning_effort" | "verbosity"),
                Api::Responses => matches!(key.as_str(), "reasoning" | "text"),
            } && body.contains_key(key);
            match (body.get_mut(key), value) {
                (Some(Value::Object(ours)), Value::Object(theirs)) if settled => {
                    ours.extend(theirs.clone());
                }
                _ if settled => {}
                _ => {
                    body.insert(key.clone(), value.clone());
                }
            }
        }
    }
    // The output type's format last: it is what the answer is checked against.
    if let Some(o) = r.output_type {
        let (key, format) = output_format(api, o);
        match (body.get_mut(key), format) {
            // Beside `text.verbosity`.
            (Some(Value::Object(text)), Value::Object(format)) => text.extend(format),
            (_, format) => {
                body.insert(key.into(), format);
            }
        }
    }
    Value::Object(body)
}

/// A message's content as Chat Completions takes it: each part as [`chat_part`] gives it. (A part
/// of the history that it cannot take is left out; a run refuses such a part of its new input,
/// see [`unsendable`]. Content left with no part is sent as no text: an empty array is refused.)
fn chat_content(content: Option<&Value>) -> Value {
    match content {
        Some(Value::Array(parts)) => {
            let parts: Vec<Value> = parts.iter().filter_map(|p| chat_part(p).ok()).collect();
            if parts.is_empty() {
                json!("")
            } else {
                Value::Array(parts)
            }
        }
        Some(other) => other.clone(),
        None => json!(""),
    }
}

/// A part of a user message as Chat Completions takes it, as the SDK's converter gives it: text;
/// an image by its URL (or data URL), with its detail where it has one; a file as its data URL
/// (with its name, which the API requires) or an uploaded file's id; audio as its data and format.
/// Else why it cannot be sent.
fn chat_part(part: &Value) -> Result<Value, String> {
    let pd = part.get("providerData");
    // A field of the part, else of its providerData (`path` under it).
    let given = |key: &str, path: &[&str]| {
        part.get(key)
            .filter(|v| v.is_string())
            .or_else(|| {
                path.iter()
                    .try_fold(pd?, |v, k| v.get(k))
                    .filter(|v| v.is_string())
            })
            .cloned()
    };
    if str_of(part, "type") == Some("audio") {
        let data = str_of(part, "audio").ok_or("an audio part whose audio is no string")?;
        let format = given("format", &["input_audio", "format"]).ok_or(
            "an audio part without its format (wav or mp3), which Chat Completions requires",
        )?;
        return Ok(json!({"type": "input_audio", "input_audio": {"data": data, "format": format}}));
    }
    if matches!(str_of(part, "type"), Some("text" | "output_text")) {
        return Ok(json!({"type": "text", "text": str_of(part, "text").unwrap_or("")}));
    }
    let api = input_part_to_api(part).map_err(|e| e.to_string())?;
    let field = |key| api.get(key).cloned();
    match str_of(&api, "type") {
        Some("input_image") => {
            let url = field("image_url").ok_or(
                "an input_image by an uploaded file's id, which Chat Completions cannot take (an image URL or data URL can be)",
            )?;
            let mut image = Map::new();
            image.insert("url".into(), url);
            if let Some(detail) = given("detail", &["image_url", "detail"]) {
                image.insert("detail".into(), detail);
            }
            Ok(json!({"type": "image_url", "image_url": Value::Object(image)}))
        }
        Some("input_file") => {
            let file = match (str_of(&api, "file_data"), field("file_id")) {
                (Some(data), _) if !data.starts_with("data:") => {
                    return Err("an input_file whose data is no data URL (data:…;base64,…), which Chat Completions requires".into())
                }
                (Some(data), _) => {
                    let name = given("filename", &["filename"]).ok_or(
                        "an input_file given as data without its filename, which Chat Completions requires",
                    )?;
                    json!({"file_data": data, "filename": name})
                }
                (None, Some(id)) => json!({"file_id": id}),
                (None, None) => {
                    return Err("an input_file by URL, which Chat Completions cannot take (its data or an uploaded file's id can be)".into())
                }
            };
            Ok(json!({"type": "file", "file": file}))
        }
        _ => Ok(json!({"type": "text", "text": field("text").unwrap_or(json!(""))})),
    }
}

/// A tool's output as a Chat Completions `tool` message holds it: text only, as the SDK's
/// converter gives it (the text parts of an array; an image or a file, which this API cannot
/// take, as the SDK's placeholder rather than its data as text).
fn chat_tool_content(output: Option<&Value>) -> String {
    const OMITTED: &str = "[tool output omitted]";
    match output {
        Some(Value::Array(parts)) => {
            let mut text: Option<String> = None;
            for part in parts {
                if str_of(part, "type") == Some("input_text") {
                    let t = str_of(part, "text").unwrap_or("");
                    text.get_or_insert_with(String::new).push_str(t);
                }
            }
            text.unwrap_or_else(|| OMITTED.into())
        }
        Some(o) if matches!(str_of(o, "type"), Some("image" | "file")) => OMITTED.into(),
        other => output_text(other),
    }
}

/// Session items as Chat Completions messages: system instructions first, function calls
/// folded into the assistant message before them, tool outputs as `tool` messages. A reasoning
/// item a Chat Completions answer gave (its text in `rawContent`) goes back on the assistant
/// message after it, under the name it came by (`reasoning`, as the SDK sends it, or
/// `reasoning_content`), with OpenRouter's `reasoning_details` as they came; other reasoning
/// items have no place in this API and are left out.
pub fn to_chat_messages(instructions: Option<&str>, items: &[Value]) -> Vec<Value> {
    let mut messages: Vec<Value> = Vec::new();
    if let Some(i) = instructions {
        messages.push(json!({"role": "system", "content": i}));
    }
    // The reasoning for the next assistant message: its name, its text, OpenRouter's blocks.
    let mut reasoning: Option<(String, Value, Option<Value>)> = None;
    let assistant = |reasoning: &mut Option<(String, Value, Option<Value>)>, content: Value| {
        let mut m = Map::new();
        m.insert("role".into(), json!("assistant"));
        m.insert("content".into(), content);
        if let Some((field, text, details)) = reasoning.take() {
            if text.as_str().is_some_and(|t| !t.is_empty()) {
                m.insert(field, text);
            }
            if let Some(details) = details {
                m.insert("reasoning_details".into(), details);
            }
        }
        m
    };
    for item in items {
        match item_type(item) {
            "reasoning" => {
                let text = item.pointer("/rawContent/0/text").filter(|t| t.is_string());
                let field = item
                    .pointer("/providerData/field")
                    .and_then(Value::as_str)
                    .filter(|f| CHAT_REASONING.contains(f))
                    .unwrap_or("reasoning");
                let details = item
                    .pointer("/providerData/details")
                    .filter(|d| d.as_array().is_some_and(|d| !d.is_empty()));
                if text.is_some() || details.is_some() {
                    let text = text.cloned().unwrap_or(Value::Null);
                    reasoning = Some((field.into(), text, details.cloned()));
                }
            }
            "message" => {
                let role = str_of(item, "role").unwrap_or("user");
                if role == "assistant" {
                    let content = json!(content_text(item.get("content")));
                    messages.push(Value::Object(assistant(&mut reasoning, content)));
                } else {
                    // (Reasoning belongs to the answer after it, not to a later turn's.)
                    reasoning = None;
                    messages
                        .push(json!({"role": role, "content": chat_content(item.get("content"))}));
                }
            }
            "function_call" => {
                let Some(id) = call_id(item) else { continue };
                let mut call = json!({
                    "id": id,
                    "type": "function",
                    "function": {
                        "name": str_of(item, "name").unwrap_or(""),
                        "arguments": str_of(item, "arguments").unwrap_or("{}"),
                    }
                });
                // What else its server gave the call goes back with it (Gemini's thought
                // signature), as the SDK sends it.
                if let (Value::Object(c), Some(Value::Object(pd))) =
                    (&mut call, item.get("providerData"))
                {
                    for (k, v) in pd {
                        if !matches!(k.as_str(), "id" | "type" | "function") {
                            c.insert(k.clone(), v.clone());
                        }
                    }
                }
                // (A call after reasoning is another answer's.)
                let joins_previous = reasoning.is_none()
                    && messages
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
                    _ => {
                        let mut m = assistant(&mut reasoning, Value::Null);
                        m.insert("tool_calls".into(), json!([call]));
                        messages.push(Value::Object(m));
                    }
                }
            }
            "function_call_result" | "function_call_output" => {
                reasoning = None;
                let Some(id) = call_id(item) else { continue };
                messages.push(json!({
                    "role": "tool",
                    "tool_call_id": id,
                    "content": chat_tool_content(item.get("output")),
                }));
            }
            _ => {}
        }
    }
    // The reasoning of an earlier turn's answer goes back only where the answer called tools
    // (DeepSeek requires that in every later request; of an answer without calls it ignores
    // it): fewer tokens sent, and fewer fields a stricter server, switched to mid-chat, refuses.
    let last_user = messages
        .iter()
        .rposition(|m| str_of(m, "role") == Some("user"))
        .unwrap_or(0);
    for m in messages.iter_mut().take(last_user) {
        if let Value::Object(m) = m {
            if !m.contains_key("tool_calls") {
                for field in CHAT_REASONING {
                    m.remove(field);
                }
                m.remove("reasoning_details");
            }
        }
    }
    messages
}

/// The first of a run's new input items `api` cannot send, with why (`index`, `reason`): left
/// out of every request, it would go unseen by the model while the session kept it, so the run
/// refuses it before anything is saved or sent, as the SDK does. (Chat Completions sends what it
/// can of the items other than messages: a tool's image output as the SDK's placeholder.)
pub fn unsendable(api: Api, items: &[Value]) -> Option<(usize, String)> {
    items.iter().enumerate().find_map(|(i, item)| {
        let why = match api {
            Api::Responses => responses_input_item(item).err().map(|why| why.to_string()),
            Api::ChatCompletions => match item.get("content") {
                Some(Value::Array(parts))
                    if item_type(item) == "message"
                        && str_of(item, "role") != Some("assistant") =>
                {
                    parts.iter().find_map(|p| chat_part(p).err())
                }
                _ => None,
            },
        };
        why.map(|why| (i, why))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_request_keeps_where_and_how_not_what_shapes_an_answer() {
        let Value::Object(provider_data) = json!({"user": "u", "provider": {"order": ["a"]}, "tool_choice": "required", "max_output_tokens": 5, "text": {}, "conversation": "c"})
        else {
            unreachable!()
        };
        let Value::Object(reasoning) = json!({"effort": "low"}) else {
            unreachable!()
        };
        let agent = ModelSettings {
            store: Some(false),
            temperature: Some(crate::core::json::Number::from(1u64)),
            max_tokens: Some(9),
            tool_choice: Some("required".into()),
            reasoning: Some(reasoning.clone()),
            provider_data: Some(provider_data),
            ..ModelSettings::default()
        };
        let side = agent.for_session_request();
        let Value::Object(kept) = json!({"user": "u", "provider": {"order": ["a"]}}) else {
            unreachable!()
        };
        assert_eq!(
            side,
            ModelSettings {
                store: Some(false),
                reasoning: Some(reasoning),
                provider_data: Some(kept),
                ..ModelSettings::default()
            }
        );
    }

    #[test]
    fn an_input_item_the_responses_api_has_no_form_for_is_named() {
        let good = json!({"role": "user", "content": "hi"});
        let text_part =
            json!({"role": "user", "content": [{"type": "text", "text": "What is 2+2?"}]});
        assert_eq!(
            unsendable(Api::Responses, std::slice::from_ref(&good)),
            None
        );
        let (at, why) = unsendable(Api::Responses, &[good.clone(), text_part.clone()]).unwrap();
        assert_eq!(at, 1);
        assert!(why.contains("\"text\""), "{why}");
        assert_eq!(unsendable(Api::ChatCompletions, &[good, text_part]), None);
    }

    /// The body of a call to model `m` with no input or instructions, not streamed.
    fn bare_request(
        api: Api,
        settings: &ModelSettings,
        tools: &[ToolSpec],
        output_type: Option<&OutputType>,
    ) -> Value {
        request_body(
            api,
            &ModelRequest {
                model: "m",
                instructions: None,
                settings,
                tools,
                input: &[],
                stream: false,
                previous_response_id: None,
                conversation_id: None,
                output_type,
            },
        )
    }

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
    fn the_sdk_model_settings_go_out_as_each_api_spells_them() {
        let map = |v: Value| match v {
            Value::Object(m) => Some(m),
            _ => None,
        };
        let settings = ModelSettings {
            frequency_penalty: crate::core::json::Number::from_text("0.5"),
            presence_penalty: crate::core::json::Number::from_text("-1"),
            store: Some(false),
            reasoning: map(json!({"effort": "high", "summary": "auto"})),
            verbosity: Some("low".into()),
            truncation: Some("auto".into()),
            prompt_cache_retention: Some("24h".into()),
            provider_data: map(
                json!({"seed": 7, "temperature": 1, "reasoning_effort": "low",
                "reasoning": {"summary": "detailed"}, "text": {"format": {"type": "text"}},
                "response_format": {"type": "json_object"}}),
            ),
            temperature: crate::core::json::Number::from_text("0.2"),
            ..ModelSettings::default()
        };
        let output = OutputType {
            name: "answer".into(),
            schema: json!({"type": "object"}),
            strict: true,
        };
        let body = |api, output_type| bare_request(api, &settings, &[], output_type);
        let chat = body(Api::ChatCompletions, None);
        assert_eq!(chat["frequency_penalty"], 0.5);
        assert_eq!(chat["presence_penalty"], -1);
        assert_eq!(chat["store"], false);
        assert_eq!(
            chat["reasoning_effort"], "high",
            "the settings' effort wins, as in the SDK"
        );
        assert_eq!(chat["verbosity"], "low");
        assert!(chat.get("truncation").is_none());
        assert_eq!(
            chat["reasoning"],
            json!({"summary": "detailed"}),
            "providerData's own fields as given"
        );
        assert_eq!(chat["seed"], 7);
        assert_eq!(chat["prompt_cache_retention"], "24h");
        assert_eq!(
            chat["temperature"], 1,
            "providerData over the settings, as in the SDK"
        );
        let chat_with_output = body(Api::ChatCompletions, Some(&output));
        assert_eq!(
            chat_with_output["response_format"]["type"], "json_schema",
            "the output type's format wins"
        );
        let responses = body(Api::Responses, Some(&output));
        assert_eq!(
            responses["reasoning"],
            json!({"effort": "high", "summary": "detailed"}),
            "merged field by field, providerData's over the settings'"
        );
        assert_eq!(responses["truncation"], "auto");
        assert_eq!(responses["store"], false);
        assert!(responses.get("frequency_penalty").is_none());
        assert_eq!(responses["text"]["verbosity"], "low");
        assert_eq!(
            responses["text"]["format"]["name"], "answer",
            "the format beside it"
        );
    }

    #[test]
    fn responses_request_uses_the_api_spelling() {
        let settings = ModelSettings {
            temperature: crate::core::json::Number::from_text("0.5"),
            top_p: crate::core::json::Number::from_text("0.9"),
            max_tokens: Some(100),
            ..ModelSettings::default()
        };
        let tools = [ToolSpec {
            name: "weather".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
            strict: false,
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
                output_type: None,
            },
        );
        assert_eq!(body["instructions"], "be brief");
        assert_eq!(body["temperature"], 0.5);
        assert_eq!(body["top_p"], 0.9);
        assert_eq!(body["max_output_tokens"], 100);
        assert_eq!(body["stream"], true);
        assert_eq!(
            body["tools"][0],
            json!({"type": "function", "name": "weather", "description": "d", "parameters": {"type": "object"}, "strict": false}),
            "the Responses API takes a tool without `strict` as strict"
        );
        let input = body["input"].as_array().unwrap();
        assert_eq!(input[2]["call_id"], "call_1");
        assert!(input[2].get("callId").is_none());
        assert_eq!(
            input[3],
            json!({"type": "function_call_output", "call_id": "call_1", "output": "18C", "status": "completed"})
        );
        assert_eq!(
            input[4],
            json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking"}], "encrypted_content": "enc"})
        );
        // The SDK sends a user message in the API's short form, without `type`.
        assert_eq!(
            input[5],
            json!({"role": "user", "content": [{"type": "input_text", "text": "thanks"}]})
        );
    }

    #[test]
    fn tool_choice_parallel_calls_and_output_schema_in_each_api() {
        let settings = ModelSettings {
            parallel_tool_calls: Some(false),
            tool_choice: Some("weather".into()),
            ..ModelSettings::default()
        };
        let tools = [ToolSpec {
            name: "weather".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
            strict: false,
        }];
        let output = OutputType {
            name: "city".into(),
            schema: json!({"type": "object"}),
            strict: true,
        };
        let body = |api, tools: &[ToolSpec]| bare_request(api, &settings, tools, Some(&output));
        let chat = body(Api::ChatCompletions, &tools);
        assert_eq!(chat["parallel_tool_calls"], false);
        assert_eq!(
            chat["tool_choice"],
            json!({"type": "function", "function": {"name": "weather"}})
        );
        assert_eq!(
            chat["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "city", "strict": true, "schema": {"type": "object"}}})
        );
        let responses = body(Api::Responses, &tools);
        assert_eq!(
            responses["tool_choice"],
            json!({"type": "function", "name": "weather"})
        );
        assert_eq!(
            responses["text"],
            json!({"format": {"type": "json_schema", "name": "city", "strict": true, "schema": {"type": "object"}}})
        );
        // Without tools, neither tool setting is sent (the APIs refuse them).
        let bare = body(Api::ChatCompletions, &[]);
        assert!(bare.get("tool_choice").is_none() && bare.get("parallel_tool_calls").is_none());
    }

    #[test]
    fn a_tool_is_strict_only_where_asked_in_each_api() {
        let settings = ModelSettings::default();
        let tool = |name: &str, strict| ToolSpec {
            name: name.into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
            strict,
        };
        let tools = [tool("loose", false), tool("exact", true)];
        let body = |api| bare_request(api, &settings, &tools, None);
        let responses = body(Api::Responses);
        assert_eq!(responses["tools"][0]["strict"], false);
        assert_eq!(responses["tools"][1]["strict"], true);
        let chat = body(Api::ChatCompletions);
        assert!(chat["tools"][0]["function"].get("strict").is_none());
        assert_eq!(chat["tools"][1]["function"]["strict"], true);
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
                output_type: None,
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
    fn a_chat_answers_reasoning_and_call_data_go_back_as_they_came() {
        let input = [
            json!({"role": "user", "content": "Weather?"}),
            json!({"type": "reasoning", "content": [],
                "rawContent": [{"type": "reasoning_text", "text": "Look it up."}],
                "providerData": {"field": "reasoning_content"}}),
            json!({"type": "function_call", "callId": "c1", "name": "f", "arguments": "{}",
                "providerData": {"extra_content": {"google": {"thought_signature": "sig"}}}}),
            json!({"type": "function_call_result", "callId": "c1", "output": "18C"}),
            // The SDK's shape: sent as `reasoning`.
            json!({"type": "reasoning", "content": [],
                "rawContent": [{"type": "reasoning_text", "text": "Say it."}]}),
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "18C"}]}),
            // A Responses reasoning item (a summary, no raw text) has no place here.
            json!({"type": "reasoning", "id": "rs", "content": [{"type": "input_text", "text": "t"}]}),
            json!({"type": "function_call", "callId": "c2", "name": "f", "arguments": "{}"}),
        ];
        assert_eq!(
            to_chat_messages(None, &input),
            [
                json!({"role": "user", "content": "Weather?"}),
                json!({"role": "assistant", "content": null, "reasoning_content": "Look it up.",
                    "tool_calls": [{"id": "c1", "type": "function",
                        "function": {"name": "f", "arguments": "{}"},
                        "extra_content": {"google": {"thought_signature": "sig"}}}]}),
                json!({"role": "tool", "tool_call_id": "c1", "content": "18C"}),
                json!({"role": "assistant", "content": "18C", "reasoning": "Say it.", "tool_calls": [
                    {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ]}),
            ]
        );
        // OpenRouter's blocks go back with the call as they came, with the text if there is
        // one; not on an earlier turn's answer without calls.
        let details = json!([{"type": "reasoning.encrypted", "data": "e", "index": 0}]);
        let input = [
            json!({"role": "user", "content": "Weather?"}),
            json!({"type": "reasoning", "content": [],
                "rawContent": [{"type": "reasoning_text", "text": ""}],
                "providerData": {"details": details.clone()}}),
            json!({"type": "function_call", "callId": "c1", "name": "f", "arguments": "{}"}),
            json!({"type": "function_call_result", "callId": "c1", "output": "18C"}),
            json!({"type": "reasoning", "content": [],
                "rawContent": [{"type": "reasoning_text", "text": "Say it."}],
                "providerData": {"details": details.clone()}}),
            json!({"type": "message", "role": "assistant", "content": "18C"}),
            json!({"role": "user", "content": "Thanks"}),
        ];
        let messages = to_chat_messages(None, &input);
        assert_eq!(
            messages[1],
            json!({"role": "assistant", "content": null, "reasoning_details": details,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
        );
        assert_eq!(messages[3], json!({"role": "assistant", "content": "18C"}));
        // Before the newest user message, an answer's reasoning goes back only where it called
        // tools; reasoning goes to no later turn's answer (a user message or a tool output
        // between them ends it).
        let reasoning = |text: &str| {
            json!({"type": "reasoning", "content": [],
                "rawContent": [{"type": "reasoning_text", "text": text}]})
        };
        let answer = |text: &str| json!({"type": "message", "role": "assistant", "content": text});
        let input = [
            json!({"role": "user", "content": "Weather?"}),
            reasoning("Look it up."),
            json!({"type": "function_call", "callId": "c1", "name": "f", "arguments": "{}"}),
            json!({"type": "function_call_result", "callId": "c1", "output": "18C"}),
            reasoning("Say it."),
            answer("18C"),
            reasoning("Left over."),
            json!({"role": "user", "content": "And tomorrow?"}),
            answer("Same."),
            reasoning("Before a call's output."),
            json!({"type": "function_call_result", "callId": "c1", "output": "again"}),
            reasoning("Now."),
            answer("Sunny."),
        ];
        let messages = to_chat_messages(None, &input);
        let sent: Vec<Option<&str>> = messages
            .iter()
            .filter(|m| str_of(m, "role") == Some("assistant"))
            .map(|m| str_of(m, "reasoning"))
            .collect();
        assert_eq!(sent, [Some("Look it up."), None, None, Some("Now.")]);
    }

    #[test]
    fn chat_completions_gets_images_files_and_audio_and_refuses_what_it_cannot_take() {
        let pdf = "data:application/pdf;base64,JVBERi0x";
        let item = json!({"role": "user", "content": [
            {"type": "input_text", "text": "Summarise these"},
            {"type": "input_image", "image": "https://x.test/a.png", "detail": "high"},
            {"type": "input_image", "image_url": "https://x.test/b.png"},
            {"type": "input_file", "file": pdf, "providerData": {"filename": "a.pdf"}},
            {"type": "input_file", "file": {"id": "file_1"}},
            {"type": "audio", "audio": "UklGRg==", "providerData": {"input_audio": {"format": "wav"}}},
        ]});
        assert_eq!(
            unsendable(Api::ChatCompletions, std::slice::from_ref(&item)),
            None
        );
        assert_eq!(
            to_chat_messages(None, std::slice::from_ref(&item))[0]["content"],
            json!([
                {"type": "text", "text": "Summarise these"},
                {"type": "image_url", "image_url": {"url": "https://x.test/a.png", "detail": "high"}},
                {"type": "image_url", "image_url": {"url": "https://x.test/b.png"}},
                {"type": "file", "file": {"file_data": pdf, "filename": "a.pdf"}},
                {"type": "file", "file": {"file_id": "file_1"}},
                {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
            ])
        );
        // What this API has no form for: refused before anything is saved, named.
        for (part, why) in [
            (
                json!({"type": "input_file", "file": "https://x.test/a.pdf"}),
                "by URL",
            ),
            (
                json!({"type": "input_image", "image": {"id": "file_2"}}),
                "uploaded file's id",
            ),
            (json!({"type": "input_video", "video": "v"}), "input_video"),
            (
                json!({"type": "input_file", "file": pdf}),
                "without its filename",
            ),
            (
                json!({"type": "input_file", "file": "JVBERi0x", "filename": "a.pdf"}),
                "no data URL",
            ),
            (
                json!({"type": "audio", "audio": "UklGRg=="}),
                "without its format",
            ),
        ] {
            let items = [
                json!({"role": "user", "content": "first"}),
                json!({"role": "user", "content": [part]}),
            ];
            let (at, reason) = unsendable(Api::ChatCompletions, &items).unwrap();
            assert_eq!(at, 1);
            assert!(reason.contains(why), "{reason}");
            // Such a part already in the history is left out; content left with nothing is "".
            assert_eq!(to_chat_messages(None, &items)[1]["content"], "");
        }
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
}
