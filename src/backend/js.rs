//! Safe access to JavaScript values. A caller's value can be a Proxy whose traps throw, a revoked
//! Proxy, or an object with throwing getters or `toJSON`: every operation here that can run the
//! caller's code goes through an import declared with `catch` (or a `js_sys` function that
//! returns `Result`), so a throw comes back as an `Err` carrying what was thrown and never
//! unwinds through Rust frames, which would leave the instance broken. `describe` and
//! `error_text` never fail at all.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;

use js_sys::{Array, Function, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::future_to_promise;

/// What a JavaScript operation threw.
pub type Thrown = JsValue;

#[wasm_bindgen]
extern "C" {
    /// The HTML structured clone: the same algorithm IndexedDB uses to store a value, so a value
    /// it accepts is a value IndexedDB accepts, and the copy is exactly what a later read returns.
    #[wasm_bindgen(catch, js_name = structuredClone)]
    fn structured_clone(value: &JsValue) -> Result<JsValue, Thrown>;

    #[wasm_bindgen(catch, js_namespace = Array, js_name = isArray)]
    fn array_is_array(value: &JsValue) -> Result<bool, Thrown>;

    #[wasm_bindgen(catch, js_namespace = Object, js_name = getPrototypeOf)]
    fn object_get_prototype_of(value: &JsValue) -> Result<JsValue, Thrown>;

    #[wasm_bindgen(catch, js_namespace = Object, js_name = keys)]
    fn object_keys(value: &JsValue) -> Result<Array, Thrown>;

    #[wasm_bindgen(catch, js_namespace = Promise, js_name = resolve)]
    fn promise_resolve(value: &JsValue) -> Result<Promise, Thrown>;

    #[wasm_bindgen(catch, js_namespace = Array, js_name = from)]
    fn array_from(value: &JsValue) -> Result<Vec<JsValue>, Thrown>;

    #[wasm_bindgen(catch, js_namespace = Uint8Array, js_name = from)]
    fn uint8_array_from(value: &JsValue) -> Result<Uint8Array, Thrown>;
}

thread_local! {
    /// The names this module passes to JavaScript on every call (property and store names),
    /// each made into a JS string once: passing a Rust string decodes it again every time.
    static NAMES: RefCell<Vec<(&'static str, JsValue)>> = const { RefCell::new(Vec::new()) };
}

/// `name` as a JS string, made at its first use and kept. Only for the library's own names
/// (`'static`), so the set stays as small as the source's.
pub fn name(name: &'static str) -> JsValue {
    NAMES.with(|names| {
        let mut names = names.borrow_mut();
        // Found by address: a name's text is compared with no other's. (The same text at two
        // addresses would be kept twice, still one entry per name in the source.)
        let at = |n: &&str| n.as_ptr() == name.as_ptr() && n.len() == name.len();
        if let Some((_, value)) = names.iter().find(|(n, _)| at(n)) {
            return value.clone();
        }
        let value = JsValue::from_str(name);
        names.push((name, value.clone()));
        value
    })
}

/// Whether `object` has a method `name` (a property that is a function; one whose getter
/// throws is none).
pub fn has_method(object: &JsValue, name: &'static str) -> bool {
    get(object, name).is_ok_and(|f| f.is_function())
}

/// `target[key]` for one of the library's own property names; what a getter or a Proxy trap
/// throws is an `Err`.
pub fn get(target: &JsValue, key: &'static str) -> Result<JsValue, Thrown> {
    Reflect::get(target, &name(key))
}

/// [`get`] for a name that is not the library's own (one taken from the caller's data).
pub fn get_named(target: &JsValue, key: &str) -> Result<JsValue, Thrown> {
    Reflect::get(target, &JsValue::from_str(key))
}

/// `Array.isArray(value)`; a revoked Proxy throws.
pub fn is_array(value: &JsValue) -> Result<bool, Thrown> {
    array_is_array(value)
}

/// The most elements [`elements`] reads. A `length` can claim up to 2^32 - 1 with nothing
/// behind it (`new Array(2 ** 32 - 1)`, a Proxy, an object with a `length` field): reading that
/// many would hold the page for minutes and then run the module out of memory.
pub const MAX_ELEMENTS: u32 = 1 << 20;

/// The `length` of an array (or of a Proxy of one): a whole number below 2^32, else 0.
pub fn length(array: &JsValue) -> Result<u32, Thrown> {
    let length = Reflect::get(array, &name("length"))?
        .as_f64()
        .filter(|n| *n >= 0.0 && n.fract() == 0.0)
        .unwrap_or(0.0);
    Ok(length.min(u32::MAX as f64) as u32)
}

/// The element `i` of an array (or of a Proxy of one).
pub fn element(array: &JsValue, i: u32) -> Result<JsValue, Thrown> {
    Reflect::get_u32(array, i)
}

/// The elements of an array (or of a Proxy of one), read through `length` and each index; one
/// of more than [`MAX_ELEMENTS`] is a `RangeError`.
pub fn elements(array: &JsValue) -> Result<Vec<JsValue>, Thrown> {
    let length = length(array)?;
    if length > MAX_ELEMENTS {
        return Err(
            js_sys::RangeError::new("its length is over the 1,048,576 elements read here").into(),
        );
    }
    (0..length).map(|i| element(array, i)).collect()
}

/// The elements of an array IndexedDB returned, read in one call (not one call per element, as
/// [`elements`] reads a caller's array); nothing for anything that is not array-like.
pub fn stored_elements(array: &JsValue) -> Vec<JsValue> {
    array_from(array).unwrap_or_default()
}

/// The own enumerable string keys of an object (`Object.keys`), as Rust strings.
pub fn keys(value: &JsValue) -> Result<Vec<String>, Thrown> {
    Ok(object_keys(value)?
        .iter()
        .filter_map(|k| k.as_string())
        .collect())
}

/// The prototype of an object.
pub fn prototype_of(value: &JsValue) -> Result<JsValue, Thrown> {
    object_get_prototype_of(value)
}

/// A plain object: `{...}` or `Object.create(null)`, from this realm or another one (an iframe).
/// A Proxy counts as what it claims to be; its traps may throw.
pub fn is_plain_object(value: &JsValue) -> Result<bool, Thrown> {
    if !value.is_object() || value.is_function() || is_array(value)? {
        return Ok(false);
    }
    let proto = prototype_of(value)?;
    Ok(proto.is_null() || prototype_of(&proto)?.is_null())
}

/// A string exactly as JavaScript holds it: `None` for a string that is not well-formed UTF-16
/// (a lone surrogate), which a Rust `String` could only hold by replacing it with U+FFFD, so two
/// different JS strings would become one.
pub fn exact_string(value: &JsValue) -> Option<Result<String, ()>> {
    let s = value.as_string()?;
    Some(if JsValue::from_str(&s) == *value {
        Ok(s)
    } else {
        Err(())
    })
}

/// A number as JavaScript writes it (`1.5`, `NaN`, `-Infinity`, `18446744073709552000`):
/// `String(n)`, which also keeps Rust's float formatting out of the module.
pub fn number_text(n: f64) -> String {
    js_sys::Number::from(n)
        .to_string_with_radix(10)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_default()
}

/// A short description of a value's kind for error messages ("a string", "null", "an array").
/// Never fails: a value whose inspection throws is "an object".
pub fn describe(value: &JsValue) -> String {
    if value.is_null() {
        return "null".into();
    }
    if value.is_undefined() {
        return "undefined".into();
    }
    if value.is_function() {
        return "a function".into();
    }
    if value.is_string() {
        return "a string".into();
    }
    if let Some(n) = value.as_f64() {
        return format!("the number {}", number_text(n));
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
    match is_array(value) {
        Ok(true) => return "an array".into(),
        Ok(false) => {}
        Err(_) => return "an object that throws when inspected (a revoked Proxy?)".into(),
    }
    let name = prototype_of(value)
        .ok()
        .filter(|proto| proto.is_object())
        .and_then(|proto| get(&proto, "constructor").ok())
        .filter(|ctor| ctor.is_function())
        .and_then(|ctor| get(&ctor, "name").ok())
        .and_then(|name| name.as_string())
        .unwrap_or_default();
    if name.is_empty() || name == "Object" {
        "an object".into()
    } else {
        format!("an instance of {name}")
    }
}

/// The `name: message` of a thrown JS value, for error messages. Never fails.
pub fn error_text(error: &JsValue) -> String {
    let text = |key: &'static str| {
        if !error.is_object() {
            return None;
        }
        get(error, key).ok().and_then(|v| v.as_string())
    };
    match (text("name"), text("message")) {
        (Some(name), Some(message)) => format!("{name}: {message}"),
        (None, Some(message)) => message,
        _ => error.as_string().unwrap_or_else(|| describe(error)),
    }
}

/// A deep copy, as IndexedDB would store it. Getters run, and what they throw is an `Err`.
pub fn clone_value(value: &JsValue) -> Result<JsValue, Thrown> {
    structured_clone(value)
}

/// About how many bytes a stored value takes: the length of its JSON. A value JSON cannot hold
/// (a cycle, a `BigInt`) counts as [`UNMEASURED`] bytes.
pub fn json_size(value: &JsValue) -> u64 {
    js_sys::JSON::stringify(value)
        .ok()
        .map_or(UNMEASURED, |text| text.length() as u64)
}

/// The size counted for a value JSON cannot hold.
const UNMEASURED: u64 = 1024;

/// [`json_size`] of every item of a write.
pub fn items_size<'a>(items: impl IntoIterator<Item = &'a JsValue>) -> u64 {
    items.into_iter().map(json_size).sum()
}

/// A new plain object with these properties, in this order.
pub fn object(fields: &[(&'static str, JsValue)]) -> Object {
    let o = Object::new();
    for (key, value) in fields {
        // Defining a property of a fresh plain object does not fail.
        let _ = Reflect::set(&o, &name(key), value);
    }
    o
}

/// The property names of objects built many at a time, made into JS strings once.
pub struct Shape<const N: usize>([JsValue; N]);

impl<const N: usize> Shape<N> {
    pub fn new(names: [&'static str; N]) -> Self {
        Shape(names.map(name))
    }

    /// A new object with these values for the shape's names, in order.
    pub fn build(&self, values: [&JsValue; N]) -> Result<Object, Thrown> {
        let o = Object::new();
        for (key, value) in self.0.iter().zip(values) {
            Reflect::set(&o, key, value)?;
        }
        Ok(o)
    }
}

/// Calls `object[name](...args)`. Calling something that is not a function throws the
/// `TypeError` JavaScript itself would.
pub fn call_method(
    object: &JsValue,
    name: &'static str,
    args: &[JsValue],
) -> Result<JsValue, Thrown> {
    let f = get(object, name)?;
    if !f.is_function() {
        return Err(js_sys::TypeError::new(&format!("{name} is not a function")).into());
    }
    let args: Array = args.iter().collect();
    f.unchecked_into::<Function>().apply(object, &args)
}

/// Why a value a caller's function returned did not resolve.
pub enum Unresolved {
    /// It is not a usable value: reading its `then` threw (a hostile Proxy, a throwing getter).
    Unreadable(Thrown),
    /// It is a promise that rejected, with this reason.
    Rejected(JsValue),
}

impl Unresolved {
    /// What was thrown or rejected with, whichever it was.
    pub fn into_value(self) -> JsValue {
        match self {
            Unresolved::Unreadable(v) | Unresolved::Rejected(v) => v,
        }
    }
}

/// Awaits a value if it is a promise (or any thenable); returns it as is otherwise.
pub async fn resolve_value(value: JsValue) -> Result<JsValue, Unresolved> {
    settling(value)?.value().await
}

/// A value that may still be settling (a promise, or any thenable), listened to from the moment
/// it is made: a rejection is handled then, not when it is awaited (values started together and
/// awaited one after another would otherwise report a later one's rejection to the page as
/// unhandled while an earlier one is awaited).
pub enum Settling {
    Now(JsValue),
    Later(wasm_bindgen_futures::JsFuture),
}

/// Starts listening to `value`: see [`Settling`].
pub fn settling(value: JsValue) -> Result<Settling, Unresolved> {
    if value.is_object() || value.is_function() {
        let then = get(&value, "then").map_err(Unresolved::Unreadable)?;
        if then.is_function() {
            let promise = promise_resolve(&value).map_err(Unresolved::Unreadable)?;
            return Ok(Settling::Later(promise.into()));
        }
    }
    Ok(Settling::Now(value))
}

impl Settling {
    /// The value, once settled.
    pub async fn value(self) -> Result<JsValue, Unresolved> {
        match self {
            Settling::Now(value) => Ok(value),
            Settling::Later(future) => future.await.map_err(Unresolved::Rejected),
        }
    }
}

/// The bytes of a `Uint8Array` (or of a stream reader's chunk, or anything array-like), copied.
pub fn bytes_of(chunk: &JsValue) -> Result<Vec<u8>, Thrown> {
    Ok(uint8_array_from(chunk)?.to_vec())
}

/// `future_to_promise`, instantiated once for the whole module: every promise the module
/// returns for work still to do is made here (each async body is a boxed future, not a copy of
/// the promise machinery).
pub fn js_promise(work: Pin<Box<dyn Future<Output = Result<JsValue, JsValue>>>>) -> Promise {
    future_to_promise(work)
}

/// Runs `work` to its end in the background, through [`js_promise`]'s machinery (one copy of it
/// in the module, where `spawn_local` would compile its own for each kind of future).
pub fn spawn(work: Pin<Box<dyn Future<Output = ()>>>) {
    let _ = js_promise(Box::pin(async move {
        work.await;
        Ok(JsValue::UNDEFINED)
    }));
}

pub fn now() -> f64 {
    js_sys::Date::now()
}

/// Calls `callback` after `ms` milliseconds (`setTimeout`); at once where there is no timer.
/// The timer's id, for [`clear_timeout`].
pub fn set_timeout(callback: &Function, ms: f64) -> JsValue {
    match get(&js_sys::global(), "setTimeout")
        .ok()
        .filter(JsValue::is_function)
    {
        Some(f) => f
            .unchecked_ref::<Function>()
            .call2(&JsValue::UNDEFINED, callback, &JsValue::from_f64(ms))
            .unwrap_or_default(),
        None => {
            let _ = callback.call0(&JsValue::UNDEFINED);
            JsValue::UNDEFINED
        }
    }
}

/// Clears a timer [`set_timeout`] set.
pub fn clear_timeout(id: &JsValue) {
    if let Ok(f) = get(&js_sys::global(), "clearTimeout") {
        if let Some(f) = f.dyn_ref::<Function>() {
            let _ = f.call1(&JsValue::UNDEFINED, id);
        }
    }
}

/// A promise that resolves after `ms` milliseconds, in a task of its own.
pub fn timer(ms: f64) -> Promise {
    Promise::new(&mut |resolve, _| {
        set_timeout(&resolve, ms);
    })
}

/// Resolves after `ms` milliseconds, in a task of its own.
pub async fn after(ms: f64) {
    let _ = wasm_bindgen_futures::JsFuture::from(timer(ms)).await;
}

#[cfg(feature = "runner")]
/// A fresh id: a UUID v4 from Web Crypto's random bytes, else `fallback` followed by the clock
/// in milliseconds (a page without Web Crypto).
pub fn fresh_id(fallback: &str) -> String {
    match random_bytes() {
        Ok(bytes) => crate::core::session::uuid_v4(bytes),
        Err(_) => format!("{fallback}{}", number_text(now())),
    }
}

/// 16 random bytes from the Web Crypto API (available in windows and workers, on any origin).
pub fn random_bytes() -> Result<[u8; 16], Thrown> {
    let crypto = get(&js_sys::global(), "crypto")?;
    let buffer = Uint8Array::new_with_length(16);
    call_method(&crypto, "getRandomValues", &[buffer.clone().into()])?;
    let mut bytes = [0u8; 16];
    buffer.copy_to(&mut bytes);
    Ok(bytes)
}

#[cfg(feature = "runner")]
/// A JSON value as a fresh JS value (via `JSON.parse`, which builds plain objects fast).
pub fn json_to_js(value: &crate::core::json::Value) -> JsValue {
    // What `json::to_string` writes always parses.
    js_sys::JSON::parse(&crate::core::json::to_string(value)).unwrap_or(JsValue::NULL)
}

#[cfg(feature = "runner")]
/// A JS value as JSON (via `JSON.stringify`, which runs `toJSON` and getters: what they throw is
/// reported). `what` names the value in the error.
pub fn js_to_json(value: &JsValue, what: &str) -> Result<crate::core::json::Value, String> {
    let text = js_sys::JSON::stringify(value)
        .map_err(|e| format!("{what} cannot be turned into JSON ({})", error_text(&e)))?
        .as_string()
        .ok_or_else(|| format!("{what} cannot be turned into JSON ({})", describe(value)))?;
    crate::core::json::from_str(&text).map_err(|e| format!("{what} is not valid JSON ({e})"))
}
