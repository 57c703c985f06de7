//! Compaction rules, for any model: when a history is worth compacting, what a summary
//! compaction keeps and what it asks the model to summarise, and the items it stores. The
//! default trigger is the SDK's: at least [`DEFAULT_THRESHOLD`] candidates, a candidate being any
//! item but a user message or an earlier compaction.

use crate::core::json::{json, Value};

use super::session::starts_turn;
use super::wire::{call_id, content_text, is_answered_call, is_call_output, item_type};

/// Compaction runs once a history holds this many candidates (the SDK's default).
pub const DEFAULT_THRESHOLD: usize = 10;

/// The marker a summary item carries, so a later compaction knows it: a field of the item itself,
/// which no conversion sends to a model API (the SDK merges `providerData` into what it sends,
/// and the API refuses a field it does not know). Summaries stored by earlier versions carry it
/// in `providerData`, and are known by that too.
pub use super::session::SUMMARY_MARKER;

/// How a history is compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// The model summarises everything but the newest turns into one item (any chat model).
    Summary,
    /// `POST /responses/compact` (OpenAI's Responses API) returns the compacted items.
    Responses,
}

impl Strategy {
    pub fn parse(name: &str) -> Option<Strategy> {
        match name {
            "summary" => Some(Strategy::Summary),
            "responses" => Some(Strategy::Responses),
            _ => None,
        }
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Whether an item is a server's compaction item (`/responses/compact`'s, encrypted).
pub fn is_server_compaction(item: &Value) -> bool {
    item_type(item) == "compaction"
}

/// Whether an item is the result of an earlier compaction: the Responses API's `compaction`
/// item, or a summary this library made.
pub fn is_compaction(item: &Value) -> bool {
    is_server_compaction(item)
        || item.get(SUMMARY_MARKER).is_some()
        || item
            .get("providerData")
            .and_then(|p| p.get(SUMMARY_MARKER))
            .is_some()
}

fn is_user_message(item: &Value) -> bool {
    starts_turn(str_of(item, "role"), str_of(item, "type"))
}

/// Whether a run is under way, or paused, in the newest turn: the history ends with a user
/// message (a run saved its input, not yet its answer, which it saves after that input), or the
/// newest turn holds a call without its output (a run paused for its approval: a function call,
/// or the SDK's computer, shell or apply-patch call). A
/// compaction that replaced either would make the run's save fail (its answer lost, or the
/// approved tool refused).
pub fn awaits_answer(items: &[Value]) -> bool {
    if items.last().is_some_and(is_user_message) {
        return true;
    }
    let turn = &items[items.iter().rposition(is_user_message).unwrap_or(0)..];
    turn.iter().filter(|i| is_answered_call(i)).any(|c| {
        let id = call_id(c);
        !turn.iter().any(|o| is_call_output(o) && call_id(o) == id)
    })
}

/// The items a compaction would replace: every item but user messages and earlier compactions.
pub fn candidates(items: &[Value]) -> Vec<Value> {
    items
        .iter()
        .filter(|i| !is_user_message(i) && !is_compaction(i))
        .cloned()
        .collect()
}

/// The default trigger: enough candidates among `replaced` (see [`replaced`]).
pub fn should_compact(replaced: &[Value]) -> bool {
    candidates(replaced).len() >= DEFAULT_THRESHOLD
}

/// What a compaction of `items` would replace: all but the newest `keep_turns` turns for a
/// summary, everything for the server's compaction. The trigger counts candidates there only:
/// the turns a summary keeps would count again after every compaction (a turn of tool calls or
/// two would set it off again at once).
pub fn replaced(items: &[Value], strategy: Strategy, keep_turns: usize) -> &[Value] {
    match strategy {
        Strategy::Summary => split_turns(items, keep_turns).0,
        Strategy::Responses => items,
    }
}

/// Splits a history into what a summary replaces and the newest `keep_turns` turns it keeps
/// (a turn starts at a user message).
pub fn split_turns(items: &[Value], keep_turns: usize) -> (&[Value], &[Value]) {
    if keep_turns == 0 {
        return (items, &[]);
    }
    let starts: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, i)| is_user_message(i))
        .map(|(i, _)| i)
        .collect();
    let cut = match starts.len().checked_sub(keep_turns) {
        Some(first_kept) => starts[first_kept],
        None => 0,
    };
    items.split_at(cut)
}

/// What the summarising model is told.
pub const SUMMARY_INSTRUCTIONS: &str = "You compact conversations between a user and an \
assistant. Write a summary of the conversation you are given that keeps every fact, name, \
number, decision, preference and open question a later reply could need, and what each tool \
returned. Write it as plain notes, in the conversation's language. Reply with the summary only.";

/// The conversation as plain text for the summarising model: one line per item.
pub fn transcript(items: &[Value]) -> String {
    let mut lines = Vec::new();
    for item in items {
        let text = message_text(item.get("content"));
        let line = match (item_type(item), str_of(item, "role")) {
            _ if is_compaction(item) && item_type(item) == "message" => {
                format!("Earlier summary: {text}")
            }
            ("message", Some("user")) => format!("User: {text}"),
            ("message", Some("assistant")) => format!("Assistant: {text}"),
            ("message", Some(role)) => format!("{role}: {text}"),
            // (With its id, which its result names: parallel calls of one tool told apart.)
            ("function_call", _) => format!(
                "Tool call ({}): {}({})",
                call_id(item).unwrap_or(""),
                str_of(item, "name").unwrap_or(""),
                str_of(item, "arguments").unwrap_or("")
            ),
            ("function_call_result" | "function_call_output", _) => format!(
                "Tool result ({}): {}",
                call_id(item).unwrap_or(""),
                transcript_output(item.get("output"))
            ),
            // The SDK's other tools (hosted, computer, shell and apply-patch calls and their
            // outputs): the item as JSON (a hosted call's details are in its `providerData`),
            // without a screenshot, and each long text cut (an image a hosted tool generated is
            // megabytes of base64).
            (kind, _)
                if kind == "hosted_tool_call" || is_answered_call(item) || is_call_output(item) =>
            {
                let mut shown = item.clone();
                if let Some(fields) = shown
                    .as_object_mut()
                    .filter(|_| kind.starts_with("computer_call_"))
                {
                    fields.remove("output");
                }
                format!("Tool item: {}", shortened(shown))
            }
            _ => continue,
        };
        lines.push(line);
    }
    lines.join("\n")
}

/// The longest text of a tool item a transcript shows whole.
const LONGEST_TOOL_TEXT: usize = 1000;

/// `value` with each string longer than [`LONGEST_TOOL_TEXT`] characters cut there (`…` and how
/// long it was), and a data URL as `[data]`.
fn shortened(value: Value) -> Value {
    match value {
        Value::String(s) if s.starts_with("data:") => Value::String("[data]".into()),
        Value::String(s) if s.chars().count() > LONGEST_TOOL_TEXT => {
            let cut: String = s.chars().take(LONGEST_TOOL_TEXT).collect();
            Value::String(format!("{cut}… ({} characters)", s.chars().count()))
        }
        Value::Array(values) => Value::Array(values.into_iter().map(shortened).collect()),
        Value::Object(mut fields) => {
            fields.retain(|_, v| {
                *v = shortened(v.take());
                true
            });
            Value::Object(fields)
        }
        other => other,
    }
}

/// A message's content as a transcript shows it: its text, each part apart, a refusal as one
/// (`[refusal: ...]`), and an image, file or other attachment a user sent by its kind (and file
/// name), never its data.
fn message_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(
                |part| match (str_of(part, "text"), str_of(part, "refusal")) {
                    (Some(text), _) => Some(text.to_string()),
                    (None, Some(refusal)) => Some(format!("[refusal: {refusal}]")),
                    (None, None) => str_of(part, "type").map(|kind| attachment(kind, part)),
                },
            )
            .collect::<Vec<_>>()
            .join(" "),
        other => content_text(other),
    }
}

/// An attachment as a transcript shows it: its kind, and its file name where it has one
/// (`[image]`, `[file report.pdf]`), never its data.
fn attachment(kind: &str, part: &Value) -> String {
    match str_of(part, "filename") {
        Some(name) => format!("[{kind} {name}]"),
        None => format!("[{kind}]"),
    }
}

/// A tool's output as text for a transcript: its text parts, and each image or file as its
/// kind in brackets (`[image]`, `[file report.pdf]`), never its data (a data URL of an image
/// would fill the summarising model's context with base64).
fn transcript_output(output: Option<&Value>) -> String {
    match output {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| transcript_output(Some(p)))
            .collect::<Vec<_>>()
            .join(" "),
        Some(part @ Value::Object(_)) => match (str_of(part, "text"), str_of(part, "type")) {
            (Some(text), _) => text.to_string(),
            (None, Some(kind @ ("image" | "input_image" | "file" | "input_file"))) => {
                attachment(kind, part)
            }
            _ => part.to_string(),
        },
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// The input of the summarising call.
pub fn summary_input(items: &[Value]) -> Vec<Value> {
    vec![json!({
        "type": "message",
        "role": "user",
        "content": format!("Summarise this conversation:\n\n{}", transcript(items)),
    })]
}

/// The item a summary is stored as: a system message, marked as a compaction by the number of
/// turns it stands for (those of a summary it replaced with them), so that the turns a chat had
/// are still counted once its older ones are replaced (see [`summarised_turns`]).
pub fn summary_item(summary: &str, turns: u64) -> Value {
    json!({
        "type": "message",
        "role": "system",
        "content": format!("Summary of the earlier conversation:\n{}", summary.trim()),
        // (`true` where it can tell of none, rather than a 0 an app testing the mark would miss.)
        SUMMARY_MARKER: if turns > 0 { json!(turns) } else { json!(true) },
    })
}

/// The turns a summary of ours stands for: its mark's number (none, 0: a server's compaction
/// item, or an earlier version's summary, marked `true`).
pub fn summarised_turns(item: &Value) -> u64 {
    item.get(SUMMARY_MARKER)
        .or_else(|| item.get("providerData").and_then(|p| p.get(SUMMARY_MARKER)))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// The turns what a summary replaces stands for: its own (each begun by a user message) and
/// those its compactions stand for (see [`hidden_turns`]). (The user messages a `'responses'`
/// compaction kept before its item are turns of their own.)
pub fn turns_of_replaced(older: &[Value]) -> u64 {
    let newest = newest_summary(older);
    let after = newest.map_or(older, |i| &older[i + 1..]);
    let own = after.iter().filter(|i| is_user_message(i)).count() as u64;
    hidden_turns(older).saturating_add(own)
}

/// The turns a history's compactions stand for that none of its user messages does: the number
/// of the newest summary of ours, or, where greater, the number a `'responses'` compaction after
/// it marked its server's item with (see [`mark_turns`]); 0 where none tells. The user messages
/// after that summary are turns of their own.
pub fn hidden_turns(items: &[Value]) -> u64 {
    let from = newest_summary(items).unwrap_or(0);
    items[from..]
        .iter()
        .filter(|i| is_compaction(i))
        .map(summarised_turns)
        .max()
        .unwrap_or(0)
}

fn newest_summary(items: &[Value]) -> Option<usize> {
    items
        .iter()
        .rposition(|i| is_compaction(i) && !is_server_compaction(i))
}

/// Whether an item may stand before a history's first answer, where [`hidden_turns`] reads the
/// compactions: an earlier compaction, or a user message (a `'responses'` compaction's output is
/// the user messages it kept, then its item).
pub fn opens_history(item: &Value) -> bool {
    is_compaction(item) || is_user_message(item)
}

/// Marks a server's `compaction` item that a `'responses'` compaction wrote with the turns the
/// history it replaced stood for beyond its user messages (the turns of a summary of ours the
/// server compacted with them, which its output does not keep): the mark a summary of ours
/// carries, which no request sends (the item goes as its type, id and encrypted content).
pub fn mark_turns(item: &mut Value, turns: u64) {
    if let (true, Value::Object(fields)) = (turns > 0 && is_server_compaction(item), &mut *item) {
        fields.insert(SUMMARY_MARKER.into(), json!(turns));
    }
}

/// The items `POST /responses/compact` returned, as they are stored: user messages in the
/// SDK's shape (`input_text` parts, images and files with their source as `image` or `file`:
/// a URL or data, or `{ id }`), every other item (the `compaction` item) as it came.
pub fn compacted_items(output: &[Value]) -> Vec<Value> {
    output
        .iter()
        .map(|item| {
            if item_type(item) != "message" || str_of(item, "role") != Some("user") {
                return item.clone();
            }
            let parts: Vec<Value> = match item.get("content") {
                Some(Value::String(s)) => vec![json!({"type": "input_text", "text": s})],
                Some(Value::Array(parts)) => parts
                    .iter()
                    .map(|p| match str_of(p, "type") {
                        Some("input_text" | "output_text" | "text") => {
                            json!({"type": "input_text", "text": str_of(p, "text").unwrap_or("")})
                        }
                        Some(kind @ ("input_image" | "input_file")) => sdk_media_part(kind, p),
                        _ => p.clone(),
                    })
                    .collect(),
                _ => Vec::new(),
            };
            let mut m = crate::core::json::Map::new();
            if let Some(id) = str_of(item, "id") {
                m.insert("id".into(), json!(id));
            }
            m.insert("type".into(), json!("message"));
            m.insert("role".into(), json!("user"));
            m.insert("content".into(), Value::Array(parts));
            Value::Object(m)
        })
        .collect()
}

/// For each item of `compacted` (as [`compacted_items`] gives them), the stored item of `stored`
/// it is, where the server gave back a user message of the history as it was sent (in the API's
/// shape, maybe with an id of its own): that one is written back as it was stored, so that what
/// was added is what comes back, and what keeps an item's time (an `EncryptedSession`'s TTL)
/// finds it. Matched in order, each stored item once.
pub fn stored_originals(compacted: &[Value], stored: &[Value]) -> Vec<Option<usize>> {
    let without_id = |v: &Value| {
        let mut v = v.clone();
        if let Value::Object(m) = &mut v {
            m.remove("id");
        }
        v
    };
    let mut from = 0;
    compacted
        .iter()
        .map(|item| {
            if !is_user_message(item) {
                return None;
            }
            let item = without_id(item);
            let at = stored[from..].iter().position(|s| {
                is_user_message(s)
                    && super::wire::items::to_responses_item(s)
                        .and_then(|sent| compacted_items(&[sent]).pop())
                        .is_some_and(|c| without_id(&c) == item)
            })?;
            from += at + 1;
            Some(from - 1)
        })
        .collect()
}

/// An `input_image` or `input_file` part of the API as the SDK stores it (what its compaction
/// session does): the source (`image_url`, `file_data`, `file_url` or `file_id`) as `image` or
/// `file`, an id as `{ id }`; `detail` and `filename` kept.
fn sdk_media_part(kind: &str, part: &Value) -> Value {
    let mut m = part.as_object().cloned().unwrap_or_default();
    let field = if kind == "input_image" {
        "image"
    } else {
        "file"
    };
    for key in ["image_url", "file_data", "file_url", "file_id"] {
        if let Some(Value::String(v)) = m.remove(key) {
            if !v.is_empty() && !m.contains_key(field) {
                let source = match key {
                    "file_id" => super::wire::items::one("id", &v),
                    _ => Value::String(v),
                };
                m.insert(field.into(), source);
            }
        }
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::wire::items::to_responses_item;

    fn user(t: &str) -> Value {
        json!({"role": "user", "content": t})
    }
    fn answer(t: &str) -> Value {
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t}]})
    }
    fn call(id: &str) -> Value {
        json!({"type": "function_call", "callId": id, "name": "lookup", "arguments": "{\"q\":1}"})
    }
    fn result(id: &str) -> Value {
        json!({"type": "function_call_result", "callId": id, "output": {"type": "text", "text": "42"}})
    }

    #[test]
    fn the_trigger_counts_what_compaction_would_replace() {
        let mut items = vec![
            summary_item("old", 0),
            json!({"type": "compaction", "encrypted_content": "x"}),
        ];
        for i in 0..9 {
            items.push(user("q"));
            items.push(answer(&i.to_string()));
        }
        assert_eq!(candidates(&items).len(), 9);
        assert!(!should_compact(&items));
        items.push(call("c"));
        assert!(should_compact(&items));
    }

    #[test]
    fn a_history_ending_with_a_question_or_a_call_awaiting_approval_awaits_its_answer() {
        assert!(awaits_answer(&[answer("a"), user("q")]));
        assert!(!awaits_answer(&[user("q"), answer("a")]));
        assert!(!awaits_answer(&[]));
        // A call waiting for its approval in the newest turn: a run paused there.
        assert!(awaits_answer(&[user("q"), call("c")]));
        assert!(awaits_answer(&[
            user("q"),
            call("c"),
            result("c"),
            call("d")
        ]));
        assert!(!awaits_answer(&[
            user("q"),
            call("c"),
            result("c"),
            answer("a")
        ]));
        // One left unanswered in an earlier turn (the user went on) holds nothing up.
        assert!(!awaits_answer(&[
            user("q"),
            call("c"),
            user("r"),
            answer("a")
        ]));
        // The SDK's shell, computer and apply-patch calls wait for their approval too.
        for (kind, output) in [
            ("shell_call", "shell_call_output"),
            ("computer_call", "computer_call_result"),
            ("apply_patch_call", "apply_patch_call_output"),
        ] {
            let paused = json!({"type": kind, "callId": "s", "status": "in_progress"});
            assert!(awaits_answer(&[user("q"), paused.clone()]), "{kind}");
            let answered = json!({"type": output, "callId": "s", "output": "ok"});
            assert!(!awaits_answer(&[user("q"), paused, answered]), "{output}");
        }
    }

    #[test]
    fn a_summary_is_triggered_by_what_it_would_replace_not_by_the_turns_it_keeps() {
        // A summary, then two turns of tool calls: 22 candidates, all in the kept turns.
        let mut items = vec![summary_item("s", 0)];
        for t in 0..2 {
            items.push(user("q"));
            for c in 0..5 {
                let id = format!("c{t}{c}");
                items.push(call(&id));
                items.push(result(&id));
            }
            items.push(answer("a"));
        }
        assert!(should_compact(replaced(&items, Strategy::Responses, 2)));
        assert!(!should_compact(replaced(&items, Strategy::Summary, 2)));
        // A third such turn: the oldest of the three is what a summary replaces.
        items.extend(items[1..13].to_vec());
        assert!(should_compact(replaced(&items, Strategy::Summary, 2)));
    }

    #[test]
    fn a_summary_keeps_the_newest_turns_whole() {
        let items = vec![
            summary_item("s", 0),
            user("q1"),
            answer("a1"),
            user("q2"),
            call("c"),
            result("c"),
            answer("a2"),
            user("q3"),
            answer("a3"),
        ];
        let (older, kept) = split_turns(&items, 2);
        assert_eq!(older.len(), 3);
        assert_eq!(kept[0], user("q2"));
        assert_eq!(kept.len(), 6);
        assert_eq!(split_turns(&items, 0).0.len(), items.len());
        assert_eq!(
            split_turns(&items, 9).0.len(),
            0,
            "fewer turns than kept: nothing to summarise"
        );
    }

    #[test]
    fn the_transcript_reads_the_sdk_s_other_tools_without_their_images() {
        // As the SDK stores them: a hosted call's details in its `providerData`.
        let image = "iVBORw0KGgo".repeat(500);
        let items = [
            json!({"type": "hosted_tool_call", "name": "web_search_call", "status": "completed", "providerData": {"action": {"type": "search", "query": "tide times"}}}),
            json!({"type": "hosted_tool_call", "name": "image_generation_call", "status": "completed", "output": image}),
            json!({"type": "shell_call", "callId": "s", "action": {"commands": ["ls", "cat notes.txt"]}}),
            json!({"type": "shell_call_output", "callId": "s", "output": [{"stdout": "notes.txt", "stderr": ""}, {"stdout": "", "stderr": "no such file"}]}),
            json!({"type": "apply_patch_call", "callId": "p", "operation": {"type": "update_file", "path": "a.md", "diff": "+hello"}}),
            json!({"type": "apply_patch_call_output", "callId": "p", "status": "completed", "output": "applied"}),
            json!({"type": "computer_call", "callId": "c", "action": {"type": "type", "text": "hi"}}),
            json!({"type": "computer_call_result", "callId": "c", "output": {"type": "computer_screenshot", "data": "data:image/png;base64,AAAA"}}),
            json!({"type": "function_call_result", "callId": "f", "output": {"type": "image", "image": "data:image/png;base64,BBBB"}}),
        ];
        let text = transcript(&items);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), items.len());
        for shown in [
            "\"query\":\"tide times\"",
            "\"commands\":[\"ls\",\"cat notes.txt\"]",
            "\"stderr\":\"no such file\"",
            "\"diff\":\"+hello\",\"path\":\"a.md\"",
            "\"output\":\"applied\"",
            "\"text\":\"hi\"",
        ] {
            assert!(text.contains(shown), "{shown} in {text}");
        }
        // No image's data: a generated one cut to its first 1,000 characters, a screenshot left out.
        assert!(lines[1].contains("… (5500 characters)"));
        assert!(lines[1].len() < 1200);
        assert!(!text.contains("AAAA") && !text.contains("BBBB"));
    }

    #[test]
    fn a_summary_counts_the_turns_it_stands_for() {
        // Its own turns, and those of the summary before it; a server's compaction item, or an
        // earlier version's summary (marked `true`), stands for none it can tell.
        let older = [user("q1"), answer("a1"), user("q2"), answer("a2")];
        assert_eq!(turns_of_replaced(&older), 2);
        let again = [summary_item("s", 2), user("q3"), answer("a3")];
        assert_eq!(turns_of_replaced(&again), 3);
        assert_eq!(summarised_turns(&summary_item("s", 3)), 3);
        let mut old = summary_item("s", 0);
        old[SUMMARY_MARKER] = json!(true);
        assert_eq!(turns_of_replaced(&[old, user("q")]), 1);
        let server = json!({"type": "compaction", "encrypted_content": "e"});
        // The user messages a server's compaction kept before its item count, as turns.
        assert_eq!(
            turns_of_replaced(&[user("q0"), server.clone(), user("q")]),
            2
        );
        assert_eq!(
            turns_of_replaced(&[summary_item("s", 4), user("q0"), server, user("q")]),
            6
        );
        assert_eq!(turns_of_replaced(&[]), 0);
        // A `'responses'` compaction over a summary: its item carries the summary's turns, and
        // the user messages it kept count beside them.
        let mut marked = json!({"type": "compaction", "encrypted_content": "e"});
        mark_turns(&mut marked, 4);
        mark_turns(&mut user("q"), 4);
        let compacted = [
            user("q5"),
            user("q6"),
            marked.clone(),
            user("q7"),
            answer("a7"),
        ];
        assert_eq!(hidden_turns(&compacted), 4);
        assert_eq!(turns_of_replaced(&compacted), 7);
        assert_eq!(compacted.iter().take_while(|i| opens_history(i)).count(), 4);
        // Compacted again by the server: the mark is handed on.
        assert_eq!(hidden_turns(&[marked.clone(), user("q")]), 4);
        // A summary made after it stands for them all.
        assert_eq!(hidden_turns(&[marked, summary_item("s", 9), user("q")]), 9);
        let mut unmarked = json!({"type": "compaction", "encrypted_content": "e"});
        mark_turns(&mut unmarked, 0);
        assert_eq!(unmarked.get(SUMMARY_MARKER), None);
    }

    #[test]
    fn the_transcript_reads_every_kind_of_item() {
        let items = [
            summary_item("the user is Ann", 0),
            user("q1"),
            call("c"),
            result("c"),
            answer("a1"),
        ];
        assert_eq!(
            transcript(&items),
            "Earlier summary: Summary of the earlier conversation:\nthe user is Ann\nUser: q1\nTool call (c): lookup({\"q\":1})\nTool result (c): 42\nAssistant: a1"
        );
        // A user's attachments by their kind, never their data; the parts of a message apart.
        let attached = json!({"role": "user", "content": [
            {"type": "input_text", "text": "Compare"},
            {"type": "input_text", "text": "with this"},
            {"type": "input_image", "image": "data:image/png;base64,QUFB"},
            {"type": "input_file", "file": "data:application/pdf;base64,JVBE", "filename": "a.pdf"},
        ]});
        assert_eq!(
            transcript(&[attached]),
            "User: Compare with this [input_image] [input_file a.pdf]"
        );
        // A refusal as one; a part of no kind is nothing.
        let refused = json!({"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Partly."},
            {"type": "refusal", "refusal": "No more."},
            {},
        ]});
        assert_eq!(
            transcript(&[refused]),
            "Assistant: Partly. [refusal: No more.]"
        );
        assert!(is_compaction(&summary_item("x", 0)));
        // As earlier versions stored a summary.
        let mut older = summary_item("x", 0);
        if let Some(o) = older.as_object_mut() {
            o.remove(SUMMARY_MARKER);
            o.insert("providerData".into(), json!({ SUMMARY_MARKER: true }));
        }
        assert!(is_compaction(&older));
        assert!(!is_compaction(&answer("x")));
    }

    #[test]
    fn compacted_output_keeps_user_messages_in_the_sdk_shape() {
        let output = [
            json!({"type": "message", "id": "m1", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}),
            json!({"type": "compaction", "id": "cmp", "encrypted_content": "ENC"}),
        ];
        assert_eq!(
            compacted_items(&output),
            vec![
                json!({"type": "message", "role": "user", "id": "m1", "content": [{"type": "input_text", "text": "hi"}]}),
                json!({"type": "compaction", "id": "cmp", "encrypted_content": "ENC"}),
            ]
        );
    }

    #[test]
    fn user_messages_the_server_gave_back_are_the_stored_ones_in_order_each_once() {
        let stored = [
            user("hi"),
            answer("hello"),
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "again"}]}),
            answer("sure"),
            user("hi"),
        ];
        let output = [
            json!({"type": "message", "id": "m1", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}),
            json!({"type": "message", "id": "m2", "role": "user", "content": [{"type": "input_text", "text": "again"}]}),
            json!({"type": "message", "id": "m3", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}),
            // Not one of the history's (a server's own wording): kept as given.
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi there"}]}),
            json!({"type": "compaction", "id": "cmp", "encrypted_content": "ENC"}),
        ];
        assert_eq!(
            stored_originals(&compacted_items(&output), &stored),
            vec![Some(0), Some(2), Some(4), None, None]
        );
        // Out of order: only what follows the last match is looked at.
        let swapped = [output[2].clone(), output[1].clone()];
        assert_eq!(
            stored_originals(&compacted_items(&swapped), &stored[..3]),
            vec![Some(0), Some(2)]
        );
    }

    #[test]
    fn compacted_images_and_files_are_stored_as_the_sdk_stores_them_and_sent_again_whole() {
        let parts = json!([
            {"type": "input_text", "text": "what is this?"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "high"},
            {"type": "input_image", "file_id": "file-img"},
            {"type": "input_file", "file_data": "data:application/pdf;base64,JVBE", "filename": "a.pdf"},
            {"type": "input_file", "file_url": "https://example.com/b.pdf"},
            {"type": "input_file", "file_id": "file-c"},
        ]);
        let output = [json!({"type": "message", "role": "user", "content": parts.clone()})];
        let stored = compacted_items(&output);
        assert_eq!(
            stored[0].get("content"),
            Some(&json!([
                {"type": "input_text", "text": "what is this?"},
                {"type": "input_image", "image": "data:image/png;base64,AAAA", "detail": "high"},
                {"type": "input_image", "image": {"id": "file-img"}},
                {"type": "input_file", "file": "data:application/pdf;base64,JVBE", "filename": "a.pdf"},
                {"type": "input_file", "file": "https://example.com/b.pdf"},
                {"type": "input_file", "file": {"id": "file-c"}},
            ]))
        );
        // The next request sends each part with its source, as the API gave it.
        let sent = to_responses_item(&stored[0]);
        let sent_parts = sent.as_ref().and_then(|m| m.get("content"));
        let sources: Vec<Option<&str>> = sent_parts
            .and_then(Value::as_array)
            .map(|ps| {
                ps.iter()
                    .map(|p| {
                        ["text", "image_url", "file_data", "file_url", "file_id"]
                            .into_iter()
                            .find_map(|k| str_of(p, k))
                    })
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(
            sources,
            vec![
                Some("what is this?"),
                Some("data:image/png;base64,AAAA"),
                Some("file-img"),
                Some("data:application/pdf;base64,JVBE"),
                Some("https://example.com/b.pdf"),
                Some("file-c"),
            ]
        );
    }

    #[test]
    fn a_transcript_names_a_tool_output_image_or_file_without_its_data() {
        let image = json!({"type": "function_call_result", "callId": "c", "output": {"type": "image", "image": "data:image/png;base64,QUFBQUFB"}});
        let parts = json!({"type": "function_call_result", "callId": "d", "output": [
            {"type": "input_text", "text": "the chart"},
            {"type": "input_file", "file": "data:application/pdf;base64,JVBE", "filename": "chart.pdf"},
        ]});
        let plain = json!({"type": "function_call_result", "callId": "e", "output": {"type": "weather", "temp": 20}});
        let text = transcript(&[image, parts, plain]);
        assert_eq!(
            text,
            "Tool result (c): [image]\nTool result (d): the chart [input_file chart.pdf]\nTool result (e): {\"temp\":20,\"type\":\"weather\"}"
        );
        assert!(!text.contains("base64"));
    }
}
