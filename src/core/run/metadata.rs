//! What a run does with its session's metadata, Agno style: when a summary is due, what the model
//! is asked for a summary or a title and how its answer is read, and the blocks the summary and
//! the state add to the instructions.

use crate::core::json::{json, Map, Value};

/// What an agent (or a run) asks of its session's metadata.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetadataOptions {
    /// Write a summary after every this many turns (`summaries: { everyTurns }`).
    pub summary_every: Option<u64>,
    pub add_summary_to_context: bool,
    /// Ask the model for a title after the first turn.
    pub auto_title: bool,
    pub add_state_to_context: bool,
    /// Give the model the `update_session_state` tool.
    pub agentic_state: bool,
}

impl MetadataOptions {
    /// A run's options over the agent's: each one the run sets wins.
    pub fn over(self, run: PartialMetadataOptions) -> MetadataOptions {
        MetadataOptions {
            summary_every: run.summary_every.unwrap_or(self.summary_every),
            add_summary_to_context: run
                .add_summary_to_context
                .unwrap_or(self.add_summary_to_context),
            auto_title: run.auto_title.unwrap_or(self.auto_title),
            add_state_to_context: run
                .add_state_to_context
                .unwrap_or(self.add_state_to_context),
            agentic_state: run.agentic_state.unwrap_or(self.agentic_state),
        }
    }

    /// Whether the run needs the session's metadata before its first model call.
    pub fn reads_metadata(&self) -> bool {
        self.add_summary_to_context || self.add_state_to_context || self.agentic_state
    }
}

/// The metadata options a run sets (`None`: as the agent says).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartialMetadataOptions {
    pub summary_every: Option<Option<u64>>,
    pub add_summary_to_context: Option<bool>,
    pub auto_title: Option<bool>,
    pub add_state_to_context: Option<bool>,
    pub agentic_state: Option<bool>,
}

/// Whether a summary is due after a turn that brought the session to `turn_count` turns.
pub fn summary_due(every: Option<u64>, turn_count: u64) -> bool {
    matches!(every, Some(n) if n > 0 && turn_count > 0 && turn_count.is_multiple_of(n))
}

/// The turns after which a title is still made where the session has none but its default: a
/// first run that ended without an answer (stopped, failed) did no work after it.
pub const TITLE_TURNS: u64 = 3;

/// Whether a title may be due, when asked: after the first turn, or one of the first
/// [`TITLE_TURNS`] while the title is still the default one (which the caller checks against
/// the session's first turn, [`title_untouched`]).
pub fn title_due(auto_title: bool, turn_count: u64) -> bool {
    auto_title && (1..=TITLE_TURNS).contains(&turn_count)
}

/// Whether a title read before asking the model for one is a title no one chose: the default
/// the session gave from the first user message of `turn` (a chat renamed by its user, then
/// emptied and started again, keeps the user's name), or none after the first turn, and after
/// a later one only where that message gives no default title (an image): a chat whose title
/// its user cleared stays untitled.
pub fn title_untouched(title: Option<&str>, turn: &[Value], first_turn: bool) -> bool {
    if first_turn && title.is_none() {
        return true;
    }
    let title = title.unwrap_or("");
    let first = turn.iter().find(|item| {
        item.get("role").and_then(Value::as_str) == Some("user")
            && item.get("type").is_none_or(|t| t == "message")
    });
    let text = match first.and_then(|item| item.get("content")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        _ => return title.is_empty(),
    };
    crate::core::session::default_title(&text) == title
}

/// The built-in tool of `agenticState`.
pub const STATE_TOOL: &str = "update_session_state";

/// The parameters of [`STATE_TOOL`].
pub fn state_tool_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "updates": {
                "type": "object",
                "description": "The keys of the session state to set, with their new values; other keys stay as they are.",
            }
        },
        "required": ["updates"],
    })
}

pub const STATE_TOOL_DESCRIPTION: &str = "Update the session state: a JSON object kept with this \
conversation across turns. Give only the keys to change.";

/// The state after `update_session_state(updates)`: a shallow merge.
pub fn merge_state(state: &Value, updates: &Value) -> Option<Value> {
    let updates = updates.get("updates").unwrap_or(updates).as_object()?;
    let mut merged: Map = state.as_object().cloned().unwrap_or_default();
    for (key, value) in updates {
        merged.insert(key.clone(), value.clone());
    }
    Some(Value::Object(merged))
}

/// The instructions with the session's summary and state added, each in a clearly marked block.
pub fn instructions_with(
    instructions: Option<&str>,
    summary: Option<&str>,
    state: Option<&Value>,
) -> Option<String> {
    let mut blocks = Vec::new();
    if let Some(i) = instructions.filter(|i| !i.is_empty()) {
        blocks.push(i.to_string());
    }
    if let Some(summary) = summary.filter(|s| !s.trim().is_empty()) {
        blocks.push(format!(
            "<session_summary>\nA summary of this conversation so far:\n{}\n</session_summary>",
            summary.trim()
        ));
    }
    if let Some(state) = state.filter(|s| !s.is_null()) {
        blocks.push(format!(
            "<session_state>\nThe state of this session (JSON):\n{state}\n</session_state>"
        ));
    }
    (!blocks.is_empty()).then(|| blocks.join("\n\n"))
}

/// What the summarising model is told.
pub const SUMMARY_INSTRUCTIONS: &str = "You keep a running summary of a conversation between a \
user and an assistant. Given the summary so far (if any) and the newest turns, write the updated \
summary: the facts, names, preferences, decisions and open questions a later reply would need, in \
a few sentences, in the conversation's language. Reply with JSON only: {\"summary\": \"...\", \
\"topics\": [\"a few\", \"short topics\"]}";

/// What the titling model is told.
pub const TITLE_INSTRUCTIONS: &str =
    "Write a title for this conversation: at most 6 words, in the \
conversation's language, no quotes, no final punctuation. Reply with the title only.";

/// The input of the summary request: the summary so far and the newest turns as a transcript.
pub fn summary_input(previous: Option<&str>, turns: &[Value]) -> Vec<Value> {
    let mut text = String::new();
    if let Some(p) = previous.filter(|p| !p.trim().is_empty()) {
        text.push_str(&format!("The summary so far:\n{}\n\n", p.trim()));
    }
    text.push_str("The newest turns:\n");
    text.push_str(&crate::core::compaction::transcript(turns));
    vec![json!({"type": "message", "role": "user", "content": text})]
}

/// The input of the title request: the first turn's items.
pub fn title_input(turn: &[Value]) -> Vec<Value> {
    vec![json!({
        "type": "message",
        "role": "user",
        "content": format!("The conversation:\n{}", crate::core::compaction::transcript(turn)),
    })]
}

/// A summary answer: JSON `{ summary, topics }` when the model followed the instructions (also
/// inside a code fence), else the whole text as the summary.
pub fn parse_summary(answer: &str) -> (String, Vec<String>) {
    let trimmed = answer.trim();
    let unfenced = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|t| t.strip_suffix("```"))
        .unwrap_or(trimmed)
        .trim();
    if let Ok(v) = crate::core::json::from_str(unfenced) {
        if let Some(summary) = v.get("summary").and_then(Value::as_str) {
            let topics = v
                .get("topics")
                .and_then(Value::as_array)
                .map(|t| {
                    t.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            return (summary.trim().to_string(), topics);
        }
    }
    (trimmed.to_string(), Vec::new())
}

/// A title answer, cleaned: one line, no surrounding quotes or final punctuation, at most 6 words.
pub fn clean_title(answer: &str) -> String {
    let line = answer.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let words: Vec<&str> = line
        .trim()
        .trim_matches(|c: char| matches!(c, '"' | '\'' | '“' | '”' | '`' | '*'))
        .split_whitespace()
        .take(6)
        .collect();
    words
        .join(" ")
        .trim_end_matches(['.', '!', '?', ':', ';'])
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_come_every_n_turns_and_titles_after_the_first() {
        assert!(summary_due(Some(1), 1) && summary_due(Some(1), 7));
        assert!(!summary_due(Some(3), 2) && summary_due(Some(3), 3) && summary_due(Some(3), 6));
        assert!(!summary_due(None, 3) && !summary_due(Some(0), 3) && !summary_due(Some(2), 0));
        assert!(title_due(true, 1) && title_due(true, 3) && !title_due(true, 4));
        assert!(!title_due(false, 1) && !title_due(true, 0));
    }

    #[test]
    fn a_title_no_one_chose_is_the_default_or_none_where_there_is_no_default() {
        let text = [json!({"role": "user", "content": "Plan my week"})];
        let image = [json!({"role": "user", "content": [{"type": "input_image", "image": "x"}]})];
        assert!(title_untouched(Some("Plan my week"), &text, false));
        assert!(!title_untouched(Some("My week"), &text, false), "renamed");
        // None: after the first turn; after a later one, only where the first message gives no
        // default title (its user cleared the title of a chat that had one).
        assert!(title_untouched(None, &text, true));
        assert!(!title_untouched(None, &text, false));
        assert!(title_untouched(None, &image, false));
    }

    #[test]
    fn a_run_overrides_its_agent() {
        let agent = MetadataOptions {
            summary_every: Some(2),
            auto_title: true,
            ..MetadataOptions::default()
        };
        let run = PartialMetadataOptions {
            summary_every: Some(None),
            add_state_to_context: Some(true),
            ..PartialMetadataOptions::default()
        };
        let both = agent.over(run);
        assert_eq!(both.summary_every, None);
        assert!(both.auto_title && both.add_state_to_context && both.reads_metadata());
    }

    #[test]
    fn the_state_tool_merges_shallowly() {
        let state = json!({"city": "Paris", "units": "C"});
        assert_eq!(
            merge_state(&state, &json!({"updates": {"city": "Oslo", "pets": 2}})),
            Some(json!({"city": "Oslo", "units": "C", "pets": 2}))
        );
        assert_eq!(
            merge_state(&Value::Null, &json!({"updates": {"a": 1}})),
            Some(json!({"a": 1}))
        );
        assert_eq!(merge_state(&state, &json!({"updates": 3})), None);
    }

    #[test]
    fn instructions_get_marked_blocks() {
        let text = instructions_with(
            Some("Be brief."),
            Some("Ann likes tea."),
            Some(&json!({"cups": 2})),
        )
        .unwrap();
        assert_eq!(
            text,
            "Be brief.\n\n<session_summary>\nA summary of this conversation so far:\nAnn likes tea.\n</session_summary>\n\n<session_state>\nThe state of this session (JSON):\n{\"cups\":2}\n</session_state>"
        );
        assert_eq!(instructions_with(None, None, None), None);
        assert_eq!(
            instructions_with(Some("x"), Some("  "), Some(&Value::Null)).as_deref(),
            Some("x")
        );
    }

    #[test]
    fn answers_are_read_leniently() {
        assert_eq!(
            parse_summary(
                "```json\n{\"summary\": \" Ann plans a trip. \", \"topics\": [\"travel\", 3]}\n```"
            ),
            ("Ann plans a trip.".to_string(), vec!["travel".to_string()])
        );
        assert_eq!(
            parse_summary("Just text."),
            ("Just text.".to_string(), vec![])
        );
        assert_eq!(
            clean_title("\"Planning a Summer Trip to the Alps.\"\n"),
            "Planning a Summer Trip to the"
        );
        assert_eq!(clean_title("  Weather in Paris!  "), "Weather in Paris");
        assert_eq!(clean_title(""), "");
    }
}
