//! A session's metadata, kept in its record beside the counters so that listing sessions never
//! reads a message: a title (by default the first user message, cut to 80 characters, set in the
//! transaction that adds it), a summary and its topics, and a state (any object the structured
//! clone can store and JSON can write, like Agno's `session_state`). `update()` changes them; `getInfo()` reads them.

use js_sys::Array;
use wasm_bindgen::JsValue;

use crate::core::error::{Result, SessionError, SessionErrorCode};
use crate::core::session::{default_title, SessionRecord, SUMMARY_MARKER};

use super::args::{take_options, threw};
use super::js::{self, describe, error_text, exact_string, object};

/// A title is at most this many characters.
pub const MAX_TITLE: usize = 1000;

/// What an `update()` set.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Applied {
    /// Nothing: no field, only a title whose `expectedTitle` no longer holds, or an
    /// `expectedCreatedAt` that does not hold.
    Nothing,
    /// Every field given.
    All,
    /// Every field given but the title, whose `expectedTitle` no longer held.
    AllButTitle,
}

/// What `update()` changes: each field given (`null` clears it), the others stay.
#[derive(Default)]
pub struct Changes {
    fields: Vec<(&'static str, JsValue)>,
    /// `expectedTitle`: the title is set only if the stored one is still this (`null`: none).
    expected_title: Option<JsValue>,
    /// `expectedCreatedAt`: nothing is set unless the session is stored and was first written
    /// then (not deleted since, nor deleted and begun again); `null` (what `getInfo()` gives
    /// for a session not stored): unless it is still not stored.
    expected_created_at: Option<Option<f64>>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Whether `expectedCreatedAt` holds for a session first written at `created_at` (`None`:
    /// not stored).
    pub fn created_at_holds(&self, created_at: Option<f64>) -> bool {
        self.expected_created_at
            .is_none_or(|expected| created_at == expected)
    }

    /// Sets the changed fields on a stored record object: what it set (a title whose
    /// `expectedTitle` no longer holds is not set).
    pub fn apply(&self, stored: &JsValue) -> Applied {
        let current_title = || js::get(stored, "title").ok().and_then(|t| t.as_string());
        let title_moved = self
            .expected_title
            .as_ref()
            .is_some_and(|expected| expected.as_string() != current_title());
        let mut set = false;
        let mut kept = false;
        for (key, value) in &self.fields {
            if *key == "title" && title_moved {
                kept = true;
                continue;
            }
            // The stored object is IndexedDB's own copy (or this library's): setting a field
            // touches nothing else.
            let _ = js_sys::Reflect::set(stored, &JsValue::from_str(key), value);
            set = true;
        }
        match (set, kept) {
            (false, _) => Applied::Nothing,
            (true, false) => Applied::All,
            (true, true) => Applied::AllButTitle,
        }
    }
}

fn text_field(value: &JsValue, what: &str, code: SessionErrorCode, max: usize) -> Result<JsValue> {
    if value.is_null() {
        return Ok(JsValue::NULL);
    }
    match exact_string(value) {
        Some(Ok(s)) if s.chars().count() <= max => Ok(JsValue::from_str(&s)),
        Some(Ok(s)) => Err(SessionError::new(
            code,
            format!(
                "{what} must be at most {max} characters, got {}",
                s.chars().count()
            ),
        )),
        Some(Err(())) => Err(SessionError::new(
            code,
            format!("{what} must be well-formed UTF-16: it holds a lone surrogate"),
        )),
        None => Err(SessionError::new(
            code,
            format!("{what} must be a string or null, got {}", describe(value)),
        )),
    }
}

/// Reads `update({ title?, summary?, topics?, state? })`. Nothing else is taken, so a misspelt
/// field is an error rather than ignored.
pub fn take_changes(value: &JsValue) -> Result<Changes> {
    const OPTIONS: SessionErrorCode = SessionErrorCode::InvalidOptions;
    let Some(changes) = take_options(value, "changes")? else {
        return Err(SessionError::new(
            OPTIONS,
            "update() takes an object: { title?, summary?, topics?, state? }",
        ));
    };
    let changes: JsValue = changes.into();
    let mut taken = Changes::default();
    for key in js::keys(&changes).map_err(|e| threw(OPTIONS, "changes", &e))? {
        let value = js::get_named(&changes, &key)
            .map_err(|e| threw(OPTIONS, &format!("changes.{key}"), &e))?;
        // A field given as `undefined` is left as it is, as an option is (`{ title: form.title }`
        // with no title in the form). Not `expectedTitle`: a condition is not dropped unsaid.
        let known = ["title", "summary", "topics", "state"].contains(&key.as_str());
        if known && value.is_undefined() {
            continue;
        }
        let field = match key.as_str() {
            "title" => (
                "title",
                text_field(&value, "title", SessionErrorCode::InvalidTitle, MAX_TITLE)?,
            ),
            "summary" => (
                "summary",
                text_field(&value, "summary", OPTIONS, usize::MAX)?,
            ),
            "topics" => ("topics", topics(&value)?),
            "state" => ("state", state(&value)?),
            "expectedTitle" => {
                let what = "expectedTitle";
                taken.expected_title = Some(text_field(&value, what, OPTIONS, MAX_TITLE)?);
                continue;
            }
            "expectedCreatedAt" => {
                let at = value.as_f64().filter(|at| at.is_finite());
                if at.is_none() && !value.is_null() {
                    return Err(SessionError::new(
                        OPTIONS,
                        format!(
                            "expectedCreatedAt must be a time or null (getInfo().createdAt), got {}",
                            describe(&value)
                        ),
                    ));
                }
                taken.expected_created_at = Some(at);
                continue;
            }
            other => {
                return Err(SessionError::new(
                    OPTIONS,
                    format!("update() takes title, summary, topics, state, expectedTitle and expectedCreatedAt, not \"{other}\""),
                ))
            }
        };
        taken.fields.push(field);
    }
    Ok(taken)
}

fn topics(value: &JsValue) -> Result<JsValue> {
    if value.is_null() {
        return Ok(JsValue::NULL);
    }
    let bad = || {
        SessionError::new(
            SessionErrorCode::InvalidOptions,
            format!(
                "topics must be an array of strings or null, got {}",
                describe(value)
            ),
        )
    };
    if !js::is_array(value).unwrap_or(false) {
        return Err(bad());
    }
    let list = js::elements(value).map_err(|_| bad())?;
    let mut copy = Vec::with_capacity(list.len());
    for topic in &list {
        match exact_string(topic) {
            Some(Ok(t)) => copy.push(JsValue::from_str(&t)),
            _ => return Err(bad()),
        }
    }
    Ok(copy.into_iter().collect::<Array>().into())
}

/// A copy of a state, taken now: changing the caller's object later changes nothing stored.
fn state(value: &JsValue) -> Result<JsValue> {
    const CODE: SessionErrorCode = SessionErrorCode::InvalidState;
    if value.is_null() {
        return Ok(JsValue::NULL);
    }
    if !value.is_object() || value.is_function() {
        return Err(SessionError::new(
            CODE,
            format!("state must be an object or null, got {}", describe(value)),
        ));
    }
    let copy = js::clone_value(value).map_err(|e| {
        SessionError::new(
            CODE,
            format!(
                "state holds a value that cannot be stored ({})",
                error_text(&e)
            ),
        )
    })?;
    // A run sends the state to the model as JSON: one JSON cannot write (a BigInt, a cycle)
    // would fail every run of the session from then on.
    let text = js_sys::JSON::stringify(&copy).map_err(|e| {
        SessionError::new(
            CODE,
            format!(
                "state holds a value that JSON cannot write, as a run sends it to the model ({})",
                error_text(&e)
            ),
        )
    })?;
    // A `Date` (or a `String`, `Number` or `Boolean` object) is an object JSON writes as no
    // object: a run would send a string, and a backup hold one no import takes as a state.
    if !String::from(text).starts_with(['{', '[']) {
        return Err(SessionError::new(
            CODE,
            format!(
                "state must be an object JSON writes as an object, got {}",
                describe(value)
            ),
        ));
    }
    Ok(copy)
}

/// The text of the first user message among `items` (copies, with whether each opens a turn).
fn first_user_text(items: &[(JsValue, bool)]) -> Option<String> {
    let (item, _) = items.iter().find(|(_, starts)| *starts)?;
    item_text(item)
}

/// Whether `item` is a compaction summary: of type `compaction`, or carrying the summary
/// marker (on itself, or in `providerData` as earlier versions stored it).
pub fn is_summary(item: &JsValue) -> bool {
    let marked = |v: &JsValue| js::get(v, SUMMARY_MARKER).is_ok_and(|m| !m.is_undefined());
    js::get(item, "type")
        .ok()
        .and_then(|t| t.as_string())
        .as_deref()
        == Some("compaction")
        || marked(item)
        || js::get(item, "providerData").is_ok_and(|p| p.is_object() && marked(&p))
}

/// The text of a message: its string content, or its text parts joined by spaces.
pub fn item_text(item: &JsValue) -> Option<String> {
    let content = js::get(item, "content").ok()?;
    if let Some(text) = content.as_string() {
        return Some(text);
    }
    parts_text(&content)
}

/// The `text` of the parts of `parts`, joined by spaces; `None` unless it is an array (an
/// object's `length` says nothing of what it holds).
pub fn parts_text(parts: &JsValue) -> Option<String> {
    if !js::is_array(parts).ok()? {
        return None;
    }
    let text: Vec<String> = js::elements(parts)
        .ok()?
        .iter()
        .filter_map(|p| js::get(p, "text").ok()?.as_string())
        .collect();
    Some(text.join(" "))
}

/// Gives a session without a title its default title, from the first user message being added,
/// when that is the first of its history: `kept_turn` is the turn of the items the write keeps
/// before the new ones (0: none of them is a user message), `archived` how many items compaction
/// archived. A session that had its first user message already (one a version before titles
/// were kept wrote, or whose title was cleared) is not named after a later one.
pub fn give_default_title(
    stored: &JsValue,
    items: &[(JsValue, bool)],
    kept_turn: u64,
    archived: u64,
) {
    let untitled = js::get(stored, "title").map_or(true, |t| t.is_null() || t.is_undefined());
    if !untitled || kept_turn > 0 || archived > 0 {
        return;
    }
    if let Some(text) = first_user_text(items) {
        let title = default_title(&text);
        if !title.is_empty() {
            let _ = js_sys::Reflect::set(stored, &"title".into(), &title.as_str().into());
        }
    }
}

fn field_or_null(stored: &JsValue, key: &'static str) -> JsValue {
    match js::get(stored, key) {
        Ok(v) if !v.is_undefined() => v,
        _ => JsValue::NULL,
    }
}

/// `getInfo()`: the counters and the metadata. A session nothing was written to yet has no
/// times.
pub fn info(
    session_id: &str,
    user_id: Option<&str>,
    record: Option<&SessionRecord>,
    stored: &JsValue,
) -> JsValue {
    let time = |t: Option<f64>| t.map_or(JsValue::NULL, JsValue::from_f64);
    object(&[
        ("sessionId", session_id.into()),
        ("userId", user_id.map_or(JsValue::NULL, JsValue::from_str)),
        ("createdAt", time(record.map(|r| r.created_at))),
        ("updatedAt", time(record.map(|r| r.updated_at))),
        (
            "itemCount",
            (record.map_or(0, |r| r.item_count) as f64).into(),
        ),
        (
            "turnCount",
            (record.map_or(0, |r| r.turn_count()) as f64).into(),
        ),
        ("rewrites", (record.map_or(0, |r| r.rewrites) as f64).into()),
        ("title", field_or_null(stored, "title")),
        ("summary", field_or_null(stored, "summary")),
        ("topics", field_or_null(stored, "topics")),
        ("state", field_or_null(stored, "state")),
    ])
    .into()
}
