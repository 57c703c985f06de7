//! A conversation the server keeps (the Responses API's `previous_response_id` or
//! `conversation`) instead of the session: what each model call sends, and which options
//! cannot go together.

use crate::core::json::Value;

use super::RunState;
use crate::core::error::{RunnerError, RunnerErrorCode};
use crate::core::wire::{is_tool_output, Api};

/// A conversation the server keeps (Responses API), from the run options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerConversation {
    pub previous_response_id: Option<String>,
    pub conversation_id: Option<String>,
}

impl ServerConversation {
    /// Whether the server holds the history, so each call sends only what is new.
    pub fn is_used(&self) -> bool {
        self.previous_response_id.is_some() || self.conversation_id.is_some()
    }

    /// Refuses, before anything is sent, options that cannot work together: a session with a
    /// server-side conversation (two histories), a server-side conversation over Chat
    /// Completions (which keeps none), or a conversation chained on a response as well (the
    /// Responses API refuses the pair).
    pub fn check(&self, has_session: bool, api: Api) -> Result<(), RunnerError> {
        if !self.is_used() {
            return Ok(());
        }
        if self.previous_response_id.is_some() && self.conversation_id.is_some() {
            return Err(RunnerError::new(
                RunnerErrorCode::InvalidRunOptions,
                "conversationId and previousResponseId cannot be used together: a conversation \
                 chains its responses itself; give one or the other",
            ));
        }
        if has_session {
            return Err(RunnerError::new(
                RunnerErrorCode::SessionConflict,
                "a session cannot be combined with conversationId or previousResponseId: the \
                 session already holds the history; use one or the other",
            ));
        }
        if api != Api::Responses {
            return Err(RunnerError::new(
                RunnerErrorCode::InvalidRunOptions,
                "previousResponseId and conversationId need a runner with api: \"responses\"; \
                 the Chat Completions API keeps no conversation on the server",
            ));
        }
        Ok(())
    }
}

impl RunState {
    /// The input and the `previous_response_id` of the next model call. Without a server-side
    /// conversation, everything so far. With one, the server already holds what it was sent and
    /// what it answered: the first call sends the model input, later calls only the tool outputs
    /// run since the last response (none after a response of reasoning alone, which the model
    /// is asked to go on from); they chain on the last response id, except in a `conversation`,
    /// which chains itself (`check` refuses a `previousResponseId` beside it).
    pub fn next_request(&self, server: &ServerConversation) -> (Vec<Value>, Option<String>) {
        if !server.is_used() {
            return (self.model_input_now(), None);
        }
        let input = if self.turns == 0 {
            self.model_input.clone()
        } else {
            // Tool outputs are the only items the run makes itself, after the response.
            let after_response = self
                .generated
                .iter()
                .rposition(|i| !is_tool_output(i))
                .map_or(0, |p| p + 1);
            self.generated[after_response..].to_vec()
        };
        let previous = if server.conversation_id.is_some() {
            None
        } else if self.turns == 0 {
            server.previous_response_id.clone()
        } else {
            self.last_response_id.clone()
        };
        (input, previous)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::json::json;
    use crate::core::run::fixtures::*;
    use crate::core::wire::{ModelOutput, Usage};

    fn server(previous: Option<&str>, conversation: Option<&str>) -> ServerConversation {
        ServerConversation {
            previous_response_id: previous.map(str::to_string),
            conversation_id: conversation.map(str::to_string),
        }
    }

    #[test]
    fn a_server_conversation_excludes_a_session_and_chat_completions() {
        let local = ServerConversation::default();
        assert!(local.check(true, Api::ChatCompletions).is_ok());
        for s in [server(Some("r"), None), server(None, Some("c"))] {
            let e = s.check(true, Api::Responses).unwrap_err();
            assert_eq!(e.code, RunnerErrorCode::SessionConflict);
            let e = s.check(false, Api::ChatCompletions).unwrap_err();
            assert_eq!(e.code, RunnerErrorCode::InvalidRunOptions);
            assert!(e.message.contains("api: \"responses\""), "{}", e.message);
            assert!(s.check(false, Api::Responses).is_ok());
        }
        let both = server(Some("r"), Some("c"))
            .check(false, Api::Responses)
            .unwrap_err();
        assert_eq!(both.code, RunnerErrorCode::InvalidRunOptions);
        assert!(
            both.message.contains("cannot be used together"),
            "{}",
            both.message
        );
    }

    fn after_one_tool_call() -> RunState {
        let mut s = state();
        s.record_model_output(ModelOutput {
            items: vec![answer("thinking"), call("c")],
            usage: Usage::default(),
            response_id: Some("resp_1".into()),
        });
        s.record_tool_output(&call("c"), "out".into());
        s
    }

    #[test]
    fn without_a_server_conversation_every_call_sends_everything() {
        let s = after_one_tool_call();
        let (input, previous) = s.next_request(&ServerConversation::default());
        assert_eq!(input, s.model_input_now());
        assert_eq!(input.len(), 2 + 3);
        assert_eq!(previous, None);
    }

    #[test]
    fn a_server_conversation_is_sent_only_what_is_new() {
        let first = state();
        let chained = server(Some("resp_0"), None);
        assert_eq!(
            first.next_request(&chained),
            (first.model_input.clone(), Some("resp_0".into()))
        );
        let s = after_one_tool_call();
        // After the first call: only the tool output, chained on the last response.
        assert_eq!(
            s.next_request(&chained),
            (vec![out_with("c", "out")], Some("resp_1".into()))
        );
        // In a conversation the server chains by itself: no response id of ours is sent.
        let conversation = server(None, Some("conv_1"));
        assert_eq!(
            s.next_request(&conversation),
            (vec![out_with("c", "out")], None)
        );
        assert_eq!(first.next_request(&conversation).1, None);
    }

    #[test]
    fn a_response_of_reasoning_alone_is_not_sent_back_to_the_server_that_wrote_it() {
        let chained = server(Some("resp_0"), None);
        let reasoning = json!({"type": "reasoning", "id": "rs_2", "content": []});
        // First response: reasoning only. The model is asked again with nothing new.
        let mut s = state();
        s.record_model_output(ModelOutput {
            items: vec![reasoning.clone()],
            usage: Usage::default(),
            response_id: Some("resp_1".into()),
        });
        assert_eq!(s.next_request(&chained), (vec![], Some("resp_1".into())));
        // After a tool call answered: neither the output sent before nor the reasoning.
        let mut s = after_one_tool_call();
        s.record_model_output(ModelOutput {
            items: vec![reasoning],
            usage: Usage::default(),
            response_id: Some("resp_2".into()),
        });
        assert_eq!(s.next_request(&chained), (vec![], Some("resp_2".into())));
        // Two calls of one response, both answered: both outputs.
        let mut s = state();
        s.record_model_output(ModelOutput {
            items: vec![call("a"), call("b")],
            usage: Usage::default(),
            response_id: Some("resp_1".into()),
        });
        s.record_tool_output(&call("a"), "A".into());
        s.record_tool_output(&call("b"), "B".into());
        assert_eq!(
            s.next_request(&chained).0,
            vec![out_with("a", "A"), out_with("b", "B")]
        );
    }
}
