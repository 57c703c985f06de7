//! Session items: reading their fields in either spelling, building the items a model call
//! produces, and converting one item between the shape `@openai/agents` keeps in a session and
//! the Responses API's, field for field as that SDK converts it (its `getInputItems` and
//! `convertToOutputItem`), so a history moves between the SDK and this library unchanged and
//! reaches the API in a shape it accepts.
//!
//! The tests compare each conversion with the SDK's own output on a corpus of items
//! (`tests/fixtures/wire/sdk-items.json`, written by `tests/fixtures/wire/make.mjs`).
//!
//! The code is written for size, as it ships in the runner's WebAssembly module: objects are
//! built through a few small helpers ([`set`], [`put`], [`copy`]) and field lists are tables,
//! because every `json!` literal, iterator adapter or closure that collects would be compiled
//! into its own copy of the code that builds a map.

use crate::core::json::{Map, Value};

#[cfg(test)]
use crate::core::json::json;

/// A JSON object. Its keys are kept sorted, so the order fields are set in does not show in the
/// result.
pub(super) type Obj = Map;

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

/// A call the page answers with an output item of its own, paired by `callId`: a function call,
/// or a computer, shell or apply-patch call (the SDK's tools of those kinds; hosted tools the
/// server runs itself have no output item).
pub fn is_answered_call(item: &Value) -> bool {
    matches!(
        item_type(item),
        "function_call" | "computer_call" | "shell_call" | "apply_patch_call"
    )
}

/// The output item of an [`is_answered_call`] call, in the SDK's or the API's spelling.
pub fn is_call_output(item: &Value) -> bool {
    is_tool_output(item)
        || matches!(
            item_type(item),
            "computer_call_result"
                | "computer_call_output"
                | "shell_call_output"
                | "apply_patch_call_output"
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
            let mut text = String::new();
            for part in parts {
                match str_of(part, "text") {
                    Some(t) => text.push_str(t),
                    // Not all text: the parts as JSON.
                    None => return output.map(Value::to_string).unwrap_or_default(),
                }
            }
            text
        }
        Some(other) => other.to_string(),
    }
}

/// The text of a message's content: a string, or the text parts of an array.
pub fn content_text(content: Option<&Value>) -> String {
    parts_text(content, true)
}

/// [`content_text`] without the refusals: the text of an answer, as the SDK reads a final
/// output.
pub fn answer_text(content: Option<&Value>) -> String {
    parts_text(content, false)
}

fn parts_text(content: Option<&Value>, refusals: bool) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for part in parts {
                let refusal = || str_of(part, "refusal").filter(|_| refusals);
                if let Some(t) = str_of(part, "text").or_else(refusal) {
                    text.push_str(t);
                }
            }
            text
        }
        _ => String::new(),
    }
}

/// The assistant message of a Chat Completions answer: its text and its refusal (the API gives
/// it apart from the text), each a part when there is one; `None` when it has neither.
pub(super) fn chat_answer_item(text: &str, refusal: &str) -> Option<Value> {
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(Value::Object(strings(&[
            ("type", "output_text"),
            ("text", text),
        ])));
    }
    if !refusal.is_empty() {
        parts.push(Value::Object(strings(&[
            ("type", "refusal"),
            ("refusal", refusal),
        ])));
    }
    if parts.is_empty() {
        return None;
    }
    let mut m = strings(&[
        ("type", "message"),
        ("role", "assistant"),
        ("status", "completed"),
    ]);
    set(&mut m, "content", Value::Array(parts));
    Some(Value::Object(m))
}

/// A Chat Completions call's `arguments` as the text of a `function_call` item: the JSON string
/// sent, or, from a server that sends them as JSON (an object), that JSON written out (not `{}`:
/// the tool would run, and be approved, without them).
pub(super) fn call_arguments(arguments: Option<&Value>) -> String {
    match arguments {
        None | Some(Value::Null) => "{}".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => crate::core::json::to_string(other),
    }
}

/// The names a Chat Completions server gives an answer's reasoning: `reasoning_content`
/// (DeepSeek, vLLM) or `reasoning` (OpenRouter, Ollama, the name the SDK sends back).
pub(super) const CHAT_REASONING: [&str; 2] = ["reasoning_content", "reasoning"];

/// The reasoning of a Chat Completions message or delta: the name it came by, and its text.
pub(super) fn chat_reasoning(m: &Value) -> Option<(&'static str, &str)> {
    for field in CHAT_REASONING {
        if let Some(text) = str_of(m, field).filter(|t| !t.is_empty()) {
            return Some((field, text));
        }
    }
    None
}

/// A Chat Completions answer's items (`answer`: its message and calls), after its reasoning as
/// the SDK keeps it: a reasoning item whose `rawContent` holds the text, with the name it came by
/// where it is not the SDK's (`providerData.field`): a server that sends `reasoning_content` takes
/// it back only so, and DeepSeek refuses the next request of a tool loop without it. Reasoning
/// with no message or call after it is left out: it would be no answer, and the model asked again
/// the same, until the run's turns ran out (the empty answer it is ends the run, as before).
///
/// OpenRouter's `reasoning_details` (`details`: its reasoning as blocks, a thought signature or
/// encrypted reasoning among them) are kept as they came, in `providerData.details`: Gemini and
/// Claude through it take their reasoning back only so in a tool loop.
pub(super) fn chat_output(
    reasoning: Option<(&str, &str)>,
    details: Option<&Value>,
    answer: Vec<Value>,
) -> Vec<Value> {
    let (field, text) = reasoning.unwrap_or(("reasoning", ""));
    let details = details.filter(|d| d.as_array().is_some_and(|d| !d.is_empty()));
    if answer.is_empty() || (text.is_empty() && details.is_none()) {
        return answer;
    }
    let mut m = strings(&[("type", "reasoning")]);
    set(&mut m, "content", Value::Array(Vec::new()));
    // (No text, blocks only: no part, as the SDK makes none of an empty text.)
    let parts = match text.is_empty() {
        true => Vec::new(),
        false => vec![Value::Object(strings(&[
            ("type", "reasoning_text"),
            ("text", text),
        ]))],
    };
    set(&mut m, "rawContent", Value::Array(parts));
    let mut data = Obj::new();
    if field != "reasoning" {
        set(&mut data, "field", string(field));
    }
    if let Some(details) = details {
        set(&mut data, "details", details.clone());
    }
    if !data.is_empty() {
        set(&mut m, "providerData", Value::Object(data));
    }
    let mut items = vec![Value::Object(m)];
    items.extend(answer);
    items
}

/// A piece of a streamed `reasoning_details` (OpenRouter) added to those before it, as
/// OpenRouter's own client joins them: a piece of text (or a summary) continues the block before
/// it of its type and index (its `text` or `summary` appended, its other fields taken, a field
/// sent as `null` leaving what came); any other piece (encrypted reasoning, a thought signature
/// per call) is a block of its own.
pub(super) fn merge_detail(into: &mut Vec<Value>, piece: &Value) {
    let Some(p) = piece.as_object() else { return };
    let kind = p.get("type");
    let joins = matches!(
        kind.and_then(Value::as_str),
        Some("reasoning.text" | "reasoning.summary")
    );
    let Some(Value::Object(block)) = into
        .last_mut()
        .filter(|b| joins && b.get("type") == kind && b.get("index") == p.get("index"))
    else {
        into.push(piece.clone());
        return;
    };
    for (k, v) in p.iter().filter(|(_, v)| !v.is_null()) {
        match (block.get_mut(k), v) {
            (Some(Value::String(s)), Value::String(more)) if k == "text" || k == "summary" => {
                s.push_str(more)
            }
            _ => {
                block.insert(k.clone(), v.clone());
            }
        }
    }
}

/// The fields of a Chat Completions tool call other than those an item has its own for: what a
/// server needs back with the call (Gemini's `extra_content`, its thought signature, without which
/// the next request of the tool loop is refused), kept as the call item's providerData.
pub(super) fn chat_call_extras(call: &Value, into: &mut Obj) {
    for (k, v) in call.as_object().into_iter().flatten() {
        if !matches!(k.as_str(), "id" | "type" | "function" | "index") {
            into.insert(k.clone(), v.clone());
        }
    }
}

/// A `function_call` item with what else its server gave the call (see [`chat_call_extras`]).
pub(super) fn chat_call_item(call_id: &str, name: &str, arguments: &str, extras: Obj) -> Value {
    let mut item = function_call_item(call_id, name, arguments);
    if let (Value::Object(m), false) = (&mut item, extras.is_empty()) {
        set(m, "providerData", Value::Object(extras));
    }
    item
}

pub(super) fn function_call_item(call_id: &str, name: &str, arguments: &str) -> Value {
    Value::Object(strings(&[
        ("type", "function_call"),
        ("callId", call_id),
        ("name", name),
        ("arguments", arguments),
        ("status", "completed"),
    ]))
}

/// Why an item cannot be converted: the SDK refuses it too (it throws), and the API would not
/// take what a guess would make of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(String);

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// An [`Unsupported`] of a fixed message.
pub(super) fn refuse(why: &str) -> Unsupported {
    Unsupported(why.to_string())
}

/// An [`Unsupported`] whose message is its pieces joined (`concat` rather than `format!`: one
/// shared routine instead of formatting code at each call).
fn refuse_with(pieces: &[&str]) -> Unsupported {
    Unsupported(pieces.concat())
}

/// "`what` of type `"t"`", for an item or part whose type is not one the conversion knows.
fn refuse_type(what: &str, v: &Value) -> Unsupported {
    refuse_with(&[what, " of type ", &quoted(v.get("type"), "(no type)")])
}

/// A value as JSON text (strings quoted), or `none` when absent.
fn quoted(v: Option<&Value>, none: &str) -> String {
    v.map_or_else(|| none.to_string(), Value::to_string)
}

// --------------------------------------------------------------------------------------------
// Building objects. A handful of small functions that every conversion calls, instead of code
// generated in place for each field.
// --------------------------------------------------------------------------------------------

pub(super) fn string(s: &str) -> Value {
    Value::String(s.to_string())
}

/// Sets `key` to `v`, replacing any value it had.
pub(super) fn set(m: &mut Obj, key: &str, v: Value) {
    m.insert(key.to_string(), v);
}

/// Sets `key`, or removes it for `None`: the SDK builds its objects with fields that may be
/// `undefined`, which JSON leaves out, and a later field replaces an earlier one of that name.
pub(super) fn put(m: &mut Obj, key: &str, v: Option<Value>) {
    match v {
        Some(v) => set(m, key, v),
        None => {
            m.remove(key);
        }
    }
}

/// An object of string fields, such as `{ type: 'direct' }` or `{ id }`.
pub(super) fn strings(fields: &[(&str, &str)]) -> Obj {
    let mut m = Obj::new();
    for (key, v) in fields {
        set(&mut m, key, string(v));
    }
    m
}

/// An object of one string field.
pub(crate) fn one(key: &str, v: &str) -> Value {
    Value::Object(strings(&[(key, v)]))
}

/// Which values of a field [`copy`] takes, as the SDK's code reads the field.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Take {
    /// `item.field`: any value; an absent one removes the target.
    Any,
    /// `item.field ?? undefined`: null counts as absent (and removes the target).
    Defined,
    /// `if (item.field)`: a truthy value; otherwise the target is left as it is.
    Truthy,
    /// `typeof item.field === 'string'`; otherwise the target is left as it is.
    Str,
    /// `typeof item.field === 'number'`; otherwise the target is removed.
    Number,
}

/// Copies the fields of `from` named by `fields`, each `(target, source)`, into `m`: one loop
/// over a table instead of code per field.
pub(super) fn copy(m: &mut Obj, from: &Value, take: Take, fields: &[(&str, &str)]) {
    for (to, key) in fields {
        let v = from.get(*key);
        match take {
            Take::Any => put(m, to, v.cloned()),
            Take::Defined => put(m, to, v.filter(|v| !v.is_null()).cloned()),
            Take::Number => put(m, to, v.filter(|v| v.is_number()).cloned()),
            Take::Truthy if truthy(v) => set(m, to, v.cloned().unwrap_or_default()),
            Take::Str if v.is_some_and(Value::is_string) => {
                set(m, to, v.cloned().unwrap_or_default())
            }
            Take::Truthy | Take::Str => {}
        }
    }
}

/// Sets `key` to the defined value of `from`'s `key`, or to the string `default`.
fn defined_or(m: &mut Obj, from: &Value, key: &str, default: &str) {
    set(
        m,
        key,
        defined(from, key).unwrap_or_else(|| string(default)),
    );
}

/// Each value of `parts` converted by `f`; the first refusal refuses them all. A function
/// pointer, not a generic closure, so that this loop exists once.
fn each(
    parts: &[Value],
    f: fn(&Value) -> Result<Value, Unsupported>,
) -> Result<Value, Unsupported> {
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        out.push(f(part)?);
    }
    Ok(Value::Array(out))
}

// --------------------------------------------------------------------------------------------
// JavaScript's object semantics, as far as the SDK's conversions rely on them.
// --------------------------------------------------------------------------------------------

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

pub(super) fn nonempty_str<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    str_of(v, key).filter(|s| !s.is_empty())
}

/// Whether a value is an object or an array (JavaScript's `typeof v === 'object'`, null aside).
fn is_container(v: &Value) -> bool {
    v.is_object() || v.is_array()
}

/// `String(value)` of a JavaScript primitive; `None` for objects and arrays, where JavaScript
/// gives `[object Object]` or a comma list that would lose what the value held.
fn js_string(v: Option<&Value>) -> Option<String> {
    match v {
        None => Some("undefined".into()),
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(_) | Value::Object(_)) => None,
        // null, booleans and numbers: as JSON writes them.
        Some(other) => Some(other.to_string()),
    }
}

/// A camelCase or snake_case key in snake_case, as the SDK spells providerData keys on the
/// wire: every capital letter A to Z becomes `_` and its lower case. (The SDK also lowers other
/// scripts' capitals; their case tables would cost the module 8.5 KiB gzipped, for keys no API
/// uses, so they are kept as they are.)
fn snake_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The keys of an object, and of the objects it holds, in snake_case. Arrays are copied as
/// they are, entries included, as the SDK does.
fn snake_case(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(snake_fields(m)),
        other => other.clone(),
    }
}

/// The fields of an object with their keys in snake_case (see [`snake_case`]). Where two keys
/// meet in one spelling, the later one (in key order) wins, as it does in a JavaScript object.
fn snake_fields(m: &Obj) -> Obj {
    let mut out = Obj::new();
    for (k, v) in m {
        out.insert(snake_key(k), snake_case(v));
    }
    out
}

/// providerData in snake_case, as an object (empty when it is not one).
fn snake_provider_data(pd: Option<&Value>) -> Obj {
    match pd {
        Some(Value::Object(m)) => snake_fields(m),
        _ => Obj::new(),
    }
}

/// Merges into `m` the providerData fields the SDK merges into an item or part on the wire:
/// all of them, in snake_case, but the ones the item's own fields stand for (`reserved`, in
/// snake_case).
fn merge_provider_data(m: &mut Obj, pd: Option<&Value>, reserved: &[&str]) {
    for (k, v) in snake_provider_data(pd) {
        if !reserved.contains(&k.as_str()) {
            m.insert(k, v);
        }
    }
}

/// The first of `keys` that providerData has (null counts: the SDK takes any defined value).
fn provider_field<'a>(pd: Option<&'a Value>, keys: &[&str]) -> Option<&'a Value> {
    let m = pd?.as_object()?;
    keys.iter().find_map(|k| m.get(k))
}

/// A non-empty array providerData has under either spelling of a key (the API refuses an empty
/// list of safety checks on a call sent back).
fn provider_list(pd: Option<&Value>, keys: &[&str]) -> Option<Value> {
    provider_field(pd, keys)
        .filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
        .cloned()
}

/// The id the SDK gives items of servers that give none; never sent back.
const PLACEHOLDER_ID: &str = "FAKE_ID";

fn without_placeholder_id(mut m: Obj) -> Obj {
    if m.get("id").and_then(Value::as_str) == Some(PLACEHOLDER_ID) {
        m.remove("id");
    }
    m
}

/// A data URL of base64 `data`, as the SDK inlines data: data that is a data URL already stays
/// as it is, and without a media type the data is sent bare.
fn inline_data(data: &str, media_type: Option<&str>) -> Value {
    match media_type {
        Some(t) if !t.is_empty() && !data.starts_with("data:") => {
            Value::String(["data:", t, ";base64,", data].concat())
        }
        _ => string(data),
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
    responses_input_item(item)
        .ok()
        .filter(|wire| !is_bare_reasoning(wire))
}

/// A reasoning item (in the API's shape) the API cannot tie to anything: without an id or
/// encrypted content (a Chat Completions answer's), which it refuses as input. Left out, as
/// the Conversations API's items leave it out.
pub(super) fn is_bare_reasoning(wire: &Value) -> bool {
    str_of(wire, "type") == Some("reasoning")
        && str_of(wire, "id").is_none()
        && str_of(wire, "encrypted_content").is_none()
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
        return Err(refuse("an item that is not an object"));
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
    let t = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        None if matches!(obj.get("role"), Some(Value::String(_))) => "message",
        _ => return Err(refuse("an item without a type or role")),
    };
    let mut wire = match t {
        "message" => message_to_api(item)?,
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
            return Err(refuse_with(&[
                "an item of type ",
                &quoted(item.get("type"), "(no type)"),
                " (not one the Responses API takes)",
            ]))
        }
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

fn api_item_as_stored(item: &Value) -> Obj {
    let mut out = item.as_object().cloned().unwrap_or_default();
    out.remove("providerData");
    if let Some(id) = out.remove("callId") {
        if !out.contains_key("call_id") {
            out.insert("call_id".into(), id);
        }
    }
    if str_of(item, "type") == Some("function_call_output") {
        if let Some(o) = out
            .get("output")
            .filter(|o| !o.is_string() && !o.is_array())
        {
            let text = output_text(Some(o));
            out.insert("output".into(), Value::String(text));
        }
    }
    out
}

/// The call id, as the SDK reads it (`callId`), or as the API spells it.
fn call_id_field(item: &Value) -> Option<Value> {
    field(item, "callId").or_else(|| field(item, "call_id"))
}

/// The fields most calls and outputs start with on the wire: `type`, and the call id in
/// either spelling.
fn wire_call(kind: &str, item: &Value) -> Obj {
    let mut m = strings(&[("type", kind)]);
    put(&mut m, "call_id", call_id_field(item));
    m
}

/// `caller` in the API's spelling, where the item has one.
fn caller_to_api(item: &Value) -> Option<Value> {
    let c = item.get("caller").filter(|c| truthy(Some(c)))?;
    if str_of(c, "type") == Some("direct") {
        return Some(one("type", "direct"));
    }
    let mut m = strings(&[("type", "program")]);
    put(&mut m, "caller_id", field(c, "callerId"));
    Some(Value::Object(m))
}

/// Sets the wire `caller` of a call or output (see [`caller_to_api`]).
fn put_caller(m: &mut Obj, item: &Value) {
    put(m, "caller", caller_to_api(item));
}

fn message_to_api(item: &Value) -> Result<Obj, Unsupported> {
    let pd = item.get("providerData");
    let role = str_of(item, "role").unwrap_or("");
    let mut m = Obj::new();
    let reserved: &[&str] = match role {
        "system" | "developer" | "user" => {
            let content = match item.get("content") {
                Some(Value::Array(parts)) if role == "user" => {
                    Some(each(parts, input_part_to_api)?)
                }
                Some(text @ Value::String(_)) if role == "user" => Some(text.clone()),
                _ if role == "user" => {
                    return Err(refuse(
                        "a user message whose content is neither a string nor an array",
                    ))
                }
                other => other.cloned(),
            };
            put(&mut m, "content", content);
            &["id", "role", "content", "phase"]
        }
        "assistant" => {
            let phase = item
                .get("phase")
                .filter(|p| !p.is_null())
                .or_else(|| provider_field(pd, &["phase"]));
            if let Some(p) = phase {
                if !matches!(p.as_str(), Some("commentary" | "final_answer")) {
                    return Err(refuse_with(&[
                        "an assistant message with phase ",
                        &p.to_string(),
                        " (expected \"commentary\" or \"final_answer\")",
                    ]));
                }
            }
            let content = match item.get("content") {
                Some(Value::Array(parts)) => {
                    set(&mut m, "type", string("message"));
                    put(&mut m, "status", field(item, "status"));
                    each(parts, output_part_to_api)?
                }
                // The API's short form: the text alone, without type or status.
                Some(text @ Value::String(_)) => text.clone(),
                _ => return Err(refuse("an assistant message without a content array")),
            };
            set(&mut m, "content", content);
            put(&mut m, "phase", phase.cloned());
            &["type", "id", "role", "content", "status", "phase"]
        }
        _ => {
            return Err(refuse_with(&[
                "a message with role ",
                &quoted(item.get("role"), "(none)"),
            ]))
        }
    };
    put(&mut m, "id", field(item, "id"));
    set(&mut m, "role", string(role));
    merge_provider_data(&mut m, pd, reserved);
    Ok(if role == "assistant" {
        without_placeholder_id(m)
    } else {
        m
    })
}

/// The older SDK spellings of an input file's fields, which win over `file` where present.
const LEGACY_FILE_FIELDS: &[(&str, &str)] = &[
    ("file_data", "fileData"),
    ("file_url", "fileUrl"),
    ("file_id", "fileId"),
];

/// A part of a user message's content as the API takes it.
pub(super) fn input_part_to_api(part: &Value) -> Result<Value, Unsupported> {
    let kind = str_of(part, "type").unwrap_or("");
    let mut m = strings(&[("type", kind)]);
    let reserved: &[&str] = match kind {
        "input_text" => {
            copy(&mut m, part, Take::Any, &[("text", "text")]);
            &["type", "text"]
        }
        "input_image" => {
            set(
                &mut m,
                "detail",
                defined(part, "detail").unwrap_or_else(|| string("auto")),
            );
            match part.get("image") {
                Some(Value::String(url)) => set(&mut m, "image_url", string(url)),
                Some(Value::Object(image)) if image.contains_key("id") => {
                    put(&mut m, "file_id", image.get("id").cloned())
                }
                Some(v) if truthy(Some(v)) && !is_container(v) => {
                    return Err(refuse(
                        "an input_image whose image is neither a URL nor { id }",
                    ))
                }
                _ => {
                    // (In either spelling: the API's own is the SDK's older one.)
                    if let Some(url) =
                        str_of(part, "imageUrl").or_else(|| str_of(part, "image_url"))
                    {
                        set(&mut m, "image_url", string(url));
                    } else {
                        copy(&mut m, part, Take::Str, &[("file_id", "fileId")]);
                    }
                }
            }
            &["type", "detail", "image_url", "file_id"]
        }
        "input_file" => {
            match part.get("file") {
                Some(Value::String(file)) => {
                    let value = file.trim();
                    let key = if value.starts_with("data:") || is_base64(value) {
                        "file_data"
                    } else if value.starts_with("https://") {
                        "file_url"
                    } else {
                        return Err(refuse(
                            "an input_file whose file is a string that is neither a data URL, an https URL nor base64 data (an uploaded file's id goes in { id })",
                        ));
                    };
                    set(&mut m, key, string(value));
                }
                Some(file @ Value::Object(f)) if f.contains_key("id") => {
                    copy(&mut m, file, Take::Any, &[("file_id", "id")])
                }
                Some(file @ Value::Object(f)) if f.contains_key("url") => {
                    copy(&mut m, file, Take::Any, &[("file_url", "url")])
                }
                _ => {}
            }
            copy(&mut m, part, Take::Str, LEGACY_FILE_FIELDS);
            copy(&mut m, part, Take::Truthy, &[("filename", "filename")]);
            &["type", "file_data", "file_url", "file_id", "filename"]
        }
        _ => return Err(refuse_type("a user message part", part)),
    };
    copy(
        &mut m,
        part,
        Take::Truthy,
        &[("prompt_cache_breakpoint", "promptCacheBreakpoint")],
    );
    merge_provider_data(&mut m, part.get("providerData"), reserved);
    Ok(Value::Object(m))
}

/// A part of an assistant message's content as the API takes it: `output_text` with its
/// annotations (kept in providerData), `refusal`.
fn output_part_to_api(part: &Value) -> Result<Value, Unsupported> {
    let pd = part.get("providerData");
    let (kind, own) = match str_of(part, "type") {
        Some("output_text") => ("output_text", "text"),
        Some("refusal") => ("refusal", "refusal"),
        _ => return Err(refuse_type("an assistant message part", part)),
    };
    let mut m = strings(&[("type", kind)]);
    copy(&mut m, part, Take::Any, &[(own, own)]);
    merge_provider_data(&mut m, pd, &["type", own]);
    if kind == "output_text" {
        // Set after providerData's fields, so that it replaces theirs.
        let annotations = provider_field(pd, &["annotations"])
            .filter(|a| a.is_array())
            .cloned()
            .unwrap_or_else(|| Value::Array(Vec::new()));
        set(&mut m, "annotations", annotations);
    }
    Ok(Value::Object(m))
}

/// A function call's fields the SDK renames for the API, or copies as they are.
const FUNCTION_CALL_FIELDS: &[(&str, &str)] = &[
    ("id", "id"),
    ("name", "name"),
    ("arguments", "arguments"),
    ("status", "status"),
];

fn function_call_to_api(item: &Value) -> Obj {
    let mut m = wire_call("function_call", item);
    copy(&mut m, item, Take::Any, FUNCTION_CALL_FIELDS);
    put_caller(&mut m, item);
    copy(&mut m, item, Take::Str, &[("namespace", "namespace")]);
    // (A Chat Completions server's `extra_content`, Gemini's, is its own: the Responses API
    // refuses a field it does not know.)
    merge_provider_data(
        &mut m,
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
            "extra_content",
        ],
    );
    without_placeholder_id(m)
}

fn function_result_to_api(item: &Value) -> Result<Obj, Unsupported> {
    let mut m = wire_call("function_call_output", item);
    copy(
        &mut m,
        item,
        Take::Any,
        &[("id", "id"), ("status", "status")],
    );
    set(&mut m, "output", tool_output_to_api(item.get("output"))?);
    put_caller(&mut m, item);
    merge_provider_data(
        &mut m,
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
    );
    Ok(m)
}

/// A tool's output as the API takes it: text, or an array of `input_text`, `input_image` and
/// `input_file` parts.
fn tool_output_to_api(output: Option<&Value>) -> Result<Value, Unsupported> {
    Ok(match output {
        Some(s @ Value::String(_)) => s.clone(),
        Some(Value::Array(parts)) => each(parts, structured_part_to_api)?,
        Some(o @ Value::Object(_)) => match (str_of(o, "type"), o.get("text")) {
            (Some("text"), Some(t @ Value::String(_))) => t.clone(),
            (Some("image" | "file"), _) => Value::Array(vec![structured_part_to_api(
                &legacy_output_to_structured(o),
            )?]),
            _ => Value::String(o.to_string()),
        },
        other => Value::String(js_string(other).unwrap_or_default()),
    })
}

/// What a tool returned (as JSON) as `@openai/agents` 0.20 stores it when it is structured: a
/// `{ type: 'text' | 'image' | 'file' }` object, or a non-empty array of them, becomes the array
/// of `input_text`, `input_image` and `input_file` parts that stands for it (an image by its URL,
/// data with its `mediaType` as a data URL, or `fileId`; a file by its data, URL or id). `None`
/// for any other value (the model gets its JSON text), and for an image or file naming none.
pub fn structured_tool_output(value: &Value) -> Option<Value> {
    let parts = match value {
        Value::Array(parts) if !parts.is_empty() => parts.as_slice(),
        Value::Array(_) => return None,
        one => std::slice::from_ref(one),
    };
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        let kind = str_of(part, "type")?;
        let converted = match kind {
            "text" => {
                let mut m = strings(&[("type", "input_text")]);
                set(&mut m, "text", string(str_of(part, "text")?));
                Value::Object(m)
            }
            "image" | "file" => legacy_output_to_structured(part),
            _ => return None,
        };
        if kind != "text" && !truthy(converted.get(kind)) {
            return None;
        }
        out.push(converted);
    }
    Some(Value::Array(out))
}

/// A non-empty media type of a legacy output or its image, in either spelling.
fn media_type(v: &Value) -> Option<&str> {
    nonempty_str(v, "mediaType").or_else(|| nonempty_str(v, "mimeType"))
}

/// `String(v.mediaType ?? 'text/plain')`, the media type the SDK gives a legacy file's data.
fn file_media_type(v: &Value) -> Option<String> {
    match v.get("mediaType") {
        None | Some(Value::Null) => Some("text/plain".into()),
        other => js_string(other),
    }
}

/// `{ id }` of the first of `keys` that `v` has a non-empty string in.
pub(super) fn id_ref(v: &Value, keys: &[&str]) -> Option<Value> {
    keys.iter()
        .find_map(|k| nonempty_str(v, k))
        .map(|id| one("id", id))
}

/// A tool output of the older `{ type: 'image' }` / `{ type: 'file' }` kinds as the
/// `input_image` / `input_file` part that stands for it.
fn legacy_output_to_structured(output: &Value) -> Value {
    if str_of(output, "type") == Some("image") {
        let mut m = strings(&[("type", "input_image")]);
        copy(&mut m, output, Take::Truthy, &[("detail", "detail")]);
        let top_media_type = media_type(output);
        let image = match output.get("image") {
            Some(Value::String(s)) if !s.is_empty() => Some(string(s)),
            Some(obj) if is_container(obj) => {
                if let Some(url) = nonempty_str(obj, "url") {
                    Some(string(url))
                } else if let Some(data) = nonempty_str(obj, "data") {
                    Some(inline_data(data, media_type(obj).or(top_media_type)))
                } else {
                    id_ref(obj, &["fileId", "id"])
                }
            }
            _ => {
                if let Some(url) = nonempty_str(output, "imageUrl") {
                    Some(string(url))
                } else if let Some(id) = id_ref(output, &["fileId"]) {
                    Some(id)
                } else {
                    nonempty_str(output, "data").map(|d| inline_data(d, top_media_type))
                }
            }
        };
        put(&mut m, "image", image);
        return Value::Object(m);
    }
    let mut m = strings(&[("type", "input_file")]);
    match output.get("file") {
        Some(Value::String(s)) => set(&mut m, "file", string(s)),
        Some(file) if is_container(file) => {
            let file_value = if let Some(data) = nonempty_str(file, "data") {
                Some(inline_data(data, file_media_type(file).as_deref()))
            } else if let Some(url) = nonempty_str(file, "url") {
                Some(one("url", url))
            } else {
                id_ref(file, &["id", "fileId"])
            };
            put(&mut m, "file", file_value);
            if let Some(name) = nonempty_str(file, "filename") {
                set(&mut m, "filename", string(name));
            }
        }
        _ => {}
    }
    if !truthy(m.get("file")) {
        let legacy = if let Some(id) = id_ref(output, &["id", "fileId"]) {
            Some(id)
        } else if let Some(url) = nonempty_str(output, "fileUrl") {
            Some(one("url", url))
        } else {
            nonempty_str(output, "fileData")
                .map(|d| inline_data(d, file_media_type(output).as_deref()))
        };
        if let Some(file) = legacy {
            set(&mut m, "file", file);
            if let Some(name) = nonempty_str(output, "filename") {
                set(&mut m, "filename", string(name));
            }
        }
    }
    Value::Object(m)
}

/// One `input_*` part of a tool's output, in the API's field names.
fn structured_part_to_api(part: &Value) -> Result<Value, Unsupported> {
    let kind = str_of(part, "type").unwrap_or("");
    let mut m = strings(&[("type", kind)]);
    match kind {
        "input_text" => copy(&mut m, part, Take::Any, &[("text", "text")]),
        "input_image" => {
            match part
                .get("image")
                .filter(|v| !v.is_null())
                .or_else(|| part.get("imageUrl"))
            {
                Some(Value::String(url)) => set(&mut m, "image_url", string(url)),
                Some(image) => copy(&mut m, image, Take::Str, &[("file_id", "id")]),
                None => {}
            }
            copy(&mut m, part, Take::Str, &[("file_id", "fileId")]);
            copy(&mut m, part, Take::Truthy, &[("detail", "detail")]);
        }
        "input_file" => {
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
                    set(&mut m, key, string(value));
                }
                Some(file @ Value::Object(_)) => {
                    if let Some(id) = str_of(file, "id") {
                        set(&mut m, "file_id", string(id));
                    } else {
                        copy(&mut m, file, Take::Str, &[("file_url", "url")]);
                    }
                }
                _ => {}
            }
            copy(&mut m, part, Take::Str, LEGACY_FILE_FIELDS);
            copy(&mut m, part, Take::Truthy, &[("filename", "filename")]);
        }
        _ => return Err(refuse_type("a tool output part", part)),
    }
    Ok(Value::Object(m))
}

/// A reasoning item's content part as the API's summary part.
fn summary_part_to_api(p: &Value) -> Result<Value, Unsupported> {
    if !p.is_object() {
        return Err(refuse(
            "a reasoning item with a content part that is not an object",
        ));
    }
    let mut s = strings(&[("type", "summary_text")]);
    copy(&mut s, p, Take::Any, &[("text", "text")]);
    merge_provider_data(&mut s, p.get("providerData"), &["type", "text"]);
    Ok(Value::Object(s))
}

fn reasoning_to_api(item: &Value) -> Result<Obj, Unsupported> {
    let pd = item.get("providerData");
    let summary = match (item.get("content"), item.get("summary")) {
        (Some(Value::Array(parts)), _) => each(parts, summary_part_to_api)?,
        // A reasoning item kept in the API's own shape.
        (None, Some(summary @ Value::Array(_))) => summary.clone(),
        _ => return Err(refuse("a reasoning item without a content array")),
    };
    let mut m = strings(&[("type", "reasoning")]);
    copy(&mut m, item, Take::Any, &[("id", "id")]);
    set(&mut m, "summary", summary);
    let encrypted = provider_field(pd, &["encryptedContent", "encrypted_content"])
        .or_else(|| item.get("encrypted_content"))
        .filter(|e| e.is_string());
    put(&mut m, "encrypted_content", encrypted.cloned());
    merge_provider_data(&mut m, pd, &["id", "type", "summary", "encrypted_content"]);
    Ok(m)
}

fn computer_call_to_api(item: &Value) -> Obj {
    let pd = item.get("providerData");
    let mut m = wire_call("computer_call", item);
    copy(
        &mut m,
        item,
        Take::Any,
        &[("id", "id"), ("status", "status")],
    );
    put(
        &mut m,
        "pending_safety_checks",
        provider_list(pd, &["pendingSafetyChecks", "pending_safety_checks"]),
    );
    match item
        .get("actions")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
    {
        Some(actions) => {
            let first = actions.first().cloned().unwrap_or_default();
            set(&mut m, "action", defined(item, "action").unwrap_or(first));
            set(&mut m, "actions", Value::Array(actions.clone()));
        }
        None => copy(&mut m, item, Take::Truthy, &[("action", "action")]),
    }
    merge_provider_data(
        &mut m,
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
    );
    m
}

fn computer_result_to_api(item: &Value) -> Result<Obj, Unsupported> {
    let pd = item.get("providerData");
    let Some(output) = item.get("output").filter(|o| !o.is_null()) else {
        return Err(refuse("a computer_call_result without output"));
    };
    let mut m = wire_call("computer_call_output", item);
    copy(&mut m, item, Take::Any, &[("id", "id")]);
    // The only output the API has for a computer call is a screenshot.
    let mut screenshot = strings(&[("type", "computer_screenshot")]);
    copy(&mut screenshot, output, Take::Any, &[("image_url", "data")]);
    set(&mut m, "output", Value::Object(screenshot));
    put(&mut m, "status", pd.and_then(|p| field(p, "status")));
    put(
        &mut m,
        "acknowledged_safety_checks",
        provider_list(
            pd,
            &["acknowledgedSafetyChecks", "acknowledged_safety_checks"],
        ),
    );
    merge_provider_data(
        &mut m,
        pd,
        &[
            "type",
            "id",
            "call_id",
            "output",
            "status",
            "acknowledged_safety_checks",
        ],
    );
    Ok(m)
}

/// The first of two spellings an item has a number in, or null.
fn number_in(v: &Value, camel: &str, snake: &str) -> Value {
    v.get(camel)
        .filter(|n| n.is_number())
        .or_else(|| v.get(snake).filter(|n| n.is_number()))
        .cloned()
        .unwrap_or_default()
}

fn shell_call_to_api(item: &Value) -> Result<Obj, Unsupported> {
    let Some(action) = item.get("action").filter(|a| !a.is_null()) else {
        return Err(refuse("a shell_call without an action"));
    };
    let mut a = Obj::new();
    copy(&mut a, action, Take::Any, &[("commands", "commands")]);
    set(
        &mut a,
        "timeout_ms",
        number_in(action, "timeoutMs", "timeout_ms"),
    );
    set(
        &mut a,
        "max_output_length",
        number_in(action, "maxOutputLength", "max_output_length"),
    );
    let mut m = wire_call("shell_call", item);
    copy(&mut m, item, Take::Any, &[("id", "id")]);
    defined_or(&mut m, item, "status", "in_progress");
    set(&mut m, "action", Value::Object(a));
    put_caller(&mut m, item);
    // Of providerData, the API takes back only the environment the call ran in.
    if let Some(env) =
        provider_field(item.get("providerData"), &["environment"]).filter(|e| is_container(e))
    {
        set(&mut m, "environment", snake_case(env));
    }
    Ok(m)
}

/// The entries of a shell call's output, in the API's spelling (`to_api`) or the SDK's: text
/// of stdout and stderr, and how the command ended.
fn shell_outputs(entries: &[Value], to_api: bool) -> Value {
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        let mut e = Obj::new();
        for key in ["stdout", "stderr"] {
            let text = entry.get(key).filter(|s| s.is_string()).cloned();
            set(&mut e, key, text.unwrap_or_else(|| string("")));
        }
        let outcome = entry.get("outcome");
        let kind = outcome.and_then(|o| str_of(o, "type"));
        let outcome = if kind == Some("timeout") {
            one("type", "timeout")
        } else {
            let mut o = strings(&[("type", "exit")]);
            let outcome = outcome.unwrap_or(&Value::Null);
            if to_api {
                // The SDK sends 0 for an exit without a code.
                let code = if kind == Some("exit") {
                    defined(outcome, "exitCode").or_else(|| defined(outcome, "exit_code"))
                } else {
                    None
                };
                set(&mut o, "exit_code", code.unwrap_or_else(|| Value::from(0)));
            } else {
                let code = outcome.get("exit_code").filter(|c| c.is_number()).cloned();
                set(&mut o, "exitCode", code.unwrap_or_default());
            }
            Value::Object(o)
        };
        set(&mut e, "outcome", outcome);
        out.push(Value::Object(e));
    }
    Value::Array(out)
}

fn shell_output_to_api(item: &Value) -> Result<Obj, Unsupported> {
    let Some(outputs) = item.get("output").and_then(Value::as_array) else {
        return Err(refuse("a shell_call_output without an output array"));
    };
    let mut m = wire_call("shell_call_output", item);
    set(&mut m, "output", shell_outputs(outputs, true));
    copy(
        &mut m,
        item,
        Take::Defined,
        &[("id", "id"), ("status", "status")],
    );
    put_caller(&mut m, item);
    let max = number_in(item, "maxOutputLength", "max_output_length");
    put(
        &mut m,
        "max_output_length",
        Some(max).filter(|n| !n.is_null()),
    );
    Ok(m)
}

fn apply_patch_call_to_api(item: &Value) -> Result<Obj, Unsupported> {
    let Some(operation) = item.get("operation").filter(|o| truthy(Some(o))) else {
        return Err(refuse("an apply_patch_call without an operation"));
    };
    let mut operation = operation.clone();
    if let Some(op) = operation.as_object_mut() {
        if op.get("type").and_then(Value::as_str) == Some("update_file") {
            if let Some(to) = op.remove("moveTo") {
                op.insert("move_to".into(), to);
            }
        }
    }
    let mut m = apply_patch_to_api("apply_patch_call", item, "in_progress");
    set(&mut m, "operation", operation);
    Ok(m)
}

fn apply_patch_output_to_api(item: &Value) -> Obj {
    let mut m = apply_patch_to_api("apply_patch_call_output", item, "completed");
    copy(&mut m, item, Take::Defined, &[("output", "output")]);
    m
}

/// What an apply_patch call and its output share on the wire.
fn apply_patch_to_api(kind: &str, item: &Value, status: &str) -> Obj {
    let mut m = wire_call(kind, item);
    copy(&mut m, item, Take::Defined, &[("id", "id")]);
    defined_or(&mut m, item, "status", status);
    put_caller(&mut m, item);
    m
}

/// `status` of a hosted tool call, checked against the values the API has for its kind;
/// missing, it is the kind's default.
fn hosted_status(item: &Value, allowed: &[&str], default: &str) -> Result<Value, Unsupported> {
    match item.get("status") {
        None | Some(Value::Null) => Ok(string(default)),
        Some(Value::String(s)) if allowed.contains(&s.as_str()) => Ok(string(s)),
        Some(other) => Err(refuse_with(&[
            "a ",
            str_of(item, "name").unwrap_or("hosted tool call"),
            " with status ",
            &other.to_string(),
            " (expected one of ",
            &allowed.join(", "),
            ")",
        ])),
    }
}

/// The kinds of MCP items a `hosted_tool_call` may stand for, by providerData's `type` or by
/// the item's `name`, in the order the SDK tries them.
const MCP_KINDS: &[&str] = &[
    "mcp_list_tools",
    "mcp_approval_request",
    "mcp_approval_response",
    "mcp_call",
];

/// A `hosted_tool_call` as the API's item of its kind, rebuilt from the providerData it keeps.
fn hosted_call_to_api(item: &Value) -> Result<Obj, Unsupported> {
    let pd = item.get("providerData").filter(|p| p.is_object());
    let kind = pd.and_then(|p| str_of(p, "type"));
    let name = str_of(item, "name");
    let t = match kind {
        Some("web_search_call" | "web_search") => "web_search_call",
        Some("file_search_call" | "file_search") => "file_search_call",
        Some("code_interpreter_call" | "code_interpreter") => "code_interpreter_call",
        Some("image_generation_call" | "image_generation") => "image_generation_call",
        _ => match MCP_KINDS
            .iter()
            .copied()
            .find(|k| kind == Some(*k) || name == Some(*k))
        {
            Some(k) => k,
            None => {
                return Err(refuse_with(&[
                    "a hosted tool call of kind ",
                    kind.or(name).unwrap_or("(none)"),
                ]))
            }
        },
    };
    if t.starts_with("mcp_") && pd.is_none() {
        let call = if t == "mcp_list_tools" { " call" } else { "" };
        return Err(refuse_with(&["an ", t, call, " without providerData"]));
    }
    // The API's item is providerData in snake_case, with the fields below on top.
    let mut m = snake_provider_data(pd);
    // The raw providerData, for the fields the SDK reads from it as they are (null when there
    // is none, which has no fields).
    let p = pd.unwrap_or(&Value::Null);
    set(&mut m, "type", string(t));
    let status = match t {
        "web_search_call" => {
            let action = m.get("action");
            if action.is_some_and(|a| !a.is_object() || str_of(a, "type").is_none()) {
                return Err(refuse(
                    "a web_search_call whose action is not an object with a type",
                ));
            }
            Some(hosted_status(
                item,
                &["in_progress", "completed", "searching", "failed"],
                "failed",
            )?)
        }
        "file_search_call" => {
            set(
                &mut m,
                "queries",
                defined(p, "queries").unwrap_or_else(|| Value::Array(Vec::new())),
            );
            copy(&mut m, p, Take::Any, &[("results", "results")]);
            Some(hosted_status(
                item,
                &[
                    "in_progress",
                    "completed",
                    "searching",
                    "failed",
                    "incomplete",
                ],
                "failed",
            )?)
        }
        "code_interpreter_call" => {
            set(
                &mut m,
                "code",
                defined(p, "code").unwrap_or_else(|| string("")),
            );
            let outputs = defined(p, "outputs").or_else(|| defined(p, "results"));
            set(
                &mut m,
                "outputs",
                outputs.unwrap_or_else(|| Value::Array(Vec::new())),
            );
            copy(&mut m, p, Take::Any, &[("container_id", "container_id")]);
            put_caller(&mut m, item);
            Some(hosted_status(
                item,
                &["in_progress", "completed", "interpreting"],
                "in_progress",
            )?)
        }
        "image_generation_call" => {
            set(&mut m, "result", defined(p, "result").unwrap_or_default());
            Some(hosted_status(
                item,
                &["in_progress", "completed", "generating", "failed"],
                "failed",
            )?)
        }
        // The MCP items have no status on the wire.
        "mcp_list_tools" => {
            put(&mut m, "tools", p.get("tools").map(snake_case));
            copy(
                &mut m,
                p,
                Take::Any,
                &[("server_label", "server_label"), ("error", "error")],
            );
            put_caller(&mut m, item);
            None
        }
        "mcp_approval_response" => {
            copy(
                &mut m,
                p,
                Take::Any,
                &[
                    ("id", "id"),
                    ("approve", "approve"),
                    ("approval_request_id", "approval_request_id"),
                    ("reason", "reason"),
                ],
            );
            put_caller(&mut m, item);
            return Ok(m);
        }
        // mcp_approval_request, mcp_call: the id providerData has, else the item's.
        _ => {
            let id = defined(p, "id").or_else(|| field(item, "id"));
            put(&mut m, "id", id);
            copy(
                &mut m,
                p,
                Take::Any,
                &[
                    ("name", "name"),
                    ("arguments", "arguments"),
                    ("server_label", "server_label"),
                ],
            );
            if t == "mcp_call" {
                copy(&mut m, p, Take::Any, &[("error", "error")]);
            }
            put_caller(&mut m, item);
            return Ok(m);
        }
    };
    copy(&mut m, item, Take::Any, &[("id", "id")]);
    if let Some(status) = status {
        set(&mut m, "status", status);
    }
    Ok(m)
}

fn compaction_to_api(item: &Value) -> Result<Obj, Unsupported> {
    let encrypted = defined(item, "encrypted_content").or_else(|| field(item, "encryptedContent"));
    let id = defined(item, "id");
    if !encrypted.as_ref().is_some_and(Value::is_string)
        || id.as_ref().is_some_and(|i| !i.is_string())
    {
        return Err(refuse("a compaction item without encrypted_content"));
    }
    let mut m = strings(&[("type", "compaction")]);
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
        .or_else(|| {
            ["call_id", "callId"]
                .iter()
                .find_map(|k| nonempty_str(item, k))
                .map(string)
        })
}

/// Whether a tool search ran on the client or the server: the item's, else the provider's.
fn tool_search_execution(item: &Value) -> Option<Value> {
    let pd = item.get("providerData").filter(|p| truthy(Some(p)));
    [Some(item), pd]
        .into_iter()
        .flatten()
        .find_map(|v| str_of(v, "execution").filter(|e| matches!(*e, "client" | "server")))
        .map(string)
}

/// A test of a value's kind, such as [`Value::is_array`].
type IsKind = fn(&Value) -> bool;

/// The renamed fields of a function a tool search found, `(SDK, API)`, each with the kind of
/// value the SDK keeps in it.
const FOUND_FUNCTION_FIELDS: [(&str, &str, IsKind); 3] = [
    ("deferLoading", "defer_loading", Value::is_boolean),
    ("allowedCallers", "allowed_callers", Value::is_array),
    ("outputSchema", "output_schema", is_container),
];

/// A tool a tool search found, in the API's field names (`to_api`) or the SDK's.
fn found_tool(tool: &Value, to_api: bool) -> Value {
    // (from, to), in the direction of the conversion.
    let dir = |sdk, api| if to_api { (sdk, api) } else { (api, sdk) };
    let (name_from, name_to) = dir("functionName", "function_name");
    let Some(t) = tool.as_object() else {
        return tool.clone();
    };
    match (str_of(tool, "type"), tool.get(name_from), tool.get("tools")) {
        (Some("tool_reference"), Some(Value::String(name)), _) => {
            let mut m = strings(&[("type", "tool_reference"), (name_to, name)]);
            copy(&mut m, tool, Take::Str, &[("namespace", "namespace")]);
            Value::Object(m)
        }
        (Some("namespace"), _, Some(Value::Array(tools))) => {
            let mut m = t.clone();
            m.insert("tools".into(), found_tools(tools, to_api));
            Value::Object(m)
        }
        (Some("function"), _, _) => {
            let mut m = t.clone();
            for (sdk, api, kind) in FOUND_FUNCTION_FIELDS {
                let (from, to) = dir(sdk, api);
                let v = m.remove(from).filter(kind);
                put(&mut m, to, v);
            }
            Value::Object(m)
        }
        _ => tool.clone(),
    }
}

/// The tools a tool search found, each converted (see [`found_tool`]).
fn found_tools(tools: &[Value], to_api: bool) -> Value {
    Value::Array(tools.iter().map(|t| found_tool(t, to_api)).collect())
}

fn tool_search_to_api(item: &Value) -> Result<Obj, Unsupported> {
    let kind = str_of(item, "type").unwrap_or("");
    let output = kind == "tool_search_output";
    let mut m = strings(&[("type", kind)]);
    copy(&mut m, item, Take::Any, &[("id", "id")]);
    if matches!(
        str_of(item, "status"),
        Some("in_progress" | "completed" | "incomplete")
    ) {
        copy(&mut m, item, Take::Any, &[("status", "status")]);
    }
    let own = if output {
        let Some(tools) = item.get("tools").and_then(Value::as_array) else {
            return Err(refuse("a tool_search_output without a tools array"));
        };
        set(&mut m, "tools", found_tools(tools, true));
        "tools"
    } else {
        copy(&mut m, item, Take::Any, &[("arguments", "arguments")]);
        "arguments"
    };
    put(&mut m, "call_id", tool_search_call_id(item));
    put(&mut m, "execution", tool_search_execution(item));
    merge_provider_data(
        &mut m,
        item.get("providerData"),
        &["type", "id", "status", own, "call_id", "execution"],
    );
    Ok(m)
}

fn program_to_api(item: &Value) -> Obj {
    let program = str_of(item, "type") == Some("program");
    let mut m = wire_call(if program { "program" } else { "program_output" }, item);
    copy(&mut m, item, Take::Any, &[("id", "id")]);
    let reserved: &[&str] = if program {
        copy(
            &mut m,
            item,
            Take::Any,
            &[("code", "code"), ("fingerprint", "fingerprint")],
        );
        &["type", "id", "call_id", "code", "fingerprint"]
    } else {
        copy(
            &mut m,
            item,
            Take::Any,
            &[("result", "output"), ("status", "status")],
        );
        &["type", "id", "call_id", "output", "result", "status"]
    };
    merge_provider_data(&mut m, item.get("providerData"), reserved);
    m
}

/// An item the SDK could not type: the API's item it came as, which providerData holds.
fn unknown_to_api(item: &Value) -> Obj {
    let mut m = snake_provider_data(item.get("providerData"));
    copy(&mut m, item, Take::Any, &[("id", "id")]);
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
    let mut m = strings(&[("type", "unknown")]);
    copy(&mut m, item, Take::Any, &[("id", "id")]);
    set(&mut m, "providerData", item.clone());
    Value::Object(m)
}

/// The fields of `item` but `keys`, which the session item has fields for.
fn rest_of(item: &Obj, keys: &[&str]) -> Obj {
    let mut out = item.clone();
    for key in keys {
        out.remove(key);
    }
    out
}

/// Sets `providerData` to the fields of `obj` but `keys` (see [`rest_of`]).
fn put_rest(m: &mut Obj, obj: &Obj, keys: &[&str]) {
    set(m, "providerData", Value::Object(rest_of(obj, keys)));
}

/// `caller` in the SDK's spelling; `None` for one it does not know.
fn caller_from_api(caller: Option<&Value>) -> Option<Value> {
    let c = caller.filter(|c| is_container(c))?;
    match (str_of(c, "type"), str_of(c, "caller_id")) {
        (Some("direct"), _) => Some(one("type", "direct")),
        (Some("program"), Some(id)) => Some(Value::Object(strings(&[
            ("type", "program"),
            ("callerId", id),
        ]))),
        _ => None,
    }
}

/// A session item of `kind` with the fields most items start with: `id`, and the call id as
/// the SDK spells it (`callId`).
fn session_call(kind: &str, item: &Value, id: Take) -> Obj {
    let mut m = strings(&[("type", kind)]);
    copy(&mut m, item, id, &[("id", "id")]);
    copy(&mut m, item, Take::Any, &[("callId", "call_id")]);
    m
}

/// Sets the session item's `caller` (see [`caller_from_api`]).
fn put_caller_from_api(m: &mut Obj, item: &Value) {
    put(m, "caller", caller_from_api(item.get("caller")));
}

/// The SDK's conversion of one output item; an error where the SDK throws.
pub(super) fn output_item(item: &Value) -> Result<Value, Unsupported> {
    let Some(obj) = item.as_object() else {
        return Err(refuse("an item that is not an object"));
    };
    let t = str_of(item, "type").unwrap_or("");
    let m = match t {
        "message" => message_from_api(item, obj)?,
        "tool_search_call" | "tool_search_output" => tool_search_from_api(item, obj, t),
        "program" => {
            let mut m = session_call(t, item, Take::Any);
            copy(
                &mut m,
                item,
                Take::Any,
                &[("code", "code"), ("fingerprint", "fingerprint")],
            );
            put_rest(
                &mut m,
                obj,
                &["id", "call_id", "code", "fingerprint", "type"],
            );
            m
        }
        "program_output" => {
            let mut m = session_call(t, item, Take::Any);
            copy(
                &mut m,
                item,
                Take::Any,
                &[("output", "result"), ("status", "status")],
            );
            put_rest(&mut m, obj, &["id", "call_id", "result", "status", "type"]);
            m
        }
        "file_search_call"
        | "web_search_call"
        | "image_generation_call"
        | "code_interpreter_call" => {
            let mut pd = rest_of(obj, &["status"]);
            // An image generation's image is its output; kept once, not also in providerData.
            let output = match pd.get("result") {
                Some(r) if !r.is_null() => pd.remove("result"),
                _ => None,
            };
            hosted_call(item, t, field(item, "status"), output, pd)
        }
        "mcp_list_tools" | "mcp_approval_request" | "mcp_call" => {
            let mut pd = obj.clone();
            let output = if t == "mcp_call" {
                pd.remove("output").filter(|o| !o.is_null())
            } else {
                None
            };
            hosted_call(item, t, Some(string("completed")), output, pd)
        }
        "function_call" => {
            let mut m = session_call(t, item, Take::Any);
            copy(&mut m, item, Take::Any, FUNCTION_CALL_FIELDS);
            copy(&mut m, item, Take::Str, &[("namespace", "namespace")]);
            put_caller_from_api(&mut m, item);
            put_rest(
                &mut m,
                obj,
                &[
                    "call_id",
                    "name",
                    "namespace",
                    "caller",
                    "status",
                    "arguments",
                ],
            );
            m
        }
        "function_call_output" => function_output_from_api(item, obj)?,
        "computer_call" => computer_call_from_api(item, obj)?,
        "shell_call" => shell_call_from_api(item, obj),
        "shell_call_output" => {
            let mut m = session_call(t, item, Take::Defined);
            let outputs = item.get("output").and_then(Value::as_array);
            set(
                &mut m,
                "output",
                shell_outputs(outputs.map_or(&[], Vec::as_slice), false),
            );
            copy(&mut m, item, Take::Truthy, &[("status", "status")]);
            put_caller_from_api(&mut m, item);
            put_rest(
                &mut m,
                obj,
                &["call_id", "output", "max_output_length", "status", "caller"],
            );
            copy(
                &mut m,
                item,
                Take::Number,
                &[("maxOutputLength", "max_output_length")],
            );
            m
        }
        "apply_patch_call" => apply_patch_call_from_api(item, obj)?,
        "apply_patch_call_output" => {
            let mut m = session_call(t, item, Take::Defined);
            copy(&mut m, item, Take::Any, &[("status", "status")]);
            if item.get("output").is_some_and(Value::is_string) {
                copy(&mut m, item, Take::Any, &[("output", "output")]);
            }
            put_caller_from_api(&mut m, item);
            put_rest(&mut m, obj, &["call_id", "status", "output", "caller"]);
            m
        }
        "reasoning" => {
            let Some(summary) = item.get("summary").and_then(Value::as_array) else {
                return Err(refuse("a reasoning item without a summary array"));
            };
            let content = each(summary, summary_part_from_api)?;
            let mut m = strings(&[("type", "reasoning")]);
            copy(&mut m, item, Take::Any, &[("id", "id")]);
            set(&mut m, "content", content);
            put_rest(&mut m, obj, &["summary"]);
            m
        }
        "compaction" => {
            let encrypted = item.get("encrypted_content");
            let id = item.get("id").filter(|v| !v.is_null());
            let created_by = item.get("created_by");
            let valid = encrypted.is_some_and(Value::is_string)
                && id.is_none_or(Value::is_string)
                && created_by.is_none_or(Value::is_string);
            if !valid {
                return Err(refuse("a compaction item without encrypted_content"));
            }
            let mut m = strings(&[("type", "compaction")]);
            copy(&mut m, item, Take::Defined, &[("id", "id")]);
            copy(
                &mut m,
                item,
                Take::Any,
                &[
                    ("encrypted_content", "encrypted_content"),
                    ("created_by", "created_by"),
                ],
            );
            put_rest(&mut m, obj, &["encrypted_content", "created_by"]);
            m
        }
        _ => return Ok(unknown_item(item)),
    };
    Ok(Value::Object(m))
}

fn message_from_api(item: &Value, obj: &Obj) -> Result<Obj, Unsupported> {
    let Some(parts) = item.get("content").and_then(Value::as_array) else {
        return Err(refuse("a message without a content array"));
    };
    let content = each(parts, output_part_from_api)?;
    let phase = item
        .get("phase")
        .filter(|p| matches!(p.as_str(), Some("commentary" | "final_answer")))
        .cloned();
    let mut pd = rest_of(obj, &["id", "type", "role", "content", "status", "phase"]);
    put(&mut pd, "phase", phase.clone());
    let mut m = strings(&[("type", "message")]);
    copy(
        &mut m,
        item,
        Take::Any,
        &[("id", "id"), ("role", "role"), ("status", "status")],
    );
    set(&mut m, "content", content);
    put(&mut m, "phase", phase);
    set(&mut m, "providerData", Value::Object(pd));
    Ok(m)
}

fn tool_search_from_api(item: &Value, obj: &Obj, t: &str) -> Obj {
    let mut m = strings(&[("type", t)]);
    copy(
        &mut m,
        item,
        Take::Any,
        &[("id", "id"), ("status", "status")],
    );
    let own = if t == "tool_search_call" {
        copy(&mut m, item, Take::Any, &[("arguments", "arguments")]);
        "arguments"
    } else {
        let tools = match item.get("tools") {
            Some(Value::Array(tools)) => found_tools(tools, false),
            _ => Value::Array(Vec::new()),
        };
        set(&mut m, "tools", tools);
        "tools"
    };
    put_rest(&mut m, obj, &["id", "type", "status", own]);
    m
}

/// A `hosted_tool_call` session item: `name` is the API's item type, providerData the rest
/// (but a caller the SDK knows, which becomes the item's own).
fn hosted_call(
    item: &Value,
    kind: &str,
    status: Option<Value>,
    output: Option<Value>,
    mut pd: Obj,
) -> Obj {
    let caller = caller_from_api(pd.get("caller"));
    if caller.is_some() {
        pd.remove("caller");
    }
    let mut m = strings(&[("type", "hosted_tool_call"), ("name", kind)]);
    copy(&mut m, item, Take::Any, &[("id", "id")]);
    put(&mut m, "status", status);
    put(&mut m, "output", output);
    put(&mut m, "caller", caller);
    set(&mut m, "providerData", Value::Object(pd));
    m
}

fn function_output_from_api(item: &Value, obj: &Obj) -> Result<Obj, Unsupported> {
    let mut m = session_call("function_call_result", item, Take::Any);
    let name = defined(item, "name")
        .or_else(|| defined(item, "function_name"))
        .or_else(|| field(item, "call_id"));
    put(&mut m, "name", name);
    copy(&mut m, item, Take::Str, &[("namespace", "namespace")]);
    defined_or(&mut m, item, "status", "completed");
    set(&mut m, "output", tool_output_from_api(item.get("output"))?);
    put_caller_from_api(&mut m, item);
    put_rest(
        &mut m,
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
    );
    Ok(m)
}

fn computer_call_from_api(item: &Value, obj: &Obj) -> Result<Obj, Unsupported> {
    let actions = item
        .get("actions")
        .filter(|a| a.as_array().is_some_and(|a| !a.is_empty()));
    if actions.is_none() && !truthy(item.get("action")) {
        return Err(refuse("a computer_call without an action or actions"));
    }
    let mut m = session_call("computer_call", item, Take::Any);
    copy(&mut m, item, Take::Any, &[("status", "status")]);
    let first = actions.and_then(|a| a.get(0)).cloned();
    put(&mut m, "action", defined(item, "action").or(first));
    put(&mut m, "actions", actions.cloned());
    put_rest(&mut m, obj, &["call_id", "status", "action", "actions"]);
    Ok(m)
}

fn shell_call_from_api(item: &Value, obj: &Obj) -> Obj {
    let action = item.get("action").unwrap_or(&Value::Null);
    let commands = action.get("commands").filter(|c| c.is_array()).cloned();
    let mut a = Obj::new();
    set(
        &mut a,
        "commands",
        commands.unwrap_or_else(|| Value::Array(Vec::new())),
    );
    copy(
        &mut a,
        action,
        Take::Number,
        &[
            ("timeoutMs", "timeout_ms"),
            ("maxOutputLength", "max_output_length"),
        ],
    );
    let mut m = session_call("shell_call", item, Take::Defined);
    defined_or(&mut m, item, "status", "in_progress");
    set(&mut m, "action", Value::Object(a));
    put_caller_from_api(&mut m, item);
    put_rest(&mut m, obj, &["call_id", "status", "action", "caller"]);
    m
}

fn apply_patch_call_from_api(item: &Value, obj: &Obj) -> Result<Obj, Unsupported> {
    let Some(op) = item.get("operation").filter(|o| truthy(Some(o))) else {
        return Err(refuse("an apply_patch_call without an operation"));
    };
    let kind = str_of(op, "type").unwrap_or("");
    let mut operation = strings(&[("type", kind)]);
    copy(&mut operation, op, Take::Any, &[("path", "path")]);
    match kind {
        "create_file" => copy(&mut operation, op, Take::Any, &[("diff", "diff")]),
        "update_file" => {
            copy(&mut operation, op, Take::Any, &[("diff", "diff")]);
            match op.get("move_to") {
                None | Some(Value::Null) => {}
                Some(Value::String(to)) if !to.is_empty() => {
                    set(&mut operation, "moveTo", string(to))
                }
                Some(_) => {
                    return Err(refuse(
                        "an apply_patch_call whose move_to is not a non-empty string",
                    ))
                }
            }
        }
        "delete_file" => {}
        _ => return Err(refuse("an apply_patch_call with an unknown operation")),
    }
    let mut m = session_call("apply_patch_call", item, Take::Defined);
    defined_or(&mut m, item, "status", "in_progress");
    set(&mut m, "operation", Value::Object(operation));
    put_caller_from_api(&mut m, item);
    put_rest(&mut m, obj, &["call_id", "status", "operation", "caller"]);
    Ok(m)
}

/// A reasoning summary part as the SDK keeps it: its text, and the rest in providerData.
fn summary_part_from_api(part: &Value) -> Result<Value, Unsupported> {
    let Some(p) = part.as_object() else {
        return Err(refuse("a reasoning summary part that is not an object"));
    };
    let mut c = strings(&[("type", "input_text")]);
    copy(&mut c, part, Take::Any, &[("text", "text")]);
    put_rest(&mut c, p, &["text"]);
    Ok(Value::Object(c))
}

/// A part of an assistant message as the SDK keeps it: the fields it has no place for (the
/// annotations, logprobs) in providerData.
fn output_part_from_api(part: &Value) -> Result<Value, Unsupported> {
    let (kind, own) = match str_of(part, "type") {
        Some("output_text") => ("output_text", "text"),
        Some("refusal") => ("refusal", "refusal"),
        _ => return Err(refuse_type("a message part", part)),
    };
    let mut m = strings(&[("type", kind)]);
    copy(&mut m, part, Take::Any, &[(own, own)]);
    if let Some(p) = part.as_object() {
        let rest = rest_of(p, &["type", own]);
        if !rest.is_empty() {
            set(&mut m, "providerData", Value::Object(rest));
        }
    }
    Ok(Value::Object(m))
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
        _ => Ok(string("")),
    }
}

/// One part of a tool's output in the SDK's field names; `None` for an image the API listed
/// without its URL or file id (the Conversations API may leave a data URL out), which cannot be
/// shown or sent again.
fn structured_part_from_api(part: &Value) -> Result<Option<Value>, Unsupported> {
    let kind = str_of(part, "type").unwrap_or("");
    let mut m = strings(&[("type", kind)]);
    match kind {
        "input_text" => copy(&mut m, part, Take::Any, &[("text", "text")]),
        "input_image" => {
            let image = if let Some(url) = nonempty_str(part, "image_url") {
                string(url)
            } else if let Some(id) = id_ref(part, &["file_id"]) {
                id
            } else {
                return Ok(None);
            };
            set(&mut m, "image", image);
            copy(&mut m, part, Take::Truthy, &[("detail", "detail")]);
        }
        "input_file" => {
            let file = if let Some(id) = id_ref(part, &["file_id"]) {
                Some(id)
            } else if let Some(url) = nonempty_str(part, "file_url") {
                Some(one("url", url))
            } else {
                nonempty_str(part, "file_data").map(string)
            };
            put(&mut m, "file", file);
            copy(&mut m, part, Take::Truthy, &[("filename", "filename")]);
        }
        _ => return Err(refuse_type("a tool output part", part)),
    }
    Ok(Some(Value::Object(m)))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The SDK's own conversions of a corpus of items (see `tests/fixtures/wire/make.mjs`).
    const SDK: &str = include_str!("../../../tests/fixtures/wire/sdk-items.json");

    /// The cases of one direction of `sdk-items.json` (the Responses and the Conversations
    /// directions alike): name, input, and what the SDK made of it (`Err` where it threw).
    pub(in crate::core::wire) fn sdk_cases(
        direction: &str,
    ) -> Vec<(String, Value, Result<Value, String>)> {
        let all: Value = crate::core::json::from_str(SDK).expect("the fixture is JSON");
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
    fn what_a_chat_completions_answer_kept_goes_to_the_responses_api_as_it_takes_it() {
        // Its reasoning has no id: the API refuses it, so it is left out (the chat went on with
        // the Responses API, or a compaction sends the history there).
        let reasoning = json!({"type": "reasoning", "content": [],
            "rawContent": [{"type": "reasoning_text", "text": "Hm."}],
            "providerData": {"field": "reasoning_content"}});
        assert_eq!(to_responses_item(&reasoning), None);
        // A call keeps its own fields, not Gemini's `extra_content`.
        let call = json!({"type": "function_call", "callId": "c1", "name": "f", "arguments": "{}",
            "providerData": {"extra_content": {"google": {"thought_signature": "sig"}}}});
        assert_eq!(
            to_responses_item(&call),
            Some(json!({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}))
        );
        // A Responses reasoning item goes as it is.
        let kept = json!({"type": "reasoning", "id": "rs", "summary": []});
        assert_eq!(to_responses_item(&kept), Some(kept.clone()));
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
            let sent = responses_input_item(&input).ok();
            assert_eq!(
                to_responses_item(&input),
                sent.filter(|wire| !is_bare_reasoning(wire))
            );
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
        let summary = crate::core::compaction::summary_item("short", 0);
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
