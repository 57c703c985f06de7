//! The two OpenAI wire formats (Chat Completions and Responses): how session items become a
//! request body and how responses, whole or streamed, become session items again.
//!
//! Items in sessions use the shapes of `@openai/agents` (camelCase `callId`, tool outputs as
//! `function_call_result`), whichever API produced them, so histories written here continue in
//! that SDK and the other way round. Raw Responses-API items (`call_id`, `function_call_output`)
//! are read too.
//!
//! - [`items`]: reading item fields, and converting one item between the SDK's and the API's shape;
//! - [`request`]: the JSON body of one model call;
//! - [`response`]: a whole response body as items, usage and id; error bodies;
//! - [`stream`]: a streamed response, event by event, into the same output.

pub mod conversation;
pub mod items;
pub mod request;
pub mod response;
pub mod stream;

pub use items::{
    answer_text, call_id, content_text, is_answered_call, is_call_output, is_function_call,
    is_tool_output, item_type, output_text,
};
pub use request::{request_body, unsendable, ModelRequest};
pub use response::{error_code, error_message, parse_response, usage_of};
pub use stream::{StreamAccumulator, StreamEvent};

use crate::core::json::{Number, Value};

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
    /// As JSON number text (what JavaScript's `String(n)` writes): sent as it is.
    pub temperature: Option<Number>,
    pub top_p: Option<Number>,
    pub max_tokens: Option<u64>,
    /// Sent as `parallel_tool_calls` when the call offers tools.
    pub parallel_tool_calls: Option<bool>,
    /// `auto`, `required`, `none` or a tool's name; sent as `tool_choice` when the call offers
    /// tools.
    pub tool_choice: Option<String>,
    /// Chat Completions only (the Responses API has none), as the SDK sends them.
    pub frequency_penalty: Option<Number>,
    pub presence_penalty: Option<Number>,
    pub store: Option<bool>,
    /// `{ effort?, summary? }`: `reasoning` (Responses), its `effort` as `reasoning_effort`
    /// (Chat Completions).
    pub reasoning: Option<crate::core::json::Map>,
    /// `text.verbosity` (Responses) or `verbosity` (Chat Completions).
    pub verbosity: Option<String>,
    /// Responses only: `auto` or `disabled`.
    pub truncation: Option<String>,
    /// `prompt_cache_retention` (`in_memory`, `24h`).
    pub prompt_cache_retention: Option<String>,
    /// Fields sent as they are, over those made here (the SDK's `providerData`).
    pub provider_data: Option<crate::core::json::Map>,
}

impl ModelSettings {
    /// The settings of a request the library makes for an agent's session (a title, a summary,
    /// a compaction's summary): where the server keeps it (`store: false` holds for these too),
    /// how the model reasons, the prompt cache, truncation and the provider's fields (routing,
    /// `user`, `metadata`); not those that shape an answer to the user (temperature, its length,
    /// format and tools, the conversation it is in), whether settings or `providerData` fields.
    pub fn for_session_request(&self) -> ModelSettings {
        const ANSWER_FIELDS: &[&str] = &[
            "model",
            "input",
            "messages",
            "instructions",
            "prompt",
            "tools",
            "tool_choice",
            "parallel_tool_calls",
            "max_output_tokens",
            "max_completion_tokens",
            "max_tokens",
            "response_format",
            "text",
            "temperature",
            "top_p",
            "frequency_penalty",
            "presence_penalty",
            "stop",
            "n",
            "logprobs",
            "top_logprobs",
            "previous_response_id",
            "conversation",
            "background",
            "modalities",
            "audio",
            "functions",
            "function_call",
            "web_search_options",
            "prediction",
            "max_tool_calls",
            "stream",
            "stream_options",
        ];
        let provider_data = self.provider_data.as_ref().map(|fields| {
            let mut kept = fields.clone();
            kept.retain(|key, _| !ANSWER_FIELDS.contains(&key.as_str()));
            kept
        });
        ModelSettings {
            store: self.store,
            reasoning: self.reasoning.clone(),
            truncation: self.truncation.clone(),
            prompt_cache_retention: self.prompt_cache_retention.clone(),
            provider_data,
            ..ModelSettings::default()
        }
    }
}

/// A JSON schema the final answer must follow (`outputType`), sent as `response_format` (Chat
/// Completions) or `text.format` (Responses).
#[derive(Debug, Clone, PartialEq)]
pub struct OutputType {
    pub name: String,
    pub schema: Value,
    pub strict: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    /// Whether the model must follow `parameters` exactly (the API's strict mode). Sent to the
    /// Responses API either way, which takes a tool without it as strict.
    pub strict: bool,
}

/// Token counts as the API reports them, summed over the model calls of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(test, derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(test, serde(rename_all = "camelCase"))]
pub struct Usage {
    pub requests: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
}

impl Usage {
    /// (Saturating: counts a server or a state string gives may be as large as a `u64` holds.)
    pub fn add(&mut self, other: &Usage) {
        self.requests = self.requests.saturating_add(other.requests);
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.total_tokens = self.total_tokens.saturating_add(other.total_tokens);
    }
}

/// What one model call produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelOutput {
    pub items: Vec<Value>,
    pub usage: Usage,
    pub response_id: Option<String>,
}

/// Why a model's answer could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// A response without the part its API puts the answer in; names that part.
    Missing(&'static str),
    /// A body or stream event that is not JSON: where, and the parser's message.
    MalformedJson(&'static str, String),
    /// The stream ended before the response said it was complete.
    Cut,
    /// The server reported that the model failed (`response.failed`, an `error` event): its
    /// message, and its code where it gave one (see [`error_code`]).
    ModelFailed(String, Option<String>),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Missing(what) => write!(f, "the response has no {what}"),
            WireError::MalformedJson(what, e) => write!(f, "malformed JSON in {what} ({e})"),
            WireError::Cut => f.write_str("the stream ended before the response was complete"),
            WireError::ModelFailed(m, _) => write!(f, "the model failed: {m}"),
        }
    }
}
