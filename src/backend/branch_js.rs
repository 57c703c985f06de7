//! What both session kinds share for branches, turn listings and usage: reading their arguments,
//! and building the JS values they return.

use js_sys::Array;
use wasm_bindgen::JsValue;

use super::js::{self, object};
use super::metadata::item_text;
use crate::core::branch::{self, RowFacts, Usage};
use crate::core::error::{Result, SessionError, SessionErrorCode};
use crate::core::session::starts_turn;

/// How a new branch picks the turn it replaces.
pub enum From {
    Turn(u64),
    Text(String),
}

pub fn invalid_turn(message: String) -> SessionError {
    SessionError::new(SessionErrorCode::InvalidTurn, message)
}

/// Text folded for a case-insensitive match, by the browser's `toLowerCase`; `İ`, which that
/// makes `i` and a combining dot, is `i`, and a final `ς` is `σ` (a capital `Σ` ending the
/// query lowers to `ς` where the same letter inside a word is `σ`), as `searchSessions` folds
/// them.
pub fn folded(text: &str) -> String {
    let lower = String::from(js_sys::JsString::from(text).to_lower_case());
    let mut out = String::with_capacity(lower.len());
    let mut after_i = false;
    for c in lower.chars() {
        if !(after_i && c == '\u{307}') {
            out.push(if c == 'ς' { 'σ' } else { c });
        }
        after_i = c == 'i';
    }
    out
}

/// What turn listings read of an item: its turn, whether it opens it, its text, the tool it
/// calls.
pub fn item_facts(item: &JsValue, turn: u64, created_at: f64) -> RowFacts {
    let text = |k: &'static str| js::get(item, k).ok().and_then(|v| v.as_string());
    let kind = text("type");
    let starts = starts_turn(text("role").as_deref(), kind.as_deref());
    RowFacts {
        turn,
        starts_turn: starts,
        text: if starts {
            item_text(item).unwrap_or_default()
        } else {
            String::new()
        },
        created_at,
        tool: match kind.as_deref() {
            Some("function_call" | "hosted_tool_call") => text("name"),
            // The calls of the SDK's computer, shell and apply-patch tools, named for the tool.
            Some(k @ ("computer_call" | "shell_call" | "apply_patch_call")) => {
                k.strip_suffix("_call").map(String::from)
            }
            _ => None,
        },
    }
}

/// `getTurns()` (no query) or `findTurns(query)`: `[{ turn, content, itemCount, createdAt }]`.
pub fn turns_js(rows: &[RowFacts], query: Option<&str>) -> JsValue {
    let out = Array::new();
    let query = query.map(folded);
    for turn in branch::turns(rows) {
        if query
            .as_deref()
            .is_some_and(|q| !branch::contains_text(&folded(&turn.content), q))
        {
            continue;
        }
        out.push(
            &object(&[
                ("turn", (turn.turn as f64).into()),
                ("content", turn.content.as_str().into()),
                ("itemCount", (turn.item_count as f64).into()),
                ("createdAt", turn.created_at.into()),
            ])
            .into(),
        );
    }
    out.into()
}

/// `getToolUsage()`: `[{ name, count, turn }]`.
pub fn tool_usage_js(rows: &[RowFacts]) -> JsValue {
    branch::tool_usage(rows)
        .into_iter()
        .map(|(name, count, turn)| {
            JsValue::from(object(&[
                ("name", name.as_str().into()),
                ("count", (count as f64).into()),
                ("turn", (turn as f64).into()),
            ]))
        })
        .collect::<Array>()
        .into()
}

/// `getSessionUsage()`: the sum of `usages`, and how many turns they are.
pub fn session_usage_js(usages: &[Usage]) -> JsValue {
    let mut sum = Usage::default();
    for u in usages {
        sum.add(u);
    }
    let mut fields = usage_fields(&sum).to_vec();
    fields.push(("turns", (usages.len() as f64).into()));
    object(&fields).into()
}

/// One turn's usage: `{ turn, requests, inputTokens, outputTokens, totalTokens }`.
pub fn turn_usage_js(turn: u64, usage: &Usage) -> JsValue {
    let mut fields = vec![("turn", JsValue::from_f64(turn as f64))];
    fields.extend(usage_fields(usage));
    object(&fields).into()
}

const USAGE_FIELDS: [&str; 4] = ["requests", "inputTokens", "outputTokens", "totalTokens"];

/// Reads a usage object: `{ requests?, inputTokens?, outputTokens?, totalTokens? }` of
/// non-negative numbers (the runner's `result.usage` has this shape; absent fields count 0, and
/// `totalTokens` defaults to input plus output). `whose` names it in errors.
pub fn usage_from_js(value: &JsValue, whose: &str) -> Result<Usage> {
    let bad =
        |what: String| SessionError::new(SessionErrorCode::InvalidUsage, format!("{whose} {what}"));
    if !value.is_object() {
        return Err(bad(format!(
            "takes a usage object {{ requests, inputTokens, outputTokens, totalTokens }}, got {}",
            js::describe(value)
        )));
    }
    let mut n = [0.0; 4];
    let mut given = false;
    for (slot, key) in n.iter_mut().zip(USAGE_FIELDS) {
        let v = js::get(value, key).map_err(|_| bad(format!("could not read {key}")))?;
        if v.is_undefined() || v.is_null() {
            continue;
        }
        given = true;
        *slot = v
            .as_f64()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| {
                bad(format!(
                    "needs {key} to be a non-negative number, got {}",
                    js::describe(&v)
                ))
            })?;
    }
    // None of them (a run's result instead of its `usage`, `input_tokens` as Python names it):
    // stored, it would be a turn that cost nothing.
    if !given {
        return Err(bad(format!(
            "takes a usage object with at least one of {} (a run's result.usage, not the result; names in camelCase), got none of them",
            USAGE_FIELDS.join(", ")
        )));
    }
    let total = if js::get(value, "totalTokens").is_ok_and(|v| v.as_f64().is_some()) {
        n[3]
    } else {
        n[1] + n[2]
    };
    Ok(Usage {
        requests: n[0],
        input_tokens: n[1],
        output_tokens: n[2],
        total_tokens: total,
    })
}

pub fn usage_fields(u: &Usage) -> [(&'static str, JsValue); 4] {
    [
        ("requests", u.requests.into()),
        ("inputTokens", u.input_tokens.into()),
        ("outputTokens", u.output_tokens.into()),
        ("totalTokens", u.total_tokens.into()),
    ]
}

pub fn usage_of(row: &JsValue) -> Usage {
    let n = |k: &'static str| js::get(row, k).ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
    Usage {
        requests: n("requests"),
        input_tokens: n("inputTokens"),
        output_tokens: n("outputTokens"),
        total_tokens: n("totalTokens"),
    }
}

/// The arguments of the branch methods, read when the call is made.
pub mod args {
    use wasm_bindgen::JsValue;

    use crate::backend::args::{exact, field, only_keys, optional_string, take_options};
    use crate::backend::js::describe;
    use crate::core::branch::validate_name;
    use crate::core::error::{Result, SessionError, SessionErrorCode};
    use crate::core::session::safe_count;

    /// A turn number: an integer from 1 (`INVALID_TURN` otherwise).
    pub fn turn(value: &JsValue, what: &str) -> Result<u64> {
        value
            .as_f64()
            .and_then(safe_count)
            .filter(|n| *n >= 1)
            .ok_or_else(|| {
                SessionError::new(
                    SessionErrorCode::InvalidTurn,
                    format!(
                        "{what} takes a turn number (an integer from 1), got {}",
                        describe(value)
                    ),
                )
            })
    }

    /// An optional turn number (`getTurnUsage()` without one lists every turn).
    pub fn optional_turn(value: &JsValue, what: &str) -> Result<Option<u64>> {
        match value.is_undefined() || value.is_null() {
            true => Ok(None),
            false => turn(value, what).map(Some),
        }
    }

    /// A branch name or id: a non-blank string of at most 200 characters, kept exactly (one
    /// holding a lone surrogate is refused: two such names would become one).
    pub fn name(value: &JsValue, what: &str) -> Result<String> {
        let name = exact(
            value,
            what,
            SessionErrorCode::InvalidOptions,
            "a branch name (a string)",
        )?;
        validate_name(&name)?;
        Ok(name)
    }

    /// An optional branch name.
    pub fn optional_name(value: &JsValue, what: &str) -> Result<Option<String>> {
        match value.is_undefined() || value.is_null() {
            true => Ok(None),
            false => name(value, what).map(Some),
        }
    }

    /// The text `findTurns` and `createBranchFromContent` look for: a non-empty string, kept
    /// exactly.
    pub fn text(value: &JsValue, what: &str) -> Result<String> {
        let kind = "the text to look for (a non-empty string)";
        match exact(value, what, SessionErrorCode::InvalidOptions, kind)? {
            t if t.is_empty() => Err(SessionError::new(
                SessionErrorCode::InvalidOptions,
                format!("{what} must be {kind}, got an empty string"),
            )),
            t => Ok(t),
        }
    }

    /// `{ branch? }`: the branch a listing reads (this object's when absent).
    pub fn branch_option(options: &JsValue, what: &str) -> Result<Option<String>> {
        let options = take_options(options, what)?;
        only_keys(&options, what, &["branch"])?;
        let branch = optional_string(
            &field(&options, what, "branch")?,
            &format!("{what}.branch"),
            SessionErrorCode::InvalidOptions,
        )?;
        if let Some(b) = &branch {
            validate_name(b)?;
        }
        Ok(branch)
    }
}
