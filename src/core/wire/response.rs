//! A whole (not streamed) response body as session items, token usage and response id; the
//! message of an error body.

use crate::core::json::Value;

use super::items::{
    call_arguments, chat_answer_item, chat_call_extras, chat_call_item, chat_output,
    chat_reasoning, content_text, from_responses_item, str_of,
};
use super::{Api, ModelOutput, Usage, WireError};

/// Token counts from a response's `usage`, in either API's spelling.
pub fn usage_of(api: Api, usage: Option<&Value>) -> Usage {
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
        0 => input.saturating_add(output),
        t => t,
    };
    Usage {
        requests: 1,
        input_tokens: input,
        output_tokens: output,
        total_tokens: total,
    }
}

/// A whole (not streamed) response body as items, usage and id.
pub fn parse_response(api: Api, body: &Value) -> Result<ModelOutput, WireError> {
    // An error body answered with a success status (a proxy's, a gateway's): its message.
    if let Some(e) = body
        .get("error")
        .filter(|_| body.get("output").is_none() && body.get("choices").is_none())
    {
        if let Some(message) = str_of(e, "message").or_else(|| e.as_str()) {
            return Err(WireError::ModelFailed(message.to_string(), error_code(e)));
        }
    }
    match api {
        Api::Responses => {
            // A response that stopped short (`max_output_tokens`, a content filter) or failed is
            // not an answer, whether it came whole or streamed.
            if let Some(status @ ("failed" | "incomplete")) = str_of(body, "status") {
                let message = body
                    .get("error")
                    .and_then(|e| str_of(e, "message"))
                    .or_else(|| {
                        body.get("incomplete_details")
                            .and_then(|d| str_of(d, "reason"))
                    })
                    .unwrap_or(status);
                let code = body.get("error").and_then(error_code);
                return Err(WireError::ModelFailed(message.to_string(), code));
            }
            let output = body
                .get("output")
                .and_then(Value::as_array)
                .ok_or(WireError::Missing("\"output\" array"))?;
            Ok(ModelOutput {
                items: output.iter().map(from_responses_item).collect(),
                usage: usage_of(api, body.get("usage")),
                response_id: str_of(body, "id").map(str::to_string),
            })
        }
        Api::ChatCompletions => {
            let choice = body.get("choices").and_then(|c| c.get(0));
            if let Some(choice) = choice {
                chat_stopped_short(choice)?;
            }
            let message = choice
                .and_then(|c| c.get("message"))
                .ok_or(WireError::Missing("\"choices[0].message\""))?;
            // (Content may come as parts: their text.)
            let text = content_text(message.get("content"));
            let refusal = str_of(message, "refusal").unwrap_or("");
            let mut items: Vec<Value> = chat_answer_item(&text, refusal).into_iter().collect();
            if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
                for c in calls {
                    let f = c.get("function");
                    let mut extras = Default::default();
                    chat_call_extras(c, &mut extras);
                    items.push(chat_call_item(
                        str_of(c, "id").unwrap_or(""),
                        f.and_then(|f| str_of(f, "name")).unwrap_or(""),
                        &call_arguments(f.and_then(|f| f.get("arguments"))),
                        extras,
                    ));
                }
            }
            Ok(ModelOutput {
                items: chat_output(
                    chat_reasoning(message),
                    message.get("reasoning_details"),
                    items,
                ),
                usage: usage_of(api, body.get("usage")),
                // (Azure's may be empty.)
                response_id: str_of(body, "id")
                    .filter(|id| !id.is_empty())
                    .map(str::to_string),
            })
        }
    }
}

/// A Chat Completions choice that stopped short (`finish_reason` `"length"`: the token limit, or
/// `"content_filter"`) is not an answer, as an incomplete Responses answer is not: its text is
/// cut and its tool calls' arguments may be.
pub(super) fn chat_stopped_short(choice: &Value) -> Result<(), WireError> {
    let why = match str_of(choice, "finish_reason") {
        Some("length") => "the answer stopped short (finish_reason \"length\")",
        Some("content_filter") => "the answer stopped short (finish_reason \"content_filter\")",
        _ => return Ok(()),
    };
    Err(WireError::ModelFailed(why.to_string(), None))
}

/// The code an error object gives: its `code` (a string, or a number as OpenRouter sends the
/// HTTP status of a failure inside a stream), else its `type` (Anthropic's `overloaded_error`).
pub fn error_code(e: &Value) -> Option<String> {
    match e.get("code") {
        Some(Value::String(code)) if !code.is_empty() => Some(code.clone()),
        Some(n @ Value::Number(_)) => Some(crate::core::json::to_string(n)),
        _ => str_of(e, "type")
            .filter(|t| !t.is_empty() && *t != "error")
            .map(str::to_string),
    }
}

/// The message of an error body (`{"error": {"message": ...}}` and its variants), else the
/// body itself, shortened.
pub fn error_message(body: &str) -> String {
    if let Ok(v) = crate::core::json::from_str(body) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::json::json;

    #[test]
    fn token_counts_as_large_as_a_u64_holds_saturate_rather_than_wrap() {
        let big = json!({"prompt_tokens": u64::MAX, "completion_tokens": 1});
        let mut usage = usage_of(Api::ChatCompletions, Some(&big));
        assert_eq!(usage.total_tokens, u64::MAX, "not 0");
        usage.add(&usage.clone());
        assert_eq!(usage.input_tokens, u64::MAX);
        assert_eq!(usage.requests, 2);
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
        // As the SDK keeps them: what the session item has no field for, in providerData.
        assert_eq!(
            out.items[0],
            json!({"type": "reasoning", "id": "rs", "content": [{"type": "input_text", "text": "hmm", "providerData": {"type": "summary_text"}}],
                   "providerData": {"id": "rs", "type": "reasoning"}})
        );
        assert_eq!(
            out.items[1],
            json!({"type": "message", "id": "msg", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": "Hi", "providerData": {"annotations": []}}], "providerData": {}})
        );
        assert_eq!(
            out.items[2],
            json!({"type": "function_call", "id": "fc", "callId": "call", "name": "f", "arguments": "{\"a\":1}",
                   "providerData": {"id": "fc", "type": "function_call"}})
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
        // Arguments a server sends as JSON, not as its text: written out, not lost.
        let as_json = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": {"to": "ada", "n": [1]}}},
            {"id": "call_2", "type": "function", "function": {"name": "g"}}
        ]}}]});
        let out = parse_response(Api::ChatCompletions, &as_json).unwrap();
        assert_eq!(out.items[0]["arguments"], r#"{"n":[1],"to":"ada"}"#);
        assert_eq!(out.items[1]["arguments"], "{}");
        // Cut at the token limit: not an answer, whatever it holds.
        let cut = json!({"choices": [{"finish_reason": "length",
            "message": {"role": "assistant", "content": "The bridge is in San Fr"}}]});
        assert_eq!(
            parse_response(Api::ChatCompletions, &cut)
                .unwrap_err()
                .to_string(),
            "the model failed: the answer stopped short (finish_reason \"length\")"
        );
        let stopped = json!({"choices": [{"finish_reason": "stop",
            "message": {"role": "assistant", "content": "Done."}}]});
        assert!(parse_response(Api::ChatCompletions, &stopped).is_ok());
    }

    #[test]
    fn what_a_chat_server_needs_back_is_kept_with_the_answer() {
        // DeepSeek's reasoning, Gemini's thought signature on a call, content as parts, and
        // Azure's empty id.
        let body = json!({"id": "", "choices": [{"message": {"role": "assistant",
            "reasoning_content": "Look it up.",
            "content": [{"type": "text", "text": "One "}, {"type": "text", "text": "moment."}],
            "tool_calls": [{"id": "c1", "type": "function", "index": 0,
                "function": {"name": "f", "arguments": "{}"},
                "extra_content": {"google": {"thought_signature": "sig"}}}]}}]});
        let out = parse_response(Api::ChatCompletions, &body).unwrap();
        assert_eq!(
            out.items[0],
            json!({"type": "reasoning", "content": [],
                "rawContent": [{"type": "reasoning_text", "text": "Look it up."}],
                "providerData": {"field": "reasoning_content"}})
        );
        assert_eq!(out.items[1]["content"][0]["text"], "One moment.");
        assert_eq!(
            out.items[2]["providerData"],
            json!({"extra_content": {"google": {"thought_signature": "sig"}}})
        );
        assert_eq!(out.response_id, None);
        // `reasoning` (OpenRouter) is the SDK's name: no field named; a call with nothing else
        // has no providerData.
        let body = json!({"choices": [{"message": {"role": "assistant", "reasoning": "r",
            "content": "ok", "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "f", "arguments": "{}"}}]}}]});
        let out = parse_response(Api::ChatCompletions, &body).unwrap();
        assert_eq!(out.items[0].get("providerData"), None);
        assert_eq!(out.items[0]["rawContent"][0]["text"], "r");
        assert_eq!(out.items[2].get("providerData"), None);
        // Reasoning and no answer: the empty answer it was before.
        let body = json!({"choices": [{"message": {"role": "assistant", "reasoning_content": "Hm.",
            "content": ""}, "finish_reason": "stop"}]});
        assert!(parse_response(Api::ChatCompletions, &body)
            .unwrap()
            .items
            .is_empty());
    }

    #[test]
    fn a_chat_refusal_is_a_part_of_the_answer() {
        let answer = |message: Value| {
            parse_response(
                Api::ChatCompletions,
                &json!({"choices": [{"message": message}]}),
            )
            .unwrap()
            .items
        };
        let refused = json!({"type": "message", "role": "assistant", "status": "completed",
                             "content": [{"type": "refusal", "refusal": "I can't help with that."}]});
        assert_eq!(
            answer(
                json!({"role": "assistant", "content": null, "refusal": "I can't help with that."})
            ),
            vec![refused]
        );
        let both = answer(json!({"role": "assistant", "content": "Partly:", "refusal": "no more"}));
        assert_eq!(
            both[0]["content"],
            json!([{"type": "output_text", "text": "Partly:"}, {"type": "refusal", "refusal": "no more"}])
        );
        assert!(answer(json!({"role": "assistant", "content": null, "refusal": null})).is_empty());
    }

    #[test]
    fn an_error_body_answered_with_a_success_status_fails_with_its_message() {
        for api in [Api::Responses, Api::ChatCompletions] {
            let body = json!({"error": {"message": "quota exhausted at the gateway"}});
            assert_eq!(
                parse_response(api, &body).unwrap_err().to_string(),
                "the model failed: quota exhausted at the gateway"
            );
        }
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

    #[test]
    fn a_response_that_stopped_short_or_failed_is_not_an_answer() {
        let cut = json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
            "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "The bridge is in San Fr"}]}]});
        let e = parse_response(Api::Responses, &cut)
            .err()
            .map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("the model failed: max_output_tokens"));
        let failed =
            json!({"status": "failed", "error": {"message": "server overloaded"}, "output": []});
        let e = parse_response(Api::Responses, &failed)
            .err()
            .map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("the model failed: server overloaded"));
        let whole = json!({"status": "completed", "output": []});
        assert!(parse_response(Api::Responses, &whole).is_ok());
    }
}
