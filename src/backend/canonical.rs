//! The canonical form ([`crate::core::canonical`]) of a JS value: plain data only. A value with
//! something else in it (a `Date`, `Map`, class instance, `bigint`, `symbol`, function, sparse
//! array, typed array other than `Uint8Array`, a cycle) has none, as in the SDK's
//! `MemorySession`. A string with a lone surrogate has one, by its JSON text (the SDK compares
//! it as any string). Every read goes through [`super::js`], so a caller's value
//! (a Proxy, a getter) can be walked too: what it throws makes it unsupported.

use js_sys::{Object, Uint8Array};
use wasm_bindgen::JsValue;

use crate::core::canonical::{sort_keys, Canonical};

use super::js::{self, exact_string};

/// Deeper than this is refused rather than walked (and a cycle always is).
const MAX_DEPTH: usize = 256;

/// What a value has that plain data does not.
pub type Unsupported = &'static str;

/// The canonical form of `value`.
pub fn canonical(value: &JsValue) -> Result<String, Unsupported> {
    let prototypes = Prototypes {
        object: js::prototype_of(&Object::new()).map_err(|_| "an object")?,
        bytes: js::prototype_of(&Uint8Array::new_with_length(0)).map_err(|_| "an object")?,
    };
    let mut out = Canonical::new();
    let mut ancestors = Vec::new();
    walk(value, &prototypes, &mut ancestors, &mut out)?;
    Ok(out.finish())
}

/// The prototypes of this realm's plain objects and `Uint8Array`s.
struct Prototypes {
    object: JsValue,
    bytes: JsValue,
}

fn walk(
    value: &JsValue,
    prototypes: &Prototypes,
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
        match exact_string(value) {
            Some(Ok(s)) => out.string(&s),
            _ => {
                let json =
                    js_sys::JSON::stringify(value).map_err(|_| "a value that cannot be read")?;
                out.ill_formed(&String::from(json));
            }
        }
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
        let walked = walk_object(value, prototypes, ancestors, out);
        ancestors.pop();
        walked?;
    }
    Ok(())
}

fn walk_object(
    value: &JsValue,
    prototypes: &Prototypes,
    ancestors: &mut Vec<JsValue>,
    out: &mut Canonical,
) -> Result<(), Unsupported> {
    let unreadable = |_| "a value that cannot be read";
    if js::is_array(value).map_err(unreadable)? {
        // Told before any element is read: a sparse array's `length` may be 2^32 - 1.
        let length = js::length(value).map_err(unreadable)?;
        if js::keys(value).map_err(unreadable)?.len() != length as usize {
            return Err("a sparse array, or an array with extra properties");
        }
        if length > js::MAX_ELEMENTS {
            return Err("an array of more than 2^20 elements");
        }
        out.begin_array();
        for i in 0..length {
            let element = js::element(value, i).map_err(unreadable)?;
            walk(&element, prototypes, ancestors, out)?;
        }
        out.end_array();
        return Ok(());
    }
    let prototype = js::prototype_of(value).map_err(unreadable)?;
    if prototype == prototypes.bytes {
        let bytes = js::bytes_of(value).map_err(unreadable)?;
        if js::keys(value).map_err(unreadable)?.len() != bytes.len() {
            return Err("a Uint8Array with extra properties");
        }
        out.bytes(&bytes);
        return Ok(());
    }
    if !prototype.is_null() && prototype != prototypes.object {
        return Err("an object that is not plain (a Date, Map, class instance...)");
    }
    let mut keys = js::keys(value).map_err(unreadable)?;
    sort_keys(&mut keys);
    out.begin_object();
    for key in &keys {
        out.key(key);
        let v = js::get_named(value, key).map_err(unreadable)?;
        walk(&v, prototypes, ancestors, out)?;
    }
    out.end_object();
    Ok(())
}

/// The canonical forms of a history's items (`None` for one that has none), computed once for
/// both the `expectedItems` check and [`to_archive`].
pub fn forms(items: &[JsValue]) -> Vec<Option<String>> {
    items.iter().map(|item| canonical(item).ok()).collect()
}

/// Which of a history's old items (given by their [`forms`]) a replacement by `new` replaces (to
/// be archived): those `new` does not hold. An item the new history still holds (the turns a
/// compaction keeps, a server's compaction item kept before a summary, the user messages
/// `/responses/compact` gives back) is not replaced, so not archived again at every compaction.
/// Matched from the newest, each item of `new` standing for one of `old`. Each old item the new
/// history does not hold is compared with every new one: cheap for a compaction (few new items)
/// and an edit (few such old items); a sorted match cost 0.3 KiB in two modules.
/// Also, for each item of `new`, the old item it stands for, if any: it keeps that one's time.
pub fn to_archive(
    old: &[Option<String>],
    new: &[(JsValue, bool)],
) -> (Vec<bool>, Vec<Option<usize>>) {
    let mut left: Vec<Option<String>> = new.iter().map(|(n, _)| canonical(n).ok()).collect();
    let mut out = vec![true; old.len()];
    let mut kept = vec![None; new.len()];
    for (i, o) in old.iter().enumerate().rev() {
        let Some(o) = o else { continue };
        if let Some(j) = left.iter().rposition(|n| n.as_ref() == Some(o)) {
            left[j] = None;
            kept[j] = Some(i);
            out[i] = false;
        }
    }
    (out, kept)
}

/// [`to_archive`] of a history's old items (their [`forms`]) by `new`, where they are archived:
/// which are replaced, and which each new item stands for (it keeps that one's time). Not
/// otherwise: a rewrite that keeps nothing (sealing a history in place) would compare every old
/// item with every new one.
pub fn replaced(
    stored: &[Option<String>],
    new: &[(JsValue, bool)],
    archive: bool,
) -> (Vec<bool>, Vec<Option<usize>>) {
    match archive && !stored.is_empty() {
        true => to_archive(stored, new),
        false => Default::default(),
    }
}
