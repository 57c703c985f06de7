//! Compacting a session's history with a model (`CompactionSession.runCompaction`): reads the
//! history, asks the trigger, computes the compacted items (a summary of all but the newest
//! turns, or `POST /responses/compact`) and writes them in one step where the session can:
//! `replaceHistory` with `expectedItems` (ours: atomic, archived, and refused if the history
//! changed meanwhile), else a `replace_suffix` history transaction of the whole history (atomic
//! and conditioned, not archived), else `replaceHistoryWithCompaction`, else `clearSession` and
//! `addItems`.
//! A failure before the write changes nothing.

use std::rc::Rc;

use crate::core::json::{json, Value};
use js_sys::{Array, Function};
use wasm_bindgen::JsValue;

use crate::core::compaction::{
    awaits_answer, candidates, compacted_items, hidden_turns, is_server_compaction, mark_turns,
    replaced, should_compact, stored_originals, summary_input, summary_item, turns_of_replaced,
    Strategy, SUMMARY_INSTRUCTIONS,
};
use crate::core::error::{ErrorFamily, RunnerError, RunnerErrorCode, SessionErrorCode};
use crate::core::wire::items::to_responses_item;
use crate::core::wire::{answer_text, item_type, usage_of, Api, ModelSettings, Usage};

use super::js::{self, describe, js_to_json, json_to_js, object, resolve_value};
use super::model::{timed_out, timeout_signal, ModelClient};

/// How long a compaction request (a whole history to summarise) may go without an answer: a
/// server that never answers must not hold the session's compaction, which runs one at a time
/// with the work after each turn, for good.
const COMPACTION_TIMEOUT_MS: u32 = 600_000;

/// The `Symbol.for` key under which a history rewrite's options name the change its subscribers
/// are told (`CHANGE_EVENT` in `js/encrypted.js`, which the sessions read).
const CHANGE_EVENT: &str = "agent-sessions.changeEvent";

use super::runner::{call_session, RunError};

/// A configured compaction: which server, which model, how.
pub struct Compactor {
    pub client: Rc<ModelClient>,
    pub model: String,
    /// The settings of the summary request: those of `options.agent` that hold for a request
    /// made for its session ([`ModelSettings::for_session_request`]).
    pub settings: ModelSettings,
    pub strategy: Strategy,
    /// Turns a summary keeps as they are.
    pub keep_turns: usize,
    /// Whether the replaced items go to the session's archive.
    pub archive: bool,
    /// `shouldCompact(context)`, replacing the default trigger.
    pub should_compact: Option<Function>,
}

/// What a compaction did.
pub struct Compacted {
    pub items_before: usize,
    pub items_after: usize,
    pub usage: Usage,
}

impl Compacted {
    pub fn to_js(&self) -> JsValue {
        // `usage` with the fields of the SDK's `RequestUsage` (what its compaction result holds)
        // that ours lacks: the token details, none here.
        let usage = super::runner::usage_object(&self.usage);
        for key in ["inputTokensDetails", "outputTokensDetails"] {
            let _ = js_sys::Reflect::set(&usage, &key.into(), &js_sys::Object::new());
        }
        object(&[
            ("itemsBefore", (self.items_before as f64).into()),
            ("itemsAfter", (self.items_after as f64).into()),
            ("usage", usage),
        ])
        .into()
    }
}

fn invalid_session(message: String) -> RunError {
    RunError::Usage(RunnerError::new(RunnerErrorCode::InvalidSession, message))
}

impl Compactor {
    /// Compacts `session`'s history if the trigger says so (always with `force`). `None` when
    /// nothing was done.
    pub async fn run(&self, session: &JsValue, force: bool) -> Result<Option<Compacted>, RunError> {
        // Every item, whatever window the session reads by default (its `settings`): a
        // compaction of the window alone would be refused by the write (or, over a session
        // without `replaceHistory`, replace the whole history by it).
        let every = JsValue::from_f64(crate::core::session::MAX_SAFE_INTEGER as f64);
        let stored = call_session(session, "getItems", std::slice::from_ref(&every)).await?;
        if !js::is_array(&stored).unwrap_or(false) {
            return Err(invalid_session(format!(
                "session.getItems() must resolve to an array, got {}",
                describe(&stored)
            )));
        }
        let items = match js_to_json(&stored, "the session's items").map_err(invalid_session)? {
            Value::Array(items) => items,
            _ => Vec::new(),
        };
        // The items as read, taken now (an array the session hands out may change later): those
        // kept are written back as they are (not their JSON: a tool's image bytes, a key set to
        // `undefined`, stay what they were).
        let stored_items = js::elements(&stored).map_err(RunError::Thrown)?;
        // A run under way (its question saved, its answer not yet) is left to finish: the next
        // turn compacts.
        if awaits_answer(&items) {
            return Ok(None);
        }
        let replaced = replaced(&items, self.strategy, self.keep_turns);
        // Nothing a compaction would replace (an empty history, only user messages and earlier
        // compactions): nothing to do, even with `force` (a request would be paid for nothing,
        // and a server's answer would write a session that was never written).
        if candidates(replaced).is_empty() {
            return Ok(None);
        }
        if !force && !self.triggered(replaced, &stored).await? {
            return Ok(None);
        }
        let (compacted, usage): (Vec<JsValue>, Usage) = match self.strategy {
            Strategy::Summary => {
                // (What is older than the kept turns; it holds a candidate, checked above.)
                let older = replaced;
                let (summary, usage) = self.summarise(older).await?;
                // A server's compaction item (`/responses/compact`'s, encrypted) cannot be
                // summarised: the newest (it stands for the ones before) is kept, before the
                // summary, for the Responses API to read.
                let mut compacted: Vec<JsValue> = older
                    .iter()
                    .rposition(is_server_compaction)
                    .and_then(|i| stored_items.get(i).cloned())
                    .into_iter()
                    .collect();
                compacted.push(json_to_js(&summary_item(
                    &summary,
                    turns_of_replaced(older),
                )));
                compacted.extend(stored_items.iter().skip(older.len()).cloned());
                (compacted, usage)
            }
            Strategy::Responses => {
                let (mut compacted, usage) = self.compact_on_server(&items).await?;
                // A summary of ours the server compacted stood for turns its output keeps no
                // user message of: its item is marked with them.
                let hidden = hidden_turns(&items);
                for item in &mut compacted {
                    mark_turns(item, hidden);
                }
                let originals = stored_originals(&compacted, &items);
                let written = compacted
                    .iter()
                    .zip(originals)
                    .map(|(item, original)| {
                        original
                            .and_then(|i| stored_items.get(i).cloned())
                            .unwrap_or_else(|| json_to_js(item))
                    })
                    .collect();
                (written, usage)
            }
        };
        let (mut compacted, mut stored, mut read) = (compacted, stored, items);
        let mut tries = 0;
        while let Err(e) = self.write(session, &compacted, &stored, &read).await {
            // Written to since it was read (another tab's turn), or its branch deleted or the
            // session closed meanwhile (a refused `replaceHistory`: nothing changed; a page that
            // leaves the chat closes it). Not a failure of the run that asked
            // (the SDK's `run()` rejects on one, its answer saved): `None`, and the next turn
            // compacts again.
            let code = match &e {
                RunError::Thrown(reason) => {
                    js::get(reason, "code").ok().and_then(|c| c.as_string())
                }
                _ => None,
            };
            let mismatch = code.as_deref() == Some(SessionErrorCode::SuffixMismatch.as_str());
            let gone = [SessionErrorCode::BranchNotFound, SessionErrorCode::Closed]
                .iter()
                .any(|c| code.as_deref() == Some(c.as_str()))
                && js::has_method(session, "replaceHistory");
            if !mismatch && !gone {
                return Err(e);
            }
            // Whole turns added meanwhile (a chat that went on while its summary was made) go
            // after the compacted history, which is written again, with no new request: where
            // the history still starts with what was read, and no question of it awaits its
            // answer (a run saving it would fail).
            tries += 1;
            if gone || tries > 3 {
                return Ok(None);
            }
            // (A read that fails, its branch deleted since, say: refused as well.)
            let Ok(again) = call_session(session, "getItems", std::slice::from_ref(&every)).await
            else {
                return Ok(None);
            };
            let (Ok(Value::Array(now)), Ok(added)) = (
                js_to_json(&again, "the session's items"),
                js::elements(&again),
            ) else {
                return Ok(None);
            };
            if now.len() <= read.len() || !now.starts_with(&read) || awaits_answer(&now) {
                return Ok(None);
            }
            compacted.extend(added.iter().skip(read.len()).cloned());
            (stored, read) = (again, now);
        }
        Ok(Some(Compacted {
            items_before: read.len(),
            items_after: compacted.len(),
            usage,
        }))
    }

    /// Whether to compact, from what a compaction would replace.
    async fn triggered(&self, replaced: &[Value], stored: &JsValue) -> Result<bool, RunError> {
        let Some(should) = &self.should_compact else {
            return Ok(should_compact(replaced));
        };
        let candidate_items: JsValue = candidates(replaced)
            .iter()
            .map(json_to_js)
            .collect::<Array>()
            .into();
        // The SDK's name for the candidates too, for a hook written for its class.
        // The hook gets its own copy of the history: the one read is what the write expects.
        let session_items = js::clone_value(stored).map_err(RunError::Thrown)?;
        let context = object(&[
            ("candidateItems", candidate_items.clone()),
            ("compactionCandidateItems", candidate_items),
            ("sessionItems", session_items),
        ]);
        let verdict = should
            .call1(&JsValue::UNDEFINED, &context)
            .map_err(RunError::Thrown)?;
        let verdict = resolve_value(verdict)
            .await
            .map_err(|e| RunError::Thrown(e.into_value()))?;
        Ok(verdict.is_truthy())
    }

    /// The model's summary of `older`, with the call's usage.
    async fn summarise(&self, older: &[Value]) -> Result<(String, Usage), RunError> {
        let input = summary_input(older);
        let output = self
            .client
            .ask(
                &self.model,
                &self.settings,
                SUMMARY_INSTRUCTIONS,
                &input,
                timeout_signal(COMPACTION_TIMEOUT_MS).as_ref(),
                &Default::default(),
            )
            .await
            .map_err(timed_out(COMPACTION_TIMEOUT_MS, "the compaction request"))?;
        let summary = output
            .items
            .iter()
            .rev()
            .find(|i| item_type(i) == "message")
            .map(|m| answer_text(m.get("content")))
            .unwrap_or_default();
        if summary.trim().is_empty() {
            return Err(RunError::Model(super::model::ModelFailure::new(
                200,
                "the model answered the summary request without text",
            )));
        }
        Ok((summary, output.usage))
    }

    /// `POST /responses/compact` with the whole history: the items it returns, and its usage.
    async fn compact_on_server(&self, items: &[Value]) -> Result<(Vec<Value>, Usage), RunError> {
        // What a run would send of it: a call left without its output (its approval never
        // given) is refused by the API, and would fail every compaction.
        let sent = crate::core::run::history::select_history(items.to_vec(), &[]);
        let input: Vec<Value> = sent.iter().filter_map(to_responses_item).collect();
        let body = json!({"model": self.model, "input": input});
        let response = self
            .client
            .post_json(
                "/responses/compact",
                &body.to_string(),
                timeout_signal(COMPACTION_TIMEOUT_MS).as_ref(),
            )
            .await
            .map_err(timed_out(COMPACTION_TIMEOUT_MS, "the compaction request"))?;
        // An output without a compaction item (an empty one, a server's that only echoes the
        // messages) would replace the history with less than it held: refused.
        let Some(output) = response
            .get("output")
            .and_then(Value::as_array)
            .filter(|o| o.iter().any(is_server_compaction))
        else {
            return Err(RunError::Model(super::model::ModelFailure::new(
                200,
                "the compaction response has no \"output\" array holding a compaction item: \
                 the history was kept as it was",
            )));
        };
        Ok((
            compacted_items(output),
            usage_of(Api::Responses, response.get("usage")),
        ))
    }

    /// Writes the compacted history, in one step where the session can.
    async fn write(
        &self,
        session: &JsValue,
        compacted: &[JsValue],
        stored: &JsValue,
        read: &[Value],
    ) -> Result<(), RunError> {
        let starts_with_server_compaction = compacted
            .first()
            .and_then(|first| js_to_json(first, "").ok())
            .is_some_and(|first| is_server_compaction(&first));
        let items: JsValue = compacted.iter().collect::<Array>().into();
        if js::has_method(session, "replaceHistory") {
            let options = object(&[
                ("archive", self.archive.into()),
                ("expectedItems", stored.clone()),
            ]);
            // Told to this package's sessions' subscribers as a compaction, not as any other
            // replacement of the history.
            let _ = js_sys::Reflect::set(
                &options,
                &js_sys::Symbol::for_(CHANGE_EVENT),
                &"compaction".into(),
            );
            call_session(session, "replaceHistory", &[items, options.into()]).await?;
        } else if js::has_method(session, "applyHistoryTransaction") {
            // (The SDK's `MemorySession`: one transaction, refused if the history changed since
            // it was read, where a clear and an add could lose a write in between.)
            let transaction = object(&[
                ("type", "replace_suffix".into()),
                ("expectedSuffix", stored.clone()),
                ("replacement", items),
            ]);
            let args = object(&[
                (
                    "operationId",
                    format!("compaction:{}", js::fresh_id("")).into(),
                ),
                ("transaction", transaction.into()),
            ]);
            call_session(session, "applyHistoryTransaction", &[args.into()]).await?;
        } else if js::has_method(session, "replaceHistoryWithCompaction")
            // As the SDK calls it: for the server's compaction, whose history starts with its
            // compaction item (where it may append, as the SDK's Conversations session does,
            // the rest would stay). Not for a summary, even one that keeps such an item.
            && self.strategy == Strategy::Responses
            && starts_with_server_compaction
        {
            call_session(session, "replaceHistoryWithCompaction", &[items]).await?;
        } else {
            // The history is put back, as the SDK's compaction puts it back: a failed write never
            // leaves it empty (cleared again first: a write of several requests may have stored
            // part of the new one), nor a clear that failed part of the way.
            let stored_items = js::stored_elements(stored);
            let old: JsValue = stored_items.iter().collect::<Array>().into();
            let failed = match call_session(session, "clearSession", &[]).await {
                Ok(_) => match call_session(session, "addItems", &[items]).await {
                    Ok(_) => None,
                    // Cleared again, the session is empty: the old items go back as they were
                    // (where that add fails, stored in part say, what is missing, below).
                    Err(e) => match call_session(session, "clearSession", &[]).await {
                        Ok(_) => match call_session(session, "addItems", &[old]).await {
                            Ok(_) => return Err(e),
                            Err(_) => Some(e),
                        },
                        Err(_) => Some(e),
                    },
                },
                Err(e) => Some(e),
            };
            if let Some(e) = failed {
                put_back(session, read, &stored_items).await;
                return Err(e);
            }
        }
        Ok(())
    }
}

/// Puts back the history `was` (its items as stored: `items`) in a session whose clear failed,
/// part of the way or not at all, or failed again after a failed write, or where adding it back
/// failed: nothing where it still
/// begins with that history (another device may have added to it), the rest where what it holds
/// is its beginning (a clear deleting from the newest), else the whole history after what it
/// holds (the SDK's compaction pops that first, which would delete what another device added:
/// here nothing is lost, though some items may be there twice).
async fn put_back(session: &JsValue, was: &[Value], items: &[JsValue]) {
    let every = JsValue::from_f64(crate::core::session::MAX_SAFE_INTEGER as f64);
    let now = match call_session(session, "getItems", &[every]).await {
        Ok(now) => js_to_json(&now, "the session's items").ok(),
        Err(_) => None,
    };
    let now = match now {
        Some(Value::Array(now)) => now,
        _ => return,
    };
    if now.starts_with(was) {
        return;
    }
    let kept = match was.starts_with(&now) {
        true => now.len(),
        false => 0,
    };
    let missing: Array = items.iter().skip(kept).collect();
    let _ = call_session(session, "addItems", &[missing.into()]).await;
}
