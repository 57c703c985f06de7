//! What the search index reads of an item: the text of its message content and, when asked,
//! of its tool calls' arguments and outputs.

use wasm_bindgen::JsValue;

use super::js;
use super::metadata::{item_text, parts_text};

/// The searchable text of an item: a message's content (a string, or the `text` of its parts);
/// with `tools`, also a tool call's name and `arguments`, a tool output's `output` (a string, or
/// the `text` of an output object or of its parts), a hosted tool call's `output` (an MCP
/// tool's result), a shell call's commands and its output's `stdout` and `stderr`, an
/// `apply_patch` call's path and diff and its output's text, and the text a computer call
/// types. Nothing for anything else.
pub fn item_search_text(item: &JsValue, tools: bool) -> String {
    let field = |key: &'static str| js::get(item, key).unwrap_or(JsValue::UNDEFINED);
    let kind = field("type").as_string();
    let is_message = field("role").is_string() && matches!(kind.as_deref(), None | Some("message"));
    if is_message {
        return item_text(item).unwrap_or_default();
    }
    if !tools {
        return String::new();
    }
    let mut text = Vec::new();
    match kind.as_deref() {
        Some("function_call") | Some("hosted_tool_call") => {
            strings(item, &["name", "arguments", "output"], &mut text)
        }
        Some("shell_call") => strings(&field("action"), &["commands"], &mut text),
        Some("shell_call_output") => strings(&field("output"), &["stdout", "stderr"], &mut text),
        Some("apply_patch_call") => strings(&field("operation"), &["path", "diff"], &mut text),
        Some("apply_patch_call_output") => strings(item, &["output"], &mut text),
        Some("computer_call") => {
            strings(&field("action"), &["text"], &mut text);
            strings(&field("actions"), &["text"], &mut text);
        }
        Some("function_call_result") | Some("function_call_output") => {
            let output = field("output");
            if let Some(text) = output.as_string() {
                return text;
            }
            if let Some(text) = js::get(&output, "text").ok().and_then(|t| t.as_string()) {
                return text;
            }
            return parts_text(&output).unwrap_or_default();
        }
        _ => {}
    }
    text.join(" ")
}

/// Appends the strings `value` holds under `keys` (a string, or the strings of an array), and so
/// of each element where `value` is an array.
fn strings(value: &JsValue, keys: &[&'static str], out: &mut Vec<String>) {
    let each = match js::is_array(value) {
        Ok(true) => js::elements(value).unwrap_or_default(),
        _ => vec![value.clone()],
    };
    for v in &each {
        for key in keys {
            let field = js::get(v, key).unwrap_or(JsValue::UNDEFINED);
            match js::is_array(&field) {
                Ok(true) => out.extend(
                    js::elements(&field)
                        .unwrap_or_default()
                        .iter()
                        .filter_map(JsValue::as_string),
                ),
                _ => out.extend(field.as_string()),
            }
        }
    }
}
