//! Reads and checks the caller's arguments into the core's types. Every read goes through
//! [`super::js`], so a throwing getter, a Proxy trap or a revoked Proxy becomes a coded error that
//! says what was being read, and the call writes nothing.

use js_sys::Object;
use wasm_bindgen::{JsCast, JsValue};

use crate::core::error::{Result, SessionError, SessionErrorCode};
use crate::core::history::{Limit, SessionSettings};
use crate::core::session::starts_turn;

#[cfg(feature = "store")]
use super::canonical::canonical;
use super::js::{self, describe, error_text, exact_string, number_text, object, Thrown};

/// The error for a value whose reading threw.
pub fn threw(code: SessionErrorCode, what: &str, thrown: &Thrown) -> SessionError {
    SessionError::new(
        code,
        format!("{what} threw when it was read ({})", error_text(thrown)),
    )
}

/// Checks the argument of `addItems` and copies it. Each element must be a plain object that the
/// structured clone accepts; the copies are taken now, so changing the caller's array or items
/// after the call never changes what is stored. Returns each copy with whether it opens a turn.
pub fn take_items(items: &JsValue) -> Result<Vec<(JsValue, bool)>> {
    take_items_as(items, "items", SessionErrorCode::InvalidItem)
}

/// [`take_items`] for an array named `name`, reported with `code_of`.
pub fn take_items_as(
    items: &JsValue,
    name: &str,
    code_of: SessionErrorCode,
) -> Result<Vec<(JsValue, bool)>> {
    if !js::is_array(items).map_err(|e| threw(code_of, name, &e))? {
        return Err(SessionError::new(
            code_of,
            format!("{name} must be an array, got {}", describe(items)),
        ));
    }
    let length = js::length(items).map_err(|e| threw(code_of, name, &e))?;
    if length > js::MAX_ELEMENTS {
        return Err(SessionError::new(
            code_of,
            format!("{name} has {length} elements, more than the 1,048,576 one call takes"),
        ));
    }
    let mut taken = Vec::with_capacity(length.min(1 << 16) as usize);
    // Each checked as it is read: a hole stops the call at once, whatever the length claims.
    for i in 0..length {
        let what = || format!("{name}[{i}]");
        let item = &js::element(items, i).map_err(|e| threw(code_of, &what(), &e))?;
        if !js::is_plain_object(item).map_err(|e| threw(code_of, &what(), &e))? {
            return Err(SessionError::new(
                code_of,
                format!("{} is not a plain object: got {}", what(), describe(item)),
            ));
        }
        let copy = js::clone_value(item).map_err(|e| {
            SessionError::new(
                code_of,
                format!(
                    "{} holds a value that cannot be stored ({})",
                    what(),
                    error_text(&e)
                ),
            )
        })?;
        // The copy is plain data: reading it runs nothing of the caller's.
        let text = |key: &'static str| js::get(&copy, key).ok().and_then(|v| v.as_string());
        let opens_turn = starts_turn(text("role").as_deref(), text("type").as_deref());
        taken.push((copy, opens_turn));
    }
    Ok(taken)
}

/// Reads a `limit` argument: `undefined` or `null` for none, else an integer.
pub fn take_limit(value: &JsValue, what: &str) -> Result<Option<Limit>> {
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    let got = match value.as_f64() {
        Some(n) => match Limit::from_number(n) {
            Some(limit) => return Ok(Some(limit)),
            None => number_text(n),
        },
        None => describe(value),
    };
    Err(SessionError::new(
        SessionErrorCode::InvalidLimit,
        format!("{what} must be an integer, got {got}"),
    ))
}

/// Reads an options argument: `undefined`, `null` or an object.
pub fn take_options(value: &JsValue, what: &str) -> Result<Option<Object>> {
    const CODE: SessionErrorCode = SessionErrorCode::InvalidOptions;
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    if !value.is_object() || value.is_function() || js::is_array(value).unwrap_or(true) {
        return Err(SessionError::new(
            CODE,
            format!("{what} must be an object, got {}", describe(value)),
        ));
    }
    Ok(Some(value.clone().unchecked_into()))
}

/// `options[key]` of an options object named `what`; `undefined` when there is none.
pub fn field(options: &Option<Object>, what: &str, key: &'static str) -> Result<JsValue> {
    match options {
        None => Ok(JsValue::UNDEFINED),
        Some(o) => js::get(o, key).map_err(|e| {
            threw(
                SessionErrorCode::InvalidOptions,
                &format!("{what}.{key}"),
                &e,
            )
        }),
    }
}

/// A string exactly as given; `code` names the error for any other value, and for a string that
/// is not well-formed UTF-16 (a lone surrogate cannot be kept exactly, so it is refused).
pub fn exact(value: &JsValue, what: &str, code: SessionErrorCode, kind: &str) -> Result<String> {
    match exact_string(value) {
        Some(Ok(s)) => Ok(s),
        Some(Err(())) => Err(SessionError::new(
            code,
            format!("{what} must be well-formed UTF-16: it holds a lone surrogate"),
        )),
        None => Err(SessionError::new(
            code,
            format!("{what} must be {kind}, got {}", describe(value)),
        )),
    }
}

/// An optional string: absent (`undefined` or `null`), or a string.
pub fn optional_string(
    value: &JsValue,
    what: &str,
    code: SessionErrorCode,
) -> Result<Option<String>> {
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    exact(value, what, code, "a string").map(Some)
}

/// A required string argument.
pub fn required_string(value: &JsValue, what: &str, code: SessionErrorCode) -> Result<String> {
    exact(value, what, code, "a non-empty string")
}

/// Refuses a key of `options` (named `what`) other than those `taken`, one given as `undefined`
/// aside: a misspelt option (`userID`) would be ignored, and a session made under no user.
pub fn only_keys(options: &Option<Object>, what: &str, taken: &[&str]) -> Result<()> {
    const CODE: SessionErrorCode = SessionErrorCode::InvalidOptions;
    let Some(options) = options else {
        return Ok(());
    };
    for key in js::keys(options).map_err(|e| threw(CODE, what, &e))? {
        if taken.contains(&key.as_str())
            || js::get_named(options, &key).is_ok_and(|v| v.is_undefined())
        {
            continue;
        }
        return Err(SessionError::new(
            CODE,
            format!(
                "{what}.{key} is not an option (there are {}): nothing was read",
                taken.join(", ")
            ),
        ));
    }
    Ok(())
}

/// Reads `options.settings` (`{ limit?: number, turns?: number }`): the parsed settings, and a
/// frozen copy that the `settings` property returns.
pub fn take_settings(options: &Option<Object>) -> Result<(SessionSettings, Object)> {
    let value = field(options, "options", "settings")?;
    let settings = take_options(&value, "options.settings")?;
    only_keys(&settings, "options.settings", &["limit", "turns"])?;
    let limit_value = field(&settings, "options.settings", "limit")?;
    let limit = take_limit(&limit_value, "options.settings.limit")?;
    let turns_value = field(&settings, "options.settings", "turns")?;
    let turns = take_limit(&turns_value, "options.settings.turns")?;
    let mut copy = Vec::new();
    if limit.is_some() {
        copy.push(("limit", limit_value));
    }
    if turns.is_some() {
        copy.push(("turns", turns_value));
    }
    Ok((
        SessionSettings { limit, turns },
        Object::freeze(&object(&copy)),
    ))
}

/// `replaceHistory`'s options.
#[cfg(feature = "store")]
pub struct ReplaceOptions {
    /// Move the replaced items to the archive (`true` unless `archive: false`).
    pub archive: bool,
    /// `expectedItems`: the canonical forms of the items the history must still hold, exactly,
    /// for the replacement to happen (a compaction computed from them).
    pub expected: Option<Vec<String>>,
}

/// `replaceHistory`'s `{ archive?: boolean, expectedItems?: Item[] }`.
#[cfg(feature = "store")]
pub fn take_replace_options(options: &JsValue) -> Result<ReplaceOptions> {
    let options = take_options(options, "options")?;
    // (A misspelt `expectedItem` would replace the history whatever it holds now.)
    only_keys(&options, "options", &["archive", "expectedItems"])?;
    let archive = field(&options, "options", "archive")?;
    let archive = if archive.is_undefined() || archive.is_null() {
        true
    } else {
        archive.as_bool().ok_or_else(|| {
            SessionError::new(
                SessionErrorCode::InvalidOptions,
                format!(
                    "options.archive must be a boolean, got {}",
                    describe(&archive)
                ),
            )
        })?
    };
    let expected = field(&options, "options", "expectedItems")?;
    let expected = if expected.is_undefined() || expected.is_null() {
        None
    } else {
        let items = take_items_as(
            &expected,
            "options.expectedItems",
            SessionErrorCode::InvalidOptions,
        )?;
        let forms = items
            .iter()
            .enumerate()
            .map(|(i, (item, _))| {
                canonical(item).map_err(|why| {
                    SessionError::new(
                        SessionErrorCode::InvalidOptions,
                        format!("options.expectedItems[{i}] holds {why}"),
                    )
                })
            })
            .collect::<Result<Vec<String>>>()?;
        Some(forms)
    };
    Ok(ReplaceOptions { archive, expected })
}

/// `getArchivedItems`' `{ limit?, before? }`: how many to return (all without a limit), and how
/// many of the newest to skip.
#[cfg(feature = "store")]
pub fn take_archive_window(options: &JsValue) -> Result<(Option<u64>, u64)> {
    let options = take_options(options, "options")?;
    only_keys(&options, "options", &["limit", "before"])?;
    let limit = take_limit(&field(&options, "options", "limit")?, "options.limit")?;
    let limit = match limit {
        None | Some(Limit::All) => None,
        Some(Limit::Newest(n)) => Some(n),
    };
    let before = field(&options, "options", "before")?;
    let skip = match take_limit(&before, "options.before")? {
        None => 0,
        // (`Infinity`: all of them skipped.)
        Some(Limit::All) => u64::MAX,
        Some(Limit::Newest(n)) => n,
    };
    Ok((limit, skip))
}
