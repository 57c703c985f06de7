//! What the search index reads of an item: the text of its message content and, when asked,
//! of its tool calls' arguments and outputs.

use wasm_bindgen::JsValue;

use super::js;
use super::metadata::{item_text, parts_text};

/// The searchable text of an item: a message's content (a string, or the `text` of its parts);
/// with `tools`, also a tool call's `arguments` and a tool output's `output` (a string, or the
/// `text` of an output object or of its parts). Nothing for anything else.
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
    match kind.as_deref() {
        Some("function_call") | Some("hosted_tool_call") => {
            let name = field("name").as_string().unwrap_or_default();
            let arguments = field("arguments").as_string().unwrap_or_default();
            format!("{name} {arguments}")
        }
        Some("function_call_result") | Some("function_call_output") => {
            let output = field("output");
            if let Some(text) = output.as_string() {
                return text;
            }
            if let Some(text) = js::get(&output, "text").ok().and_then(|t| t.as_string()) {
                return text;
            }
            parts_text(&output).unwrap_or_default()
        }
        _ => String::new(),
    }
}
