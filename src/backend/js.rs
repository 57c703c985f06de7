//! Conversions between JavaScript values and the core: argument checks, copies of items,
//! errors as JS `Error` objects. No exports here: `bindings` holds those.

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::core::error::{Result, SessionError, SessionErrorCode};
use crate::core::history::{Limit, SessionSettings};
use crate::core::session::starts_turn;

#[wasm_bindgen]
extern "C" {
    /// The HTML structured clone: the same algorithm IndexedDB uses to store a value, so a value
    /// it accepts is a value IndexedDB accepts, and the copy is exactly what a later read returns.
    #[wasm_bindgen(catch, js_name = structuredClone)]
    fn structured_clone(value: &JsValue) -> std::result::Result<JsValue, JsValue>;
}

/// A new plain object with these properties, in this order.
pub fn object(fields: &[(&str, JsValue)]) -> Object {
    let o = Object::new();
    for (key, value) in fields {
        // Defining a property of a fresh plain object does not fail.
        let _ = Reflect::set(&o, &JsValue::from_str(key), value);
    }
    o
}

/// The property names of objects built many at a time, made into JS strings once.
pub struct Shape<const N: usize>([JsValue; N]);

impl<const N: usize> Shape<N> {
    pub fn new(names: [&str; N]) -> Self {
        Shape(names.map(JsValue::from_str))
    }

    /// A new object with these values for the shape's names, in order.
    pub fn build(&self, values: [&JsValue; N]) -> std::result::Result<Object, JsValue> {
        let o = Object::new();
        for (key, value) in self.0.iter().zip(values) {
            Reflect::set(&o, key, value)?;
        }
        Ok(o)
    }
}

/// A short description of a value's kind for error messages ("a string", "null", "an array").
pub fn describe(value: &JsValue) -> String {
    if value.is_null() {
        return "null".into();
    }
    if value.is_undefined() {
        return "undefined".into();
    }
    if Array::is_array(value) {
        return "an array".into();
    }
    if value.is_function() {
        return "a function".into();
    }
    if value.is_string() {
        return "a string".into();
    }
    if let Some(n) = value.as_f64() {
        return format!("the number {n}");
    }
    if value.as_bool().is_some() {
        return "a boolean".into();
    }
    if value.is_bigint() {
        return "a bigint".into();
    }
    if value.is_symbol() {
        return "a symbol".into();
    }
    let name = Object::get_prototype_of(value)
        .dyn_into::<Object>()
        .ok()
        .and_then(|proto| Reflect::get(&proto, &"constructor".into()).ok())
        .and_then(|ctor| Reflect::get(&ctor, &"name".into()).ok())
        .and_then(|name| name.as_string())
        .unwrap_or_default();
    if name.is_empty() || name == "Object" {
        "an object".into()
    } else {
        format!("an instance of {name}")
    }
}

/// A plain object: `{...}` or `Object.create(null)`, from this realm or another one (an iframe).
fn is_plain_object(value: &JsValue) -> bool {
    if !value.is_object() || value.is_function() || Array::is_array(value) {
        return false;
    }
    let proto: JsValue = Object::get_prototype_of(value).into();
    proto.is_null() || JsValue::from(Object::get_prototype_of(&proto)).is_null()
}

/// A deep copy, as IndexedDB would store it.
pub fn clone_value(value: &JsValue) -> std::result::Result<JsValue, String> {
    structured_clone(value).map_err(|e| error_text(&e))
}

/// The `name: message` of a thrown JS value, for error messages.
pub fn error_text(error: &JsValue) -> String {
    let get = |key: &str| {
        Reflect::get(error, &key.into())
            .ok()
            .and_then(|v| v.as_string())
    };
    match (get("name"), get("message")) {
        (Some(name), Some(message)) => format!("{name}: {message}"),
        (None, Some(message)) => message,
        _ => error.as_string().unwrap_or_else(|| describe(error)),
    }
}

/// Checks the argument of `addItems` and copies it. Each element must be a plain object that the
/// structured clone accepts; the copies are taken now, so changing the caller's array or items
/// after the call never changes what is stored. Returns each copy with whether it opens a turn.
pub fn take_items(items: &JsValue) -> Result<Vec<(JsValue, bool)>> {
    if !Array::is_array(items) {
        return Err(SessionError::new(
            SessionErrorCode::InvalidItem,
            format!("items must be an array, got {}", describe(items)),
        ));
    }
    let items: &Array = items.unchecked_ref();
    let mut taken = Vec::with_capacity(items.length() as usize);
    for (i, item) in items.iter().enumerate() {
        if !is_plain_object(&item) {
            return Err(SessionError::new(
                SessionErrorCode::InvalidItem,
                format!("items[{i}] is not an object: got {}", describe(&item)),
            ));
        }
        let copy = clone_value(&item).map_err(|e| {
            SessionError::new(
                SessionErrorCode::InvalidItem,
                format!("items[{i}] holds a value that cannot be stored ({e})"),
            )
        })?;
        let field = |key: &str| {
            Reflect::get(&copy, &key.into())
                .ok()
                .and_then(|v| v.as_string())
        };
        let opens_turn = starts_turn(field("role").as_deref(), field("type").as_deref());
        taken.push((copy, opens_turn));
    }
    Ok(taken)
}

/// Reads a `limit` argument: `undefined` or `null` for none, else an integer.
pub fn take_limit(value: &JsValue, what: &str) -> Result<Option<Limit>> {
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    match value.as_f64() {
        Some(n) => Limit::from_number(n, what).map(Some),
        None => Err(SessionError::new(
            SessionErrorCode::InvalidLimit,
            format!("{what} must be an integer, got {}", describe(value)),
        )),
    }
}

/// Reads an options argument: `undefined`, `null` or an object.
pub fn take_options(value: &JsValue, what: &str) -> Result<Option<Object>> {
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    if !value.is_object() || Array::is_array(value) || value.is_function() {
        return Err(SessionError::new(
            SessionErrorCode::InvalidOptions,
            format!("{what} must be an object, got {}", describe(value)),
        ));
    }
    Ok(Some(value.clone().unchecked_into()))
}

/// A field of an options object, `undefined` when absent.
pub fn field(options: &Option<Object>, key: &str) -> JsValue {
    options
        .as_ref()
        .and_then(|o| Reflect::get(o, &key.into()).ok())
        .unwrap_or(JsValue::UNDEFINED)
}

/// An optional string field: absent, or a string; `code` is reported for any other value.
pub fn optional_string(
    value: &JsValue,
    what: &str,
    code: SessionErrorCode,
) -> Result<Option<String>> {
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    value.as_string().map(Some).ok_or_else(|| {
        SessionError::new(
            code,
            format!("{what} must be a string, got {}", describe(value)),
        )
    })
}

/// A required string argument.
pub fn required_string(value: &JsValue, what: &str, code: SessionErrorCode) -> Result<String> {
    value.as_string().ok_or_else(|| {
        SessionError::new(
            code,
            format!("{what} must be a non-empty string, got {}", describe(value)),
        )
    })
}

/// Reads `options.settings` (`{ limit?: number }`): the parsed settings, and a frozen copy that
/// the `settings` property returns.
pub fn take_settings(options: &Option<Object>) -> Result<(SessionSettings, Object)> {
    let value = field(options, "settings");
    let settings = take_options(&value, "options.settings")?;
    let limit_value = field(&settings, "limit");
    let limit = take_limit(&limit_value, "options.settings.limit")?;
    let copy = match limit {
        Some(_) => object(&[("limit", limit_value)]),
        None => object(&[]),
    };
    Ok((SessionSettings { limit }, Object::freeze(&copy)))
}

pub fn now() -> f64 {
    js_sys::Date::now()
}

/// 16 random bytes from the Web Crypto API (available in windows and workers, on any origin).
pub fn random_bytes() -> Result<[u8; 16]> {
    let unavailable = |e: JsValue| {
        SessionError::new(
            SessionErrorCode::StorageUnavailable,
            format!(
                "crypto.getRandomValues is not available to make a session id ({})",
                error_text(&e)
            ),
        )
    };
    let crypto = Reflect::get(&js_sys::global(), &"crypto".into()).map_err(unavailable)?;
    let get_random_values: js_sys::Function = Reflect::get(&crypto, &"getRandomValues".into())
        .map_err(unavailable)?
        .dyn_into()
        .map_err(unavailable)?;
    let buffer = js_sys::Uint8Array::new_with_length(16);
    get_random_values
        .call1(&crypto, &buffer)
        .map_err(unavailable)?;
    let mut bytes = [0u8; 16];
    buffer.copy_to(&mut bytes);
    Ok(bytes)
}

/// Calls `object[name](...args)`.
pub fn call_method(
    object: &JsValue,
    name: &str,
    args: &[JsValue],
) -> std::result::Result<JsValue, JsValue> {
    let f: js_sys::Function = Reflect::get(object, &name.into())?
        .dyn_into()
        // What JavaScript itself throws for calling something that is not a function.
        .map_err(|_| JsValue::from(js_sys::TypeError::new(&format!("{name} is not a function"))))?;
    let args: Array = args.iter().collect();
    f.apply(object, &args)
}

/// Awaits a value if it is a promise (or any thenable); returns it as is otherwise.
pub async fn resolve_value(value: JsValue) -> std::result::Result<JsValue, JsValue> {
    let is_thenable = value.is_object()
        && Reflect::get(&value, &"then".into())
            .map(|t| t.is_function())
            .unwrap_or(false);
    if is_thenable {
        let promise = js_sys::Promise::resolve(&value);
        wasm_bindgen_futures::JsFuture::from(promise).await
    } else {
        Ok(value)
    }
}

#[cfg(feature = "runner")]
/// A JSON value as a fresh JS value (via `JSON.parse`, which builds plain objects fast).
pub fn json_to_js(value: &serde_json::Value) -> JsValue {
    let text = serde_json::to_string(value).unwrap_or_else(|_| "null".into());
    js_sys::JSON::parse(&text).unwrap_or(JsValue::NULL)
}

#[cfg(feature = "runner")]
/// A JS value as JSON (via `JSON.stringify`). `what` names it in the error.
pub fn js_to_json(value: &JsValue, what: &str) -> std::result::Result<serde_json::Value, String> {
    let text = js_sys::JSON::stringify(value)
        .map_err(|e| format!("{what} cannot be turned into JSON ({})", error_text(&e)))?
        .as_string()
        .ok_or_else(|| format!("{what} cannot be turned into JSON ({})", describe(value)))?;
    serde_json::from_str(&text).map_err(|e| format!("{what} is not valid JSON ({e})"))
}
