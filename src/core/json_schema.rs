//! Checks a model's structured output against the JSON Schema given as an agent's `outputType`:
//! the subset of JSON Schema that OpenAI "strict" structured outputs use.
//!
//! Known keywords: `type` (a name or an array of names: `object`, `array`, `string`, `number`,
//! `integer`, `boolean`, `null`), `properties`, `required`, `additionalProperties` (`false` or a
//! schema), `items`, `enum`, `const`, `anyOf`, `oneOf`, `allOf`, `minimum`, `maximum`,
//! `exclusiveMinimum`, `exclusiveMaximum`, `minLength`, `maxLength` (in characters), `minItems`,
//! `maxItems`, and `$ref` to `#/$defs/Name` or `#/definitions/Name` (any JSON pointer into the root
//! schema), followed at most 64 deep. The schemas `true` and `false` accept everything and nothing.
//! Every other keyword (`pattern`, `format`, `description`, `title`, `$schema`, ...) is ignored.
//!
//! Messages describe a value by its JSON type and, for a string, by (at most 40 characters of) the
//! string itself. Numbers are only ever written by serializing the schema's own JSON value, never
//! by formatting an `f64`, which keeps float formatting code out of the WebAssembly binary.

use std::cmp::Ordering;
use std::fmt;

use crate::core::json::{self, Map, Number, Value};

/// How many `$ref`s may be followed one inside another before the check gives up.
const MAX_REF_DEPTH: usize = 64;
/// How deeply [`check_schema_shape`] descends into nested schemas.
const MAX_SHAPE_DEPTH: usize = 64;
/// How many characters of a string a message quotes.
const MAX_QUOTED_CHARS: usize = 40;
/// How many characters of a schema's JSON (an `enum` list, a `const`) a message quotes.
const MAX_JSON_CHARS: usize = 80;

const TYPE_NAMES: [&str; 7] = [
    "object", "array", "string", "number", "integer", "boolean", "null",
];

/// Where a value breaks its schema (`$.items[2].name`) and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaViolation {
    pub path: String,
    pub message: String,
}

impl fmt::Display for SchemaViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for SchemaViolation {}

/// Checks `value` against `schema`; the first violation found is returned.
pub fn check(schema: &Value, value: &Value) -> Result<(), SchemaViolation> {
    let mut path = String::from("$");
    Checker {
        root: schema,
        visits: std::cell::Cell::new(0),
    }
    .node(schema, value, &mut path, 0)
}

/// Checks that a user's schema can be used at all: a JSON object or a boolean, whose `type` (if
/// present) is a known type name or a non-empty array of them, whose `properties` is an object,
/// whose `required` is an array of strings, and so on for every known keyword, in every nested
/// schema; every `$ref` must resolve. The error says where and what is wrong.
pub fn check_schema_shape(schema: &Value) -> Result<(), String> {
    let mut at = String::from("#");
    shape(schema, schema, &mut at, 0)
}

fn violation(path: &str, message: String) -> SchemaViolation {
    SchemaViolation {
        path: path.to_owned(),
        message,
    }
}

struct Checker<'a> {
    root: &'a Value,
    /// Schema nodes visited so far: a schema whose alternatives refer back to themselves
    /// (`anyOf` of two `$ref`s to the same schema) would otherwise take exponential time.
    visits: std::cell::Cell<usize>,
}

/// How many schema nodes one check may visit.
const MAX_VISITS: usize = 100_000;

impl<'a> Checker<'a> {
    fn node(
        &self,
        schema: &Value,
        value: &Value,
        path: &mut String,
        refs: usize,
    ) -> Result<(), SchemaViolation> {
        let visits = self.visits.get() + 1;
        self.visits.set(visits);
        if visits > MAX_VISITS {
            return Err(violation(
                path,
                format!("the schema takes more than {MAX_VISITS} steps to check (alternatives that refer back to themselves?)"),
            ));
        }
        let obj = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => {
                return Err(violation(
                    path,
                    format!("no value is allowed here, got {}", describe(value)),
                ))
            }
            Value::Object(obj) => obj,
            other => {
                return Err(violation(
                    path,
                    format!(
                        "invalid schema: expected an object or a boolean, got {}",
                        describe(other)
                    ),
                ))
            }
        };

        if let Some(reference) = obj.get("$ref") {
            let Some(target) = self.resolve(reference) else {
                return Err(violation(
                    path,
                    format!("cannot resolve $ref {}", cut(&json::to_string(reference))),
                ));
            };
            if refs >= MAX_REF_DEPTH {
                return Err(violation(
                    path,
                    format!(
                        "$ref {} nested more than {MAX_REF_DEPTH} deep (recursive schema?)",
                        cut(&json::to_string(reference))
                    ),
                ));
            }
            self.node(target, value, path, refs + 1)?;
        }

        if let Some(types) = obj.get("type") {
            check_type(types, value, path)?;
        }
        if let Some(allowed) = obj.get("enum") {
            let found = match allowed {
                Value::Array(values) => values.iter().any(|a| json_equal(a, value)),
                _ => false,
            };
            if !found {
                return Err(violation(
                    path,
                    format!(
                        "value is not one of the allowed values {} (got {})",
                        cut(&json::to_string(allowed)),
                        describe(value)
                    ),
                ));
            }
        }
        if let Some(constant) = obj.get("const") {
            if !json_equal(constant, value) {
                return Err(violation(
                    path,
                    format!(
                        "value is not the allowed constant {} (got {})",
                        cut(&json::to_string(constant)),
                        describe(value)
                    ),
                ));
            }
        }

        match value {
            Value::Number(n) => check_number(obj, n, path)?,
            Value::String(s) => check_string(obj, s, path)?,
            Value::Array(items) => self.array(obj, items, path, refs)?,
            Value::Object(props) => self.object(obj, props, path, refs)?,
            Value::Null | Value::Bool(_) => {}
        }

        if let Some(Value::Array(all)) = obj.get("allOf") {
            for sub in all {
                self.node(sub, value, path, refs)?;
            }
        }
        if let Some(Value::Array(any)) = obj.get("anyOf") {
            let mut errors = Vec::new();
            let mut matched = false;
            for sub in any {
                match self.node(sub, value, path, refs) {
                    Ok(()) => {
                        matched = true;
                        break;
                    }
                    Err(e) => errors.push(e),
                }
            }
            if !matched {
                return Err(no_match("anyOf", errors, path));
            }
        }
        if let Some(Value::Array(one)) = obj.get("oneOf") {
            let mut errors = Vec::new();
            let mut matched = Vec::new();
            for (i, sub) in one.iter().enumerate() {
                match self.node(sub, value, path, refs) {
                    Ok(()) => matched.push(i),
                    Err(e) => errors.push(e),
                }
                if matched.len() == 2 {
                    break;
                }
            }
            match matched.as_slice() {
                [_] => {}
                [] => return Err(no_match("oneOf", errors, path)),
                [a, b, ..] => {
                    return Err(violation(
                        path,
                        format!("value matches more than one of the oneOf schemas (#{a} and #{b})"),
                    ))
                }
            }
        }
        Ok(())
    }

    fn resolve(&self, reference: &Value) -> Option<&'a Value> {
        let pointer = reference.as_str()?.strip_prefix('#')?;
        self.root.pointer(pointer)
    }

    fn array(
        &self,
        obj: &Map,
        items: &[Value],
        path: &mut String,
        refs: usize,
    ) -> Result<(), SchemaViolation> {
        let len = items.len() as u64;
        if let Some(min) = count(obj, "minItems") {
            if len < min {
                return Err(violation(
                    path,
                    format!("array must have at least {min} items, got {len}"),
                ));
            }
        }
        if let Some(max) = count(obj, "maxItems") {
            if len > max {
                return Err(violation(
                    path,
                    format!("array must have at most {max} items, got {len}"),
                ));
            }
        }
        // Positional schemas: item i against schema i (2020-12's `prefixItems`, a tuple of zod's
        // `toJSONSchema`; `items` as an array is the older form), `items` for the rest.
        let (prefix, rest) = match (obj.get("prefixItems"), obj.get("items")) {
            (_, Some(Value::Array(schemas))) => (schemas.as_slice(), None),
            (Some(Value::Array(schemas)), rest) => (schemas.as_slice(), rest),
            (_, rest) => (&[][..], rest),
        };
        for (i, item) in items.iter().enumerate() {
            if let Some(sub) = prefix.get(i).or(rest.filter(|_| i >= prefix.len())) {
                self.at_index(sub, item, i, path, refs)?;
            }
        }
        Ok(())
    }

    fn at_index(
        &self,
        schema: &Value,
        value: &Value,
        index: usize,
        path: &mut String,
        refs: usize,
    ) -> Result<(), SchemaViolation> {
        let len = path.len();
        path.push('[');
        path.push_str(&index.to_string());
        path.push(']');
        let result = self.node(schema, value, path, refs);
        path.truncate(len);
        result
    }

    fn at_key(
        &self,
        schema: &Value,
        value: &Value,
        key: &str,
        path: &mut String,
        refs: usize,
    ) -> Result<(), SchemaViolation> {
        let len = path.len();
        push_key(path, key);
        let result = self.node(schema, value, path, refs);
        path.truncate(len);
        result
    }

    fn object(
        &self,
        obj: &Map,
        props: &Map,
        path: &mut String,
        refs: usize,
    ) -> Result<(), SchemaViolation> {
        if let Some(Value::Array(required)) = obj.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !props.contains_key(name) {
                    return Err(violation(
                        path,
                        format!("missing required property {}", quote(name)),
                    ));
                }
            }
        }
        let known = match obj.get("properties") {
            Some(Value::Object(known)) => Some(known),
            _ => None,
        };
        if let Some(known) = known {
            for (key, sub) in known {
                if let Some(item) = props.get(key) {
                    self.at_key(sub, item, key, path, refs)?;
                }
            }
        }
        match obj.get("additionalProperties") {
            None | Some(Value::Bool(true)) => {}
            Some(extra) => {
                for (key, item) in props {
                    if known.is_some_and(|k| k.contains_key(key)) {
                        continue;
                    }
                    if *extra == Value::Bool(false) {
                        return Err(violation(
                            path,
                            format!("property {} is not allowed", quote(key)),
                        ));
                    }
                    self.at_key(extra, item, key, path, refs)?;
                }
            }
        }
        Ok(())
    }
}

/// The error for an `anyOf` or `oneOf` that nothing matched. When some alternative got deeper into
/// the value than the others, that is the one that was meant, and its own violation says the most.
fn no_match(keyword: &str, errors: Vec<SchemaViolation>, path: &str) -> SchemaViolation {
    let mut deepest: Option<SchemaViolation> = None;
    for e in &errors {
        if e.path.len() > deepest.as_ref().map_or(path.len(), |d| d.path.len()) {
            deepest = Some(e.clone());
        }
    }
    if let Some(e) = deepest {
        return e;
    }
    let reasons: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
    let mut message = format!("value does not match any of the {keyword} schemas");
    if !reasons.is_empty() {
        message.push_str(" (");
        message.push_str(&reasons.join("; "));
        message.push(')');
    }
    violation(path, message)
}

fn check_type(types: &Value, value: &Value, path: &str) -> Result<(), SchemaViolation> {
    let names: Vec<&str> = match types {
        Value::String(name) => vec![name.as_str()],
        Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
        other => {
            return Err(violation(
                path,
                format!(
                    "invalid schema: \"type\" must be a string or an array of strings, got {}",
                    describe(other)
                ),
            ))
        }
    };
    if names.iter().any(|name| has_type(value, name)) {
        return Ok(());
    }
    Err(violation(
        path,
        format!("expected {}, got {}", join_or(&names), describe(value)),
    ))
}

fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => is_integer(value),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => false,
    }
}

fn is_integer(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// `a`, `a or b`, `a, b or c`.
fn join_or(names: &[&str]) -> String {
    match names.split_last() {
        None => String::from("no type at all"),
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

fn check_number(obj: &Map, n: &Number, path: &str) -> Result<(), SchemaViolation> {
    // (keyword, lower bound?, draft-4 boolean modifier that makes it exclusive)
    for (keyword, lower, modifier) in [
        ("minimum", true, "exclusiveMinimum"),
        ("maximum", false, "exclusiveMaximum"),
    ] {
        if let Some(limit) = obj.get(keyword) {
            let exclusive = obj.get(modifier) == Some(&Value::Bool(true));
            bound(n, limit, lower, exclusive, path)?;
        }
    }
    for (keyword, lower) in [("exclusiveMinimum", true), ("exclusiveMaximum", false)] {
        if let Some(limit @ Value::Number(_)) = obj.get(keyword) {
            bound(n, limit, lower, true, path)?;
        }
    }
    Ok(())
}

fn bound(
    n: &Number,
    limit: &Value,
    lower: bool,
    exclusive: bool,
    path: &str,
) -> Result<(), SchemaViolation> {
    let Value::Number(limit_number) = limit else {
        return Ok(());
    };
    let ok = match compare(n, limit_number) {
        Some(Ordering::Equal) => !exclusive,
        Some(Ordering::Greater) => lower,
        Some(Ordering::Less) => !lower,
        None => false,
    };
    if ok {
        return Ok(());
    }
    let op = match (lower, exclusive) {
        (true, false) => ">=",
        (true, true) => ">",
        (false, false) => "<=",
        (false, true) => "<",
    };
    Err(violation(
        path,
        format!("number must be {op} {}", json::to_string(limit)),
    ))
}

/// Compares two JSON numbers, exactly when both are integers.
fn compare(a: &Number, b: &Number) -> Option<Ordering> {
    match (as_i128(a), as_i128(b)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

fn as_i128(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

fn check_string(obj: &Map, s: &str, path: &str) -> Result<(), SchemaViolation> {
    let min = count(obj, "minLength");
    let max = count(obj, "maxLength");
    if min.is_none() && max.is_none() {
        return Ok(());
    }
    let len = s.chars().count() as u64;
    if let Some(min) = min {
        if len < min {
            return Err(violation(
                path,
                format!("string must be at least {min} characters long, got {len}"),
            ));
        }
    }
    if let Some(max) = max {
        if len > max {
            return Err(violation(
                path,
                format!("string must be at most {max} characters long, got {len}"),
            ));
        }
    }
    Ok(())
}

/// A count keyword (`minLength`, `maxItems`, ...): a non-negative integer, else ignored.
fn count(obj: &Map, keyword: &str) -> Option<u64> {
    match obj.get(keyword)? {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                .map(|f| f as u64)
        }),
        _ => None,
    }
}

/// JSON equality, where `1` and `1.0` are the same number.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare(x, y) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| json_equal(v, w))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// A value in a message: its JSON type, and for a string the (cut) string itself.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => String::from("null"),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(_) => String::from("number"),
        Value::String(s) => format!("string {}", quote(s)),
        Value::Array(_) => String::from("array"),
        Value::Object(_) => String::from("object"),
    }
}

/// `s` in double quotes, escaped, cut to [`MAX_QUOTED_CHARS`] characters (then `…` follows).
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    let mut cut_short = false;
    for (i, c) in s.chars().enumerate() {
        if i == MAX_QUOTED_CHARS {
            cut_short = true;
            break;
        }
        push_escaped(&mut out, c);
    }
    out.push('"');
    if cut_short {
        out.push('…');
    }
    out
}

/// `c` as JSON writes it in a string, and the control characters past U+007F escaped too (a
/// message is read by people).
fn push_escaped(out: &mut String, c: char) {
    match c {
        c if c.is_control() && u32::from(c) >= 0x7f => {
            out.push_str("\\u");
            crate::core::canonical::push_hex(out, u64::from(c), 4);
        }
        c => crate::core::json::push_escaped(out, c),
    }
}

/// Appends `.key` to a path, or `["key"]` when the key is not a plain identifier.
fn push_key(path: &mut String, key: &str) {
    let mut chars = key.chars();
    let plain = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if plain {
        path.push('.');
        path.push_str(key);
    } else {
        path.push_str("[\"");
        for c in key.chars() {
            push_escaped(path, c);
        }
        path.push_str("\"]");
    }
}

/// `text` cut to [`MAX_JSON_CHARS`] characters (then `…` follows).
fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_JSON_CHARS) {
        Some((end, _)) => format!("{}…", text.get(..end).unwrap_or(text)),
        None => text.to_owned(),
    }
}

fn shape_error(at: &str, message: String) -> String {
    if at == "#" {
        format!("schema: {message}")
    } else {
        format!("schema at {at}: {message}")
    }
}

/// Checks one (sub)schema found at JSON pointer `at` within `root`.
fn shape(root: &Value, schema: &Value, at: &mut String, depth: usize) -> Result<(), String> {
    let obj = match schema {
        Value::Bool(_) => return Ok(()),
        Value::Object(obj) => obj,
        other => {
            return Err(shape_error(
                at,
                format!(
                    "must be a JSON object or a boolean, got {}",
                    describe(other)
                ),
            ))
        }
    };
    if depth >= MAX_SHAPE_DEPTH {
        return Err(shape_error(
            at,
            format!("schemas are nested more than {MAX_SHAPE_DEPTH} deep"),
        ));
    }

    if let Some(types) = obj.get("type") {
        let names: Vec<&Value> = match types {
            Value::String(_) => vec![types],
            Value::Array(names) if !names.is_empty() => names.iter().collect(),
            other => {
                return Err(shape_error(
                    at,
                    format!(
                        "\"type\" must be a type name or a non-empty array of type names, got {}",
                        describe(other)
                    ),
                ))
            }
        };
        for name in names {
            match name.as_str() {
                Some(name) if TYPE_NAMES.contains(&name) => {}
                _ => {
                    return Err(shape_error(
                        at,
                        format!(
                            "unknown type {} in \"type\" (known: {})",
                            describe(name),
                            TYPE_NAMES.join(", ")
                        ),
                    ))
                }
            }
        }
    }

    if let Some(required) = obj.get("required") {
        let ok = match required {
            Value::Array(names) => names.iter().all(Value::is_string),
            _ => false,
        };
        if !ok {
            return Err(shape_error(
                at,
                format!(
                    "\"required\" must be an array of strings, got {}",
                    describe(required)
                ),
            ));
        }
    }

    for keyword in ["properties", "$defs", "definitions"] {
        match obj.get(keyword) {
            None => {}
            Some(Value::Object(subs)) => {
                for (key, sub) in subs {
                    shape_at(root, sub, at, &[keyword, key], depth)?;
                }
            }
            Some(other) => {
                return Err(shape_error(
                    at,
                    format!("\"{keyword}\" must be an object, got {}", describe(other)),
                ))
            }
        }
    }

    if let Some(extra) = obj.get("additionalProperties") {
        shape_at(root, extra, at, &["additionalProperties"], depth)?;
    }
    for keyword in ["items", "prefixItems"] {
        match obj.get(keyword) {
            None => {}
            Some(Value::Array(subs)) => {
                for (i, sub) in subs.iter().enumerate() {
                    shape_at(root, sub, at, &[keyword, &i.to_string()], depth)?;
                }
            }
            Some(sub) if keyword == "items" => shape_at(root, sub, at, &[keyword], depth)?,
            Some(other) => {
                return Err(shape_error(
                    at,
                    format!("\"prefixItems\" must be an array, got {}", describe(other)),
                ))
            }
        }
    }

    for keyword in ["anyOf", "oneOf", "allOf"] {
        match obj.get(keyword) {
            None => {}
            Some(Value::Array(subs)) if !subs.is_empty() => {
                for (i, sub) in subs.iter().enumerate() {
                    shape_at(root, sub, at, &[keyword, &i.to_string()], depth)?;
                }
            }
            Some(other) => {
                return Err(shape_error(
                    at,
                    format!(
                        "\"{keyword}\" must be a non-empty array of schemas, got {}",
                        describe(other)
                    ),
                ))
            }
        }
    }

    if let Some(allowed) = obj.get("enum") {
        if !allowed.is_array() {
            return Err(shape_error(
                at,
                format!("\"enum\" must be an array, got {}", describe(allowed)),
            ));
        }
    }

    if let Some(reference) = obj.get("$ref") {
        let resolved = Checker {
            root,
            visits: std::cell::Cell::new(0),
        }
        .resolve(reference)
        .is_some();
        if !resolved {
            return Err(shape_error(
                at,
                format!(
                    "\"$ref\" {} does not point into this schema (expected \"#/$defs/Name\")",
                    cut(&json::to_string(reference))
                ),
            ));
        }
    }

    for keyword in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
        match obj.get(keyword) {
            None | Some(Value::Number(_)) => {}
            Some(Value::Bool(_)) if keyword.starts_with("exclusive") => {}
            Some(other) => {
                return Err(shape_error(
                    at,
                    format!("\"{keyword}\" must be a number, got {}", describe(other)),
                ))
            }
        }
    }
    for keyword in ["minLength", "maxLength", "minItems", "maxItems"] {
        if obj.contains_key(keyword) && count(obj, keyword).is_none() {
            return Err(shape_error(
                at,
                format!("\"{keyword}\" must be a non-negative integer"),
            ));
        }
    }
    Ok(())
}

/// Checks the subschema `schema` at `at` + `/segments...`.
fn shape_at(
    root: &Value,
    schema: &Value,
    at: &mut String,
    segments: &[&str],
    depth: usize,
) -> Result<(), String> {
    let len = at.len();
    for segment in segments {
        at.push('/');
        for c in segment.chars() {
            match c {
                '~' => at.push_str("~0"),
                '/' => at.push_str("~1"),
                c => at.push(c),
            }
        }
    }
    let result = shape(root, schema, at, depth + 1);
    at.truncate(len);
    result
}

#[cfg(test)]
mod tests {

    #[test]
    fn alternatives_that_refer_back_to_themselves_stop_instead_of_hanging() {
        let schema = json!({
            "$defs": {"n": {"anyOf": [{"$ref": "#/$defs/n"}, {"$ref": "#/$defs/n"}]}},
            "$ref": "#/$defs/n"
        });
        let e = check(&schema, &json!(1)).unwrap_err();
        assert!(e.message.contains("steps"), "{e}");
    }

    use super::*;
    use crate::core::json::json;

    /// The violation as `path: message`, or `None` when the value passes.
    fn violation_of(schema: Value, value: Value) -> Option<String> {
        check(&schema, &value).err().map(|e| e.to_string())
    }

    fn passes(schema: Value, value: Value) -> bool {
        check(&schema, &value).is_ok()
    }

    #[test]
    fn type_single_and_list() {
        assert!(passes(json!({"type": "string"}), json!("x")));
        assert_eq!(
            violation_of(json!({"type": "integer"}), json!("x")),
            Some("$: expected integer, got string \"x\"".into())
        );
        assert!(passes(json!({"type": ["string", "null"]}), json!(null)));
        assert_eq!(
            violation_of(json!({"type": ["string", "null"]}), json!(3)),
            Some("$: expected string or null, got number".into())
        );
        assert_eq!(
            violation_of(json!({"type": ["object", "array", "boolean"]}), json!(null)),
            Some("$: expected object, array or boolean, got null".into())
        );
        assert!(passes(json!({"type": "boolean"}), json!(false)));
        assert!(passes(json!({"type": "null"}), json!(null)));
        assert!(passes(json!({"type": "array"}), json!([])));
        assert!(passes(json!({"type": "object"}), json!({})));
        assert!(!passes(json!({"type": "object"}), json!([])));
    }

    #[test]
    fn integer_and_number() {
        assert!(passes(json!({"type": "integer"}), json!(3)));
        assert!(passes(json!({"type": "integer"}), json!(-3)));
        assert!(passes(json!({"type": "integer"}), json!(u64::MAX)));
        assert!(passes(json!({"type": "integer"}), json!(2.0)));
        assert_eq!(
            violation_of(json!({"type": "integer"}), json!(2.5)),
            Some("$: expected integer, got number".into())
        );
        assert!(passes(json!({"type": "number"}), json!(2.5)));
        assert!(passes(json!({"type": "number"}), json!(2)));
        assert!(!passes(json!({"type": "number"}), json!("2")));
    }

    #[test]
    fn long_strings_are_cut_in_messages() {
        let long = "a".repeat(100);
        let message = violation_of(json!({"type": "number"}), json!(long));
        let expected = format!("$: expected number, got string \"{}\"…", "a".repeat(40));
        assert_eq!(message, Some(expected));
        assert_eq!(
            violation_of(json!({"type": "number"}), json!("say \"hi\"\n")),
            Some("$: expected number, got string \"say \\\"hi\\\"\\n\"".into())
        );
    }

    #[test]
    fn properties_are_checked_with_their_path() {
        let schema = json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}
        });
        assert!(passes(schema.clone(), json!({"name": "Ann", "age": 3})));
        assert!(passes(schema.clone(), json!({})));
        assert_eq!(
            violation_of(schema, json!({"name": 5})),
            Some("$.name: expected string, got number".into())
        );
    }

    #[test]
    fn required() {
        let schema = json!({"type": "object", "required": ["name"]});
        assert!(passes(schema.clone(), json!({"name": null})));
        assert_eq!(
            violation_of(schema, json!({"other": 1})),
            Some("$: missing required property \"name\"".into())
        );
    }

    #[test]
    fn additional_properties_false() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {}},
            "additionalProperties": false
        });
        assert!(passes(schema.clone(), json!({"a": 1})));
        assert_eq!(
            violation_of(schema, json!({"a": 1, "extra": 2})),
            Some("$: property \"extra\" is not allowed".into())
        );
    }

    #[test]
    fn additional_properties_schema() {
        let schema = json!({
            "properties": {"a": {"type": "string"}},
            "additionalProperties": {"type": "number"}
        });
        assert!(passes(schema.clone(), json!({"a": "x", "b": 1, "c": 2.5})));
        assert_eq!(
            violation_of(schema, json!({"a": "x", "b": "y"})),
            Some("$.b: expected number, got string \"y\"".into())
        );
        assert!(passes(
            json!({"additionalProperties": true}),
            json!({"z": 1})
        ));
    }

    #[test]
    fn odd_keys_are_bracketed_in_paths() {
        let schema = json!({"properties": {"a b": {"type": "string"}, "q\"": {"type": "string"}}});
        assert_eq!(
            violation_of(schema.clone(), json!({"a b": 1})),
            Some("$[\"a b\"]: expected string, got number".into())
        );
        assert_eq!(
            violation_of(schema, json!({"q\"": 1})),
            Some("$[\"q\\\"\"]: expected string, got number".into())
        );
    }

    #[test]
    fn items() {
        let schema = json!({"type": "array", "items": {"type": "string"}});
        assert!(passes(schema.clone(), json!(["a", "b"])));
        assert_eq!(
            violation_of(schema, json!(["a", "b", 3])),
            Some("$[2]: expected string, got number".into())
        );
        let tuple = json!({"items": [{"type": "string"}, {"type": "integer"}]});
        assert!(passes(tuple.clone(), json!(["a", 1, true])));
        assert_eq!(
            violation_of(tuple, json!(["a", "b"])),
            Some("$[1]: expected integer, got string \"b\"".into())
        );
        // 2020-12's tuple, as zod's `toJSONSchema` writes `z.tuple([z.number(), z.number()])`:
        // `items` is for the items after the prefix only.
        let pair = json!({"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}],
            "items": false, "minItems": 2, "maxItems": 2});
        assert!(passes(pair.clone(), json!([1, 2])));
        assert_eq!(
            violation_of(pair, json!([1, "2"])),
            Some("$[1]: expected number, got string \"2\"".into())
        );
        let rest = json!({"prefixItems": [{"type": "string"}], "items": {"type": "integer"}});
        assert!(passes(rest.clone(), json!(["a", 1, 2])));
        assert_eq!(
            violation_of(rest, json!(["a", 1, "b"])),
            Some("$[2]: expected integer, got string \"b\"".into())
        );
        assert!(passes(
            json!({"prefixItems": [{"type": "string"}]}),
            json!(["a", 1])
        ));
    }

    #[test]
    fn nested_objects_and_arrays() {
        let schema = json!({
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "tags": {"type": "array", "items": {"type": "string"}}
                        },
                        "required": ["name"]
                    }
                }
            }
        });
        let good = json!({"items": [{"name": "a"}, {"name": "b", "tags": ["x"]}]});
        assert!(passes(schema.clone(), good));
        assert_eq!(
            violation_of(
                schema.clone(),
                json!({"items": [{"name": "a"}, {"name": "b"}, {"name": 7}]})
            ),
            Some("$.items[2].name: expected string, got number".into())
        );
        assert_eq!(
            violation_of(
                schema.clone(),
                json!({"items": [{"name": "a", "tags": ["x", false]}]})
            ),
            Some("$.items[0].tags[1]: expected string, got boolean false".into())
        );
        assert_eq!(
            violation_of(schema, json!({"items": [{}]})),
            Some("$.items[0]: missing required property \"name\"".into())
        );
    }

    #[test]
    fn enum_keyword() {
        let schema = json!({"enum": ["red", "green", 1]});
        assert!(passes(schema.clone(), json!("red")));
        assert!(passes(schema.clone(), json!(1.0)));
        assert_eq!(
            violation_of(schema, json!("blue")),
            Some(
                "$: value is not one of the allowed values [\"red\",\"green\",1] \
                 (got string \"blue\")"
                    .into()
            )
        );
        assert!(passes(
            json!({"enum": [{"a": [1, 2]}]}),
            json!({"a": [1, 2.0]})
        ));
        assert!(!passes(json!({"enum": [{"a": [1, 2]}]}), json!({"a": [1]})));
    }

    #[test]
    fn const_keyword() {
        assert!(passes(json!({"const": "x"}), json!("x")));
        assert!(passes(json!({"const": 2}), json!(2.0)));
        assert_eq!(
            violation_of(json!({"const": "x"}), json!("y")),
            Some("$: value is not the allowed constant \"x\" (got string \"y\")".into())
        );
        assert!(!passes(json!({"const": null}), json!(false)));
    }

    #[test]
    fn any_of() {
        let schema = json!({"anyOf": [{"type": "string"}, {"type": "integer"}]});
        assert!(passes(schema.clone(), json!("a")));
        assert!(passes(schema.clone(), json!(1)));
        assert_eq!(
            violation_of(schema, json!(null)),
            Some(
                "$: value does not match any of the anyOf schemas \
                 (expected string, got null; expected integer, got null)"
                    .into()
            )
        );
        // The alternative that got deepest into the value says what is wrong.
        let nullable = json!({
            "anyOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}},
                {"type": "null"}
            ]
        });
        assert!(passes(nullable.clone(), json!(null)));
        assert_eq!(
            violation_of(nullable, json!({"a": 1})),
            Some("$.a: expected string, got number".into())
        );
    }

    #[test]
    fn one_of() {
        let schema = json!({"oneOf": [{"type": "integer"}, {"type": "number"}]});
        assert!(passes(schema.clone(), json!(1.5)));
        assert_eq!(
            violation_of(schema.clone(), json!(1)),
            Some("$: value matches more than one of the oneOf schemas (#0 and #1)".into())
        );
        assert_eq!(
            violation_of(schema, json!("x")),
            Some(
                "$: value does not match any of the oneOf schemas \
                 (expected integer, got string \"x\"; expected number, got string \"x\")"
                    .into()
            )
        );
    }

    #[test]
    fn all_of() {
        let schema = json!({"allOf": [{"type": "integer"}, {"minimum": 3}]});
        assert!(passes(schema.clone(), json!(4)));
        assert_eq!(
            violation_of(schema.clone(), json!(2)),
            Some("$: number must be >= 3".into())
        );
        assert_eq!(
            violation_of(schema, json!(3.5)),
            Some("$: expected integer, got number".into())
        );
    }

    #[test]
    fn minimum_and_maximum() {
        let schema = json!({"minimum": 1.5, "maximum": 10});
        assert!(passes(schema.clone(), json!(1.5)));
        assert!(passes(schema.clone(), json!(10)));
        assert!(passes(schema.clone(), json!(10.0)));
        assert_eq!(
            violation_of(schema.clone(), json!(1)),
            Some("$: number must be >= 1.5".into())
        );
        assert_eq!(
            violation_of(schema.clone(), json!(10.5)),
            Some("$: number must be <= 10".into())
        );
        // Non-numbers are not bounded.
        assert!(passes(schema, json!("x")));
        // Large integers compare exactly.
        assert!(!passes(json!({"maximum": u64::MAX - 1}), json!(u64::MAX)));
        assert!(passes(json!({"minimum": -5}), json!(u64::MAX)));
    }

    #[test]
    fn exclusive_minimum_and_maximum() {
        let schema = json!({"exclusiveMinimum": 0, "exclusiveMaximum": 1});
        assert!(passes(schema.clone(), json!(0.5)));
        assert_eq!(
            violation_of(schema.clone(), json!(0)),
            Some("$: number must be > 0".into())
        );
        assert_eq!(
            violation_of(schema, json!(1.0)),
            Some("$: number must be < 1".into())
        );
        // The older boolean form modifies minimum / maximum.
        let old =
            json!({"minimum": 0, "exclusiveMinimum": true, "maximum": 2, "exclusiveMaximum": true});
        assert!(passes(old.clone(), json!(1)));
        assert!(!passes(old.clone(), json!(0)));
        assert!(!passes(old, json!(2)));
    }

    #[test]
    fn min_and_max_length_count_chars() {
        let schema = json!({"type": "string", "minLength": 2, "maxLength": 3});
        assert!(passes(schema.clone(), json!("éé")));
        assert!(passes(schema.clone(), json!("日本語")));
        assert_eq!(
            violation_of(schema.clone(), json!("é")),
            Some("$: string must be at least 2 characters long, got 1".into())
        );
        assert_eq!(
            violation_of(schema, json!("abcd")),
            Some("$: string must be at most 3 characters long, got 4".into())
        );
    }

    #[test]
    fn min_and_max_items() {
        let schema = json!({"type": "array", "minItems": 1, "maxItems": 2});
        assert!(passes(schema.clone(), json!([1])));
        assert_eq!(
            violation_of(schema.clone(), json!([])),
            Some("$: array must have at least 1 items, got 0".into())
        );
        assert_eq!(
            violation_of(schema, json!([1, 2, 3])),
            Some("$: array must have at most 2 items, got 3".into())
        );
    }

    #[test]
    fn unknown_keywords_are_ignored() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "T",
            "description": "D",
            "type": "string",
            "pattern": "^[0-9]+$",
            "format": "email",
            "x-whatever": {"type": "number"}
        });
        assert!(passes(schema, json!("not digits")));
    }

    #[test]
    fn ref_to_defs_and_definitions() {
        let schema = json!({
            "$defs": {"Name": {"type": "string", "minLength": 1}},
            "definitions": {"Age": {"type": "integer", "minimum": 0}},
            "type": "object",
            "properties": {
                "name": {"$ref": "#/$defs/Name"},
                "age": {"$ref": "#/definitions/Age"}
            }
        });
        assert!(passes(schema.clone(), json!({"name": "a", "age": 0})));
        assert_eq!(
            violation_of(schema.clone(), json!({"name": ""})),
            Some("$.name: string must be at least 1 characters long, got 0".into())
        );
        assert_eq!(
            violation_of(schema, json!({"age": -1})),
            Some("$.age: number must be >= 0".into())
        );
        assert_eq!(
            violation_of(json!({"$ref": "#/$defs/Missing"}), json!(1)),
            Some("$: cannot resolve $ref \"#/$defs/Missing\"".into())
        );
        assert_eq!(
            violation_of(json!({"$ref": "https://example.com/s.json"}), json!(1)),
            Some("$: cannot resolve $ref \"https://example.com/s.json\"".into())
        );
    }

    #[test]
    fn refs_find_what_a_json_pointer_names() {
        let root = json!({
            "a/b": {"type": "string"},
            "m~n": [{"type": "integer"}, {"type": "boolean"}],
            "": {"type": "null"},
            "10": {"type": "number"}
        });
        let pointers = [
            "",
            "/a~1b",
            "/m~0n",
            "/m~0n/1",
            "/m~0n/01",
            "/m~0n/+1",
            "/m~0n/2",
            "/m~0n/-",
            "/",
            "/10",
            "/a~2b",
            "/a~",
            "a",
            "/a~1b/type",
            "/a~1b/type/x",
            "/m~0n/0/type",
        ];
        let theirs: serde_json::Value = serde_json::from_str(&root.to_string()).unwrap();
        for pointer in pointers {
            assert_eq!(
                root.pointer(pointer).map(Value::to_string),
                theirs.pointer(pointer).map(serde_json::Value::to_string),
                "{pointer}"
            );
        }
        let schema = json!({
            "$defs": {"a/b": {"type": "string"}, "list": [{"type": "integer"}]},
            "properties": {
                "s": {"$ref": "#/$defs/a~1b"},
                "n": {"$ref": "#/$defs/list/0"}
            }
        });
        assert!(passes(schema.clone(), json!({"s": "x", "n": 1})));
        assert_eq!(
            violation_of(schema, json!({"n": "1"})),
            Some("$.n: expected integer, got string \"1\"".into())
        );
    }

    #[test]
    fn recursive_ref() {
        let schema = json!({
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "value": {"type": "integer"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
                    },
                    "required": ["value", "children"],
                    "additionalProperties": false
                }
            },
            "$ref": "#/$defs/Node"
        });
        let tree = json!({
            "value": 1,
            "children": [
                {"value": 2, "children": []},
                {"value": 3, "children": [{"value": 4, "children": []}]}
            ]
        });
        assert!(passes(schema.clone(), tree));
        assert_eq!(
            violation_of(
                schema.clone(),
                json!({"value": 1, "children": [{"value": 2, "children": [{"value": "x", "children": []}]}]})
            ),
            Some("$.children[0].children[0].value: expected integer, got string \"x\"".into())
        );
        // The root itself, by "#".
        let list = json!({
            "type": "object",
            "properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}}
        });
        assert!(passes(
            list.clone(),
            json!({"next": {"next": {"next": null}}})
        ));
        assert_eq!(
            violation_of(list, json!({"next": {"next": 5}})),
            Some(
                "$.next.next: value does not match any of the anyOf schemas \
                 (expected object, got number; expected null, got number)"
                    .into()
            )
        );
    }

    #[test]
    fn endless_ref_is_a_violation() {
        let schema = json!({"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"});
        let message = violation_of(schema, json!(1));
        assert!(
            message
                .as_deref()
                .is_some_and(|m| m.contains("nested more than 64 deep")),
            "{message:?}"
        );
        let self_ref = json!({"allOf": [{"$ref": "#"}]});
        assert!(!passes(self_ref, json!(1)));
    }

    #[test]
    fn boolean_schemas() {
        assert!(passes(json!(true), json!({"anything": [1, 2]})));
        assert_eq!(
            violation_of(json!(false), json!(1)),
            Some("$: no value is allowed here, got number".into())
        );
        let schema = json!({"properties": {"a": true, "b": false}});
        assert!(passes(schema.clone(), json!({"a": 1})));
        assert_eq!(
            violation_of(schema, json!({"b": 1})),
            Some("$.b: no value is allowed here, got number".into())
        );
        assert!(passes(json!({"items": false}), json!([])));
        assert!(!passes(json!({"items": false}), json!([1])));
    }

    #[test]
    fn openai_strict_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "Short title"},
                "summary": {"type": ["string", "null"]},
                "priority": {"type": "string", "enum": ["low", "medium", "high"]},
                "steps": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "explanation": {"type": "string"},
                            "output": {"type": "string"}
                        },
                        "required": ["explanation", "output"],
                        "additionalProperties": false
                    }
                },
                "score": {"anyOf": [{"type": "number"}, {"type": "null"}]}
            },
            "required": ["title", "summary", "priority", "steps", "score"],
            "additionalProperties": false
        });
        assert_eq!(check_schema_shape(&schema), Ok(()));
        let good = json!({
            "title": "Plan",
            "summary": null,
            "priority": "high",
            "steps": [{"explanation": "e", "output": "o"}],
            "score": 0.5
        });
        assert!(passes(schema.clone(), good.clone()));

        let mut missing = good.clone();
        if let Some(obj) = missing.as_object_mut() {
            obj.remove("summary");
        }
        assert_eq!(
            violation_of(schema.clone(), missing),
            Some("$: missing required property \"summary\"".into())
        );

        let mut extra = good.clone();
        extra["extra"] = json!(1);
        assert_eq!(
            violation_of(schema.clone(), extra),
            Some("$: property \"extra\" is not allowed".into())
        );

        let mut wrong_step = good.clone();
        wrong_step["steps"][0]["output"] = json!(null);
        assert_eq!(
            violation_of(schema.clone(), wrong_step),
            Some("$.steps[0].output: expected string, got null".into())
        );

        let mut wrong_summary = good;
        wrong_summary["summary"] = json!(3);
        assert_eq!(
            violation_of(schema, wrong_summary),
            Some("$.summary: expected string or null, got number".into())
        );
    }

    #[test]
    fn violation_display() {
        let v = SchemaViolation {
            path: "$.a".into(),
            message: "bad".into(),
        };
        assert_eq!(v.to_string(), "$.a: bad");
    }

    #[test]
    fn shape_accepts_good_schemas() {
        assert_eq!(check_schema_shape(&json!(true)), Ok(()));
        assert_eq!(check_schema_shape(&json!(false)), Ok(()));
        assert_eq!(check_schema_shape(&json!({})), Ok(()));
        assert_eq!(
            check_schema_shape(&json!({
                "type": ["object", "null"],
                "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"items": {"type": "integer"}}},
                "required": ["a"],
                "$defs": {"A": {"type": "string", "maxLength": 5}},
                "pattern": 12
            })),
            Ok(())
        );
    }

    #[test]
    fn shape_refuses_bad_schemas() {
        assert_eq!(
            check_schema_shape(&json!("string")),
            Err("schema: must be a JSON object or a boolean, got string \"string\"".into())
        );
        assert_eq!(
            check_schema_shape(&json!({"type": "int"})),
            Err("schema: unknown type string \"int\" in \"type\" \
                 (known: object, array, string, number, integer, boolean, null)"
                .into())
        );
        assert_eq!(
            check_schema_shape(&json!({"type": 3})),
            Err(
                "schema: \"type\" must be a type name or a non-empty array of type names, \
                 got number"
                    .into()
            )
        );
        assert!(check_schema_shape(&json!({"type": ["string", 1]})).is_err());
        assert!(check_schema_shape(&json!({"type": []})).is_err());
        assert_eq!(
            check_schema_shape(&json!({"properties": []})),
            Err("schema: \"properties\" must be an object, got array".into())
        );
        assert_eq!(
            check_schema_shape(&json!({"required": "name"})),
            Err("schema: \"required\" must be an array of strings, got string \"name\"".into())
        );
        assert!(check_schema_shape(&json!({"required": ["a", 1]})).is_err());
        assert_eq!(
            check_schema_shape(&json!({"properties": {"a/b": {"type": "text"}}})),
            Err(
                "schema at #/properties/a~1b: unknown type string \"text\" in \"type\" \
                 (known: object, array, string, number, integer, boolean, null)"
                    .into()
            )
        );
        assert_eq!(
            check_schema_shape(&json!({"items": {"anyOf": [{}, 5]}})),
            Err("schema at #/items/anyOf/1: must be a JSON object or a boolean, got number".into())
        );
        assert_eq!(
            check_schema_shape(&json!({"prefixItems": [{"type": "string"}, 5]})),
            Err("schema at #/prefixItems/1: must be a JSON object or a boolean, got number".into())
        );
        assert!(check_schema_shape(&json!({"prefixItems": {"type": "string"}})).is_err());
        assert!(check_schema_shape(&json!({"$ref": "#/$defs/Nope"})).is_err());
        assert!(check_schema_shape(&json!({"minLength": -1})).is_err());
        assert!(check_schema_shape(&json!({"minimum": "3"})).is_err());
        assert!(check_schema_shape(&json!({"enum": "a"})).is_err());
        assert!(check_schema_shape(&json!({"anyOf": []})).is_err());
    }

    #[test]
    fn shape_depth_is_limited() {
        let mut schema = json!({"type": "string"});
        for _ in 0..100 {
            schema = json!({"items": schema});
        }
        assert!(check_schema_shape(&schema).is_err());
    }
}
