//! The JSON of a [`RunState`], written and read by hand: the text `serde`'s derive wrote (the
//! fields in declaration order, compact), and the same states accepted. Through the JSON
//! `Value` only, which the module has anyway: the derived code (a visitor per struct, the
//! buffering of the internally tagged `Decision`, the deserializer instantiated for each) was a
//! tenth of the runner module. The tests check both against the derive.

use crate::core::json::{self as json, Map, Value};

use super::{Decision, Decisions, FilteredInput, RunState};
use crate::core::wire::Usage;

/// Appends the fields of one JSON object, in the order given.
struct Object<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Object<'a> {
    fn new(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Object { out, first: true }
    }

    fn key(&mut self, key: &str) -> &mut Vec<u8> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        write_value(self.out, &Value::from(key));
        self.out.push(b':');
        self.out
    }

    fn value(&mut self, key: &str, value: &Value) {
        write_value(self.key(key), value);
    }

    fn number(&mut self, key: &str, n: u64) {
        self.value(key, &Value::from(n));
    }

    fn string(&mut self, key: &str, s: Option<&str>) {
        self.value(key, &s.map_or(Value::Null, Value::from));
    }

    fn list(&mut self, key: &str, items: &[Value]) {
        let out = self.key(key);
        out.push(b'[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_value(out, item);
        }
        out.push(b']');
    }

    fn end(self) {
        self.out.push(b'}');
    }
}

fn write_value(out: &mut Vec<u8>, value: &Value) {
    out.extend_from_slice(json::to_string(value).as_bytes());
}

fn write_usage(out: &mut Vec<u8>, u: &Usage) {
    let mut o = Object::new(out);
    o.number("requests", u.requests);
    o.number("inputTokens", u.input_tokens);
    o.number("outputTokens", u.output_tokens);
    o.number("totalTokens", u.total_tokens);
    o.end();
}

pub fn to_json(s: &RunState) -> String {
    let mut out = Vec::with_capacity(256);
    let mut o = Object::new(&mut out);
    o.number("version", s.version.into());
    o.string("agentName", Some(&s.agent_name));
    o.list("input", &s.input);
    o.list("modelInput", &s.model_input);
    o.list("turnInput", &s.turn_input);
    o.value("inputSaved", &s.input_saved.into());
    o.list("generated", &s.generated);
    o.number("saved", s.saved as u64);
    o.number("turns", s.turns.into());
    o.number("maxTurns", s.max_turns.into());
    write_usage(o.key("usage"), &s.usage);
    write_usage(o.key("usageStored"), &s.usage_stored);
    o.string("lastResponseId", s.last_response_id.as_deref());
    o.string("conversationId", s.conversation_id.as_deref());
    o.string("previousResponseId", s.previous_response_id.as_deref());
    o.string("finalOutput", s.final_output.as_deref());
    let decisions = o.key("decisions");
    let mut d = Object::new(decisions);
    for (id, decision) in s.decisions.iter() {
        let mut e = Object::new(d.key(id));
        match decision {
            Decision::Approved => e.string("decision", Some("approved")),
            Decision::Rejected { message } => {
                e.string("decision", Some("rejected"));
                e.string("message", message.as_deref());
            }
        }
        e.end();
    }
    d.end();
    o.string("runId", Some(&s.run_id));
    o.number("saves", s.saves);
    o.value("lastSaved", s.last_saved.as_ref().unwrap_or(&Value::Null));
    o.string("currentAgent", s.current_agent.as_deref());
    let calls: Vec<Value> = s.handoff_calls.iter().map(|c| c.as_str().into()).collect();
    o.list("handoffCalls", &calls);
    match &s.filtered {
        None => o.value("filtered", &Value::Null),
        Some(f) => {
            let mut fo = Object::new(o.key("filtered"));
            fo.list("items", &f.items);
            fo.number("from", f.from as u64);
            fo.end();
        }
    }
    o.value("finalJson", s.final_json.as_ref().unwrap_or(&Value::Null));
    let tools: Vec<Value> = s.tools_used.iter().map(|c| c.as_str().into()).collect();
    o.list("toolsUsed", &tools);
    o.number("responseAt", s.response_at as u64);
    o.value("finalFromTool", &s.final_from_tool.into());
    o.value("sessionSaved", &s.session_saved.into());
    o.end();
    // Only `Value`s and ASCII were written.
    String::from_utf8(out).unwrap_or_default()
}

type Result<T> = std::result::Result<T, String>;

/// The fields of one JSON object, taken as they are read.
struct Fields(Map);

impl Fields {
    fn of(value: Value, what: &str) -> Result<Self> {
        match value {
            Value::Object(map) => Ok(Fields(map)),
            other => Err(format!("invalid type: {}, expected {what}", kind(&other))),
        }
    }

    /// An `Option` field: missing or null is `None`.
    fn optional(&mut self, key: &str) -> Option<Value> {
        self.0.remove(key).filter(|v| !v.is_null())
    }

    /// A field with a default: missing is the default (null is not).
    fn defaulted(&mut self, key: &str) -> Option<Value> {
        self.0.remove(key)
    }

    fn required(&mut self, key: &str) -> Result<Value> {
        self.0
            .remove(key)
            .ok_or_else(|| format!("missing field `{key}`"))
    }

    fn number(&mut self, key: &str, max: u64) -> Result<u64> {
        number(self.required(key)?, key, max)
    }

    fn string(&mut self, key: &str) -> Result<String> {
        string(self.required(key)?, key)
    }

    fn list(&mut self, key: &str) -> Result<Vec<Value>> {
        list(self.required(key)?, key)
    }

    fn boolean(&mut self, key: &str) -> Result<bool> {
        match self.required(key)? {
            Value::Bool(b) => Ok(b),
            other => Err(mismatch(&other, key, "a boolean")),
        }
    }

    fn optional_string(&mut self, key: &str) -> Result<Option<String>> {
        self.optional(key).map(|v| string(v, key)).transpose()
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn mismatch(value: &Value, key: &str, expected: &str) -> String {
    format!(
        "invalid type: {} for `{key}`, expected {expected}",
        kind(value)
    )
}

fn number(value: Value, key: &str, max: u64) -> Result<u64> {
    value
        .as_u64()
        .filter(|n| *n <= max)
        .ok_or_else(|| mismatch(&value, key, "a whole number in range"))
}

fn string(value: Value, key: &str) -> Result<String> {
    match value {
        Value::String(s) => Ok(s),
        other => Err(mismatch(&other, key, "a string")),
    }
}

fn list(value: Value, key: &str) -> Result<Vec<Value>> {
    match value {
        Value::Array(items) => Ok(items),
        other => Err(mismatch(&other, key, "an array")),
    }
}

fn strings(value: Option<Value>, key: &str) -> Result<Vec<String>> {
    value
        .map_or(Ok(Vec::new()), |v| list(v, key))?
        .into_iter()
        .map(|s| string(s, key))
        .collect()
}

const U32: u64 = u32::MAX as u64;
const USIZE: u64 = usize::MAX as u64;

fn usage(value: Value) -> Result<Usage> {
    let mut f = Fields::of(value, "the usage")?;
    Ok(Usage {
        requests: f.number("requests", u64::MAX)?,
        input_tokens: f.number("inputTokens", u64::MAX)?,
        output_tokens: f.number("outputTokens", u64::MAX)?,
        total_tokens: f.number("totalTokens", u64::MAX)?,
    })
}

fn decision(value: Value) -> Result<Decision> {
    let mut f = Fields::of(value, "a decision")?;
    match f.string("decision")?.as_str() {
        "approved" => Ok(Decision::Approved),
        "rejected" => Ok(Decision::Rejected {
            message: f.optional_string("message")?,
        }),
        other => Err(format!(
            "unknown variant `{other}`, expected `approved` or `rejected`"
        )),
    }
}

pub fn from_value(value: Value) -> Result<RunState> {
    let mut f = Fields::of(value, "a run state")?;
    let mut decisions = Decisions::default();
    for (id, d) in Fields::of(f.required("decisions")?, "the decisions")?.0 {
        decisions.insert(id, decision(d)?);
    }
    let filtered = match f.optional("filtered") {
        None => None,
        Some(v) => {
            let mut fi = Fields::of(v, "the filtered input")?;
            Some(FilteredInput {
                items: fi.list("items")?,
                from: fi.number("from", USIZE)? as usize,
            })
        }
    };
    Ok(RunState {
        version: f.number("version", U32)? as u32,
        agent_name: f.string("agentName")?,
        input: f.list("input")?,
        model_input: f.list("modelInput")?,
        turn_input: f.list("turnInput")?,
        input_saved: f.boolean("inputSaved")?,
        generated: f.list("generated")?,
        saved: f.number("saved", USIZE)? as usize,
        turns: f.number("turns", U32)? as u32,
        max_turns: f.number("maxTurns", U32)? as u32,
        usage: usage(f.required("usage")?)?,
        usage_stored: f
            .defaulted("usageStored")
            .map_or(Ok(Usage::default()), usage)?,
        last_response_id: f.optional_string("lastResponseId")?,
        conversation_id: f.optional_string("conversationId")?,
        previous_response_id: f.optional_string("previousResponseId")?,
        final_output: f.optional_string("finalOutput")?,
        decisions,
        run_id: f
            .defaulted("runId")
            .map_or(Ok(String::new()), |v| string(v, "runId"))?,
        saves: f
            .defaulted("saves")
            .map_or(Ok(0), |v| number(v, "saves", u64::MAX))?,
        last_saved: f.optional("lastSaved"),
        current_agent: f.optional_string("currentAgent")?,
        handoff_calls: strings(f.defaulted("handoffCalls"), "handoffCalls")?,
        filtered,
        final_json: f.optional("finalJson"),
        tools_used: strings(f.defaulted("toolsUsed"), "toolsUsed")?,
        response_at: f
            .defaulted("responseAt")
            .map_or(Ok(0), |v| number(v, "responseAt", USIZE))? as usize,
        final_from_tool: match f.defaulted("finalFromTool") {
            None => false,
            Some(Value::Bool(b)) => b,
            Some(other) => return Err(mismatch(&other, "finalFromTool", "a boolean")),
        },
        // Absent from states written before it was kept: not known, not checked.
        session_saved: match f.defaulted("sessionSaved") {
            None => false,
            Some(Value::Bool(b)) => b,
            Some(other) => return Err(mismatch(&other, "sessionSaved", "a boolean")),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::json::json;
    use crate::core::run::fixtures::{answer, call, state, user};

    fn states() -> Vec<RunState> {
        let plain = state();
        let mut full = state();
        full.generated = vec![call("c"), answer("done \"quoted\" é \u{1F600} \n")];
        full.saved = 1;
        full.turns = 2;
        full.usage = Usage {
            requests: 2,
            input_tokens: 10,
            output_tokens: u64::MAX,
            total_tokens: 7,
        };
        full.usage_stored = Usage {
            requests: 1,
            input_tokens: 4,
            output_tokens: 2,
            total_tokens: 6,
        };
        full.last_response_id = Some("resp_1".into());
        full.conversation_id = Some("conv_1".into());
        full.previous_response_id = Some("resp_0".into());
        full.final_output = Some("done".into());
        // Out of id order, and one replaced: written in id order, the last decision kept.
        full.decisions.insert("e".into(), Decision::Approved);
        full.decisions.insert("c".into(), Decision::Approved);
        full.decisions.insert(
            "d \"x\"\u{7}".into(),
            Decision::Rejected {
                message: Some("no".into()),
            },
        );
        full.decisions
            .insert("e".into(), Decision::Rejected { message: None });
        full.run_id = "run-1".into();
        full.saves = 3;
        full.last_saved = Some(user("q"));
        full.current_agent = Some("billing".into());
        full.handoff_calls = vec!["h1".into(), "h\"2".into()];
        full.filtered = Some(FilteredInput {
            items: vec![user("f")],
            from: 1,
        });
        full.final_json = Some(json!({"b": 1, "a": [1.5, null, true]}));
        full.tools_used = vec!["agent".into()];
        full.response_at = 1;
        full.final_from_tool = true;
        full.session_saved = true;
        let mut null_json = state();
        null_json.final_json = Some(Value::Null);
        vec![plain, full, null_json]
    }

    #[test]
    fn writes_what_the_derive_wrote() {
        for s in states() {
            assert_eq!(to_json(&s), serde_json::to_string(&s).unwrap());
        }
    }

    fn derived(text: &str) -> Option<RunState> {
        serde_json::from_str::<RunState>(text).ok()
    }

    fn by_hand(text: &str) -> Option<RunState> {
        from_value(json::from_str(text).ok()?).ok()
    }

    #[test]
    fn reads_what_the_derive_read() {
        let full = json::from_str(&serde_json::to_string(&states()[1]).unwrap()).unwrap();
        let mut texts = vec![full.to_string(), "{}".into(), "[]".into(), "null".into()];
        let Value::Object(map) = &full else {
            unreachable!()
        };
        let replacements = [
            Value::Null,
            json!(true),
            json!(0),
            json!(-1),
            json!(1.0),
            json!(4294967296u64),
            json!(u64::MAX),
            json!("s"),
            json!([]),
            json!(["s"]),
            json!([1]),
            json!({}),
            json!({"decision": "approved"}),
            json!({"requests": 1, "inputTokens": 2, "outputTokens": 3, "totalTokens": 4}),
            json!({"items": [], "from": 0}),
            json!({"items": [], "from": -1}),
            json!({"items": []}),
        ];
        for key in map.keys() {
            let mut without = map.clone();
            without.remove(key);
            texts.push(Value::Object(without).to_string());
            for r in &replacements {
                let mut changed = map.clone();
                changed.insert(key.clone(), r.clone());
                texts.push(Value::Object(changed).to_string());
            }
        }
        let decisions = [
            json!({"decision": "approved", "extra": 1}),
            json!({"decision": "rejected"}),
            json!({"decision": "rejected", "message": null}),
            json!({"decision": "rejected", "message": 5}),
            json!({"decision": "maybe"}),
            json!({"decision": 1}),
            json!({"message": "no"}),
            json!("approved"),
        ];
        for d in decisions {
            let mut changed = map.clone();
            changed.insert("decisions".into(), json!({ "c": d }));
            texts.push(Value::Object(changed).to_string());
        }
        let mut extra = map.clone();
        extra.insert("unknown".into(), json!(1));
        texts.push(Value::Object(extra).to_string());
        for text in &texts {
            assert_eq!(by_hand(text), derived(text), "{text}");
        }
    }
}
