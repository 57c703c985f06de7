//! A streamed response, one server-sent event at a time, accumulated into the same
//! [`ModelOutput`] a whole response gives.

use crate::core::json::Value;

use super::items::{
    call_arguments, chat_answer_item, chat_call_extras, chat_call_item, chat_output,
    chat_reasoning, content_text, from_responses_item, merge_detail, str_of, Obj,
};
use super::response::{error_code, parse_response, usage_of};
use super::{Api, ModelOutput, Usage, WireError};
use crate::core::sse::SseEvent;

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
    /// What else the server gave the call (see [`chat_call_extras`]).
    extras: Obj,
}

/// Accumulates a streamed response into the same [`ModelOutput`] a whole one gives.
#[derive(Debug)]
pub struct StreamAccumulator {
    api: Api,
    done: bool,
    output: Option<ModelOutput>,
    // Responses API: items completed so far, kept in output index order (items with the same
    // index in arrival order).
    items: Vec<(u64, Value)>,
    // Chat Completions: reasoning (and the name it came by), text, refusal and tool calls by
    // index.
    reasoning: (&'static str, String),
    /// OpenRouter's `reasoning_details`, merged as they came.
    details: Vec<Value>,
    text: String,
    refusal: String,
    calls: Vec<(u64, ChatToolCall)>,
    usage: Usage,
    id: Option<String>,
    finished: bool,
    /// Why a Chat Completions answer is no answer (cut at its token limit), told at its end:
    /// the chunk with its usage comes after the one that says so.
    stopped: Option<WireError>,
}

impl StreamAccumulator {
    pub fn new(api: Api) -> Self {
        StreamAccumulator {
            api,
            done: false,
            output: None,
            items: Vec::new(),
            reasoning: ("reasoning", String::new()),
            details: Vec::new(),
            text: String::new(),
            refusal: String::new(),
            calls: Vec::new(),
            usage: Usage {
                requests: 1,
                ..Usage::default()
            },
            id: None,
            finished: false,
            stopped: None,
        }
    }

    /// What a response that stopped short (`response.incomplete`, `response.failed`; a Chat
    /// Completions answer cut at its limit, once its usage chunk came) reported it cost: its
    /// tokens were spent, and a run counts them with its usage.
    pub fn spent(&self) -> Usage {
        self.usage
    }

    /// True once the stream said it is complete.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Takes one server-sent event; returns what the caller should see now.
    pub fn on_event(&mut self, event: &SseEvent) -> Result<Vec<StreamEvent>, WireError> {
        if event.data == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        if event.data.trim().is_empty() {
            return Ok(Vec::new());
        }
        let v: Value = crate::core::json::from_str(&event.data)
            .map_err(|e| WireError::MalformedJson("a stream event", e.to_string()))?;
        match self.api {
            Api::Responses => self.on_responses_event(event.event.as_deref(), &v),
            Api::ChatCompletions => self.on_chat_chunk(&v),
        }
    }

    fn on_responses_event(
        &mut self,
        name: Option<&str>,
        v: &Value,
    ) -> Result<Vec<StreamEvent>, WireError> {
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
                    // Inserted in order, after any item with the same index: the order a stable
                    // sort by index would give, without compiling the standard library's stable
                    // sort for this element type.
                    let at = self.items.partition_point(|(i, _)| *i <= index);
                    self.items.insert(at, (index, from_responses_item(item)));
                }
                Ok(Vec::new())
            }
            "response.completed" => {
                let response =
                    v.get("response")
                        .filter(|r| r.is_object())
                        .ok_or(WireError::Missing(
                            "\"response\" in its response.completed event",
                        ))?;
                // Some servers leave `output` out of the final event: the items of the
                // `response.output_item.done` events are the output then. Any other malformed
                // final response is an error, not an empty answer.
                let mut out = if response.get("output").is_none() {
                    ModelOutput {
                        items: Vec::new(),
                        usage: usage_of(Api::Responses, response.get("usage")),
                        response_id: str_of(response, "id").map(str::to_string),
                    }
                } else {
                    parse_response(Api::Responses, response)?
                };
                if out.items.is_empty() {
                    out.items = self.items.drain(..).map(|(_, item)| item).collect();
                }
                out.usage.requests = 1;
                self.output = Some(out);
                self.done = true;
                Ok(Vec::new())
            }
            "response.failed" | "response.incomplete" => {
                let response = v.get("response");
                // What the response cost, though it stopped short: see `spent`.
                self.usage = usage_of(Api::Responses, response.and_then(|r| r.get("usage")));
                let error = response.and_then(|r| r.get("error"));
                let message = error
                    .and_then(|e| str_of(e, "message"))
                    .or_else(|| {
                        response
                            .and_then(|r| r.get("incomplete_details"))
                            .and_then(|d| str_of(d, "reason"))
                    })
                    .unwrap_or(kind);
                Err(WireError::ModelFailed(
                    message.to_string(),
                    error.and_then(error_code),
                ))
            }
            "error" => Err(WireError::ModelFailed(
                str_of(v, "message")
                    .or_else(|| v.get("error").and_then(|e| str_of(e, "message")))
                    .unwrap_or("error event")
                    .to_string(),
                error_code(v).or_else(|| v.get("error").and_then(error_code)),
            )),
            _ => Ok(Vec::new()),
        }
    }

    fn on_chat_chunk(&mut self, v: &Value) -> Result<Vec<StreamEvent>, WireError> {
        // (Some servers send `"error": null` in every chunk: no error.)
        if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
            return Err(WireError::ModelFailed(
                str_of(e, "message")
                    .or_else(|| e.as_str())
                    .unwrap_or("error")
                    .to_string(),
                error_code(e),
            ));
        }
        // (Azure's first chunk has an empty id.)
        if self.id.is_none() {
            self.id = str_of(v, "id")
                .filter(|id| !id.is_empty())
                .map(str::to_string);
        }
        if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
            self.usage = usage_of(Api::ChatCompletions, Some(u));
        }
        let mut events = Vec::new();
        let Some(choice) = v.get("choices").and_then(|c| c.get(0)) else {
            return Ok(events);
        };
        if choice.get("finish_reason").is_some_and(|f| !f.is_null()) {
            if let Err(e) = super::response::chat_stopped_short(choice) {
                self.stopped = Some(e);
            }
            self.finished = true;
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(events);
        };
        if let Some((field, t)) = chat_reasoning(delta) {
            self.reasoning.0 = field;
            self.reasoning.1.push_str(t);
        }
        for piece in delta
            .get("reasoning_details")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            merge_detail(&mut self.details, piece);
        }
        // (Content may come as parts: their text.)
        let t = content_text(delta.get("content"));
        if !t.is_empty() {
            self.text.push_str(&t);
            events.push(StreamEvent::TextDelta(t));
        }
        if let Some(r) = str_of(delta, "refusal") {
            self.refusal.push_str(r);
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for c in calls {
                let index = c.get("index").and_then(Value::as_u64).unwrap_or(0);
                let id = str_of(c, "id").filter(|id| !id.is_empty());
                let named = c
                    .get("function")
                    .and_then(|f| str_of(f, "name"))
                    .is_some_and(|n| !n.is_empty());
                let name = c.get("function").and_then(|f| str_of(f, "name"));
                // A delta goes on the newest call of its index, unless it starts another call (a
                // name and another id, or another name, than that call's): servers that give
                // every call index 0 (Ollama, some proxies of Gemini) or none send each call so.
                // (A continuation brings no name, or, from some servers, the same name again.)
                let pos = self
                    .calls
                    .iter()
                    .rposition(|(i, _)| *i == index)
                    .filter(|&p| {
                        let known = &self.calls[p].1;
                        // (A name in pieces goes on while no arguments came, in deltas after
                        // the first, which alone has the call's id.)
                        let piece =
                            !known.id.is_empty() && id.is_none() && known.arguments.is_empty();
                        let other_name = name != Some(known.name.as_str()) && !piece;
                        let other = id.is_some_and(|id| known.id != id) || other_name;
                        !(named && !known.name.is_empty() && other)
                    });
                let pos = match pos {
                    Some(p) => p,
                    None => {
                        self.calls.push((index, ChatToolCall::default()));
                        self.calls.len() - 1
                    }
                };
                let call = &mut self.calls[pos].1;
                // (A call keeps the first id it was given.)
                if let Some(id) = id.filter(|_| call.id.is_empty()) {
                    call.id = id.to_string();
                }
                chat_call_extras(c, &mut call.extras);
                if let Some(f) = c.get("function") {
                    // Some servers send the name again in each delta: taken once. (Others send it
                    // in pieces, before the arguments.)
                    if let Some(n) = name.filter(|n| *n != call.name) {
                        call.name.push_str(n);
                    }
                    match f.get("arguments") {
                        Some(Value::String(a)) => call.arguments.push_str(a),
                        // A server that sends them as JSON sends them whole.
                        Some(a) if !a.is_null() => call.arguments = call_arguments(Some(a)),
                        _ => {}
                    }
                }
            }
        }
        Ok(events)
    }

    /// The whole output, once the body ended. A stream that ended before saying it was
    /// complete was cut, and is an error.
    pub fn finish(mut self) -> Result<ModelOutput, WireError> {
        match self.api {
            Api::Responses => self.output.take().ok_or(WireError::Cut),
            Api::ChatCompletions => {
                if !self.done && !self.finished {
                    return Err(WireError::Cut);
                }
                if let Some(e) = self.stopped.take() {
                    return Err(e);
                }
                let mut items: Vec<Value> = chat_answer_item(&self.text, &self.refusal)
                    .into_iter()
                    .collect();
                // `[DONE]` after nothing (an error of a shape not known here, then the end) is
                // no answer: taken as one, the question would be saved unanswered.
                if items.is_empty() && self.calls.is_empty() && !self.finished {
                    return Err(WireError::Cut);
                }
                // By index, and calls of one index in the order they came.
                let mut order: Vec<(u64, usize)> = self
                    .calls
                    .iter()
                    .enumerate()
                    .map(|(p, (i, _))| (*i, p))
                    .collect();
                crate::core::sort::sort_by_key(&mut order, |k| *k);
                for c in order.iter().map(|&(_, p)| &self.calls[p].1) {
                    let args = if c.arguments.is_empty() {
                        "{}"
                    } else {
                        &c.arguments
                    };
                    items.push(chat_call_item(&c.id, &c.name, args, c.extras.clone()));
                }
                let (field, reasoning) = &self.reasoning;
                let details = Value::Array(self.details);
                Ok(ModelOutput {
                    items: chat_output(Some((field, reasoning)), Some(&details), items),
                    usage: self.usage,
                    response_id: self.id,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::items::function_call_item;
    use super::*;
    use crate::core::json::json;
    use crate::core::sse::SseParser;

    fn stream(api: Api, body: &str) -> (Vec<String>, Result<ModelOutput, WireError>) {
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
        // Arguments a server sends as JSON, whole: written out, not lost.
        let body = concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_2\",\"function\":{\"name\":\"f\",\"arguments\":{\"to\":\"ada\"}}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let out = stream(Api::ChatCompletions, body).1.unwrap();
        assert_eq!(
            out.items[0],
            function_call_item("call_2", "f", r#"{"to":"ada"}"#)
        );
    }

    #[test]
    fn a_chat_chunk_with_a_null_error_is_no_error() {
        let body = concat!(
            "data: {\"id\":\"c2\",\"error\":null,\"choices\":[{\"delta\":{\"content\":\"Fine\"}}]}\n\n",
            "data: {\"error\":null,\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let (deltas, out) = stream(Api::ChatCompletions, body);
        assert_eq!(deltas, ["Fine"]);
        assert_eq!(out.unwrap().items[0]["content"][0]["text"], "Fine");
        let failed = "data: {\"error\":{\"message\":\"overloaded\"}}\n\n";
        assert_eq!(
            stream(Api::ChatCompletions, failed)
                .1
                .unwrap_err()
                .to_string(),
            "the model failed: overloaded"
        );
    }

    #[test]
    fn a_streamed_chat_refusal_is_kept() {
        let body = concat!(
            "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":null,\"refusal\":\"I can\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"refusal\":\"'t.\"},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let (deltas, out) = stream(Api::ChatCompletions, body);
        assert!(deltas.is_empty());
        assert_eq!(
            out.unwrap().items[0]["content"],
            crate::core::json::json!([{"type": "refusal", "refusal": "I can't."}])
        );
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
        assert_eq!(stream(Api::Responses, cut).1.unwrap_err(), WireError::Cut);
        let cut_chat = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n";
        assert_eq!(
            stream(Api::ChatCompletions, cut_chat).1.unwrap_err(),
            WireError::Cut
        );
        let failed = "data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"message\":\"overloaded\"}}}\n\n";
        assert_eq!(
            stream(Api::Responses, failed).1.unwrap_err().to_string(),
            "the model failed: overloaded"
        );
        // The server's code goes with the failure (the client retries by it): a failed
        // response's, an error event's (on the event or in its `error`), a Chat chunk's (a
        // number: OpenRouter's HTTP status).
        let coded = |api, body: &str| match stream(api, body).1.unwrap_err() {
            WireError::ModelFailed(_, code) => code,
            other => panic!("not a failure the model reported: {other}"),
        };
        let failed = "data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"server_error\",\"message\":\"x\"}}}\n\n";
        assert_eq!(
            coded(Api::Responses, failed).as_deref(),
            Some("server_error")
        );
        let event =
            "data: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"x\"}\n\n";
        assert_eq!(
            coded(Api::Responses, event).as_deref(),
            Some("rate_limit_exceeded")
        );
        let nested = "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}\n\n";
        assert_eq!(
            coded(Api::Responses, nested).as_deref(),
            Some("overloaded_error")
        );
        let bare = "data: {\"type\":\"error\",\"message\":\"x\"}\n\n";
        assert_eq!(coded(Api::Responses, bare), None);
        let chat = "data: {\"error\":{\"code\":502,\"message\":\"upstream\"}}\n\n";
        assert_eq!(coded(Api::ChatCompletions, chat).as_deref(), Some("502"));
        // A Chat Completions answer cut at the token limit (or by the content filter) is not an
        // answer, as an incomplete Responses one is not: its text is cut and its call's
        // arguments too.
        for reason in ["length", "content_filter"] {
            let stopped = format!(
                "data: {{\"choices\":[{{\"delta\":{{\"tool_calls\":[{{\"index\":0,\"id\":\"c\",\"function\":{{\"name\":\"f\",\"arguments\":\"{{\\\"a\\\"\"}}}}]}},\"finish_reason\":\"{reason}\"}}]}}\n\ndata: [DONE]\n\n"
            );
            assert_eq!(
                stream(Api::ChatCompletions, &stopped)
                    .1
                    .unwrap_err()
                    .to_string(),
                format!("the model failed: the answer stopped short (finish_reason \"{reason}\")")
            );
        }
        let garbage = "data: {not json\n\n";
        assert!(matches!(
            stream(Api::ChatCompletions, garbage).1.unwrap_err(),
            WireError::MalformedJson("a stream event", _)
        ));
        // A final event whose response is not an object, or whose output is not an array, is
        // an error, not an empty answer.
        for bad in [
            "data: {\"type\":\"response.completed\",\"response\":\"oops\"}\n\n",
            "data: {\"type\":\"response.completed\",\"response\":{\"output\":7}}\n\n",
        ] {
            assert!(
                matches!(stream(Api::Responses, bad).1, Err(WireError::Missing(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_final_event_without_output_takes_the_streamed_items() {
        let body = concat!(
            "data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hi\"}]}}\n\n",
            "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r9\"}}\n\n",
        );
        let out = stream(Api::Responses, body).1.unwrap();
        assert_eq!(out.items[0]["content"][0]["text"], "Hi");
        assert_eq!(out.response_id.as_deref(), Some("r9"));
    }

    #[test]
    fn streamed_items_and_calls_come_out_in_index_order() {
        let item = |index: &str, text: &str| {
            format!(
                "data: {{\"type\":\"response.output_item.done\",{index}\"item\":{{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{{\"type\":\"output_text\",\"text\":\"{text}\"}}]}}}}\n\n"
            )
        };
        // Out of order, a repeated index (arrival order kept) and one without an index (its
        // arrival position).
        let body = [
            item("\"output_index\":1,", "b"),
            item("\"output_index\":0,", "a"),
            item("\"output_index\":1,", "c"),
            item("", "d"),
            "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\"}}\n\n".into(),
        ]
        .concat();
        let out = stream(Api::Responses, &body).1.unwrap();
        let texts: Vec<_> = out
            .items
            .iter()
            .map(|i| i["content"][0]["text"].clone())
            .collect();
        assert_eq!(texts, ["a", "b", "c", "d"]);

        let chat = concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let out = stream(Api::ChatCompletions, chat).1.unwrap();
        assert_eq!(out.items[0], function_call_item("call_a", "f", "{}"));
        assert_eq!(out.items[1], function_call_item("call_b", "g", "{}"));
    }

    #[test]
    fn a_name_sent_again_is_one_name_and_another_name_is_another_call() {
        // A server that repeats the name in every delta of a call (and gives no id).
        let chat = concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"p\\\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"read_file\",\"arguments\":\":1}\"}}]}}]}\n\n",
            // Another call at the same index, without an id: apart, by its name.
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let calls = |chat: &str| stream(Api::ChatCompletions, chat).1.unwrap().items;
        let call = |name: &str, arguments: &str| function_call_item("", name, arguments);
        assert_eq!(
            calls(chat),
            [call("read_file", "{\"p\":1}"), call("g", "{}")]
        );
        // Calls without ids, the first without arguments: two calls, not one named `fg`.
        let chat = concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"f\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
        );
        assert_eq!(calls(chat), [call("f", "{}"), call("g", "{}")]);
    }

    #[test]
    fn what_a_chat_server_needs_back_is_kept_from_its_stream() {
        // DeepSeek's reasoning in pieces, Gemini's signature in a delta of its own, content as
        // parts, Azure's empty id first.
        let chat = concat!(
            "data: {\"id\":\"\",\"choices\":[]}\n\n",
            "data: {\"id\":\"c\",\"choices\":[{\"delta\":{\"reasoning_content\":\"Look \"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"it up.\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":[{\"type\":\"text\",\"text\":\"Hm.\"}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"extra_content\":{\"google\":{\"thought_signature\":\"sig\"}}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let (deltas, out) = stream(Api::ChatCompletions, chat);
        let out = out.unwrap();
        assert_eq!(deltas, ["Hm."]);
        assert_eq!(out.response_id.as_deref(), Some("c"));
        assert_eq!(out.items[0]["rawContent"][0]["text"], "Look it up.");
        assert_eq!(out.items[0]["providerData"]["field"], "reasoning_content");
        assert_eq!(out.items[1]["content"][0]["text"], "Hm.");
        assert_eq!(out.items[2]["name"], "f");
        assert_eq!(
            out.items[2]["providerData"]["extra_content"]["google"]["thought_signature"],
            "sig"
        );
    }

    #[test]
    fn openrouter_reasoning_details_are_kept_merged_by_index() {
        // Text in pieces of one block, then an encrypted block (Gemini's thought signature),
        // beside the reasoning as text; or the blocks alone, encrypted (no text to show).
        let chat = concat!(
            "data: {\"choices\":[{\"delta\":{\"reasoning\":\"Look \",\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"Look \",\"index\":0,\"format\":\"anthropic-claude-v1\"}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"reasoning\":\"it up.\",\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"it up.\",\"index\":0,\"signature\":\"s1\"}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"reasoning_details\":[{\"type\":\"reasoning.encrypted\",\"data\":\"enc\",\"index\":1}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
        );
        let out = stream(Api::ChatCompletions, chat).1.unwrap();
        assert_eq!(out.items[0]["rawContent"][0]["text"], "Look it up.");
        assert_eq!(
            out.items[0]["providerData"]["details"],
            json!([
                {"type": "reasoning.text", "text": "Look it up.", "index": 0,
                    "format": "anthropic-claude-v1", "signature": "s1"},
                {"type": "reasoning.encrypted", "data": "enc", "index": 1},
            ])
        );
        assert_eq!(out.items[1]["name"], "f");
        let encrypted = concat!(
            "data: {\"choices\":[{\"delta\":{\"reasoning\":null,\"reasoning_details\":[{\"type\":\"reasoning.encrypted\",\"data\":\"e\",\"index\":0}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
        );
        let out = stream(Api::ChatCompletions, encrypted).1.unwrap();
        assert_eq!(out.items[0]["rawContent"], json!([]));
        assert_eq!(out.items[0]["providerData"]["details"][0]["data"], "e");
        // Gemini's text and encrypted blocks at one index, a null field, pieces without an index:
        // each block as OpenRouter's client joins them.
        let mixed = concat!(
            "data: {\"choices\":[{\"delta\":{\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"A\",\"index\":0},{\"type\":\"reasoning.encrypted\",\"data\":\"x\",\"index\":0}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"reasoning_details\":[{\"type\":\"reasoning.encrypted\",\"data\":\"y\",\"index\":0}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"B\"}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"C\",\"signature\":null}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":null,\"signature\":\"s\"}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\n",
        );
        let out = stream(Api::ChatCompletions, mixed).1.unwrap();
        assert_eq!(
            out.items[0]["providerData"]["details"],
            json!([
                {"type": "reasoning.text", "text": "A", "index": 0},
                {"type": "reasoning.encrypted", "data": "x", "index": 0},
                {"type": "reasoning.encrypted", "data": "y", "index": 0},
                {"type": "reasoning.text", "text": "BC", "signature": "s"},
            ])
        );
        // Whole, as it came.
        let body = json!({"choices": [{"message": {"role": "assistant", "content": null,
            "reasoning_details": [{"type": "reasoning.encrypted", "data": "w", "index": 0}],
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}]});
        let out = parse_response(Api::ChatCompletions, &body).unwrap();
        assert_eq!(out.items[0]["providerData"]["details"][0]["data"], "w");
    }

    #[test]
    fn a_name_in_pieces_is_one_name_and_reasoning_alone_is_an_empty_answer() {
        let chat = concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"get_\",\"arguments\":\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"weather\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
        );
        let out = stream(Api::ChatCompletions, chat).1.unwrap();
        assert_eq!(out.items, [function_call_item("a", "get_weather", "{}")]);
        // Reasoning, then nothing: no item (a reasoning item alone would have the model asked
        // again, the same, until the run's turns ran out).
        let chat = "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"Hm.\"},\"finish_reason\":\"stop\"}]}\n\n";
        assert!(stream(Api::ChatCompletions, chat)
            .1
            .unwrap()
            .items
            .is_empty());
    }

    #[test]
    fn done_after_nothing_is_no_answer() {
        let chat = "data: {\"choices\":[{\"delta\":{}}]}\n\ndata: [DONE]\n\n";
        assert_eq!(
            stream(Api::ChatCompletions, chat).1.unwrap_err(),
            WireError::Cut
        );
        // An empty answer the server says is complete is one.
        let chat =
            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
        assert!(stream(Api::ChatCompletions, chat)
            .1
            .unwrap()
            .items
            .is_empty());
    }

    #[test]
    fn calls_sharing_an_index_or_without_one_stay_apart_by_their_ids() {
        // Every call at index 0 (Ollama), the id repeated in a later delta of the same call,
        // and arguments in pieces.
        let chat = concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"w\",\"arguments\":\"{\\\"p\\\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"arguments\":\":1}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"b\",\"function\":{\"name\":\"w\",\"arguments\":\"{\\\"p\\\":2}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"c\",\"function\":{\"name\":\"v\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let out = stream(Api::ChatCompletions, chat).1.unwrap();
        assert_eq!(
            out.items,
            [
                function_call_item("a", "w", "{\"p\":1}"),
                function_call_item("b", "w", "{\"p\":2}"),
                function_call_item("c", "v", "{}"),
            ]
        );
        // A continuation with an empty id, or with an id of its own but no name, is the same
        // call's.
        let chat = concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"w\",\"arguments\":\"{\\\"p\\\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"\",\"function\":{\"arguments\":\":\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"x\",\"function\":{\"arguments\":\"1}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let out = stream(Api::ChatCompletions, chat).1.unwrap();
        assert_eq!(out.items.len(), 1);
        assert_eq!(out.items[0]["arguments"], "{\"p\":1}");
        assert_eq!(out.items[0]["name"], "w");
        assert_eq!(out.items[0]["callId"], "a");
    }
}
