//! JSON values for the runner's wire formats and saved run states: what it sends to the model API
//! and reads back, and the items it stores. Written here instead of taken from `serde_json`,
//! whose parser, serialiser, `BTreeMap` and generic `serde` machinery were a tenth of the
//! runner's module; this does only what the runner needs.
//!
//! - A number keeps the text it was read as (`1.0` stays `1.0`, `1e400` stays `1e400`), and
//!   one made here is an integer: the runner never computes a fraction it sends (the model
//!   settings' `temperature` and `topP` come from JavaScript as text, through `String(n)`).
//! - An object's keys are kept in byte order, as `serde_json`'s map keeps them, so what is
//!   written is the same text it wrote.
//! - Reading is strict RFC 8259 JSON, nested at most 127 deep, as `serde_json` reads it, but
//!   for one thing: a number too large for a float (`1e400`) is kept as written, as the
//!   browser's `JSON.parse` takes it, where `serde_json` refused the whole text.

use std::fmt;
use std::ops::Index;

use super::{canonical, sort};

/// A JSON value.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Value>),
    Object(Map),
}

/// A JSON number, as its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Number(String);

/// A JSON object: its members in byte order of their keys, each key once.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Map(Vec<(String, Value)>);

static NULL: Value = Value::Null;

impl Number {
    /// `text` as a number, if it is one by JSON's grammar (`String(n)` of a finite JS number
    /// is; `NaN` and `Infinity` are not).
    pub fn from_text(text: &str) -> Option<Number> {
        let mut reader = Reader::new(text);
        let n = reader.number().ok()?;
        (reader.at == text.len()).then_some(n)
    }

    /// The value, if it is a whole number from 0 to `u64::MAX` written without a fraction or
    /// an exponent (as `serde_json` reads one).
    pub fn as_u64(&self) -> Option<u64> {
        digits(self.0.as_bytes())
    }

    /// The value, if it is a whole number within `i64` written without a fraction or an
    /// exponent.
    pub fn as_i64(&self) -> Option<i64> {
        match self.0.as_bytes().split_first() {
            // `-0` is not one: `serde_json` reads it as the float -0.0.
            Some((b'-', rest)) => match digits(rest)? {
                0 => None,
                0x8000_0000_0000_0000 => Some(i64::MIN),
                n => i64::try_from(n).ok().map(|n| -n),
            },
            _ => i64::try_from(self.as_u64()?).ok(),
        }
    }

    /// The value as a float: the nearest one for a whole number within 64 bits and for up to
    /// 15 significant digits with an exponent up to 22; beyond that it may differ from the
    /// nearest in the last bits.
    pub fn as_f64(&self) -> Option<f64> {
        if let Some(n) = self.as_u64() {
            return Some(n as f64);
        }
        match self.as_i64() {
            Some(n) => Some(n as f64),
            None => decimal(&self.0),
        }
    }

    pub fn is_u64(&self) -> bool {
        self.as_u64().is_some()
    }

    pub fn is_i64(&self) -> bool {
        self.as_i64().is_some()
    }

    /// The number's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Base-10 digits as a `u64`: none, a sign, or a leading zero before more digits is not one.
fn digits(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() || (bytes.len() > 1 && bytes[0] == b'0') {
        return None;
    }
    bytes
        .iter()
        .try_fold(0u64, |n, &b| match b.is_ascii_digit() {
            true => n.checked_mul(10)?.checked_add(u64::from(b - b'0')),
            false => None,
        })
}

/// A decimal number as `str::parse::<f64>` reads one (`3`, `1.5`, `+2`, `.5`, `3.`, `-0`,
/// `1e3`; not `inf` or `NaN`). Written here because the standard library's float parser brings a
/// 10 KiB table into the module. The same value as `parse` for up to 15 significant digits and
/// exponents up to 22 (one exact multiplication or division); beyond that it may differ in the
/// last bits (the first 19 significant digits are kept, and the exponent applied in steps).
pub fn decimal(s: &str) -> Option<f64> {
    let (negative, s) = sign(s);
    let (number, exponent) = match s.split_once(['e', 'E']) {
        Some((number, e)) => (number, whole_exponent(e)?),
        None => (s, 0),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let (mut mantissa, mut kept, mut scale) = (0u64, 0, i64::from(exponent));
    for (digit, in_fraction) in whole
        .bytes()
        .map(|d| (d, false))
        .chain(fraction.bytes().map(|d| (d, true)))
    {
        if !digit.is_ascii_digit() {
            return None;
        }
        match kept < 19 {
            true => {
                if mantissa != 0 || digit != b'0' {
                    mantissa = mantissa * 10 + u64::from(digit - b'0');
                    kept += 1;
                }
                scale -= i64::from(in_fraction);
            }
            // A digit past the nineteenth only moves the point.
            false => scale += i64::from(!in_fraction),
        }
    }
    let mut value = mantissa as f64;
    // 10^n is exact as a float up to n = 22: the exponent goes in steps of at most that.
    while scale != 0 && value != 0.0 && value.is_finite() {
        let step = scale.unsigned_abs().min(22);
        let power = (0..step).fold(1.0f64, |p, _| p * 10.0);
        match scale > 0 {
            true => value *= power,
            false => value /= power,
        }
        scale -= scale.signum() * step as i64;
    }
    Some(if negative { -value } else { value })
}

/// A leading `-` or `+` taken off: whether it was `-`, and the rest. (No slicing by index: that
/// would bring the slicing panic's message formatting into the module.)
fn sign(s: &str) -> (bool, &str) {
    match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    }
}

/// An exponent's digits, with an optional sign; saturates instead of overflowing.
fn whole_exponent(s: &str) -> Option<i32> {
    let (negative, digits) = sign(s);
    if digits.is_empty() {
        return None;
    }
    let mut n: i32 = 0;
    for digit in digits.bytes() {
        if !digit.is_ascii_digit() {
            return None;
        }
        n = n.saturating_mul(10).saturating_add(i32::from(digit - b'0'));
    }
    Some(if negative { -n } else { n })
}

impl Map {
    pub fn new() -> Map {
        Map(Vec::new())
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.find(key).ok().map(|i| &self.0[i].1)
    }

    /// The members in the order they were read, a key given twice keeping its last value: sorted
    /// once (not inserted one at a time, which a large object with its keys in reverse order
    /// would make quadratic).
    fn of_members(members: Vec<(String, Value)>) -> Map {
        if members.windows(2).all(|w| w[0].0 < w[1].0) {
            return Map(members);
        }
        let mut order: Vec<usize> = (0..members.len()).collect();
        sort::sort_by(&mut order, |&a, &b| {
            members[a].0.cmp(&members[b].0).then(a.cmp(&b))
        });
        let mut slots: Vec<Option<(String, Value)>> = members.into_iter().map(Some).collect();
        let mut sorted: Vec<(String, Value)> = Vec::with_capacity(slots.len());
        for i in order {
            let Some(member) = slots.get_mut(i).and_then(Option::take) else {
                continue;
            };
            match sorted.last_mut() {
                Some(last) if last.0 == member.0 => *last = member,
                _ => sorted.push(member),
            }
        }
        Map(sorted)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.find(key).ok().map(|i| &mut self.0[i].1)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Sets `key` to `value`; the value it had before, if any.
    pub fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                self.0.insert(i, (key, value));
                None
            }
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.find(key).ok().map(|i| self.0.remove(i).1)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The members, in byte order of their keys.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&String, &Value)> + ExactSizeIterator {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator {
        self.0.iter().map(|(k, _)| k)
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&String, &mut Value) -> bool) {
        self.0.retain_mut(|(k, v)| keep(k, v));
    }
}

impl<'a> IntoIterator for &'a Map {
    type Item = (&'a String, &'a Value);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, Value)>,
        fn(&'a (String, Value)) -> (&'a String, &'a Value),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl IntoIterator for Map {
    type Item = (String, Value);
    type IntoIter = std::vec::IntoIter<(String, Value)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl Extend<(String, Value)> for Map {
    fn extend<I: IntoIterator<Item = (String, Value)>>(&mut self, members: I) {
        for (k, v) in members {
            self.insert(k, v);
        }
    }
}

impl FromIterator<(String, Value)> for Map {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(members: I) -> Map {
        let mut map = Map::new();
        map.extend(members);
        map
    }
}

/// What `Value::get` and indexing accept: a key of an object or a position in an array.
pub trait Key {
    fn find_in<'v>(&self, value: &'v Value) -> Option<&'v Value>;
    fn find_mut_in<'v>(&self, value: &'v mut Value) -> Option<&'v mut Value>;
    /// For tests' `value["key"] = …`: the member, added as `null` if missing (a `null` value
    /// becoming an object); panics on any other value, or an array index out of range.
    #[cfg(test)]
    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value;
}

impl Key for str {
    fn find_in<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        value.as_object()?.get(self)
    }
    fn find_mut_in<'v>(&self, value: &'v mut Value) -> Option<&'v mut Value> {
        value.as_object_mut()?.get_mut(self)
    }
    #[cfg(test)]
    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value {
        if value.is_null() {
            *value = Value::Object(Map::new());
        }
        let map = value.as_object_mut().expect("an object");
        if !map.contains_key(self) {
            map.insert(self.into(), Value::Null);
        }
        map.get_mut(self).expect("just inserted")
    }
}

impl Key for String {
    fn find_in<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        self.as_str().find_in(value)
    }
    fn find_mut_in<'v>(&self, value: &'v mut Value) -> Option<&'v mut Value> {
        self.as_str().find_mut_in(value)
    }
    #[cfg(test)]
    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value {
        self.as_str().index_or_insert(value)
    }
}

impl Key for usize {
    fn find_in<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        value.as_array()?.get(*self)
    }
    fn find_mut_in<'v>(&self, value: &'v mut Value) -> Option<&'v mut Value> {
        value.as_array_mut()?.get_mut(*self)
    }
    #[cfg(test)]
    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value {
        self.find_mut_in(value).expect("an element of an array")
    }
}

impl<K: Key + ?Sized> Key for &K {
    fn find_in<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        (**self).find_in(value)
    }
    fn find_mut_in<'v>(&self, value: &'v mut Value) -> Option<&'v mut Value> {
        (**self).find_mut_in(value)
    }
    #[cfg(test)]
    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value {
        (**self).index_or_insert(value)
    }
}

impl Value {
    /// The member `key` of an object or the element at `key` of an array.
    pub fn get<K: Key>(&self, key: K) -> Option<&Value> {
        key.find_in(self)
    }

    pub fn get_mut<K: Key>(&mut self, key: K) -> Option<&mut Value> {
        key.find_mut_in(self)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_array_mut(&mut self) -> Option<&mut Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_object_mut(&mut self) -> Option<&mut Map> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_number(&self) -> Option<&Number> {
        match self {
            Value::Number(n) => Some(n),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        self.as_number()?.as_u64()
    }

    pub fn as_i64(&self) -> Option<i64> {
        self.as_number()?.as_i64()
    }

    pub fn as_f64(&self) -> Option<f64> {
        self.as_number()?.as_f64()
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn is_boolean(&self) -> bool {
        matches!(self, Value::Bool(_))
    }

    pub fn is_number(&self) -> bool {
        matches!(self, Value::Number(_))
    }

    pub fn is_string(&self) -> bool {
        matches!(self, Value::String(_))
    }

    pub fn is_array(&self) -> bool {
        matches!(self, Value::Array(_))
    }

    pub fn is_object(&self) -> bool {
        matches!(self, Value::Object(_))
    }

    pub fn is_u64(&self) -> bool {
        self.as_u64().is_some()
    }

    pub fn is_i64(&self) -> bool {
        self.as_i64().is_some()
    }

    /// The value at JSON pointer `pointer` (RFC 6901: `/`-separated tokens, `~1` for `/` and
    /// `~0` for `~`, an array's elements by index without leading zeros), as `serde_json` finds
    /// it; the whole value for `""`.
    pub fn pointer(&self, pointer: &str) -> Option<&Value> {
        if pointer.is_empty() {
            return Some(self);
        }
        let mut tokens = pointer.split('/');
        if tokens.next() != Some("") {
            return None;
        }
        tokens.try_fold(self, |value, token| {
            let mut key = String::with_capacity(token.len());
            let mut chars = token.chars();
            while let Some(c) = chars.next() {
                key.push(match c {
                    '~' => match chars.next() {
                        Some('1') => '/',
                        Some('0') => '~',
                        _ => return None,
                    },
                    c => c,
                });
            }
            match value {
                Value::Object(map) => map.get(&key),
                Value::Array(list) => list.get(usize::try_from(digits(key.as_bytes())?).ok()?),
                _ => None,
            }
        })
    }

    /// The value, leaving `null` in its place.
    pub fn take(&mut self) -> Value {
        std::mem::take(self)
    }
}

impl<K: Key> Index<K> for Value {
    type Output = Value;
    /// The member or element, or `null` when there is none (never panics).
    fn index(&self, key: K) -> &Value {
        key.find_in(self).unwrap_or(&NULL)
    }
}

#[cfg(test)]
impl<K: Key> std::ops::IndexMut<K> for Value {
    fn index_mut(&mut self, key: K) -> &mut Value {
        key.index_or_insert(self)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.into())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}

impl From<&String> for Value {
    fn from(s: &String) -> Value {
        Value::String(s.clone())
    }
}

impl From<&Value> for Value {
    fn from(v: &Value) -> Value {
        v.clone()
    }
}

impl From<Vec<Value>> for Value {
    fn from(a: Vec<Value>) -> Value {
        Value::Array(a)
    }
}

impl From<Map> for Value {
    fn from(o: Map) -> Value {
        Value::Object(o)
    }
}

impl From<Number> for Value {
    fn from(n: Number) -> Value {
        Value::Number(n)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

impl From<u64> for Number {
    fn from(n: u64) -> Number {
        let mut text = String::new();
        canonical::push_decimal(&mut text, n);
        Number(text)
    }
}

impl From<i64> for Number {
    fn from(n: i64) -> Number {
        let mut text = String::from(if n < 0 { "-" } else { "" });
        canonical::push_decimal(&mut text, n.unsigned_abs());
        Number(text)
    }
}

macro_rules! integers_into_values {
    ($($t:ty => $via:ty),*) => {$(
        impl From<$t> for Value {
            fn from(n: $t) -> Value {
                Value::Number(Number::from(<$via>::from(n)))
            }
        }
    )*};
}
integers_into_values!(u8 => u64, u16 => u64, u32 => u64, u64 => u64, i32 => i64, i64 => i64);

impl From<usize> for Value {
    fn from(n: usize) -> Value {
        Value::Number(Number::from(n as u64))
    }
}

/// A float written as Rust writes it (`1.5`, `1.0`), for tests: the library itself never makes
/// a fraction (see the module's notes).
#[cfg(test)]
impl From<f64> for Value {
    fn from(f: f64) -> Value {
        Value::Number(Number(format!("{f:?}")))
    }
}

/// What `json!` takes as a value: anything with a JSON form, by reference (it copies, and
/// never moves what it is given).
pub trait ToJson {
    fn to_json(&self) -> Value;
}

impl ToJson for Value {
    fn to_json(&self) -> Value {
        self.clone()
    }
}

impl ToJson for str {
    fn to_json(&self) -> Value {
        Value::String(self.into())
    }
}

impl ToJson for String {
    fn to_json(&self) -> Value {
        Value::String(self.clone())
    }
}

impl ToJson for bool {
    fn to_json(&self) -> Value {
        Value::Bool(*self)
    }
}

impl ToJson for Map {
    fn to_json(&self) -> Value {
        Value::Object(self.clone())
    }
}

impl ToJson for Number {
    fn to_json(&self) -> Value {
        Value::Number(self.clone())
    }
}

impl<T: ToJson> ToJson for [T] {
    fn to_json(&self) -> Value {
        Value::Array(self.iter().map(ToJson::to_json).collect())
    }
}

impl<T: ToJson> ToJson for Vec<T> {
    fn to_json(&self) -> Value {
        self.as_slice().to_json()
    }
}

impl<T: ToJson> ToJson for Option<T> {
    fn to_json(&self) -> Value {
        self.as_ref().map_or(Value::Null, ToJson::to_json)
    }
}

impl<T: ToJson + ?Sized> ToJson for &T {
    fn to_json(&self) -> Value {
        (**self).to_json()
    }
}

macro_rules! integers_to_json {
    ($($t:ty),*) => {$(
        impl ToJson for $t {
            fn to_json(&self) -> Value {
                Value::from(*self)
            }
        }
    )*};
}
integers_to_json!(u8, u16, u32, u64, usize, i32, i64);

#[cfg(test)]
impl ToJson for f64 {
    fn to_json(&self) -> Value {
        Value::from(*self)
    }
}

impl PartialEq<str> for Value {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == Some(other)
    }
}

impl PartialEq<&str> for Value {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == Some(*other)
    }
}

impl PartialEq<String> for Value {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == Some(other.as_str())
    }
}

impl PartialEq<bool> for Value {
    fn eq(&self, other: &bool) -> bool {
        self.as_bool() == Some(*other)
    }
}

impl PartialEq<i64> for Value {
    fn eq(&self, other: &i64) -> bool {
        self.as_i64() == Some(*other)
    }
}

impl PartialEq<i32> for Value {
    fn eq(&self, other: &i32) -> bool {
        self.as_i64() == Some(i64::from(*other))
    }
}

impl PartialEq<u64> for Value {
    fn eq(&self, other: &u64) -> bool {
        self.as_u64() == Some(*other)
    }
}

impl PartialEq<f64> for Value {
    fn eq(&self, other: &f64) -> bool {
        self.as_f64() == Some(*other)
    }
}

/// The value as compact JSON text.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&to_string(self))
    }
}

/// `value` as compact JSON text: no spaces, object members in byte order of their keys,
/// strings with `"`, `\` and control characters escaped and everything else as it is.
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write(&mut out, value);
    out
}

/// Appends `value` as compact JSON text to `out`.
pub fn write(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => out.push_str(&n.0),
        Value::String(s) => write_string(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, v) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(out, v);
            }
            out.push(']');
        }
        Value::Object(o) => {
            out.push('{');
            for (i, (k, v)) in o.0.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write(out, v);
            }
            out.push('}');
        }
    }
}

/// `s` as a JSON string.
pub fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        push_escaped(out, c);
    }
    out.push('"');
}

/// `c` as it is written inside a JSON string: `"`, `\` and control characters below U+0020
/// escaped (the short forms where JSON has one), everything else as it is.
pub fn push_escaped(out: &mut String, c: char) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        c if u32::from(c) < 0x20 => {
            out.push_str("\\u00");
            canonical::push_hex(out, u64::from(c), 2);
        }
        c => out.push(c),
    }
}

/// Why a text is not JSON, and where: `expected value at line 1 column 1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    what: &'static str,
    line: usize,
    column: usize,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at line {} column {}",
            self.what, self.line, self.column
        )
    }
}

/// How deep arrays and objects may nest in a text that is read.
const MAX_DEPTH: usize = 127;

/// `text` as one JSON value (whitespace around it allowed, nothing else).
pub fn from_str(text: &str) -> Result<Value, Error> {
    let mut reader = Reader::new(text);
    let value = reader.value(0)?;
    reader.skip_space();
    match reader.at == reader.bytes.len() {
        true => Ok(value),
        false => Err(reader.error("trailing characters")),
    }
}

struct Reader<'t> {
    bytes: &'t [u8],
    at: usize,
}

impl<'t> Reader<'t> {
    fn new(text: &'t str) -> Reader<'t> {
        Reader {
            bytes: text.as_bytes(),
            at: 0,
        }
    }

    /// An error at the current position (lines and columns count from 1; columns in bytes).
    fn error(&self, what: &'static str) -> Error {
        let before = &self.bytes[..self.at.min(self.bytes.len())];
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        let column = 1 + before.iter().rev().take_while(|&&b| b != b'\n').count();
        Error { what, line, column }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Consumes `word` (after its first byte, already seen).
    fn word(&mut self, word: &[u8], value: Value) -> Result<Value, Error> {
        match self.bytes.get(self.at..self.at + word.len()) {
            Some(w) if w == word => {
                self.at += word.len();
                Ok(value)
            }
            _ => Err(self.error("expected value")),
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, Error> {
        self.skip_space();
        match self.peek() {
            None => Err(self.error("EOF while parsing a value")),
            Some(b'n') => self.word(b"null", Value::Null),
            Some(b't') => self.word(b"true", Value::Bool(true)),
            Some(b'f') => self.word(b"false", Value::Bool(false)),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b'-' | b'0'..=b'9') => Ok(Value::Number(self.number()?)),
            Some(b'[') => self.array(depth + 1),
            Some(b'{') => self.object(depth + 1),
            Some(_) => Err(self.error("expected value")),
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, Error> {
        if depth > MAX_DEPTH {
            return Err(self.error("recursion limit exceeded"));
        }
        self.at += 1;
        let mut items = Vec::new();
        self.skip_space();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value(depth)?);
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Value::Array(items));
                }
                None => return Err(self.error("EOF while parsing a list")),
                Some(_) => return Err(self.error("expected `,` or `]`")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, Error> {
        if depth > MAX_DEPTH {
            return Err(self.error("recursion limit exceeded"));
        }
        self.at += 1;
        let mut members = Vec::new();
        self.skip_space();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(Value::Object(Map(members)));
        }
        loop {
            self.skip_space();
            match self.peek() {
                Some(b'"') => {}
                None => return Err(self.error("EOF while parsing an object")),
                Some(_) => return Err(self.error("key must be a string")),
            }
            let key = self.string()?;
            self.skip_space();
            match self.peek() {
                Some(b':') => self.at += 1,
                None => return Err(self.error("EOF while parsing an object")),
                Some(_) => return Err(self.error("expected `:`")),
            }
            let value = self.value(depth)?;
            members.push((key, value));
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Value::Object(Map::of_members(members)));
                }
                None => return Err(self.error("EOF while parsing an object")),
                Some(_) => return Err(self.error("expected `,` or `}`")),
            }
        }
    }

    /// A string, from its opening quote.
    fn string(&mut self) -> Result<String, Error> {
        self.at += 1;
        let mut out = Vec::new();
        loop {
            let start = self.at;
            while matches!(self.peek(), Some(b) if b != b'"' && b != b'\\' && b >= 0x20) {
                self.at += 1;
            }
            out.extend_from_slice(&self.bytes[start..self.at]);
            match self.peek() {
                None => return Err(self.error("EOF while parsing a string")),
                Some(b'"') => {
                    self.at += 1;
                    // Only ever split at ASCII bytes of a `str`: always UTF-8.
                    return String::from_utf8(out).map_err(|_| self.error("invalid unicode"));
                }
                Some(b'\\') => {
                    self.at += 1;
                    let c = self.escape()?;
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                Some(_) => {
                    return Err(self
                        .error("control character (\\u0000-\\u001F) found while parsing a string"))
                }
            }
        }
    }

    /// The character an escape stands for, from after its backslash.
    fn escape(&mut self) -> Result<char, Error> {
        let Some(b) = self.peek() else {
            return Err(self.error("EOF while parsing a string"));
        };
        self.at += 1;
        Ok(match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                // A surrogate without its other half (JSON.parse takes it: a text sliced by UTF-16
                // units, an emoji split across two stream events) is U+FFFD, as a lossy UTF-16
                // decoding makes it, not an error failing a whole model call or tool output.
                let first = self.hex4()?;
                let code = match first {
                    0xD800..=0xDBFF => {
                        let after = self.at;
                        let second = match self.bytes.get(self.at..self.at + 2) {
                            Some(b"\\u") => {
                                self.at += 2;
                                self.hex4().ok()
                            }
                            _ => None,
                        };
                        match second {
                            Some(low @ 0xDC00..=0xDFFF) => {
                                0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00)
                            }
                            _ => {
                                self.at = after;
                                0xFFFD
                            }
                        }
                    }
                    0xDC00..=0xDFFF => 0xFFFD,
                    c => c,
                };
                char::from_u32(code).ok_or_else(|| self.error("invalid unicode code point"))?
            }
            _ => return Err(self.error("invalid escape")),
        })
    }

    fn hex4(&mut self) -> Result<u32, Error> {
        let mut code = 0;
        for _ in 0..4 {
            let digit = match self.peek() {
                Some(b @ b'0'..=b'9') => b - b'0',
                Some(b @ b'a'..=b'f') => b - b'a' + 10,
                Some(b @ b'A'..=b'F') => b - b'A' + 10,
                None => return Err(self.error("EOF while parsing a string")),
                Some(_) => return Err(self.error("invalid escape")),
            };
            code = code * 16 + u32::from(digit);
            self.at += 1;
        }
        Ok(code)
    }

    /// A number: `-`?, `0` or digits not starting with `0`, then `.` and digits, then `e` or
    /// `E`, a sign and digits, each part but the first optional.
    fn number(&mut self) -> Result<Number, Error> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek() {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.error("invalid number")),
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("invalid number"));
            }
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("invalid number"));
            }
            self.digits();
        }
        let text = self.bytes[start..self.at].iter().map(|&b| char::from(b));
        Ok(Number(text.collect()))
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
    }
}

/// A JSON value written in place: `json!({"type": "message", "content": [part, null]})`. Keys
/// are string literals, constants or `(expressions)`; values are `null`, arrays, objects or any
/// expression with a JSON form (`ToJson`, taken by reference). Each member or element is one
/// level of the compiler's macro recursion: past about 60 members in one object (120 elements in
/// one array), build it with `Map` instead.
macro_rules! json {
    (@array $v:ident) => {};
    (@array $v:ident null $(, $($rest:tt)*)?) => {
        $v.push($crate::core::json::Value::Null);
        $crate::core::json::json!(@array $v $($($rest)*)?);
    };
    (@array $v:ident [$($inner:tt)*] $(, $($rest:tt)*)?) => {
        $v.push($crate::core::json::json!([$($inner)*]));
        $crate::core::json::json!(@array $v $($($rest)*)?);
    };
    (@array $v:ident {$($inner:tt)*} $(, $($rest:tt)*)?) => {
        $v.push($crate::core::json::json!({$($inner)*}));
        $crate::core::json::json!(@array $v $($($rest)*)?);
    };
    (@array $v:ident $value:expr $(, $($rest:tt)*)?) => {
        $v.push($crate::core::json::ToJson::to_json(&$value));
        $crate::core::json::json!(@array $v $($($rest)*)?);
    };
    (@object $m:ident) => {};
    (@object $m:ident $key:literal : $($rest:tt)*) => {
        $crate::core::json::json!(@member $m ($key) $($rest)*);
    };
    (@object $m:ident $key:ident : $($rest:tt)*) => {
        $crate::core::json::json!(@member $m ($key) $($rest)*);
    };
    (@object $m:ident ($key:expr) : $($rest:tt)*) => {
        $crate::core::json::json!(@member $m ($key) $($rest)*);
    };
    (@member $m:ident ($key:expr) null $(, $($rest:tt)*)?) => {
        $m.insert(::std::string::String::from($key), $crate::core::json::Value::Null);
        $crate::core::json::json!(@object $m $($($rest)*)?);
    };
    (@member $m:ident ($key:expr) [$($inner:tt)*] $(, $($rest:tt)*)?) => {
        $m.insert(::std::string::String::from($key), $crate::core::json::json!([$($inner)*]));
        $crate::core::json::json!(@object $m $($($rest)*)?);
    };
    (@member $m:ident ($key:expr) {$($inner:tt)*} $(, $($rest:tt)*)?) => {
        $m.insert(::std::string::String::from($key), $crate::core::json::json!({$($inner)*}));
        $crate::core::json::json!(@object $m $($($rest)*)?);
    };
    (@member $m:ident ($key:expr) $value:expr $(, $($rest:tt)*)?) => {
        $m.insert(::std::string::String::from($key), $crate::core::json::ToJson::to_json(&$value));
        $crate::core::json::json!(@object $m $($($rest)*)?);
    };
    (null) => {
        $crate::core::json::Value::Null
    };
    ([$($inner:tt)*]) => {{
        let mut items = ::std::vec::Vec::new();
        #[allow(unused_variables)]
        let v = &mut items;
        $crate::core::json::json!(@array v $($inner)*);
        $crate::core::json::Value::Array(items)
    }};
    ({$($inner:tt)*}) => {{
        #[allow(unused_mut)]
        let mut m = $crate::core::json::Map::new();
        $crate::core::json::json!(@object m $($inner)*);
        $crate::core::json::Value::Object(m)
    }};
    ($value:expr) => {
        $crate::core::json::ToJson::to_json(&$value)
    };
}
pub(crate) use json;

/// For tests that compare with what `serde` derives: a `Value` goes through its text.
#[cfg(test)]
impl serde::Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let value: serde_json::Value =
            serde_json::from_str(&to_string(self)).map_err(serde::ser::Error::custom)?;
        value.serialize(s)
    }
}

#[cfg(test)]
impl<'de> serde::Deserialize<'de> for Value {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        from_str(&value.to_string()).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Texts `serde_json` reads: ours reads each to the value it writes back as the same text
    /// (numbers aside, which `serde_json` normalises and this keeps as written).
    const VALID: &[&str] = &[
        "null",
        "true",
        " false ",
        "0",
        "-0",
        "12345678901234567890",
        "-9223372036854775808",
        "1.5",
        "1e3",
        "1E-3",
        "-0.25e+2",
        "\"\"",
        "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"",
        "\"\\u0000\\u001f\\u00e9\\u20ac\\ud83d\\ude00\"",
        "\"é€😀 plain\"",
        "[]",
        "[1,[2,[3,{}]],\"x\",null,true]",
        "{}",
        "{\"b\":1,\"a\":{\"d\":[],\"c\":\"\"},\"\":null}",
        "{\"k\":1,\"k\":2}",
        " \t\r\n[ 1 , 2 ]\n",
        "{\"z\":1,\"Z\":2,\"é\":3,\"a\":4,\"aa\":5,\"a0\":6}",
    ];

    /// Texts `serde_json` refuses.
    const INVALID: &[&str] = &[
        "",
        " ",
        "nul",
        "nulls",
        "True",
        "01",
        "-",
        "1.",
        ".5",
        "1e",
        "1e+",
        "+1",
        "0x10",
        "NaN",
        "Infinity",
        "\"abc",
        "\"a\nb\"",
        "\"\\x\"",
        "\"\\u12\"",
        "[1,]",
        "[1 2]",
        "[",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{a:1}",
        "{\"a\":1",
        "{1:2}",
        "1 2",
        "[]]",
    ];

    #[test]
    fn a_lone_surrogate_escape_reads_as_the_replacement_character_as_json_parse_keeps_it() {
        for (text, read) in [
            ("\"Hi \\ud83d\"", "Hi \u{FFFD}"),
            ("\"\\ude00!\"", "\u{FFFD}!"),
            ("\"\\ud83d\\u0041\"", "\u{FFFD}A"),
            ("\"\\ud83d\\ud83d\\ude00\"", "\u{FFFD}\u{1F600}"),
            ("\"\\ud83d\\n\"", "\u{FFFD}\n"),
        ] {
            assert_eq!(
                from_str(text).unwrap(),
                Value::String(read.into()),
                "{text}"
            );
        }
        // (A bad escape after it is still refused.)
        assert!(from_str("\"\\ud83d\\uZZZZ\"").is_err());
    }

    #[test]
    fn reads_what_serde_json_reads_and_writes_what_it_writes() {
        for text in VALID {
            let theirs: serde_json::Value = serde_json::from_str(text).expect(text);
            let ours = from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let numbers_kept = !text.contains(['.', 'e', 'E']) && *text != "-0";
            if numbers_kept {
                assert_eq!(to_string(&ours), theirs.to_string(), "{text}");
            }
            // What either writes, ours reads back to the same value.
            assert_eq!(from_str(&to_string(&ours)).as_ref(), Ok(&ours), "{text}");
            assert!(from_str(&theirs.to_string()).is_ok(), "{text}");
        }
    }

    #[test]
    fn refuses_what_serde_json_refuses() {
        for text in INVALID {
            assert!(
                serde_json::from_str::<serde_json::Value>(text).is_err(),
                "{text}"
            );
            assert!(from_str(text).is_err(), "{text:?} was read");
        }
    }

    #[test]
    fn keeps_numbers_as_written() {
        for text in [
            "1.0",
            "1e400",
            "-0",
            "0.10",
            "1E+2",
            "123456789012345678901234567890",
        ] {
            assert_eq!(to_string(&from_str(text).unwrap()), *text);
        }
        let n = |t: &str| Number::from_text(t).unwrap();
        assert_eq!(n("18446744073709551615").as_u64(), Some(u64::MAX));
        assert_eq!(n("18446744073709551616").as_u64(), None);
        assert_eq!(n("-9223372036854775808").as_i64(), Some(i64::MIN));
        assert_eq!(n("-9223372036854775809").as_i64(), None);
        assert_eq!(n("1.0").as_u64(), None);
        assert_eq!(n("1e2").as_u64(), None);
        assert_eq!(n("1e2").as_f64(), Some(100.0));
        assert_eq!(n("-2.5E-1").as_f64(), Some(-0.25));
        assert_eq!(n("-7").as_i64(), Some(-7));
        assert_eq!(n("-7").as_u64(), None);
        for bad in ["", "NaN", "Infinity", "-Infinity", "1e+", "01", " 1", "1 "] {
            assert_eq!(Number::from_text(bad), None, "{bad}");
        }
        assert_eq!(
            Number::from_text("1e+21").map(|n| n.0),
            Some("1e+21".into())
        );
        assert_eq!(to_string(&Value::from(u64::MAX)), "18446744073709551615");
        assert_eq!(to_string(&Value::from(i64::MIN)), "-9223372036854775808");
        assert_eq!(to_string(&Value::from(0u32)), "0");
        assert_eq!(to_string(&Value::from(-12i32)), "-12");
    }

    #[test]
    fn numbers_read_as_floats_as_serde_json_reads_them() {
        let exact = [
            "0",
            "-0",
            "0e400",
            "-0.0e-999",
            "1",
            "-7",
            "1.5",
            "0.001",
            "1e22",
            "1e-22",
            "123456789012345",
            "123456789012345e-10",
            "9007199254740993",
            "18446744073709551615",
            "-9223372036854775808",
            "123456789012345678",
            "0.1",
            "2.5E-1",
        ];
        for text in exact {
            let theirs: serde_json::Value = serde_json::from_str(text).unwrap();
            let ours = Number::from_text(text).and_then(|n| n.as_f64());
            assert_eq!(
                ours.map(f64::to_bits),
                theirs.as_f64().map(f64::to_bits),
                "{text}"
            );
        }
        // Beyond 15 significant digits or an exponent of 22: within a few units of the last bit.
        let close = [
            "1.7976931348623157e307",
            "2.2250738585072014e-308",
            "3.141592653589793238462643383279",
            "0.30000000000000004",
            "1e300",
            "1e-300",
            "123e-320",
        ];
        let long = format!("1{}e-300", "0".repeat(312));
        for text in close.iter().copied().chain([long.as_str()]) {
            let parsed: f64 = text.parse().unwrap();
            let ours = Number::from_text(text).and_then(|n| n.as_f64()).unwrap();
            assert!(
                ((ours - parsed) / parsed).abs() < 1e-14,
                "{text}: {ours} vs {parsed}"
            );
        }
        assert_eq!(
            Number::from_text("1e400").and_then(|n| n.as_f64()),
            Some(f64::INFINITY)
        );
        assert_eq!(Number::from_text("-0").and_then(|n| n.as_i64()), None);
        assert_eq!(Number::from_text("0").and_then(|n| n.as_i64()), Some(0));
    }

    #[test]
    fn objects_read_in_any_order_keep_the_last_of_a_repeated_key() {
        let v = from_str(r#"{"c":1,"b":2,"a":3,"b":4,"c":5,"d":6}"#).unwrap();
        assert_eq!(to_string(&v), r#"{"a":3,"b":4,"c":5,"d":6}"#);
        let keys: Vec<String> = (0..5000).rev().map(|i| format!("k{i:05}")).collect();
        let text = format!(
            "{{{}}}",
            keys.iter()
                .map(|k| format!("\"{k}\":1"))
                .collect::<Vec<_>>()
                .join(",")
        );
        let read = from_str(&text).unwrap();
        let theirs: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(to_string(&read), theirs.to_string());
    }

    #[test]
    fn escapes_as_serde_json_does() {
        let text: String = (0u32..0x80)
            .filter_map(char::from_u32)
            .chain("é€😀\u{2028}".chars())
            .collect();
        let ours = to_string(&Value::String(text.clone()));
        assert_eq!(ours, serde_json::Value::String(text.clone()).to_string());
        assert_eq!(from_str(&ours), Ok(Value::String(text)));
    }

    #[test]
    fn nests_at_most_127_deep() {
        let deep = |n: usize| "[".repeat(n) + &"]".repeat(n);
        assert!(from_str(&deep(127)).is_ok());
        assert_eq!(
            from_str(&deep(128)).map_err(|e| e.to_string()),
            Err("recursion limit exceeded at line 1 column 128".into())
        );
        assert!(serde_json::from_str::<serde_json::Value>(&deep(127)).is_ok());
        assert!(serde_json::from_str::<serde_json::Value>(&deep(128)).is_err());
    }

    #[test]
    fn says_where_a_text_goes_wrong() {
        let at = |t: &str| from_str(t).unwrap_err().to_string();
        assert_eq!(at(""), "EOF while parsing a value at line 1 column 1");
        assert_eq!(
            at("{\n  \"a\": tru\n}"),
            "expected value at line 2 column 8"
        );
        assert_eq!(at("[1,\n2 x]"), "expected `,` or `]` at line 2 column 3");
        assert_eq!(at("{\"a\":1} x"), "trailing characters at line 1 column 9");
    }

    #[test]
    fn builds_and_reads_values() {
        let id = "c1";
        let parts = vec![json!({"type": "text"})];
        let v = json!({
            "b": [1, null, true, {"x": id}, [parts]],
            "a": null,
            ("c".to_string() + "d"): -3,
            "e": {},
            "f": [],
        });
        assert_eq!(
            to_string(&v),
            r#"{"a":null,"b":[1,null,true,{"x":"c1"},[[{"type":"text"}]]],"cd":-3,"e":{},"f":[]}"#
        );
        assert_eq!(v["b"][3]["x"], "c1");
        assert_eq!(v["b"][0], 1);
        assert!(v["missing"]["deeper"][7].is_null());
        assert_eq!(v.get("cd").and_then(Value::as_i64), Some(-3));
        assert_eq!(v.to_string(), to_string(&v));
        let mut m = Map::new();
        assert_eq!(m.insert("k".into(), json!(1)), None);
        assert_eq!(m.insert("k".into(), json!(2)), Some(json!(1)));
        m.extend([
            ("a".to_string(), json!("x")),
            ("z".to_string(), json!(null)),
        ]);
        assert_eq!(m.keys().collect::<Vec<_>>(), ["a", "k", "z"]);
        m.retain(|k, _| k != "k");
        assert_eq!(m.remove("a"), Some(json!("x")));
        assert_eq!(to_string(&Value::Object(m)), r#"{"z":null}"#);
    }
}
