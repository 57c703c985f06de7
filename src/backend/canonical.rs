//! The canonical form ([`crate::core::canonical`]) of a JS value: plain data only. A value with
//! something else in it (a `Date`, `Map`, class instance, `bigint`, `symbol`, function, sparse
//! array, typed array other than `Uint8Array`, a cycle, a string with a lone surrogate) has none,
//! as in the SDK's `MemorySession`. Values passed here are structured-clone copies or stored
//! items, so reading them runs no caller code.

use js_sys::{Object, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};

use crate::core::canonical::{sort_keys, Canonical};

use super::js::{self, exact_string};

/// Deeper than this is refused rather than walked (and a cycle always is).
const MAX_DEPTH: usize = 256;

/// What a value has that plain data does not.
pub type Unsupported = &'static str;

/// The canonical form of `value`.
pub fn canonical(value: &JsValue) -> Result<String, Unsupported> {
    let object_prototype = js::prototype_of(&Object::new()).map_err(|_| "an object")?;
    let mut out = Canonical::new();
    let mut ancestors = Vec::new();
    walk(value, &object_prototype, &mut ancestors, &mut out)?;
    Ok(out.finish())
}

fn walk(
    value: &JsValue,
    object_prototype: &JsValue,
    ancestors: &mut Vec<JsValue>,
    out: &mut Canonical,
) -> Result<(), Unsupported> {
    if value.is_null() {
        out.null();
    } else if value.is_undefined() {
        out.undefined();
    } else if let Some(b) = value.as_bool() {
        out.bool(b);
    } else if let Some(n) = value.as_f64() {
        out.number(n);
    } else if value.is_string() {
        let s = exact_string(value)
            .and_then(Result::ok)
            .ok_or("a string with a lone surrogate")?;
        out.string(&s);
    } else if !value.is_object() || value.is_function() {
        return Err("a bigint, symbol or function");
    } else {
        if ancestors.len() >= MAX_DEPTH {
            return Err("nesting deeper than 256 levels");
        }
        if ancestors.iter().any(|a| a == value) {
            return Err("a cycle");
        }
        ancestors.push(value.clone());
        let walked = walk_object(value, object_prototype, ancestors, out);
        ancestors.pop();
        walked?;
    }
    Ok(())
}

fn walk_object(
    value: &JsValue,
    object_prototype: &JsValue,
    ancestors: &mut Vec<JsValue>,
    out: &mut Canonical,
) -> Result<(), Unsupported> {
    let unreadable = |_| "a value that cannot be read";
    if js::is_array(value).map_err(unreadable)? {
        let elements = js::elements(value).map_err(unreadable)?;
        if js::keys(value).map_err(unreadable)?.len() != elements.len() {
            return Err("a sparse array, or an array with extra properties");
        }
        out.begin_array();
        for element in &elements {
            walk(element, object_prototype, ancestors, out)?;
        }
        out.end_array();
        return Ok(());
    }
    let prototype = js::prototype_of(value).map_err(unreadable)?;
    if let Some(bytes) = value.dyn_ref::<Uint8Array>() {
        if js::keys(value).map_err(unreadable)?.len() != bytes.length() as usize {
            return Err("a Uint8Array with extra properties");
        }
        out.bytes(&bytes.to_vec());
        return Ok(());
    }
    if !prototype.is_null() && prototype != *object_prototype {
        return Err("an object that is not plain (a Date, Map, class instance...)");
    }
    let mut keys = js::keys(value).map_err(unreadable)?;
    sort_keys(&mut keys);
    out.begin_object();
    for key in &keys {
        out.key(key);
        let v = js::get(value, key).map_err(unreadable)?;
        walk(&v, object_prototype, ancestors, out)?;
    }
    out.end_object();
    Ok(())
}
