//! Reads the JS arguments of the runner (`new Agent(...)`, `new Runner(...)`, `run(...)`
//! options, the run input) into the backend's types, and turns run errors into JS errors.

use crate::core::json::{Number, Value};
use js_sys::Object;
use wasm_bindgen::{JsCast, JsValue};

use crate::core::compaction::Strategy;
use crate::core::history::Window;
use crate::core::json_schema::check_schema_shape;
use crate::core::run::http::{header_name_problem, header_value_problem};
use crate::core::run::metadata::{MetadataOptions, PartialMetadataOptions};
use crate::core::run::{input_items_from_text, RunState, ServerConversation, DEFAULT_MAX_TURNS};
use crate::core::wire::{unsendable, Api, ModelSettings, OutputType, ToolSpec};

use super::args::{field, optional_string, take_items, take_limit, take_options};
use super::compaction::Compactor;
use super::js::{self, describe, error_text, js_to_json};
use super::model::ModelClient;
use super::runner::{AgentSpec, Guardrail, Handoff, RunInput, RunOptions, Tool, ToolUse};
use crate::core::error::{RunnerError, RunnerErrorCode, SessionError, SessionErrorCode};

type Result<T> = std::result::Result<T, RunnerError>;

fn invalid(code: RunnerErrorCode, message: String) -> RunnerError {
    RunnerError::new(code, message)
}

/// The SDK's options of `run()` (and of its `Runner`, for every run) this runner does not
/// implement (`callModelInputFilter` is refused on a `Runner` as another of its options).
const SDK_RUN_OPTIONS: [&str; 10] = [
    "callModelInputFilter",
    "errorHandlers",
    "toolErrorFormatter",
    "toolNotFoundBehavior",
    "toolNameCollisionPolicy",
    "outputGuardrailBlockedMessage",
    "reasoningItemIdPolicy",
    "toolExecution",
    "sandbox",
    "modelProvider",
];

/// Whether an option of the SDK's this runner does not implement asks for nothing it does not
/// do: `null` (none), `true` for `isEnabled`, no guardrails or servers, and what this runner
/// does anyway: the SDK's default policy for reasoning ids, a tool not found answered to the
/// model, tools of one name refused.
fn not_needed(key: &str, given: &JsValue) -> bool {
    let named = |value: &str| given.as_string().as_deref() == Some(value);
    given.is_null()
        || (key == "isEnabled" && given.as_bool() == Some(true))
        || (key == "reasoningItemIdPolicy" && named("preserve"))
        || (key == "toolNotFoundBehavior" && named("return_error_to_model"))
        || (key == "toolNameCollisionPolicy" && named("error"))
        || (matches!(key, "inputGuardrails" | "outputGuardrails" | "mcpServers")
            && js::is_array(given).unwrap_or(false)
            && js::elements(given).is_ok_and(|e| e.is_empty()))
}

/// The refusal of `what.key`, an option of the SDK's `of` this runner does not implement: given,
/// it would be ignored (a disabled tool offered and run, a guardrail that never runs).
fn sdk_option(what: &str, key: &str, of: &str) -> String {
    format!("{what}.{key}, an option of the SDK's {of}, is not implemented by this runner: it would be ignored")
}

/// The first of `keys` given in `o` (not `undefined`, nor a value `taken` accepts) is refused
/// with `message(key)`: an option this runner does not implement is an error, not dropped without
/// a word.
fn refuse_given(
    o: &Option<Object>,
    keys: &[&'static str],
    what: &str,
    code: RunnerErrorCode,
    taken: impl Fn(&str, &JsValue) -> bool,
    message: impl Fn(&str) -> String,
) -> Result<()> {
    for &key in keys {
        let given = get(o, key, what, code)?;
        if !given.is_undefined() && !taken(key, &given) {
            return Err(invalid(code, message(key)));
        }
    }
    Ok(())
}

/// A value check shared with the sessions, reported with the runner's `code`.
fn recode(code: RunnerErrorCode) -> impl Fn(SessionError) -> RunnerError {
    move |e| RunnerError::new(code, e.message)
}

fn options(value: &JsValue, what: &str, code: RunnerErrorCode) -> Result<Option<Object>> {
    take_options(value, what).map_err(recode(code))
}

/// `o[key]` of the options named `what`.
fn get(
    o: &Option<Object>,
    key: &'static str,
    what: &str,
    code: RunnerErrorCode,
) -> Result<JsValue> {
    field(o, what, key).map_err(recode(code))
}

/// The error for a value whose reading threw.
fn threw(code: RunnerErrorCode, what: &str, thrown: &JsValue) -> RunnerError {
    invalid(
        code,
        format!("{what} threw when it was read ({})", error_text(thrown)),
    )
}

fn opt_string(
    o: &Option<Object>,
    key: &'static str,
    what: &str,
    code: RunnerErrorCode,
) -> Result<Option<String>> {
    optional_string(
        &get(o, key, what, code)?,
        &format!("{what}.{key}"),
        SessionErrorCode::InvalidOptions,
    )
    .map_err(recode(code))
}

fn opt_number(
    o: &Option<Object>,
    key: &'static str,
    what: &str,
    code: RunnerErrorCode,
) -> Result<Option<f64>> {
    let v = get(o, key, what, code)?;
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    v.as_f64()
        .filter(|n| n.is_finite())
        .map(Some)
        .ok_or_else(|| {
            invalid(
                code,
                format!("{what}.{key} must be a number, got {}", describe(&v)),
            )
        })
}

/// A finite number option as JSON number text, written as JavaScript writes it (`String(n)`).
fn opt_json_number(
    o: &Option<Object>,
    key: &'static str,
    what: &str,
    code: RunnerErrorCode,
) -> Result<Option<Number>> {
    Ok(opt_number(o, key, what, code)?.and_then(|n| Number::from_text(&js::number_text(n))))
}

/// The model settings an agent takes (the SDK's names).
const MODEL_SETTINGS: [&str; 13] = [
    "temperature",
    "topP",
    "maxTokens",
    "parallelToolCalls",
    "toolChoice",
    "frequencyPenalty",
    "presencePenalty",
    "store",
    "reasoning",
    "text",
    "truncation",
    "promptCacheRetention",
    "providerData",
];

/// `o[key]` of the settings named `settings` (`agent.modelSettings`), an object, as JSON.
fn opt_json_object(
    o: &Option<Object>,
    key: &'static str,
    settings: &str,
    code: RunnerErrorCode,
) -> Result<Option<crate::core::json::Map>> {
    let what = format!("{settings}.{key}");
    let v = get(o, key, settings, code)?;
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    match js_to_json(&v, &what).map_err(|m| invalid(code, m))? {
        Value::Object(map) => Ok(Some(map)),
        _ => Err(invalid(
            code,
            format!("{what} must be an object, got {}", describe(&v)),
        )),
    }
}

fn opt_count(
    o: &Option<Object>,
    key: &'static str,
    what: &str,
    code: RunnerErrorCode,
) -> Result<Option<u32>> {
    match opt_number(o, key, what, code)? {
        None => Ok(None),
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= u32::MAX as f64 => Ok(Some(n as u32)),
        Some(n) => Err(invalid(
            code,
            format!(
                "{what}.{key} must be a whole number >= 0, got {}",
                js::number_text(n)
            ),
        )),
    }
}

fn opt_function(
    o: &Option<Object>,
    key: &'static str,
    what: &str,
    code: RunnerErrorCode,
) -> Result<Option<js_sys::Function>> {
    let v = get(o, key, what, code)?;
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    if !v.is_function() {
        return Err(invalid(
            code,
            format!("{what}.{key} must be a function, got {}", describe(&v)),
        ));
    }
    Ok(Some(v.unchecked_into()))
}

/// `agent.modelSettings`, where a setting this runner does not send is refused.
fn model_settings(value: &JsValue) -> Result<ModelSettings> {
    let c = RunnerErrorCode::InvalidAgent;
    let m = "agent.modelSettings";
    let s = options(value, m, c)?;
    // A setting this runner does not send is refused, not dropped without a word (a typo, or
    // one of the SDK's it has no field for: `providerData` sends anything the API takes).
    if let Some(given) = &s {
        for key in js::keys(given).map_err(|e| threw(c, m, &e))? {
            // (A key given as `undefined`, by a spread of defaults say, is no setting.)
            let unset = js::get_named(given, &key).is_ok_and(|v| v.is_undefined());
            if !unset && !MODEL_SETTINGS.contains(&key.as_str()) {
                return Err(invalid(
                    c,
                    format!(
                        "{m}.{key} is not a setting this runner takes (see the README); \
                         a field of the API's request goes in {m}.providerData"
                    ),
                ));
            }
        }
    }
    let text = get(&s, "text", m, c)?;
    let text = options(&text, &format!("{m}.text"), c)?;
    Ok(ModelSettings {
        temperature: opt_json_number(&s, "temperature", m, c)?,
        top_p: opt_json_number(&s, "topP", m, c)?,
        max_tokens: opt_count(&s, "maxTokens", m, c)?.map(u64::from),
        parallel_tool_calls: opt_bool(&s, "parallelToolCalls", m, c)?,
        tool_choice: opt_string(&s, "toolChoice", m, c)?,
        frequency_penalty: opt_json_number(&s, "frequencyPenalty", m, c)?,
        presence_penalty: opt_json_number(&s, "presencePenalty", m, c)?,
        store: opt_bool(&s, "store", m, c)?,
        reasoning: opt_json_object(&s, "reasoning", m, c)?,
        verbosity: opt_string(&text, "verbosity", &format!("{m}.text"), c)?,
        truncation: opt_string(&s, "truncation", m, c)?,
        prompt_cache_retention: opt_string(&s, "promptCacheRetention", m, c)?,
        provider_data: opt_json_object(&s, "providerData", m, c)?,
    })
}

/// `new Agent({ name, instructions?, model?, modelSettings?, tools? })`.
pub fn parse_agent(value: &JsValue) -> Result<AgentSpec> {
    const C: RunnerErrorCode = RunnerErrorCode::InvalidAgent;
    let o = options(value, "agent options", C)?;
    if o.is_none() {
        return Err(invalid(
            C,
            "new Agent() needs an options object with a name".into(),
        ));
    }
    let name = opt_string(&o, "name", "agent", C)?
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| invalid(C, "agent.name must be a non-empty string".into()))?;
    refuse_given(
        &o,
        &["prompt", "mcpServers"],
        "agent",
        C,
        not_needed,
        |key| sdk_option("agent", key, "Agent"),
    )?;
    let settings = model_settings(&get(&o, "modelSettings", "agent", C)?)?;
    let tools_value = get(&o, "tools", "agent", C)?;
    let mut tools = Vec::new();
    if !tools_value.is_undefined() && !tools_value.is_null() {
        if !js::is_array(&tools_value).map_err(|e| threw(C, "agent.tools", &e))? {
            return Err(invalid(
                C,
                format!(
                    "agent.tools must be an array, got {}",
                    describe(&tools_value)
                ),
            ));
        }
        let elements = js::elements(&tools_value).map_err(|e| threw(C, "agent.tools", &e))?;
        for (i, t) in elements.iter().enumerate() {
            tools.push(parse_tool(t, &format!("agent.tools[{i}]"))?);
        }
        for (i, t) in tools.iter().enumerate() {
            if tools[..i].iter().any(|u| u.spec.name == t.spec.name) {
                return Err(invalid(
                    C,
                    format!("agent.tools has two tools named \"{}\"", t.spec.name),
                ));
            }
        }
    }
    let metadata = parse_metadata(&o, "agent", C)?;
    let instructions = get(&o, "instructions", "agent", C)?;
    let (instructions, instructions_fn) = if instructions.is_function() {
        (None, Some(instructions.unchecked_into()))
    } else {
        (opt_string(&o, "instructions", "agent", C)?, None)
    };
    Ok(AgentSpec {
        name,
        instructions,
        instructions_fn,
        handoff_description: opt_string(&o, "handoffDescription", "agent", C)?,
        model: opt_string(&o, "model", "agent", C)?,
        settings,
        tools,
        metadata: MetadataOptions::default().over(metadata),
        output_type: parse_output_type(&get(&o, "outputType", "agent", C)?)?,
        input_guardrails: parse_guardrails(&o, "inputGuardrails")?,
        output_guardrails: parse_guardrails(&o, "outputGuardrails")?,
        tool_use: parse_tool_use(&get(&o, "toolUseBehavior", "agent", C)?)?,
        reset_tool_choice: opt_bool(&o, "resetToolChoice", "agent", C)?.unwrap_or(true),
        handoffs: Default::default(),
    })
}

/// `outputType`: `'text'` (the default) or `{ type: 'json_schema', name, schema, strict? }`.
fn parse_output_type(value: &JsValue) -> Result<Option<OutputType>> {
    const C: RunnerErrorCode = RunnerErrorCode::InvalidAgent;
    const WHAT: &str = "agent.outputType";
    if value.is_undefined() || value.is_null() || value.as_string().as_deref() == Some("text") {
        return Ok(None);
    }
    let o = options(value, WHAT, C)?;
    let kind = opt_string(&o, "type", WHAT, C)?;
    if kind.as_deref() != Some("json_schema") {
        return Err(invalid(
            C,
            format!(
                "{WHAT} must be 'text' or {{ type: 'json_schema', name, schema, strict }}, got {}",
                describe(value)
            ),
        ));
    }
    let schema = get(&o, "schema", WHAT, C)?;
    if !schema.is_object() {
        return Err(invalid(
            C,
            format!(
                "{WHAT}.schema must be a JSON schema object, got {}",
                describe(&schema)
            ),
        ));
    }
    let schema = js_to_json(&schema, "agent.outputType.schema").map_err(|m| invalid(C, m))?;
    check_schema_shape(&schema).map_err(|m| invalid(C, format!("{WHAT}.schema: {m}")))?;
    let name = opt_string(&o, "name", WHAT, C)?
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| "final_output".into());
    // (The API refuses another name in every request, after the question was saved.)
    api_name(&name, "agent.outputType.name")?;
    Ok(Some(OutputType {
        name,
        schema,
        strict: opt_bool(&o, "strict", WHAT, C)?.unwrap_or(true),
    }))
}

/// `inputGuardrails` / `outputGuardrails`: arrays of `{ name, execute }`.
fn parse_guardrails(o: &Option<Object>, key: &'static str) -> Result<Vec<Guardrail>> {
    const C: RunnerErrorCode = RunnerErrorCode::InvalidAgent;
    let what = format!("agent.{key}");
    let list = get(o, key, "agent", C)?;
    if list.is_undefined() || list.is_null() {
        return Ok(Vec::new());
    }
    if !js::is_array(&list).map_err(|e| threw(C, &what, &e))? {
        return Err(invalid(
            C,
            format!("{what} must be an array, got {}", describe(&list)),
        ));
    }
    let elements = js::elements(&list).map_err(|e| threw(C, &what, &e))?;
    elements
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let what = format!("{what}[{i}]");
            let go = options(g, &what, C)?;
            let name = opt_string(&go, "name", &what, C)?
                .filter(|n| !n.is_empty())
                .ok_or_else(|| invalid(C, format!("{what}.name must be a non-empty string")))?;
            let execute = opt_function(&go, "execute", &what, C)?
                .ok_or_else(|| invalid(C, format!("{what}.execute must be a function")))?;
            Ok(Guardrail {
                name,
                execute,
                object: g.clone(),
            })
        })
        .collect()
}

/// `toolUseBehavior`: `'run_llm_again'` (the default), `'stop_on_first_tool'` or
/// `{ stopAtToolNames }`.
fn parse_tool_use(value: &JsValue) -> Result<ToolUse> {
    const C: RunnerErrorCode = RunnerErrorCode::InvalidAgent;
    const WHAT: &str = "agent.toolUseBehavior";
    if value.is_undefined() || value.is_null() {
        return Ok(ToolUse::RunLlmAgain);
    }
    match value.as_string().as_deref() {
        Some("run_llm_again") => return Ok(ToolUse::RunLlmAgain),
        Some("stop_on_first_tool") => return Ok(ToolUse::StopOnFirstTool),
        _ => {}
    }
    let o = match value.is_object() {
        true => options(value, WHAT, C)?,
        false => None,
    };
    let names = get(&o, "stopAtToolNames", WHAT, C)?;
    let list = match js::is_array(&names) {
        Ok(true) => js::elements(&names).map_err(|e| threw(C, WHAT, &e))?,
        _ => {
            return Err(invalid(
                C,
                format!(
                    "{WHAT} must be 'run_llm_again', 'stop_on_first_tool' or {{ stopAtToolNames: [...] }}, got {}",
                    describe(value)
                ),
            ))
        }
    };
    let names = list
        .iter()
        .map(|n| {
            n.as_string().ok_or_else(|| {
                invalid(
                    C,
                    format!(
                        "{WHAT}.stopAtToolNames must hold tool names, got {}",
                        describe(n)
                    ),
                )
            })
        })
        .collect::<Result<Vec<String>>>()?;
    Ok(ToolUse::StopAt(names))
}

/// The tool name of a handoff to `agent` when none is given: `transfer_to_` and the name with
/// every UTF-16 unit but ASCII letters and digits made `_`, as the SDK names it (its pattern has
/// no `u` flag: an emoji is two).
fn handoff_tool_name(agent: &str) -> String {
    let name: String = agent
        .encode_utf16()
        .map(|u| match u8::try_from(u) {
            Ok(b) if b.is_ascii_alphanumeric() => b as char,
            _ => '_',
        })
        .collect();
    format!("transfer_to_{name}")
}

/// Refuses a tool name (`what`) the API refuses in every request (HTTP 400, once the question
/// was saved): 1 to 64 ASCII letters, digits, `_` or `-`.
fn api_name(name: &str, what: &str) -> Result<()> {
    match name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        true => Ok(()),
        false => Err(invalid(
            RunnerErrorCode::InvalidAgent,
            format!("{what} must be 1 to 64 ASCII letters, digits, _ or -, as the API takes it, got \"{name}\""),
        )),
    }
}

/// One handoff of `agent` to `target` (`object`, its JS `Agent`), with the options of a
/// `{ agent, toolName?, toolDescription?, inputFilter? }` entry (`undefined` for a bare Agent).
pub fn parse_handoff(
    agent: &AgentSpec,
    target: std::rc::Rc<AgentSpec>,
    object: JsValue,
    value: &JsValue,
    index: usize,
) -> Result<Handoff> {
    const C: RunnerErrorCode = RunnerErrorCode::InvalidAgent;
    let what = format!("agent.handoffs[{index}]");
    let o = match value.is_object() {
        true => options(value, &what, C)?,
        false => None,
    };
    // An object of the SDK's `handoff()` (its `onInvokeHandoff` says so) always has an
    // `isEnabled` function, true unless told (its `onHandoff` and `inputType` are in
    // `onInvokeHandoff`): taken as before, its `toolName`, `toolDescription` and `inputFilter`.
    let keys: &[&'static str] = match js::has_method(value, "onInvokeHandoff") {
        true => &[],
        false => &["onHandoff", "inputType", "isEnabled"],
    };
    refuse_given(&o, keys, &what, C, not_needed, |key| {
        sdk_option(&what, key, "handoff()")
    })?;
    // (Or under the names of the SDK's handoff() options.)
    let name = opt_string(&o, "toolName", &what, C)?
        .or(opt_string(&o, "toolNameOverride", &what, C)?)
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| handoff_tool_name(&target.name));
    // (A long agent name makes a default name too long: give a toolName.)
    api_name(&name, &format!("{what}'s tool name"))?;
    let description = opt_string(&o, "toolDescription", &what, C)?
        .or(opt_string(&o, "toolDescriptionOverride", &what, C)?)
        .unwrap_or_else(|| {
            format!(
                "Handoff to the {} agent to handle the request. {}",
                target.name,
                target.handoff_description.as_deref().unwrap_or("")
            )
        });
    let taken = agent.tools.iter().any(|t| t.spec.name == name)
        || agent.handoffs.borrow().iter().any(|h| h.tool.name == name);
    if taken {
        return Err(invalid(
            C,
            format!(
                "{what}: agent \"{}\" already has a tool or handoff named \"{name}\" (give this one a toolName)",
                agent.name
            ),
        ));
    }
    Ok(Handoff {
        target,
        object,
        tool: ToolSpec {
            name,
            description,
            parameters: crate::core::json::json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false}),
            strict: false,
        },
        input_filter: opt_function(&o, "inputFilter", &what, C)?,
    })
}

fn opt_bool(
    o: &Option<Object>,
    key: &'static str,
    what: &str,
    code: RunnerErrorCode,
) -> Result<Option<bool>> {
    let v = get(o, key, what, code)?;
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    v.as_bool().map(Some).ok_or_else(|| {
        invalid(
            code,
            format!("{what}.{key} must be a boolean, got {}", describe(&v)),
        )
    })
}

/// `summaries` (`true`, `false`, or `{ everyTurns }`), `addSummaryToContext`, `autoTitle`,
/// `addStateToContext`, `agenticState`, as an agent's or a run's options give them.
fn parse_metadata(
    o: &Option<Object>,
    what: &str,
    code: RunnerErrorCode,
) -> Result<PartialMetadataOptions> {
    let summaries = get(o, "summaries", what, code)?;
    let summary_every = if summaries.is_undefined() || summaries.is_null() {
        None
    } else if let Some(on) = summaries.as_bool() {
        Some(on.then_some(1))
    } else {
        let s = options(&summaries, &format!("{what}.summaries"), code)?;
        let every = opt_count(&s, "everyTurns", &format!("{what}.summaries"), code)?.unwrap_or(1);
        if every == 0 {
            return Err(invalid(
                code,
                format!("{what}.summaries.everyTurns must be at least 1"),
            ));
        }
        Some(Some(u64::from(every)))
    };
    Ok(PartialMetadataOptions {
        summary_every,
        add_summary_to_context: opt_bool(o, "addSummaryToContext", what, code)?,
        auto_title: opt_bool(o, "autoTitle", what, code)?,
        add_state_to_context: opt_bool(o, "addStateToContext", what, code)?,
        agentic_state: opt_bool(o, "agenticState", what, code)?,
    })
}

fn parse_tool(value: &JsValue, what: &str) -> Result<Tool> {
    const C: RunnerErrorCode = RunnerErrorCode::InvalidAgent;
    let o = options(value, what, C)?;
    let name = opt_string(&o, "name", what, C)?
        .filter(|n| !n.is_empty())
        .ok_or_else(|| invalid(C, format!("{what}.name must be a non-empty string")))?;
    api_name(&name, &format!("{what}.name"))?;
    let execute = opt_function(&o, "execute", what, C)?
        .ok_or_else(|| invalid(C, format!("{what}.execute must be a function")))?;
    let params = get(&o, "parameters", what, C)?;
    let parameters = if params.is_undefined() || params.is_null() {
        crate::core::json::json!({"type": "object", "properties": {}})
    } else if ["_zod", "_def", "~standard"]
        .iter()
        .any(|k| js_sys::Reflect::has(&params, &JsValue::from_str(k)).unwrap_or(false))
    {
        // A zod schema (as the SDK's `tool()` takes) written out is no JSON schema: the model
        // would be told of no arguments.
        return Err(invalid(
            C,
            format!(
                "{what}.parameters is a zod schema: give its JSON schema, z.toJSONSchema(schema)"
            ),
        ));
    } else {
        js_to_json(&params, &format!("{what}.parameters")).map_err(|m| invalid(C, m))?
    };
    refuse_given(
        &o,
        // (`timeoutBehavior` and `timeoutErrorFunction` do nothing without `timeoutMs`.)
        &[
            "isEnabled",
            "inputGuardrails",
            "outputGuardrails",
            "timeoutMs",
        ],
        what,
        C,
        not_needed,
        |key| sdk_option(what, key, "tool()"),
    )?;
    let needs_approval = get(&o, "needsApproval", what, C)?;
    if !(needs_approval.is_undefined()
        || needs_approval.as_bool().is_some()
        || needs_approval.is_function())
    {
        return Err(invalid(
            C,
            format!("{what}.needsApproval must be a boolean or a function"),
        ));
    }
    Ok(Tool {
        spec: ToolSpec {
            name,
            description: opt_string(&o, "description", what, C)?.unwrap_or_default(),
            parameters,
            strict: opt_bool(&o, "strict", what, C)?.unwrap_or(false),
        },
        execute,
        needs_approval,
        error_function: opt_function(&o, "errorFunction", what, C)?,
        object: value.clone(),
    })
}

/// `new Runner({ baseUrl, apiKey?, api?, headers?, fetch?, retries?, timeoutMs? })`.
pub fn parse_runner(value: &JsValue) -> Result<ModelClient> {
    const C: RunnerErrorCode = RunnerErrorCode::InvalidRunner;
    let o = options(value, "runner options", C)?;
    let base_url = opt_string(&o, "baseUrl", "runner", C)?
        .filter(|u| !u.trim().is_empty())
        .ok_or_else(|| {
            invalid(
                C,
                "runner.baseUrl must be the API's base URL, such as \"https://api.openai.com/v1\""
                    .into(),
            )
        })?;
    // What the SDK's Runner takes for every run, and this one takes from each agent or run: set
    // here, it would be dropped without a word (a guardrail that never runs).
    refuse_given(
        &o,
        &[
            "model",
            "modelSettings",
            "inputGuardrails",
            "outputGuardrails",
            "handoffInputFilter",
            "callModelInputFilter",
            "sessionInputCallback",
        ],
        "runner",
        C,
        |_, given| given.is_null(),
        |key| {
            format!(
                "runner.{key} is not taken by this Runner: give the model, its settings and \
                 guardrails to each Agent, a handoff's inputFilter to the handoff, and \
                 sessionInputCallback to run()"
            )
        },
    )?;
    refuse_given(&o, &SDK_RUN_OPTIONS, "runner", C, not_needed, |key| {
        sdk_option("runner", key, "Runner")
    })?;
    let api = match opt_string(&o, "api", "runner", C)? {
        None => Api::ChatCompletions,
        Some(name) => Api::parse(&name).ok_or_else(|| {
            invalid(
                C,
                format!("runner.api must be \"chat_completions\" or \"responses\", got \"{name}\""),
            )
        })?,
    };
    let mut headers = Vec::new();
    let h = get(&o, "headers", "runner", C)?;
    if let Some(h) = options(&h, "runner.headers", C)? {
        for k in js::keys(&h).map_err(|e| threw(C, "runner.headers", &e))? {
            let what = format!("runner.headers[\"{k}\"]");
            let v = js::get_named(&h, &k).map_err(|e| threw(C, &what, &e))?;
            let v = optional_string(&v, &what, SessionErrorCode::InvalidOptions)
                .map_err(recode(C))?
                .ok_or_else(|| invalid(C, format!("{what} must be a string")))?;
            if let Some(problem) = header_name_problem(&k) {
                return Err(invalid(C, format!("{what}: the name {problem}")));
            }
            if let Some(problem) = header_value_problem(&v) {
                return Err(invalid(C, format!("{what} {problem}")));
            }
            headers.push((k, v));
        }
    }
    let api_key = opt_string(&o, "apiKey", "runner", C)?;
    if let Some(problem) = api_key.as_deref().and_then(header_value_problem) {
        return Err(invalid(C, format!("runner.apiKey {problem}")));
    }
    Ok(ModelClient {
        base_url,
        api,
        api_key,
        headers,
        fetch: opt_function(&o, "fetch", "runner", C)?,
        retries: opt_count(&o, "retries", "runner", C)?.unwrap_or(2),
        timeout_ms: match get(&o, "timeoutMs", "runner", C)? {
            v if v.is_undefined() || v.is_null() => super::model::DEFAULT_TIMEOUT_MS,
            v => v
                .as_f64()
                .filter(|ms| ms.fract() == 0.0 && (1.0..=2_147_483_647.0).contains(ms))
                .map(|ms| ms as u32)
                .ok_or_else(|| {
                    invalid(
                        C,
                        format!(
                            "runner.timeoutMs must be a whole number of milliseconds from 1 to \
                             2147483647, got {}",
                            js::describe(&v)
                        ),
                    )
                })?,
        },
    })
}

/// The options of `runner.run(agent, input, options)`.
pub fn parse_run_options(value: &JsValue, stream: bool) -> Result<RunOptions> {
    const C: RunnerErrorCode = RunnerErrorCode::InvalidRunOptions;
    let o = options(value, "run options", C)?;
    let session = get(&o, "session", "options", C)?;
    let session = if session.is_undefined() || session.is_null() {
        None
    } else {
        for method in ["getItems", "addItems"] {
            let f = js::get(&session, method)
                .map_err(|e| threw(C, &format!("options.session.{method}"), &e))?;
            if !f.is_function() {
                return Err(invalid(
                    C,
                    format!("options.session must have a {method}() method (a Session)"),
                ));
            }
        }
        Some(session)
    };
    let settings = get(&o, "sessionSettings", "options", C)?;
    let settings = options(&settings, "options.sessionSettings", C)?;
    super::args::only_keys(&settings, "options.sessionSettings", &["limit", "turns"])
        .map_err(recode(C))?;
    let limit_value = get(&settings, "limit", "options.sessionSettings", C)?;
    let limit = take_limit(&limit_value, "options.sessionSettings.limit")
        .map_err(recode(RunnerErrorCode::InvalidLimit))?;
    let turns_value = get(&settings, "turns", "options.sessionSettings", C)?;
    let turns = take_limit(&turns_value, "options.sessionSettings.turns")
        .map_err(recode(RunnerErrorCode::InvalidLimit))?;
    // The run's own settings, when it has any: turns win over limit, as in Agno.
    let session_window = match (turns, limit) {
        (Some(turns), _) => Some(Window::Turns(turns)),
        (None, Some(limit)) => Some(Window::Items(limit)),
        (None, None) => None,
    };
    // `lock` is taken by js/runner.js (a Web Lock around the run); checked here with the rest.
    let lock = get(&o, "lock", "options", C)?;
    let known_lock = lock.is_undefined()
        || lock.as_bool().is_some()
        || matches!(lock.as_string().as_deref(), Some("wait" | "fail"));
    if !known_lock {
        return Err(RunnerError::new(
            C,
            format!(
                "options.lock must be 'wait' (the default), 'fail' or false, got {}",
                describe(&lock)
            ),
        ));
    }
    let signal = get(&o, "signal", "options", C)?;
    let signal = if signal.is_undefined() || signal.is_null() {
        None
    } else if signal.is_object()
        && js::get(&signal, "aborted")
            .map_err(|e| threw(C, "options.signal", &e))?
            .as_bool()
            .is_some()
    {
        Some(signal)
    } else {
        return Err(invalid(C, "options.signal must be an AbortSignal".into()));
    };
    // The SDK's run options this runner does not implement: given, they would change nothing.
    refuse_given(&o, &SDK_RUN_OPTIONS, "options", C, not_needed, |key| {
        sdk_option("options", key, "run()")
    })?;
    // `null` and `Infinity`: no limit, as the SDK reads them.
    let given = get(&o, "maxTurns", "options", C)?;
    let unlimited = given.is_null() || given.as_f64() == Some(f64::INFINITY);
    let max_turns = match unlimited {
        true => None,
        false => opt_count(&o, "maxTurns", "options", C)?,
    };
    Ok(RunOptions {
        session,
        session_window,
        input_callback: opt_function(&o, "sessionInputCallback", "options", C)?,
        max_turns: match max_turns {
            _ if unlimited => u32::MAX,
            Some(0) => return Err(invalid(C, "options.maxTurns must be at least 1".into())),
            Some(n) => n,
            None => DEFAULT_MAX_TURNS,
        },
        max_turns_given: unlimited || max_turns.is_some(),
        signal,
        context: get(&o, "context", "options", C)?,
        server: ServerConversation {
            previous_response_id: opt_string(&o, "previousResponseId", "options", C)?,
            conversation_id: opt_string(&o, "conversationId", "options", C)?,
        },
        stream,
        metadata: parse_metadata(&o, "options", C)?,
    })
}

/// The tag our `RunState` objects carry, so a state passed as input is recognised.
pub const RUN_STATE_KIND: &str = "agent-sessions.RunState";

/// A run's input: a string, an array of items, or a `RunState` to resume.
pub fn parse_input(value: &JsValue) -> Result<RunInput> {
    const C: RunnerErrorCode = RunnerErrorCode::InvalidInput;
    if value.is_string() {
        let text = optional_string(value, "input", SessionErrorCode::InvalidItem)
            .map_err(recode(C))?
            .unwrap_or_default();
        return Ok(RunInput::Items(input_items_from_text(&text)));
    }
    if js::is_array(value).map_err(|e| threw(C, "input", &e))? {
        let items = take_items(value).map_err(recode(C))?;
        let items: Result<Vec<Value>> = items
            .iter()
            .enumerate()
            .map(|(i, (item, _))| {
                js_to_json(item, &format!("input[{i}]")).map_err(|m| invalid(C, m))
            })
            .collect();
        return items.map(RunInput::Items);
    }
    let kind = match value.is_object() {
        true => js::get(value, "kind").map_err(|e| threw(C, "input", &e))?,
        false => JsValue::UNDEFINED,
    };
    if kind.as_string().as_deref() == Some(RUN_STATE_KIND) {
        let text = js::call_method(value, "toString", &[])
            .map_err(|e| threw(RunnerErrorCode::InvalidRunState, "input.toString()", &e))?
            .as_string()
            .unwrap_or_default();
        return RunState::from_json(&text)
            .map(|state| RunInput::Resume(Box::new(state)))
            .map_err(|e| invalid(RunnerErrorCode::InvalidRunState, e.to_string()));
    }
    Err(invalid(
        C,
        format!(
            "input must be a string, an array of items or a RunState, got {}",
            describe(value)
        ),
    ))
}

/// Input items (`parse_input`'s) that `api` cannot send are refused before anything is saved or
/// sent (see [`unsendable`]). With a `sessionInputCallback`, what it returns is checked instead
/// (it may rewrite them).
pub fn check_input(api: Api, input: &RunInput, options: &RunOptions) -> Result<()> {
    if options.input_callback.is_some() {
        return Ok(());
    }
    match input {
        RunInput::Items(items) => refuse_unsendable(api, items, |i| format!("input[{i}]")),
        RunInput::Resume(_) => Ok(()),
    }
}

/// `items` that `api` cannot send (see [`unsendable`]) are refused as `INVALID_INPUT`, the
/// first named by `name` of its index.
pub fn refuse_unsendable(api: Api, items: &[Value], name: impl Fn(usize) -> String) -> Result<()> {
    match unsendable(api, items) {
        Some((i, why)) => Err(invalid(
            RunnerErrorCode::InvalidInput,
            format!(
                "{} cannot be sent to the {} API ({why}): nothing was saved or sent",
                name(i),
                match api {
                    Api::Responses => "Responses",
                    Api::ChatCompletions => "Chat Completions",
                }
            ),
        )),
        None => Ok(()),
    }
}

/// `new CompactionSession(inner, options)`'s `options.runner`, read without running anything of
/// the caller's but getters (js/runner.js checks it is a Runner it made).
pub fn compaction_runner(value: &JsValue) -> Result<JsValue> {
    const C: RunnerErrorCode = RunnerErrorCode::InvalidCompaction;
    let o = options(value, "compaction options", C)?;
    let runner = get(&o, "runner", "options", C)?;
    if !runner.is_object() {
        return Err(invalid(
            C,
            format!(
                "options.runner must be the Runner whose server compacts, got {}",
                describe(&runner)
            ),
        ));
    }
    Ok(runner)
}

/// Whether `session` is a conversation a server keeps: this package's `OpenAIConversationsSession`
/// (its mark), or the SDK's (its own `OPENAI_SESSION_API` symbol, set to `'conversations'`, by
/// which the SDK tells it). What cannot be read is not one.
fn server_conversation(session: &JsValue) -> bool {
    let ours = js_sys::Symbol::for_("agent-sessions.serverConversation");
    if js_sys::Reflect::get(session, &ours).is_ok_and(|v| v.as_bool() == Some(true)) {
        return true;
    }
    let symbols = js::get(&js_sys::global(), "Object")
        .and_then(|o| js::call_method(&o, "getOwnPropertySymbols", std::slice::from_ref(session)));
    let Some(symbols) = symbols
        .ok()
        .and_then(|s| s.dyn_into::<js_sys::Array>().ok())
    else {
        return false;
    };
    symbols.iter().any(|symbol| {
        symbol
            .dyn_ref::<js_sys::Symbol>()
            .and_then(js_sys::Symbol::description)
            .is_some_and(|d| d == "OPENAI_SESSION_API")
            && js_sys::Reflect::get(session, &symbol)
                .is_ok_and(|v| v.as_string().as_deref() == Some("conversations"))
    })
}

/// The rest of `new CompactionSession(inner, { runner, agent | model, strategy?, keepTurns?,
/// archive?, shouldCompact? })`, for the runner's `client`.
pub fn parse_compaction(
    inner: &JsValue,
    value: &JsValue,
    client: std::rc::Rc<ModelClient>,
) -> Result<Compactor> {
    const C: RunnerErrorCode = RunnerErrorCode::InvalidCompaction;
    for method in [
        "getSessionId",
        "getItems",
        "addItems",
        "popItem",
        "clearSession",
    ] {
        let f = if inner.is_object() {
            js::get(inner, method).map_err(|e| threw(C, &format!("inner.{method}"), &e))?
        } else {
            JsValue::UNDEFINED
        };
        if !f.is_function() {
            return Err(invalid(
                RunnerErrorCode::InvalidSession,
                format!(
                    "the session to compact must have a {method}() method, got {}",
                    describe(inner)
                ),
            ));
        }
    }
    // A conversation a server keeps (the Conversations API's session, ours or the SDK's) takes
    // appends, not rewrites: a compaction would clear it, deleting the conversation every device
    // names. Refused, as the SDK's compaction session refuses it.
    if server_conversation(inner) {
        return Err(invalid(
            RunnerErrorCode::InvalidSession,
            "a conversation the server keeps cannot be compacted here: clearing it deletes it on every device; compact a session synced to it (SyncedSession) instead".into(),
        ));
    }
    let o = options(value, "compaction options", C)?;
    let agent = get(&o, "agent", "options", C)?;
    let agent_model = match agent.is_object() {
        true => js::get(&agent, "model")
            .map_err(|e| threw(C, "options.agent.model", &e))?
            .as_string(),
        false => None,
    };
    let model_given = opt_string(&o, "model", "options", C)?;
    let model = model_given
        .clone()
        .or(agent_model.clone())
        .filter(|m| !m.trim().is_empty())
        .ok_or_else(|| {
            invalid(
                C,
                "compaction needs a model: options.model, or an options.agent with a model".into(),
            )
        })?;
    let strategy = match opt_string(&o, "strategy", "options", C)? {
        None => Strategy::Summary,
        Some(name) => Strategy::parse(&name).ok_or_else(|| {
            invalid(
                C,
                format!("options.strategy must be \"summary\" or \"responses\", got \"{name}\""),
            )
        })?,
    };
    // Its compaction item is read by the Responses API only: a Chat Completions request would
    // leave it out, and the conversation it stands for with it.
    if strategy == Strategy::Responses && client.api != Api::Responses {
        return Err(invalid(
            C,
            "options.strategy \"responses\" needs a runner on the Responses API (api: \"responses\"): a Chat Completions request leaves its compaction item out".into(),
        ));
    }
    let archive = get(&o, "archive", "options", C)?;
    let archive = match archive.as_bool() {
        Some(b) => b,
        None if archive.is_undefined() || archive.is_null() => true,
        None => {
            return Err(invalid(
                C,
                format!(
                    "options.archive must be a boolean, got {}",
                    describe(&archive)
                ),
            ))
        }
    };
    // The summary request's settings: those of the agent's that hold for a request made for its
    // session (`store: false` among them), ours or the SDK's agent alike (no other key of them is
    // read); only `store` where another model than the agent's is named.
    const M: &str = "options.agent.modelSettings";
    let given = match agent.is_object() {
        true => js::get(&agent, "modelSettings").map_err(|e| threw(C, M, &e))?,
        false => JsValue::UNDEFINED,
    };
    let s = options(&given, M, C)?;
    let store = opt_bool(&s, "store", M, C)?;
    let settings = if model_given
        .as_ref()
        .is_some_and(|m| Some(m) != agent_model.as_ref())
    {
        ModelSettings {
            store,
            ..ModelSettings::default()
        }
    } else {
        ModelSettings {
            store,
            reasoning: opt_json_object(&s, "reasoning", M, C)?,
            truncation: opt_string(&s, "truncation", M, C)?,
            prompt_cache_retention: opt_string(&s, "promptCacheRetention", M, C)?,
            provider_data: opt_json_object(&s, "providerData", M, C)?,
            ..ModelSettings::default()
        }
        .for_session_request()
    };
    Ok(Compactor {
        client,
        model,
        settings,
        strategy,
        keep_turns: opt_count(&o, "keepTurns", "options", C)?.unwrap_or(2) as usize,
        archive,
        // Or the SDK's name for it, for options written for its class.
        should_compact: match opt_function(&o, "shouldCompact", "options", C)? {
            Some(f) => Some(f),
            None => opt_function(&o, "shouldTriggerCompaction", "options", C)?,
        },
    })
}
