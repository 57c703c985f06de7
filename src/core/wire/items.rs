//! Session items: reading their fields in either spelling, building the items a model call
//! produces, and converting one item between the shape `@openai/agents` keeps in a session and
//! the Responses API's, field for field as that SDK converts it (its `getInputItems` and
//! `convertToOutputItem`), so a history moves between the SDK and this library unchanged and
//! reaches the API in a shape it accepts.
//!
//! The tests compare each conversion with the SDK's own output on a corpus of items
//! (`tests/fixtures/wire/sdk-items.json`, written by `tests/fixtures/wire/make.mjs`).

use serde_json::{json, Map, Value};

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

/// Why an item cannot be converted: the SDK refuses it too (it throws), and the API would not
/// take what a guess would make of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(String);

impl Unsupported {
    fn new(why: impl Into<String>) -> Self {
        Unsupported(why.into())
    }
}

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// An item's or part's `type`, quoted, for the messages of [`Unsupported`].
fn named(v: &Value) -> String {
    match v.get("type") {
        Some(t) => t.to_string(),
        None => "(no type)".into(),
    }
}

// --------------------------------------------------------------------------------------------
// JavaScript's object semantics, as far as the SDK's conversions rely on them.
// --------------------------------------------------------------------------------------------

/// Sets `key`, or removes it for `None`: the SDK builds its objects with fields that may be
/// `undefined`, which JSON leaves out, and a later field replaces an earlier one of that name.
fn put(m: &mut Map<String, Value>, key: &str, v: Option<Value>) {
    match v {
        Some(v) => {
            m.insert(key.to_string(), v);
        }
        None => {
            m.remove(key);
        }
    }
}

/// A field as the SDK reads `item.field`: `None` when absent.
fn field(v: &Value, key: &str) -> Option<Value> {
    v.get(key).cloned()
}

/// A field as the SDK reads `item.field ?? undefined`: `None` when absent or null.
fn defined(v: &Value, key: &str) -> Option<Value> {
    v.get(key).filter(|x| !x.is_null()).cloned()
}

/// Whether a JavaScript `if (value)` takes the value.
fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(_) | Value::Object(_)) => true,
    }
}

fn nonempty_str<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    str_of(v, key).filter(|s| !s.is_empty())
}

/// `String(value)` of a JavaScript primitive; `None` for objects and arrays, where JavaScript
/// gives `[object Object]` or a comma list that would lose what the value held.
fn js_string(v: Option<&Value>) -> Option<String> {
    match v {
        None => Some("undefined".into()),
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Null) => Some("null".into()),
        Some(b @ Value::Bool(_)) => Some(b.to_string()),
        Some(n @ Value::Number(_)) => Some(n.to_string()),
        Some(Value::Array(_) | Value::Object(_)) => None,
    }
}

/// A camelCase or snake_case key in snake_case, as the SDK spells providerData keys on the
/// wire (every capital letter becomes `_` and its lower case).
fn snake_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// The keys of an object, and of the objects it holds, in snake_case. Arrays are copied as
/// they are, entries included, as the SDK does.
fn snake_case(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (snake_key(k), snake_case(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The providerData fields the SDK merges into an item or part on the wire: all of them, in
/// snake_case, but the ones the item's own fields stand for (`reserved`, in snake_case).
fn extra_provider_data(pd: Option<&Value>, reserved: &[&str]) -> Map<String, Value> {
    match pd {
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| (snake_key(k), snake_case(v)))
            .filter(|(k, _)| !reserved.contains(&k.as_str()))
            .collect(),
        _ => Map::new(),
    }
}

/// The first of `keys` that providerData has (null counts: the SDK takes any defined value).
fn provider_field<'a>(pd: Option<&'a Value>, keys: &[&str]) -> Option<&'a Value> {
    let m = pd?.as_object()?;
    keys.iter().find_map(|k| m.get(*k))
}

/// The id the SDK gives items of servers that give none; never sent back.
const PLACEHOLDER_ID: &str = "FAKE_ID";

fn without_placeholder_id(mut m: Map<String, Value>) -> Map<String, Value> {
    if m.get("id").and_then(Value::as_str) == Some(PLACEHOLDER_ID) {
        m.remove("id");
    }
    m
}

/// A data URL of base64 `data`, as the SDK inlines data: data that is a data URL already stays
/// as it is, and without a media type the data is sent bare.
fn inline_data(data: &str, media_type: Option<&str>) -> String {
    match media_type {
        _ if data.starts_with("data:") => data.to_string(),
        Some(t) if !t.is_empty() => format!("data:{t};base64,{data}"),
        _ => data.to_string(),
    }
}

fn is_base64(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
}

// --------------------------------------------------------------------------------------------
// A session item as a Responses API input item.
// --------------------------------------------------------------------------------------------

/// One session item as a Responses-API input item; `None` for an item the SDK refuses too (see
/// [`responses_input_item`] for why).
pub fn to_responses_item(item: &Value) -> Option<Value> {
    responses_input_item(item).ok()
}

/// One session item as a Responses-API input item, as the SDK sends it: SDK field names become
/// the API's (`callId` as `call_id`, `image` as `image_url` or `file_id`, `file` as `file_data`,
/// `file_url` or `file_id`), SDK-only types become the API's (`function_call_result` as
/// `function_call_output`, `computer_call_result` as `computer_call_output`, a
/// `hosted_tool_call` as the call its providerData describes), and the providerData fields the
/// item's own fields do not stand for are merged in, in snake_case.
///
/// Beyond the SDK, so that histories this library wrote keep working: items in the API's own
/// shape (`function_call_output`, `web_search_call`, ...) go as they are, and a call id is read
/// in either spelling; a developer message goes as a system message does; an assistant message
/// whose content is a string goes in the API's short form; a tool output that is an object of no
/// known kind goes as its JSON text (the SDK sends `[object Object]`).
pub fn responses_input_item(item: &Value) -> Result<Value, Unsupported> {
    let Some(obj) = item.as_object() else {
        return Err(Unsupported::new("an item that is not an object"));
    };
    // Our own summary marker (see `core::compaction`) means nothing to the API, which refuses
    // fields it does not know.
    let unmarked;
    let item = match obj.get("providerData").and_then(Value::as_object) {
        Some(pd) if pd.contains_key(crate::core::compaction::SUMMARY_MARKER) => {
            let mut copy = obj.clone();
            let mut pd = pd.clone();
            pd.remove(crate::core::compaction::SUMMARY_MARKER);
            copy.insert("providerData".into(), Value::Object(pd));
            unmarked = Value::Object(copy);
            &unmarked
        }
        _ => item,
    };
    let mut wire = match obj.get("type") {
        Some(Value::String(t)) if t == "message" => message_to_api(item)?,
        None if matches!(obj.get("role"), Some(Value::String(_))) => message_to_api(item)?,
        Some(Value::String(t)) => match t.as_str() {
            "function_call" => function_call_to_api(item),
            "function_call_result" => function_result_to_api(item)?,
            "reasoning" => reasoning_to_api(item)?,
            "computer_call" => computer_call_to_api(item),
            "computer_call_result" => computer_result_to_api(item)?,
            "shell_call" => shell_call_to_api(item)?,
            "shell_call_output" => shell_output_to_api(item)?,
            "apply_patch_call" => apply_patch_call_to_api(item)?,
            "apply_patch_call_output" => apply_patch_output_to_api(item),
            "hosted_tool_call" => hosted_call_to_api(item)?,
            "compaction" => compaction_to_api(item)?,
            "tool_search_call" | "tool_search_output" => tool_search_to_api(item)?,
            "program" | "program_output" => program_to_api(item),
            "unknown" => unknown_to_api(item),
            t if API_ITEM_TYPES.contains(&t) => api_item_as_stored(item),
            _ => {
                return Err(Unsupported::new(format!(
                    "an item of type {} (not one the Responses API takes)",
                    named(item)
                )))
            }
        },
        _ => return Err(Unsupported::new("an item without a type or role")),
    };
    // `created_by` is only ever output: the API refuses it in input.
    wire.remove("created_by");
    Ok(Value::Object(wire))
}

/// Item types of the Responses API that the SDK keeps in other shapes, so that a history holds
/// them as the API gave them only where this library stored them so.
const API_ITEM_TYPES: &[&str] = &[
    "function_call_output",
    "computer_call_output",
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "image_generation_call",
    "mcp_list_tools",
    "mcp_approval_request",
    "mcp_approval_response",
    "mcp_call",
    "local_shell_call",
    "local_shell_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "item_reference",
];

fn api_item_as_stored(item: &Value) -> Map<String, Value> {
    let mut out = item.as_object().cloned().unwrap_or_default();
    out.remove("providerData");
    if let Some(id) = out.remove("callId") {
        out.entry("call_id").or_insert(id);
    }
    if str_of(item, "type") == Some("function_call_output") {
        if let Some(o) = out
            .get("output")
            .filter(|o| !o.is_string() && !o.is_array())
        {
            let text = output_text(Some(o));
            out.insert("output".into(), json!(text));
        }
    }
    out
}

/// The call id, as the SDK reads it (`callId`), or as the API spells it.
fn call_id_field(item: &Value) -> Option<Value> {
    field(item, "callId").or_else(|| field(item, "call_id"))
}

/// `caller` in the API's spelling, where the item has one.
fn caller_to_api(caller: Option<&Value>) -> Option<Value> {
    let c = caller.filter(|c| truthy(Some(c)))?;
    if str_of(c, "type") == Some("direct") {
        return Some(json!({"type": "direct"}));
    }
    let mut m = Map::new();
    m.insert("type".into(), json!("program"));
    put(&mut m, "caller_id", field(c, "callerId"));
    Some(Value::Object(m))
}

fn message_to_api(item: &Value) -> Result<Map<String, Value>, Unsupported> {
    let pd = item.get("providerData");
    let role = str_of(item, "role").unwrap_or("");
    let mut m = Map::new();
    match role {
        "system" | "developer" | "user" => {
            put(&mut m, "id", field(item, "id"));
            m.insert("role".into(), json!(role));
            let content = match item.get("content") {
                Some(Value::Array(parts)) if role == "user" => Some(Value::Array(
                    parts
                        .iter()
                        .map(input_part_to_api)
                        .collect::<Result<_, _>>()?,
                )),
                Some(Value::String(_)) if role == "user" => field(item, "content"),
                _ if role == "user" => {
                    return Err(Unsupported::new(
                        "a user message whose content is neither a string nor an array",
                    ))
                }
                other => other.cloned(),
            };
            put(&mut m, "content", content);
            m.extend(extra_provider_data(pd, &["id", "role", "content", "phase"]));
            Ok(m)
        }
        "assistant" => {
            let phase = item
                .get("phase")
                .filter(|p| !p.is_null())
                .or_else(|| provider_field(pd, &["phase"]));
            if let Some(p) = phase {
                if !matches!(p.as_str(), Some("commentary" | "final_answer")) {
                    return Err(Unsupported::new(format!(
                        "an assistant message with phase {p} (expected \"commentary\" or \"final_answer\")"
                    )));
                }
            }
            let content = match item.get("content") {
                Some(Value::Array(parts)) => Value::Array(
                    parts
                        .iter()
                        .map(output_part_to_api)
                        .collect::<Result<_, _>>()?,
                ),
                // The API's short form: the text alone.
                Some(text @ Value::String(_)) => {
                    put(&mut m, "id", field(item, "id"));
                    m.insert("role".into(), json!("assistant"));
                    m.insert("content".into(), text.clone());
                    put(&mut m, "phase", phase.cloned());
                    m.extend(extra_provider_data(
                        pd,
                        &["type", "id", "role", "content", "status", "phase"],
                    ));
                    return Ok(without_placeholder_id(m));
                }
                _ => {
                    return Err(Unsupported::new(
                        "an assistant message without a content array",
                    ))
                }
            };
            m.insert("type".into(), json!("message"));
            put(&mut m, "id", field(item, "id"));
            m.insert("role".into(), json!("assistant"));
            m.insert("content".into(), content);
            put(&mut m, "status", field(item, "status"));
            put(&mut m, "phase", phase.cloned());
            m.extend(extra_provider_data(
                pd,
                &["type", "id", "role", "content", "status", "phase"],
            ));
            Ok(without_placeholder_id(m))
        }
        _ => Err(Unsupported::new(format!(
            "a message with role {}",
            item.get("role").map_or("(none)".into(), Value::to_string)
        ))),
    }
}

/// A part of a user message's content as the API takes it.
fn input_part_to_api(part: &Value) -> Result<Value, Unsupported> {
    let pd = part.get("providerData");
    let mut m = Map::new();
    let reserved: &[&str] = match str_of(part, "type") {
        Some("input_text") => {
            m.insert("type".into(), json!("input_text"));
            put(&mut m, "text", field(part, "text"));
            &["type", "text"]
        }
        Some("input_image") => {
            m.insert("type".into(), json!("input_image"));
            m.insert(
                "detail".into(),
                defined(part, "detail").unwrap_or(json!("auto")),
            );
            match part.get("image") {
                Some(Value::String(url)) => {
                    m.insert("image_url".into(), json!(url));
                }
                Some(Value::Object(image)) if image.contains_key("id") => {
                    put(&mut m, "file_id", image.get("id").cloned());
                }
                Some(v) if truthy(Some(v)) && !v.is_object() && !v.is_array() => {
                    return Err(Unsupported::new(
                        "an input_image whose image is neither a URL nor { id }",
                    ))
                }
                _ => {
                    if let Some(url) = str_of(part, "imageUrl") {
                        m.insert("image_url".into(), json!(url));
                    } else if let Some(id) = str_of(part, "fileId") {
                        m.insert("file_id".into(), json!(id));
                    }
                }
            }
            &["type", "detail", "image_url", "file_id"]
        }
        Some("input_file") => {
            m.insert("type".into(), json!("input_file"));
            match part.get("file") {
                Some(Value::String(file)) => {
                    let value = file.trim();
                    if value.starts_with("data:") {
                        m.insert("file_data".into(), json!(value));
                    } else if value.starts_with("https://") {
                        m.insert("file_url".into(), json!(value));
                    } else if is_base64(value) {
                        m.insert("file_data".into(), json!(value));
                    } else {
                        return Err(Unsupported::new(
                            "an input_file whose file is a string that is neither a data URL, an https URL nor base64 data (an uploaded file's id goes in { id })",
                        ));
                    }
                }
                Some(Value::Object(file)) if file.contains_key("id") => {
                    put(&mut m, "file_id", file.get("id").cloned());
                }
                Some(Value::Object(file)) if file.contains_key("url") => {
                    put(&mut m, "file_url", file.get("url").cloned());
                }
                _ => {}
            }
            for (legacy, key) in [
                ("fileData", "file_data"),
                ("fileUrl", "file_url"),
                ("fileId", "file_id"),
            ] {
                if let Some(v) = str_of(part, legacy) {
                    m.insert(key.into(), json!(v));
                }
            }
            if truthy(part.get("filename")) {
                put(&mut m, "filename", field(part, "filename"));
            }
            &["type", "file_data", "file_url", "file_id", "filename"]
        }
        _ => {
            return Err(Unsupported::new(format!(
                "a user message part of type {}",
                named(part)
            )))
        }
    };
    if truthy(part.get("promptCacheBreakpoint")) {
        put(
            &mut m,
            "prompt_cache_breakpoint",
            field(part, "promptCacheBreakpoint"),
        );
    }
    m.extend(extra_provider_data(pd, reserved));
    Ok(Value::Object(m))
}

/// A part of an assistant message's content as the API takes it: `output_text` with its
/// annotations (kept in providerData), `refusal`.
fn output_part_to_api(part: &Value) -> Result<Value, Unsupported> {
    let pd = part.get("providerData");
    let mut m = Map::new();
    match str_of(part, "type") {
        Some("output_text") => {
            m.insert("type".into(), json!("output_text"));
            put(&mut m, "text", field(part, "text"));
            let annotations = provider_field(pd, &["annotations"])
                .filter(|a| a.is_array())
                .cloned()
                .unwrap_or(json!([]));
            m.insert("annotations".into(), annotations);
            m.extend(extra_provider_data(pd, &["type", "text", "annotations"]));
        }
        Some("refusal") => {
            m.insert("type".into(), json!("refusal"));
            put(&mut m, "refusal", field(part, "refusal"));
            m.extend(extra_provider_data(pd, &["type", "refusal"]));
        }
        _ => {
            return Err(Unsupported::new(format!(
                "an assistant message part of type {}",
                named(part)
            )))
        }
    }
    Ok(Value::Object(m))
}

fn function_call_to_api(item: &Value) -> Map<String, Value> {
    let mut m = Map::new();
    put(&mut m, "id", field(item, "id"));
    m.insert("type".into(), json!("function_call"));
    put(&mut m, "name", field(item, "name"));
    put(&mut m, "call_id", call_id_field(item));
    put(&mut m, "arguments", field(item, "arguments"));
    put(&mut m, "status", field(item, "status"));
    put(&mut m, "caller", caller_to_api(item.get("caller")));
    if let Some(ns) = item.get("namespace").filter(|n| n.is_string()) {
        m.insert("namespace".into(), ns.clone());
    }
    m.extend(extra_provider_data(
        item.get("providerData"),
        &[
            "id",
            "type",
            "name",
            "call_id",
            "arguments",
            "status",
            "namespace",
            "caller",
        ],
    ));
    without_placeholder_id(m)
}

fn function_result_to_api(item: &Value) -> Result<Map<String, Value>, Unsupported> {
    let mut m = Map::new();
    m.insert("type".into(), json!("function_call_output"));
    put(&mut m, "id", field(item, "id"));
    put(&mut m, "call_id", call_id_field(item));
    m.insert("output".into(), tool_output_to_api(item.get("output"))?);
    put(&mut m, "status", field(item, "status"));
    put(&mut m, "caller", caller_to_api(item.get("caller")));
    m.extend(extra_provider_data(
        item.get("providerData"),
        &[
            "type",
            "id",
            "call_id",
            "output",
            "status",
            "namespace",
            "caller",
        ],
    ));
    Ok(m)
}

/// A tool's output as the API takes it: text, or an array of `input_text`, `input_image` and
/// `input_file` parts.
fn tool_output_to_api(output: Option<&Value>) -> Result<Value, Unsupported> {
    match output {
        Some(s @ Value::String(_)) => Ok(s.clone()),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(structured_part_to_api)
            .collect::<Result<_, _>>()
            .map(Value::Array),
        Some(o @ Value::Object(_)) => match (str_of(o, "type"), o.get("text")) {
            (Some("text"), Some(t @ Value::String(_))) => Ok(t.clone()),
            (Some("image" | "file"), _) => Ok(json!([structured_part_to_api(
                &legacy_output_to_structured(o)
            )?])),
            _ => Ok(json!(o.to_string())),
        },
        other => Ok(json!(js_string(other).unwrap_or_default())),
    }
}

/// A tool output of the older `{ type: 'image' }` / `{ type: 'file' }` kinds as the
/// `input_image` / `input_file` part that stands for it.
fn legacy_output_to_structured(output: &Value) -> Value {
    let media_type = |v: &Value| {
        nonempty_str(v, "mediaType")
            .or_else(|| nonempty_str(v, "mimeType"))
            .map(str::to_string)
    };
    let mut m = Map::new();
    if str_of(output, "type") == Some("image") {
        m.insert("type".into(), json!("input_image"));
        if truthy(output.get("detail")) {
            put(&mut m, "detail", field(output, "detail"));
        }
        let top_media_type = media_type(output);
        let image = match output.get("image") {
            Some(Value::String(s)) if !s.is_empty() => Some(json!(s)),
            Some(obj @ (Value::Object(_) | Value::Array(_))) => {
                let mt = media_type(obj).or_else(|| top_media_type.clone());
                if let Some(url) = nonempty_str(obj, "url") {
                    Some(json!(url))
                } else if let Some(data) = nonempty_str(obj, "data") {
                    Some(json!(inline_data(data, mt.as_deref())))
                } else {
                    nonempty_str(obj, "fileId")
                        .or_else(|| nonempty_str(obj, "id"))
                        .map(|id| json!({"id": id}))
                }
            }
            _ => {
                if let Some(url) = nonempty_str(output, "imageUrl") {
                    Some(json!(url))
                } else if let Some(id) = nonempty_str(output, "fileId") {
                    Some(json!({"id": id}))
                } else {
                    nonempty_str(output, "data")
                        .map(|d| json!(inline_data(d, top_media_type.as_deref())))
                }
            }
        };
        put(&mut m, "image", image);
        return Value::Object(m);
    }
    m.insert("type".into(), json!("input_file"));
    let text_or = |v: &Value| -> Option<String> {
        match v.get("mediaType") {
            None | Some(Value::Null) => Some("text/plain".into()),
            other => js_string(other),
        }
    };
    match output.get("file") {
        Some(Value::String(s)) => {
            m.insert("file".into(), json!(s));
        }
        Some(file @ (Value::Object(_) | Value::Array(_))) => {
            let file_value = if let Some(data) = nonempty_str(file, "data") {
                Some(json!(inline_data(data, text_or(file).as_deref())))
            } else if let Some(url) = nonempty_str(file, "url") {
                Some(json!({"url": url}))
            } else {
                nonempty_str(file, "id")
                    .or_else(|| nonempty_str(file, "fileId"))
                    .map(|id| json!({"id": id}))
            };
            put(&mut m, "file", file_value);
            if let Some(name) = nonempty_str(file, "filename") {
                m.insert("filename".into(), json!(name));
            }
        }
        _ => {}
    }
    if !truthy(m.get("file")) {
        let filename = nonempty_str(output, "filename");
        let legacy = if let Some(id) =
            nonempty_str(output, "id").or_else(|| nonempty_str(output, "fileId"))
        {
            Some(json!({"id": id}))
        } else if let Some(url) = nonempty_str(output, "fileUrl") {
            Some(json!({"url": url}))
        } else {
            nonempty_str(output, "fileData")
                .map(|d| json!(inline_data(d, text_or(output).as_deref())))
        };
        if let Some(file) = legacy {
            m.insert("file".into(), file);
            if let Some(name) = filename {
                m.insert("filename".into(), json!(name));
            }
        }
    }
    Value::Object(m)
}

/// One `input_*` part of a tool's output, in the API's field names.
fn structured_part_to_api(part: &Value) -> Result<Value, Unsupported> {
    let mut m = Map::new();
    match str_of(part, "type") {
        Some("input_text") => {
            m.insert("type".into(), json!("input_text"));
            put(&mut m, "text", field(part, "text"));
        }
        Some("input_image") => {
            m.insert("type".into(), json!("input_image"));
            match part
                .get("image")
                .filter(|v| !v.is_null())
                .or_else(|| part.get("imageUrl"))
            {
                Some(Value::String(url)) => {
                    m.insert("image_url".into(), json!(url));
                }
                Some(image) => {
                    if let Some(id) = str_of(image, "id") {
                        m.insert("file_id".into(), json!(id));
                    }
                }
                None => {}
            }
            if let Some(id) = str_of(part, "fileId") {
                m.insert("file_id".into(), json!(id));
            }
            if truthy(part.get("detail")) {
                put(&mut m, "detail", field(part, "detail"));
            }
        }
        Some("input_file") => {
            m.insert("type".into(), json!("input_file"));
            match part.get("file") {
                Some(Value::String(file)) => {
                    // A string is data or a URL; an uploaded file's id comes as { id }.
                    let value = file.trim();
                    let key = if value.starts_with("data:") {
                        "file_data"
                    } else if value.starts_with("http://") || value.starts_with("https://") {
                        "file_url"
                    } else if is_base64(value) {
                        "file_data"
                    } else {
                        "file_url"
                    };
                    m.insert(key.into(), json!(value));
                }
                Some(file @ Value::Object(_)) => {
                    if let Some(id) = str_of(file, "id") {
                        m.insert("file_id".into(), json!(id));
                    } else if let Some(url) = str_of(file, "url") {
                        m.insert("file_url".into(), json!(url));
                    }
                }
                _ => {}
            }
            for (legacy, key) in [
                ("fileData", "file_data"),
                ("fileUrl", "file_url"),
                ("fileId", "file_id"),
            ] {
                if let Some(v) = str_of(part, legacy) {
                    m.insert(key.into(), json!(v));
                }
            }
            if truthy(part.get("filename")) {
                put(&mut m, "filename", field(part, "filename"));
            }
        }
        _ => {
            return Err(Unsupported::new(format!(
                "a tool output part of type {}",
                named(part)
            )))
        }
    }
    Ok(Value::Object(m))
}

fn reasoning_to_api(item: &Value) -> Result<Map<String, Value>, Unsupported> {
    let pd = item.get("providerData");
    let summary = match (item.get("content"), item.get("summary")) {
        (Some(Value::Array(parts)), _) => Value::Array(
            parts
                .iter()
                .map(|p| {
                    if !p.is_object() {
                        return Err(Unsupported::new(
                            "a reasoning item with a content part that is not an object",
                        ));
                    }
                    let mut s = Map::new();
                    s.insert("type".into(), json!("summary_text"));
                    put(&mut s, "text", field(p, "text"));
                    s.extend(extra_provider_data(
                        p.get("providerData"),
                        &["type", "text"],
                    ));
                    Ok(Value::Object(s))
                })
                .collect::<Result<_, _>>()?,
        ),
        // A reasoning item kept in the API's own shape.
        (None, Some(summary @ Value::Array(_))) => summary.clone(),
        _ => return Err(Unsupported::new("a reasoning item without a content array")),
    };
    let mut m = Map::new();
    put(&mut m, "id", field(item, "id"));
    m.insert("type".into(), json!("reasoning"));
    m.insert("summary".into(), summary);
    let encrypted = provider_field(pd, &["encryptedContent", "encrypted_content"])
        .or_else(|| item.get("encrypted_content"))
        .filter(|e| e.is_string());
    put(&mut m, "encrypted_content", encrypted.cloned());
    m.extend(extra_provider_data(
        pd,
        &["id", "type", "summary", "encrypted_content"],
    ));
    Ok(m)
}

fn computer_call_to_api(item: &Value) -> Map<String, Value> {
    let pd = item.get("providerData");
    let mut m = Map::new();
    m.insert("type".into(), json!("computer_call"));
    put(&mut m, "call_id", call_id_field(item));
    put(&mut m, "id", field(item, "id"));
    put(&mut m, "status", field(item, "status"));
    // The API refuses an empty list of pending safety checks on a call sent back.
    if let Some(checks) = provider_field(pd, &["pendingSafetyChecks", "pending_safety_checks"])
        .filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
    {
        m.insert("pending_safety_checks".into(), checks.clone());
    }
    match item
        .get("actions")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
    {
        Some(actions) => {
            let action = defined(item, "action").unwrap_or_else(|| actions[0].clone());
            m.insert("action".into(), action);
            m.insert("actions".into(), Value::Array(actions.clone()));
        }
        None if truthy(item.get("action")) => {
            put(&mut m, "action", field(item, "action"));
        }
        None => {}
    }
    m.extend(extra_provider_data(
        pd,
        &[
            "type",
            "call_id",
            "id",
            "action",
            "actions",
            "status",
            "pending_safety_checks",
        ],
    ));
    m
}

fn computer_result_to_api(item: &Value) -> Result<Map<String, Value>, Unsupported> {
    let pd = item.get("providerData");
    let Some(output) = item.get("output").filter(|o| !o.is_null()) else {
        return Err(Unsupported::new("a computer_call_result without output"));
    };
    let mut m = Map::new();
    m.insert("type".into(), json!("computer_call_output"));
    put(&mut m, "id", field(item, "id"));
    put(&mut m, "call_id", call_id_field(item));
    // The only output the API has for a computer call is a screenshot.
    let mut screenshot = Map::new();
    screenshot.insert("type".into(), json!("computer_screenshot"));
    put(&mut screenshot, "image_url", field(output, "data"));
    m.insert("output".into(), Value::Object(screenshot));
    put(&mut m, "status", pd.and_then(|p| field(p, "status")));
    if let Some(checks) = provider_field(
        pd,
        &["acknowledgedSafetyChecks", "acknowledged_safety_checks"],
    )
    .filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
    {
        m.insert("acknowledged_safety_checks".into(), checks.clone());
    }
    m.extend(extra_provider_data(
        pd,
        &[
            "type",
            "id",
            "call_id",
            "output",
            "status",
            "acknowledged_safety_checks",
        ],
    ));
    Ok(m)
}

/// The first of two spellings an item has a number in.
fn number_in(v: &Value, camel: &str, snake: &str) -> Option<Value> {
    v.get(camel)
        .filter(|n| n.is_number())
        .or_else(|| v.get(snake).filter(|n| n.is_number()))
        .cloned()
}

fn shell_call_to_api(item: &Value) -> Result<Map<String, Value>, Unsupported> {
    let Some(action) = item.get("action").filter(|a| !a.is_null()) else {
        return Err(Unsupported::new("a shell_call without an action"));
    };
    let mut a = Map::new();
    put(&mut a, "commands", field(action, "commands"));
    a.insert(
        "timeout_ms".into(),
        number_in(action, "timeoutMs", "timeout_ms").unwrap_or(Value::Null),
    );
    a.insert(
        "max_output_length".into(),
        number_in(action, "maxOutputLength", "max_output_length").unwrap_or(Value::Null),
    );
    let mut m = Map::new();
    m.insert("type".into(), json!("shell_call"));
    put(&mut m, "id", field(item, "id"));
    put(&mut m, "call_id", call_id_field(item));
    m.insert(
        "status".into(),
        defined(item, "status").unwrap_or(json!("in_progress")),
    );
    m.insert("action".into(), Value::Object(a));
    put(&mut m, "caller", caller_to_api(item.get("caller")));
    // Of providerData, the API takes back only the environment the call ran in.
    if let Some(env) = item.get("providerData").map(snake_case).and_then(|pd| {
        pd.get("environment")
            .filter(|e| e.is_object() || e.is_array())
            .cloned()
    }) {
        m.insert("environment".into(), env);
    }
    Ok(m)
}

fn shell_output_to_api(item: &Value) -> Result<Map<String, Value>, Unsupported> {
    let Some(outputs) = item.get("output").and_then(Value::as_array) else {
        return Err(Unsupported::new(
            "a shell_call_output without an output array",
        ));
    };
    let outputs: Vec<Value> = outputs
        .iter()
        .map(|entry| {
            let text = |key| {
                entry
                    .get(key)
                    .filter(|s| s.is_string())
                    .cloned()
                    .unwrap_or(json!(""))
            };
            let outcome = entry.get("outcome");
            let outcome = match outcome.and_then(|o| str_of(o, "type")) {
                Some("timeout") => json!({"type": "timeout"}),
                kind => {
                    let code = outcome
                        .filter(|_| kind == Some("exit"))
                        .and_then(|o| defined(o, "exitCode").or_else(|| defined(o, "exit_code")))
                        .unwrap_or(json!(0));
                    json!({"type": "exit", "exit_code": code})
                }
            };
            json!({"stdout": text("stdout"), "stderr": text("stderr"), "outcome": outcome})
        })
        .collect();
    let mut m = Map::new();
    m.insert("type".into(), json!("shell_call_output"));
    put(&mut m, "call_id", call_id_field(item));
    m.insert("output".into(), Value::Array(outputs));
    put(&mut m, "id", defined(item, "id"));
    put(&mut m, "status", defined(item, "status"));
    put(&mut m, "caller", caller_to_api(item.get("caller")));
    put(
        &mut m,
        "max_output_length",
        number_in(item, "maxOutputLength", "max_output_length"),
    );
    Ok(m)
}

fn apply_patch_call_to_api(item: &Value) -> Result<Map<String, Value>, Unsupported> {
    let Some(operation) = item.get("operation").filter(|o| truthy(Some(o))) else {
        return Err(Unsupported::new("an apply_patch_call without an operation"));
    };
    let operation = match operation {
        Value::Object(op)
            if str_of(operation, "type") == Some("update_file") && op.contains_key("moveTo") =>
        {
            let mut op = op.clone();
            if let Some(to) = op.remove("moveTo") {
                op.insert("move_to".into(), to);
            }
            Value::Object(op)
        }
        other => other.clone(),
    };
    let mut m = Map::new();
    m.insert("type".into(), json!("apply_patch_call"));
    put(&mut m, "id", defined(item, "id"));
    put(&mut m, "call_id", call_id_field(item));
    m.insert(
        "status".into(),
        defined(item, "status").unwrap_or(json!("in_progress")),
    );
    m.insert("operation".into(), operation);
    put(&mut m, "caller", caller_to_api(item.get("caller")));
    Ok(m)
}

fn apply_patch_output_to_api(item: &Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), json!("apply_patch_call_output"));
    put(&mut m, "id", defined(item, "id"));
    put(&mut m, "call_id", call_id_field(item));
    m.insert(
        "status".into(),
        defined(item, "status").unwrap_or(json!("completed")),
    );
    put(&mut m, "output", defined(item, "output"));
    put(&mut m, "caller", caller_to_api(item.get("caller")));
    m
}

/// `status` of a hosted tool call, checked against the values the API has for its kind;
/// missing, it is the kind's default.
fn hosted_status(item: &Value, allowed: &[&str], default: &str) -> Result<Value, Unsupported> {
    match item.get("status") {
        None | Some(Value::Null) => Ok(json!(default)),
        Some(Value::String(s)) if allowed.contains(&s.as_str()) => Ok(json!(s)),
        Some(other) => Err(Unsupported::new(format!(
            "a {} with status {other} (expected one of {})",
            str_of(item, "name").unwrap_or("hosted tool call"),
            allowed.join(", ")
        ))),
    }
}

/// A `hosted_tool_call` as the API's item of its kind, rebuilt from the providerData it keeps.
fn hosted_call_to_api(item: &Value) -> Result<Map<String, Value>, Unsupported> {
    let pd = item.get("providerData").filter(|p| p.is_object());
    let pd_field = |key: &str| pd.and_then(|p| field(p, key));
    let snaked = || match pd.map(snake_case) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let caller = caller_to_api(item.get("caller"));
    let kind = pd.and_then(|p| str_of(p, "type"));
    let name = str_of(item, "name");
    let mut m = snaked();
    match kind {
        Some("web_search_call" | "web_search") => {
            let action = m.get("action");
            let valid = action.is_some_and(|a| a.is_object() && str_of(a, "type").is_some());
            if action.is_some() && !valid {
                return Err(Unsupported::new(
                    "a web_search_call whose action is not an object with a type",
                ));
            }
            m.insert("type".into(), json!("web_search_call"));
            put(&mut m, "id", field(item, "id"));
            m.insert(
                "status".into(),
                hosted_status(
                    item,
                    &["in_progress", "completed", "searching", "failed"],
                    "failed",
                )?,
            );
        }
        Some("file_search_call" | "file_search") => {
            m.insert("type".into(), json!("file_search_call"));
            put(&mut m, "id", field(item, "id"));
            m.insert(
                "status".into(),
                hosted_status(
                    item,
                    &[
                        "in_progress",
                        "completed",
                        "searching",
                        "failed",
                        "incomplete",
                    ],
                    "failed",
                )?,
            );
            m.insert(
                "queries".into(),
                pd.and_then(|p| defined(p, "queries")).unwrap_or(json!([])),
            );
            put(&mut m, "results", pd_field("results"));
        }
        Some("code_interpreter_call" | "code_interpreter") => {
            m.insert("type".into(), json!("code_interpreter_call"));
            put(&mut m, "id", field(item, "id"));
            m.insert(
                "code".into(),
                pd.and_then(|p| defined(p, "code")).unwrap_or(json!("")),
            );
            let outputs = pd.and_then(|p| defined(p, "outputs").or_else(|| defined(p, "results")));
            m.insert("outputs".into(), outputs.unwrap_or(json!([])));
            m.insert(
                "status".into(),
                hosted_status(
                    item,
                    &["in_progress", "completed", "interpreting"],
                    "in_progress",
                )?,
            );
            put(&mut m, "container_id", pd_field("container_id"));
            put(&mut m, "caller", caller);
        }
        Some("image_generation_call" | "image_generation") => {
            m.insert("type".into(), json!("image_generation_call"));
            put(&mut m, "id", field(item, "id"));
            m.insert(
                "result".into(),
                pd.and_then(|p| defined(p, "result")).unwrap_or(Value::Null),
            );
            m.insert(
                "status".into(),
                hosted_status(
                    item,
                    &["in_progress", "completed", "generating", "failed"],
                    "failed",
                )?,
            );
        }
        _ if kind == Some("mcp_list_tools") || name == Some("mcp_list_tools") => {
            let Some(p) = pd else {
                return Err(Unsupported::new(
                    "an mcp_list_tools call without providerData",
                ));
            };
            m.insert("type".into(), json!("mcp_list_tools"));
            put(&mut m, "id", field(item, "id"));
            put(&mut m, "tools", p.get("tools").map(snake_case));
            put(&mut m, "server_label", field(p, "server_label"));
            put(&mut m, "error", field(p, "error"));
            put(&mut m, "caller", caller);
        }
        _ if kind == Some("mcp_approval_request") || name == Some("mcp_approval_request") => {
            let Some(p) = pd else {
                return Err(Unsupported::new(
                    "an mcp_approval_request without providerData",
                ));
            };
            m.insert("type".into(), json!("mcp_approval_request"));
            put(&mut m, "id", defined(p, "id").or_else(|| field(item, "id")));
            for key in ["name", "arguments", "server_label"] {
                put(&mut m, key, field(p, key));
            }
            put(&mut m, "caller", caller);
        }
        _ if kind == Some("mcp_approval_response") || name == Some("mcp_approval_response") => {
            let Some(p) = pd else {
                return Err(Unsupported::new(
                    "an mcp_approval_response without providerData",
                ));
            };
            m.insert("type".into(), json!("mcp_approval_response"));
            for key in ["id", "approve", "approval_request_id", "reason"] {
                put(&mut m, key, field(p, key));
            }
            put(&mut m, "caller", caller);
        }
        _ if kind == Some("mcp_call") || name == Some("mcp_call") => {
            let Some(p) = pd else {
                return Err(Unsupported::new("an mcp_call without providerData"));
            };
            m.insert("type".into(), json!("mcp_call"));
            put(&mut m, "id", defined(p, "id").or_else(|| field(item, "id")));
            for key in ["name", "arguments", "server_label", "error"] {
                put(&mut m, key, field(p, key));
            }
            put(&mut m, "caller", caller);
        }
        _ => {
            return Err(Unsupported::new(format!(
                "a hosted tool call of kind {}",
                kind.or(name).unwrap_or("(none)")
            )))
        }
    }
    Ok(m)
}

fn compaction_to_api(item: &Value) -> Result<Map<String, Value>, Unsupported> {
    let encrypted = defined(item, "encrypted_content").or_else(|| field(item, "encryptedContent"));
    let id = defined(item, "id");
    if !encrypted.as_ref().is_some_and(Value::is_string)
        || id.as_ref().is_some_and(|i| !i.is_string())
    {
        return Err(Unsupported::new(
            "a compaction item without encrypted_content",
        ));
    }
    let mut m = Map::new();
    m.insert("type".into(), json!("compaction"));
    put(&mut m, "id", id);
    put(&mut m, "encrypted_content", encrypted);
    Ok(m)
}

/// The call id of a tool search item: the provider's, else the item's own.
fn tool_search_call_id(item: &Value) -> Option<Value> {
    let pd = item.get("providerData").filter(|p| truthy(Some(p)));
    let provider = pd.and_then(|p| defined(p, "call_id").or_else(|| field(p, "callId")));
    provider
        .filter(|c| c.as_str().is_some_and(|s| !s.is_empty()))
        .or_else(|| nonempty_str(item, "call_id").map(|s| json!(s)))
        .or_else(|| nonempty_str(item, "callId").map(|s| json!(s)))
}

fn tool_search_execution(item: &Value) -> Option<Value> {
    let is_kind = |v: Option<&str>| matches!(v, Some("client" | "server"));
    if is_kind(str_of(item, "execution")) {
        return field(item, "execution");
    }
    let pd = item.get("providerData").filter(|p| truthy(Some(p)))?;
    is_kind(str_of(pd, "execution")).then(|| json!(str_of(pd, "execution")))
}

fn tool_search_status(item: &Value) -> Option<Value> {
    matches!(
        str_of(item, "status"),
        Some("in_progress" | "completed" | "incomplete")
    )
    .then(|| field(item, "status"))
    .flatten()
}

/// A tool a tool search found, in the API's field names.
fn found_tool_to_api(tool: &Value) -> Value {
    let Some(t) = tool.as_object() else {
        return tool.clone();
    };
    match (
        str_of(tool, "type"),
        tool.get("functionName"),
        tool.get("tools"),
    ) {
        (Some("tool_reference"), Some(Value::String(name)), _) => {
            let mut m = Map::new();
            m.insert("type".into(), json!("tool_reference"));
            m.insert("function_name".into(), json!(name));
            if let Some(ns) = tool.get("namespace").filter(|n| n.is_string()) {
                m.insert("namespace".into(), ns.clone());
            }
            Value::Object(m)
        }
        (Some("namespace"), _, Some(Value::Array(tools))) => {
            let mut m = t.clone();
            m.insert(
                "tools".into(),
                tools.iter().map(found_tool_to_api).collect(),
            );
            Value::Object(m)
        }
        (Some("function"), _, _) => {
            let mut m = t.clone();
            let defer = m.remove("deferLoading");
            let callers = m.remove("allowedCallers");
            let schema = m.remove("outputSchema");
            put(&mut m, "defer_loading", defer.filter(Value::is_boolean));
            put(&mut m, "allowed_callers", callers.filter(Value::is_array));
            put(
                &mut m,
                "output_schema",
                schema.filter(|s| s.is_object() || s.is_array()),
            );
            Value::Object(m)
        }
        _ => tool.clone(),
    }
}

fn tool_search_to_api(item: &Value) -> Result<Map<String, Value>, Unsupported> {
    let output = str_of(item, "type") == Some("tool_search_output");
    let mut m = Map::new();
    m.insert(
        "type".into(),
        json!(if output {
            "tool_search_output"
        } else {
            "tool_search_call"
        }),
    );
    put(&mut m, "id", field(item, "id"));
    put(&mut m, "status", tool_search_status(item));
    if output {
        let Some(tools) = item.get("tools").and_then(Value::as_array) else {
            return Err(Unsupported::new(
                "a tool_search_output without a tools array",
            ));
        };
        m.insert(
            "tools".into(),
            tools.iter().map(found_tool_to_api).collect(),
        );
    } else {
        put(&mut m, "arguments", field(item, "arguments"));
    }
    put(&mut m, "call_id", tool_search_call_id(item));
    put(&mut m, "execution", tool_search_execution(item));
    m.extend(extra_provider_data(
        item.get("providerData"),
        &[
            "type",
            "id",
            "status",
            if output { "tools" } else { "arguments" },
            "call_id",
            "execution",
        ],
    ));
    Ok(m)
}

fn program_to_api(item: &Value) -> Map<String, Value> {
    let mut m = Map::new();
    put(&mut m, "id", field(item, "id"));
    put(&mut m, "call_id", call_id_field(item));
    let reserved: &[&str] = if str_of(item, "type") == Some("program") {
        m.insert("type".into(), json!("program"));
        put(&mut m, "code", field(item, "code"));
        put(&mut m, "fingerprint", field(item, "fingerprint"));
        &["type", "id", "call_id", "code", "fingerprint"]
    } else {
        m.insert("type".into(), json!("program_output"));
        put(&mut m, "result", field(item, "output"));
        put(&mut m, "status", field(item, "status"));
        &["type", "id", "call_id", "output", "result", "status"]
    };
    m.extend(extra_provider_data(item.get("providerData"), reserved));
    m
}

/// An item the SDK could not type: the API's item it came as, which providerData holds.
fn unknown_to_api(item: &Value) -> Map<String, Value> {
    let mut m = match item.get("providerData").map(snake_case) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    put(&mut m, "id", field(item, "id"));
    m
}

// --------------------------------------------------------------------------------------------
// A Responses API output item as a session item.
// --------------------------------------------------------------------------------------------

/// A Responses-API output item as a session item, as the SDK keeps it: `callId`, the SDK's
/// types (`function_call_result`, `hosted_tool_call`), and the fields the session item has no
/// place for in its `providerData`. An item the SDK cannot read (it throws on it) is kept whole
/// as the SDK keeps items of kinds it does not know, `{ type: 'unknown', id, providerData }`,
/// which goes back to the API as it came.
pub fn from_responses_item(item: &Value) -> Value {
    output_item(item).unwrap_or_else(|_| unknown_item(item))
}

pub(super) fn unknown_item(item: &Value) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), json!("unknown"));
    put(&mut m, "id", field(item, "id"));
    m.insert("providerData".into(), item.clone());
    Value::Object(m)
}

/// The fields of `item` but `keys`, which the session item has fields for.
fn rest_of(item: &Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    item.iter()
        .filter(|(k, _)| !keys.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// `caller` in the SDK's spelling; `None` for one it does not know.
fn caller_from_api(caller: Option<&Value>) -> Option<Value> {
    let c = caller.filter(|c| c.is_object() || c.is_array())?;
    match (str_of(c, "type"), str_of(c, "caller_id")) {
        (Some("direct"), _) => Some(json!({"type": "direct"})),
        (Some("program"), Some(id)) => Some(json!({"type": "program", "callerId": id})),
        _ => None,
    }
}

/// The SDK's conversion of one output item; an error where the SDK throws.
pub(super) fn output_item(item: &Value) -> Result<Value, Unsupported> {
    let Some(obj) = item.as_object() else {
        return Err(Unsupported::new("an item that is not an object"));
    };
    let t = str_of(item, "type").unwrap_or("");
    let m = match t {
        "message" => message_from_api(item, obj)?,
        "tool_search_call" | "tool_search_output" => tool_search_from_api(item, obj, t)?,
        "program" => program_from_api(item, obj)?,
        "program_output" => program_output_from_api(item, obj)?,
        "file_search_call"
        | "web_search_call"
        | "image_generation_call"
        | "code_interpreter_call" => builtin_call_from_api(item, obj, t)?,
        "mcp_list_tools" | "mcp_approval_request" | "mcp_call" => mcp_item_from_api(item, obj, t)?,
        "function_call" => function_call_from_api(item, obj)?,
        "function_call_output" => function_output_from_api(item, obj)?,
        "computer_call" => computer_call_from_api(item, obj)?,
        "shell_call" => shell_call_from_api(item, obj)?,
        "shell_call_output" => shell_output_from_api(item, obj)?,
        "apply_patch_call" => apply_patch_call_from_api(item, obj)?,
        "apply_patch_call_output" => apply_patch_output_from_api(item, obj)?,
        "reasoning" => reasoning_from_api(item, obj)?,
        "compaction" => compaction_from_api(item, obj)?,
        _ => return Ok(unknown_item(item)),
    };
    Ok(Value::Object(m))
}

fn message_from_api(
    item: &Value,
    obj: &Map<String, Value>,
) -> Result<Map<String, Value>, Unsupported> {
    let mut m = Map::new();
    let Some(parts) = item.get("content").and_then(Value::as_array) else {
        return Err(Unsupported::new("a message without a content array"));
    };
    let content = parts
        .iter()
        .map(output_part_from_api)
        .collect::<Result<Vec<_>, _>>()?;
    let phase = item
        .get("phase")
        .filter(|p| matches!(p.as_str(), Some("commentary" | "final_answer")));
    let mut pd = rest_of(obj, &["id", "type", "role", "content", "status", "phase"]);
    put(&mut pd, "phase", phase.cloned());
    put(&mut m, "id", field(item, "id"));
    m.insert("type".into(), json!("message"));
    put(&mut m, "role", field(item, "role"));
    m.insert("content".into(), Value::Array(content));
    put(&mut m, "status", field(item, "status"));
    put(&mut m, "phase", phase.cloned());
    m.insert("providerData".into(), Value::Object(pd));
    Ok(m)
}

fn tool_search_from_api(
    item: &Value,
    obj: &Map<String, Value>,
    t: &str,
) -> Result<Map<String, Value>, Unsupported> {
    let mut m = Map::new();
    m.insert("type".into(), json!(t));
    put(&mut m, "id", field(item, "id"));
    put(&mut m, "status", field(item, "status"));
    let own = if t == "tool_search_call" {
        put(&mut m, "arguments", field(item, "arguments"));
        "arguments"
    } else {
        let tools = match item.get("tools") {
            Some(Value::Array(tools)) => tools.iter().map(found_tool_from_api).collect(),
            _ => json!([]),
        };
        m.insert("tools".into(), tools);
        "tools"
    };
    m.insert(
        "providerData".into(),
        Value::Object(rest_of(obj, &["id", "type", "status", own])),
    );
    Ok(m)
}

fn program_from_api(
    item: &Value,
    obj: &Map<String, Value>,
) -> Result<Map<String, Value>, Unsupported> {
    let mut m = Map::new();
    m.insert("type".into(), json!("program"));
    put(&mut m, "id", field(item, "id"));
    put(&mut m, "callId", field(item, "call_id"));
    put(&mut m, "code", field(item, "code"));
    put(&mut m, "fingerprint", field(item, "fingerprint"));
    m.insert(
        "providerData".into(),
        Value::Object(rest_of(
            obj,
            &["id", "call_id", "code", "fingerprint", "type"],
        )),
    );
    Ok(m)
}

fn program_output_from_api(
    item: &Value,
    obj: &Map<String, Value>,
) -> Result<Map<String, Value>, Unsupported> {
    let mut m = Map::new();
    m.insert("type".into(), json!("program_output"));
    put(&mut m, "id", field(item, "id"));
    put(&mut m, "callId", field(item, "call_id"));
    put(&mut m, "output", field(item, "result"));
    put(&mut m, "status", field(item, "status"));
    m.insert(
        "providerData".into(),
        Value::Object(rest_of(obj, &["id", "call_id", "result", "status", "type"])),
    );
    Ok(m)
}

fn builtin_call_from_api(
    item: &Value,
    obj: &Map<String, Value>,
    t: &str,
) -> Result<Map<String, Value>, Unsupported> {
    let mut m = Map::new();
    let mut pd = rest_of(obj, &["status"]);
    let caller = caller_from_api(pd.get("caller"));
    if caller.is_some() {
        pd.remove("caller");
    }
    // An image generation's image is its output; kept once, not also in providerData.
    let output = match pd.get("result") {
        Some(r) if !r.is_null() => pd.remove("result"),
        _ => None,
    };
    hosted_call(&mut m, item, t, field(item, "status"), output, caller, pd);
    Ok(m)
}

fn mcp_item_from_api(
    item: &Value,
    obj: &Map<String, Value>,
    t: &str,
) -> Result<Map<String, Value>, Unsupported> {
    let mut m = Map::new();
    let mut pd = obj.clone();
    let output = if t == "mcp_call" {
        pd.remove("output").filter(|o| !o.is_null())
    } else {
        None
    };
    let caller = caller_from_api(pd.get("caller"));
    if caller.is_some() {
        pd.remove("caller");
    }
    hosted_call(
        &mut m,
        item,
        t,
        Some(json!("completed")),
        output,
        caller,
        pd,
    );
    Ok(m)
}

fn function_call_from_api(
    item: &Value,
    obj: &Map<String, Value>,
) -> Result<Map<String, Value>, Unsupported> {
    let mut m = Map::new();
    m.insert("type".into(), json!("function_call"));
    put(&mut m, "id", field(item, "id"));
    put(&mut m, "callId", field(item, "call_id"));
    put(&mut m, "name", field(item, "name"));
    if let Some(ns) = item.get("namespace").filter(|n| n.is_string()) {
        m.insert("namespace".into(), ns.clone());
    }
    put(&mut m, "status", field(item, "status"));
    put(&mut m, "arguments", field(item, "arguments"));
    if truthy(item.get("caller")) {
        put(&mut m, "caller", caller_from_api(item.get("caller")));
    }
    m.insert(
        "providerData".into(),
        Value::Object(rest_of(
            obj,
            &[
                "call_id",
                "name",
                "namespace",
                "caller",
                "status",
                "arguments",
            ],
        )),
    );
    Ok(m)
}

fn function_output_from_api(
    item: &Value,
    obj: &Map<String, Value>,
) -> Result<Map<String, Value>, Unsupported> {
    let mut m = Map::new();
    m.insert("type".into(), json!("function_call_result"));
    put(&mut m, "id", field(item, "id"));
    put(&mut m, "callId", field(item, "call_id"));
    let name = defined(item, "name")
        .or_else(|| defined(item, "function_name"))
        .or_else(|| field(item, "call_id"));
    put(&mut m, "name", name);
    if let Some(ns) = item.get("namespace").filter(|n| n.is_string()) {
        m.insert("namespace".into(), ns.clone());
    }
    m.insert(
        "status".into(),
        defined(item, "status").unwrap_or(json!("completed")),
    );
    m.insert("output".into(), tool_output_from_api(item.get("output"))?);
    if truthy(item.get("caller")) {
        put(&mut m, "caller", caller_from_api(item.get("caller")));
    }
    m.insert(
        "providerData".into(),
        Value::Object(rest_of(
            obj,
            &[
                "call_id",
                "status",
                "output",
                "name",
                "function_name",
                "namespace",
                "caller",
            ],
        )),
    );
    Ok(m)
}

fn computer_call_from_api(
    item: &Value,
    obj: &Map<String, Value>,
) -> Result<Map<String, Value>, Unsupported> {
    let mut m = Map::new();
    let actions = item
        .get("actions")
        .filter(|a| a.as_array().is_some_and(|a| !a.is_empty()));
    let action = item.get("action");
    if actions.is_none() && !truthy(action) {
        return Err(Unsupported::new(
            "a computer_call without an action or actions",
        ));
    }
    m.insert("type".into(), json!("computer_call"));
    put(&mut m, "id", field(item, "id"));
    put(&mut m, "callId", field(item, "call_id"));
    put(&mut m, "status", field(item, "status"));
    let first = actions.and_then(|a| a.get(0)).cloned();
    put(&mut m, "action", defined(item, "action").or(first));
    put(&mut m, "actions", actions.cloned());
    m.insert(
        "providerData".into(),
        Value::Object(rest_of(obj, &["call_id", "status", "action", "actions"])),
    );
    Ok(m)
}

fn shell_call_from_api(
    item: &Value,
    obj: &Map<String, Value>,
) -> Result<Map<String, Value>, Unsupported> {
    let mut m = Map::new();
    let action = item.get("action");
    let commands = action
        .and_then(|a| a.get("commands"))
        .filter(|c| c.is_array())
        .cloned()
        .unwrap_or(json!([]));
    let mut a = Map::new();
    a.insert("commands".into(), commands);
    put(
        &mut a,
        "timeoutMs",
        action
            .and_then(|a| a.get("timeout_ms"))
            .filter(|n| n.is_number())
            .cloned(),
    );
    put(
        &mut a,
        "maxOutputLength",
        action
            .and_then(|a| a.get("max_output_length"))
            .filter(|n| n.is_number())
            .cloned(),
    );
    m.insert("type".into(), json!("shell_call"));
    put(&mut m, "id", defined(item, "id"));
    put(&mut m, "callId", field(item, "call_id"));
    m.insert(
        "status".into(),
        defined(item, "status").unwrap_or(json!("in_progress")),
    );
    m.insert("action".into(), Value::Object(a));
    if truthy(item.get("caller")) {
        put(&mut m, "caller", caller_from_api(item.get("caller")));
    }
    m.insert(
        "providerData".into(),
        Value::Object(rest_of(obj, &["call_id", "status", "action", "caller"])),
    );
    Ok(m)
}

fn shell_output_from_api(
    item: &Value,
    obj: &Map<String, Value>,
) -> Result<Map<String, Value>, Unsupported> {
    let mut m = Map::new();
    let outputs = match item.get("output") {
        Some(Value::Array(entries)) => entries
            .iter()
            .map(|e| {
                let text = |key| {
                    e.get(key)
                        .filter(|s| s.is_string())
                        .cloned()
                        .unwrap_or(json!(""))
                };
                let outcome = e.get("outcome");
                let outcome = if outcome.and_then(|o| str_of(o, "type")) == Some("timeout") {
                    json!({"type": "timeout"})
                } else {
                    let code = outcome
                        .and_then(|o| o.get("exit_code"))
                        .filter(|c| c.is_number())
                        .cloned()
                        .unwrap_or(Value::Null);
                    json!({"type": "exit", "exitCode": code})
                };
                json!({"stdout": text("stdout"), "stderr": text("stderr"), "outcome": outcome})
            })
            .collect(),
        _ => Vec::new(),
    };
    m.insert("type".into(), json!("shell_call_output"));
    put(&mut m, "id", defined(item, "id"));
    put(&mut m, "callId", field(item, "call_id"));
    m.insert("output".into(), Value::Array(outputs));
    if truthy(item.get("status")) {
        put(&mut m, "status", field(item, "status"));
    }
    if truthy(item.get("caller")) {
        put(&mut m, "caller", caller_from_api(item.get("caller")));
    }
    m.insert(
        "providerData".into(),
        Value::Object(rest_of(
            obj,
            &["call_id", "output", "max_output_length", "status", "caller"],
        )),
    );
    put(
        &mut m,
        "maxOutputLength",
        item.get("max_output_length")
            .filter(|n| n.is_number())
            .cloned(),
    );
    Ok(m)
}

fn apply_patch_call_from_api(
    item: &Value,
    obj: &Map<String, Value>,
) -> Result<Map<String, Value>, Unsupported> {
    let mut m = Map::new();
    let Some(op) = item.get("operation").filter(|o| truthy(Some(o))) else {
        return Err(Unsupported::new("an apply_patch_call without an operation"));
    };
    let mut operation = Map::new();
    let kind = str_of(op, "type");
    match kind {
        Some("create_file" | "update_file" | "delete_file") => {
            operation.insert("type".into(), json!(kind));
            put(&mut operation, "path", field(op, "path"));
            if kind != Some("delete_file") {
                put(&mut operation, "diff", field(op, "diff"));
            }
        }
        _ => {
            return Err(Unsupported::new(
                "an apply_patch_call with an unknown operation",
            ))
        }
    }
    if kind == Some("update_file") {
        match op.get("move_to") {
            None | Some(Value::Null) => {}
            Some(Value::String(to)) if !to.is_empty() => {
                operation.insert("moveTo".into(), json!(to));
            }
            Some(_) => {
                return Err(Unsupported::new(
                    "an apply_patch_call whose move_to is not a non-empty string",
                ))
            }
        }
    }
    m.insert("type".into(), json!("apply_patch_call"));
    put(&mut m, "id", defined(item, "id"));
    put(&mut m, "callId", field(item, "call_id"));
    m.insert(
        "status".into(),
        defined(item, "status").unwrap_or(json!("in_progress")),
    );
    m.insert("operation".into(), Value::Object(operation));
    if truthy(item.get("caller")) {
        put(&mut m, "caller", caller_from_api(item.get("caller")));
    }
    m.insert(
        "providerData".into(),
        Value::Object(rest_of(obj, &["call_id", "status", "operation", "caller"])),
    );
    Ok(m)
}

fn apply_patch_output_from_api(
    item: &Value,
    obj: &Map<String, Value>,
) -> Result<Map<String, Value>, Unsupported> {
    let mut m = Map::new();
    m.insert("type".into(), json!("apply_patch_call_output"));
    put(&mut m, "id", defined(item, "id"));
    put(&mut m, "callId", field(item, "call_id"));
    put(&mut m, "status", field(item, "status"));
    put(
        &mut m,
        "output",
        item.get("output").filter(|o| o.is_string()).cloned(),
    );
    if truthy(item.get("caller")) {
        put(&mut m, "caller", caller_from_api(item.get("caller")));
    }
    m.insert(
        "providerData".into(),
        Value::Object(rest_of(obj, &["call_id", "status", "output", "caller"])),
    );
    Ok(m)
}

fn reasoning_from_api(
    item: &Value,
    obj: &Map<String, Value>,
) -> Result<Map<String, Value>, Unsupported> {
    let mut m = Map::new();
    let Some(summary) = item.get("summary").and_then(Value::as_array) else {
        return Err(Unsupported::new("a reasoning item without a summary array"));
    };
    let content = summary
        .iter()
        .map(|part| {
            let Some(p) = part.as_object() else {
                return Err(Unsupported::new(
                    "a reasoning summary part that is not an object",
                ));
            };
            let mut c = Map::new();
            c.insert("type".into(), json!("input_text"));
            put(&mut c, "text", field(part, "text"));
            c.insert("providerData".into(), Value::Object(rest_of(p, &["text"])));
            Ok(Value::Object(c))
        })
        .collect::<Result<Vec<_>, _>>()?;
    m.insert("type".into(), json!("reasoning"));
    put(&mut m, "id", field(item, "id"));
    m.insert("content".into(), Value::Array(content));
    m.insert(
        "providerData".into(),
        Value::Object(rest_of(obj, &["summary"])),
    );
    Ok(m)
}

fn compaction_from_api(
    item: &Value,
    obj: &Map<String, Value>,
) -> Result<Map<String, Value>, Unsupported> {
    let mut m = Map::new();
    let encrypted = field(item, "encrypted_content");
    let created_by = field(item, "created_by");
    let id = defined(item, "id");
    let valid = encrypted.as_ref().is_some_and(Value::is_string)
        && id.as_ref().is_none_or(Value::is_string)
        && created_by.as_ref().is_none_or(Value::is_string);
    if !valid {
        return Err(Unsupported::new(
            "a compaction item without encrypted_content",
        ));
    }
    m.insert("type".into(), json!("compaction"));
    put(&mut m, "id", id);
    put(&mut m, "encrypted_content", encrypted);
    put(&mut m, "created_by", created_by);
    m.insert(
        "providerData".into(),
        Value::Object(rest_of(obj, &["encrypted_content", "created_by"])),
    );
    Ok(m)
}

/// A `hosted_tool_call` session item: `name` is the API's item type, providerData the rest.
fn hosted_call(
    m: &mut Map<String, Value>,
    item: &Value,
    kind: &str,
    status: Option<Value>,
    output: Option<Value>,
    caller: Option<Value>,
    pd: Map<String, Value>,
) {
    m.insert("type".into(), json!("hosted_tool_call"));
    put(m, "id", field(item, "id"));
    m.insert("name".into(), json!(kind));
    put(m, "status", status);
    put(m, "output", output);
    put(m, "caller", caller);
    m.insert("providerData".into(), Value::Object(pd));
}

/// A part of an assistant message as the SDK keeps it: the fields it has no place for (the
/// annotations, logprobs) in providerData.
fn output_part_from_api(part: &Value) -> Result<Value, Unsupported> {
    let (kind, own) = match str_of(part, "type") {
        Some("output_text") => ("output_text", "text"),
        Some("refusal") => ("refusal", "refusal"),
        _ => {
            return Err(Unsupported::new(format!(
                "a message part of type {}",
                named(part)
            )))
        }
    };
    let mut m = Map::new();
    m.insert("type".into(), json!(kind));
    put(&mut m, own, field(part, own));
    let rest = part
        .as_object()
        .map(|p| rest_of(p, &["type", own]))
        .unwrap_or_default();
    if !rest.is_empty() {
        m.insert("providerData".into(), Value::Object(rest));
    }
    Ok(Value::Object(m))
}

/// A tool search's tool in the SDK's field names.
fn found_tool_from_api(tool: &Value) -> Value {
    let Some(t) = tool.as_object() else {
        return tool.clone();
    };
    match (
        str_of(tool, "type"),
        tool.get("function_name"),
        tool.get("tools"),
    ) {
        (Some("tool_reference"), Some(Value::String(name)), _) => {
            let mut m = Map::new();
            m.insert("type".into(), json!("tool_reference"));
            m.insert("functionName".into(), json!(name));
            if let Some(ns) = tool.get("namespace").filter(|n| n.is_string()) {
                m.insert("namespace".into(), ns.clone());
            }
            Value::Object(m)
        }
        (Some("namespace"), _, Some(Value::Array(tools))) => {
            let mut m = t.clone();
            m.insert(
                "tools".into(),
                tools.iter().map(found_tool_from_api).collect(),
            );
            Value::Object(m)
        }
        (Some("function"), _, _) => {
            let mut m = t.clone();
            let defer = m.remove("defer_loading");
            let callers = m.remove("allowed_callers");
            let schema = m.remove("output_schema");
            put(&mut m, "deferLoading", defer.filter(Value::is_boolean));
            put(&mut m, "allowedCallers", callers.filter(Value::is_array));
            put(
                &mut m,
                "outputSchema",
                schema.filter(|s| s.is_object() || s.is_array()),
            );
            Value::Object(m)
        }
        _ => tool.clone(),
    }
}

/// A tool's output as the SDK keeps it: text as it is, an array of parts in the SDK's field
/// names; anything else as no text.
fn tool_output_from_api(output: Option<&Value>) -> Result<Value, Unsupported> {
    match output {
        Some(s @ Value::String(_)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut out = Vec::with_capacity(parts.len());
            for part in parts {
                if let Some(p) = structured_part_from_api(part)? {
                    out.push(p);
                }
            }
            Ok(Value::Array(out))
        }
        _ => Ok(json!("")),
    }
}

/// One part of a tool's output in the SDK's field names; `None` for an image the API listed
/// without its URL or file id (the Conversations API may leave a data URL out), which cannot be
/// shown or sent again.
fn structured_part_from_api(part: &Value) -> Result<Option<Value>, Unsupported> {
    let mut m = Map::new();
    match str_of(part, "type") {
        Some("input_text") => {
            m.insert("type".into(), json!("input_text"));
            put(&mut m, "text", field(part, "text"));
        }
        Some("input_image") => {
            m.insert("type".into(), json!("input_image"));
            if let Some(url) = nonempty_str(part, "image_url") {
                m.insert("image".into(), json!(url));
            } else if let Some(id) = nonempty_str(part, "file_id") {
                m.insert("image".into(), json!({"id": id}));
            } else {
                return Ok(None);
            }
            if truthy(part.get("detail")) {
                put(&mut m, "detail", field(part, "detail"));
            }
        }
        Some("input_file") => {
            m.insert("type".into(), json!("input_file"));
            if let Some(id) = nonempty_str(part, "file_id") {
                m.insert("file".into(), json!({"id": id}));
            } else if let Some(url) = nonempty_str(part, "file_url") {
                m.insert("file".into(), json!({"url": url}));
            } else if let Some(data) = nonempty_str(part, "file_data") {
                m.insert("file".into(), json!(data));
            }
            if truthy(part.get("filename")) {
                put(&mut m, "filename", field(part, "filename"));
            }
        }
        _ => {
            return Err(Unsupported::new(format!(
                "a tool output part of type {}",
                named(part)
            )))
        }
    }
    Ok(Some(Value::Object(m)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SDK's own conversions of a corpus of items (see `tests/fixtures/wire/make.mjs`).
    const SDK: &str = include_str!("../../../tests/fixtures/wire/sdk-items.json");

    /// The cases of one direction: name, input, and what the SDK made of it (`Err` where it
    /// threw).
    fn sdk_cases(direction: &str) -> Vec<(String, Value, Result<Value, String>)> {
        let all: Value = serde_json::from_str(SDK).expect("the fixture is JSON");
        let cases = all[direction].as_array().expect("a list of cases").clone();
        assert!(
            cases.len() > 40,
            "{direction}: too few cases to mean anything"
        );
        cases
            .into_iter()
            .map(|c| {
                let name = c["name"].as_str().expect("a name").to_string();
                let expected = match c.get("output") {
                    Some(o) => Ok(o.clone()),
                    None => Err(c["error"].as_str().expect("an error").to_string()),
                };
                (name, c["input"].clone(), expected)
            })
            .collect()
    }

    /// Where this library sends something else than the SDK, and why (see
    /// [`responses_input_item`]); each entry must differ from the SDK, so the list cannot go
    /// stale.
    fn to_api_differences() -> Vec<(&'static str, Value)> {
        vec![
            // The SDK refuses the role; the API takes it.
            (
                "developer message",
                json!({"role": "developer", "content": "Be brief."}),
            ),
            // The SDK refuses a string content; the API takes the short form.
            (
                "assistant message, string content",
                json!({"role": "assistant", "content": "San Francisco."}),
            ),
            // Stored so by earlier versions of this library; the API's own shape.
            (
                "raw function_call_output",
                json!({"type": "function_call_output", "call_id": "call_1", "output": "Rainy"}),
            ),
            // The SDK sends "[object Object]".
            (
                "function result, object output",
                json!({"type": "function_call_output", "call_id": "call_8", "output": "{\"answer\":42}", "status": "completed"}),
            ),
        ]
    }

    fn check(failures: &mut Vec<String>, what: &str, name: &str, ours: &Value, sdk: &Value) {
        if ours != sdk {
            failures.push(format!("{what} {name}:\n  ours {ours}\n  sdk  {sdk}"));
        }
    }

    #[test]
    fn every_session_item_goes_to_the_responses_api_as_the_sdk_sends_it() {
        let differences = to_api_differences();
        let mut failures = Vec::new();
        for (name, input, sdk) in sdk_cases("toResponses") {
            let ours = responses_input_item(&input);
            if let Some((_, expected)) = differences.iter().find(|(n, _)| *n == name) {
                assert_ne!(
                    sdk.as_ref().ok(),
                    Some(expected),
                    "{name} is the SDK's output now"
                );
                check(
                    &mut failures,
                    "toResponses",
                    &name,
                    &ours.unwrap_or(Value::Null),
                    expected,
                );
                continue;
            }
            match (ours, sdk) {
                (Ok(ours), Ok(sdk)) => check(&mut failures, "toResponses", &name, &ours, &sdk),
                (Err(_), Err(_)) => {}
                (Ok(ours), Err(e)) => failures.push(format!(
                    "toResponses {name}: the SDK throws ({e}), we send {ours}"
                )),
                (Err(e), Ok(sdk)) => failures.push(format!(
                    "toResponses {name}: we refuse ({e}), the SDK sends {sdk}"
                )),
            }
            assert_eq!(to_responses_item(&input), responses_input_item(&input).ok());
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn every_response_item_is_kept_as_the_sdk_keeps_it() {
        let mut failures = Vec::new();
        for (name, input, sdk) in sdk_cases("fromResponses") {
            match (output_item(&input), sdk) {
                (Ok(ours), Ok(sdk)) => check(&mut failures, "fromResponses", &name, &ours, &sdk),
                (Err(_), Err(_)) => {
                    // What the SDK cannot read is kept whole, and goes back as it came.
                    let kept = from_responses_item(&input);
                    check(
                        &mut failures,
                        "fromResponses",
                        &name,
                        &kept,
                        &unknown_item(&input),
                    );
                    let back = responses_input_item(&kept);
                    check(
                        &mut failures,
                        "fromResponses (back)",
                        &name,
                        &back.unwrap_or(Value::Null),
                        &input,
                    );
                    continue;
                }
                (Ok(ours), Err(e)) => failures.push(format!(
                    "fromResponses {name}: the SDK throws ({e}), we keep {ours}"
                )),
                (Err(e), Ok(sdk)) => failures.push(format!(
                    "fromResponses {name}: we refuse ({e}), the SDK keeps {sdk}"
                )),
            }
            assert_eq!(Ok(from_responses_item(&input)), output_item(&input));
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn a_response_item_goes_back_to_the_api_as_the_sdk_sends_it_back() {
        let mut failures = Vec::new();
        for (name, input, sdk) in sdk_cases("roundTrip") {
            let ours = output_item(&input).and_then(|kept| responses_input_item(&kept));
            match (ours, sdk) {
                (Ok(ours), Ok(sdk)) => check(&mut failures, "roundTrip", &name, &ours, &sdk),
                (Err(_), Err(_)) => {}
                (Ok(ours), Err(e)) => failures.push(format!(
                    "roundTrip {name}: the SDK throws ({e}), we send {ours}"
                )),
                (Err(e), Ok(sdk)) => failures.push(format!(
                    "roundTrip {name}: we refuse ({e}), the SDK sends {sdk}"
                )),
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn items_in_the_api_shape_that_earlier_versions_stored_still_go_out() {
        let web_search = json!({"id": "ws_1", "type": "web_search_call", "status": "completed",
                                "action": {"type": "search", "query": "q"}, "providerData": {"x": 1}});
        assert_eq!(
            to_responses_item(&web_search),
            Some(
                json!({"id": "ws_1", "type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "q"}})
            )
        );
        let output = json!({"type": "function_call_output", "callId": "c", "output": {"type": "text", "text": "ok"}});
        assert_eq!(
            to_responses_item(&output),
            Some(json!({"type": "function_call_output", "call_id": "c", "output": "ok"}))
        );
        // A call kept in the API's spelling keeps its call id and numbers.
        let shell = json!({"type": "shell_call", "call_id": "c2", "status": "completed",
                           "action": {"commands": ["ls"], "timeout_ms": 100}});
        assert_eq!(
            to_responses_item(&shell),
            Some(
                json!({"type": "shell_call", "call_id": "c2", "status": "completed",
                        "action": {"commands": ["ls"], "timeout_ms": 100, "max_output_length": null}})
            )
        );
        let reasoning = json!({"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": "t"}], "encrypted_content": "e"});
        assert_eq!(to_responses_item(&reasoning), Some(reasoning.clone()));
    }

    #[test]
    fn a_summary_goes_out_without_its_marker() {
        let summary = crate::core::compaction::summary_item("short");
        let sent = to_responses_item(&summary).expect("a system message");
        assert_eq!(sent["role"], "system");
        assert_eq!(
            sent.as_object().map(|m| m.len()),
            Some(2),
            "role and content only: {sent}"
        );
    }

    #[test]
    fn nothing_a_user_can_store_makes_a_conversion_panic() {
        let odd = [
            json!(null),
            json!(7),
            json!("text"),
            json!([]),
            json!({}),
            json!({"type": 3}),
            json!({"role": "user"}),
            json!({"role": "user", "content": [null, 1, "x", {"type": "input_image", "image": 5}]}),
            json!({"role": "assistant", "content": [{"type": "output_text", "providerData": [1]}], "phase": null, "providerData": {"phase": null}}),
            json!({"type": "function_call_result", "output": [{"type": "input_file", "file": ""}, {"type": "input_image", "image": [1]}]}),
            json!({"type": "function_call_result", "output": {"type": "image", "image": {"data": "", "url": 3}}}),
            json!({"type": "function_call_result", "output": {"type": "file", "file": [], "mediaType": 4, "fileData": "AA"}}),
            json!({"type": "reasoning", "content": [null]}),
            json!({"type": "computer_call_result", "output": "x"}),
            json!({"type": "shell_call", "action": "x"}),
            json!({"type": "shell_call_output", "output": [null, 1, {"outcome": 2}]}),
            json!({"type": "apply_patch_call", "operation": 1}),
            json!({"type": "hosted_tool_call", "name": "mcp_call"}),
            json!({"type": "hosted_tool_call", "providerData": {"type": "web_search_call", "action": null}}),
            json!({"type": "tool_search_output", "tools": [null, {"type": "namespace", "tools": [1]}]}),
            json!({"type": "compaction", "encrypted_content": 1}),
            json!({"type": "message", "role": "assistant", "content": [1, null]}),
            json!({"type": "reasoning", "summary": [1]}),
            json!({"type": "function_call_output", "output": [null, {"type": "input_audio"}]}),
            json!({"type": "apply_patch_call", "operation": {"type": "update_file", "move_to": 1}}),
            json!({"type": "computer_call", "actions": [], "action": null}),
        ];
        for item in &odd {
            let _ = to_responses_item(item);
            let _ = from_responses_item(item);
        }
    }
}
