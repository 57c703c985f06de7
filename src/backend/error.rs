//! Every JS error this library throws or rejects with is built here: an `Error` whose `name` is
//! stable (`SessionError`, `RunnerError`, `ModelError`, `MaxTurnsExceededError`, or the
//! standard `AbortError`) and whose message says what was wrong and where.

use wasm_bindgen::JsValue;

use crate::core::error::{Error, ErrorFamily};

/// A JS `Error` with this `name`, `message` and extra properties.
pub fn js_error(name: &str, message: &str, fields: &[(&str, JsValue)]) -> JsValue {
    let e = js_sys::Error::new(message);
    e.set_name(name);
    for (key, value) in fields {
        // Setting a property on a fresh Error object does not fail.
        let _ = js_sys::Reflect::set(&e, &JsValue::from_str(key), value);
    }
    e.into()
}

/// The error a run that stopped rejects with, holding `state` (where it stopped): `error`
/// itself, unless it holds another run's already (one signal stopping several runs, each
/// throwing its reason; a session that threw one error object twice). Then a new error of its
/// name and message holds this run's, with `error` as its `cause`, and the first run's error
/// keeps its own.
#[cfg(feature = "runner")]
pub fn with_state(error: JsValue, state: &JsValue) -> JsValue {
    use wasm_bindgen::JsCast;
    if !error.is_object() {
        return error;
    }
    let key = JsValue::from_str("state");
    let error = if js_sys::Object::has_own(error.unchecked_ref::<js_sys::Object>(), &key) {
        let text = |k: &'static str| {
            crate::backend::js::get(&error, k)
                .ok()
                .and_then(|v| v.as_string())
        };
        let (name, message) = (text("name"), text("message"));
        // (Its `code` too, where it has one: code telling errors apart by it still can.)
        let code = crate::backend::js::get(&error, "code").unwrap_or(JsValue::UNDEFINED);
        let mut fields = vec![("cause", error)];
        if !code.is_undefined() {
            fields.push(("code", code));
        }
        js_error(
            &name.unwrap_or_else(|| "Error".into()),
            &message.unwrap_or_default(),
            &fields,
        )
    } else {
        error
    };
    let _ = js_sys::Reflect::set(&error, &key, state);
    error
}

/// An error of a coded family: `name` is the family's, `code` the error's.
pub fn coded_error<C: ErrorFamily>(error: &Error<C>) -> JsValue {
    js_error(
        C::JS_NAME,
        &error.message,
        &[("code", error.code.as_str().into())],
    )
}

/// A `SessionError`.
pub fn session_error(error: &crate::core::error::SessionError) -> JsValue {
    coded_error(error)
}

/// The standard `AbortError` `DOMException` (what `AbortSignal.abort()` gives as its reason).
pub fn abort_error(message: &str) -> JsValue {
    match web_sys::DomException::new_with_message_and_name(message, "AbortError") {
        Ok(e) => e.into(),
        Err(_) => js_error("AbortError", message, &[]),
    }
}

/// A failed run as the JS error the caller sees: `RunnerError`, `ModelError` (with the HTTP
/// `status`, 0 when none arrived), `MaxTurnsExceededError`, or what was thrown (an abort's
/// reason, a session's or a callback's error) unchanged.
#[cfg(feature = "runner")]
pub fn run_error(error: crate::backend::runner::RunError) -> JsValue {
    use crate::backend::runner::RunError;
    match error {
        RunError::Usage(e) => coded_error(&e),
        RunError::Model(f) => {
            let message = if f.status == 0 {
                format!("model request failed: {}", f.message)
            } else {
                format!("model request failed with HTTP {}: {}", f.status, f.message)
            };
            let mut fields = vec![
                ("code", "MODEL_ERROR".into()),
                ("status", JsValue::from(f.status)),
                ("serverMessage", f.message.as_str().into()),
            ];
            if let Some(code) = &f.code {
                fields.push(("serverCode", code.as_str().into()));
            }
            js_error("ModelError", &message, &fields)
        }
        RunError::MaxTurns(n) => js_error(
            "MaxTurnsExceededError",
            &format!(
                "the run stopped after {n} model calls (maxTurns) without a final answer; what \
                 ran was saved"
            ),
            &[
                ("code", MAX_TURNS_EXCEEDED.into()),
                ("maxTurns", JsValue::from(n)),
            ],
        ),
        RunError::Aborted(reason) | RunError::Thrown(reason) => reason,
        RunError::Refusal(refusal) => js_error(
            "ModelRefusalError",
            &format!("Model refused to produce output: {refusal}"),
            &[
                ("code", MODEL_REFUSAL.into()),
                ("refusal", refusal.as_str().into()),
            ],
        ),
        RunError::ModelBehavior { message, raw } => js_error(
            "ModelBehaviorError",
            &message,
            &[
                ("code", MODEL_BEHAVIOR.into()),
                ("rawOutput", raw.as_str().into()),
            ],
        ),
        RunError::Tripwire {
            kind,
            name,
            returned,
            info,
            agent,
            output,
        } => {
            use crate::backend::runner::GuardrailKind;
            let (error_name, code, which) = match kind {
                GuardrailKind::Input => (
                    "InputGuardrailTripwireTriggered",
                    INPUT_GUARDRAIL_TRIPWIRE,
                    "Input",
                ),
                GuardrailKind::Output => (
                    "OutputGuardrailTripwireTriggered",
                    OUTPUT_GUARDRAIL_TRIPWIRE,
                    "Output",
                ),
            };
            // The message and `result` as the SDK words and shapes them.
            let info_text = js_sys::JSON::stringify(&info)
                .ok()
                .and_then(|s| s.as_string())
                .unwrap_or_else(|| "undefined".into());
            // What the guardrail returned, as a passing one's result holds it.
            let result = guardrail_result(kind, &name, returned, &agent, &output);
            js_error(
                error_name,
                &format!("{which} guardrail triggered: {info_text}"),
                &[("code", code.into()), ("result", result)],
            )
        }
    }
}

/// The `code` of a `ModelBehaviorError` (a final output that does not match `outputType`).
#[cfg(feature = "runner")]
pub const MODEL_BEHAVIOR: &str = "MODEL_BEHAVIOR";

/// The `code` of a `ModelRefusalError` (an answer that is a refusal, with no text).
#[cfg(feature = "runner")]
pub const MODEL_REFUSAL: &str = "MODEL_REFUSAL";

/// The `code` of an `InputGuardrailTripwireTriggered`.
#[cfg(feature = "runner")]
pub const INPUT_GUARDRAIL_TRIPWIRE: &str = "INPUT_GUARDRAIL_TRIPWIRE";

/// The `code` of an `OutputGuardrailTripwireTriggered`.
#[cfg(feature = "runner")]
pub const OUTPUT_GUARDRAIL_TRIPWIRE: &str = "OUTPUT_GUARDRAIL_TRIPWIRE";

/// The `code` of a `MaxTurnsExceededError`.
#[cfg(feature = "runner")]
pub const MAX_TURNS_EXCEEDED: &str = "MAX_TURNS_EXCEEDED";

/// A guardrail's result as the SDK shapes it (`InputGuardrailResult`, `OutputGuardrailResult`):
/// `{ guardrail: { type, name }, output }`, `output` its verdict (`{ tripwireTriggered,
/// outputInfo }`), and for an output guardrail the `agent` and the `agentOutput` it checked.
#[cfg(feature = "runner")]
pub fn guardrail_result(
    kind: crate::backend::runner::GuardrailKind,
    name: &str,
    verdict: JsValue,
    agent: &JsValue,
    output: &JsValue,
) -> JsValue {
    use crate::backend::js::object;
    let output_kind = kind == crate::backend::runner::GuardrailKind::Output;
    let guardrail = object(&[
        ("type", if output_kind { "output" } else { "input" }.into()),
        ("name", name.into()),
    ]);
    let result = object(&[("guardrail", guardrail.into()), ("output", verdict)]);
    if output_kind {
        let _ = js_sys::Reflect::set(&result, &"agent".into(), agent);
        let _ = js_sys::Reflect::set(&result, &"agentOutput".into(), output);
    }
    result.into()
}
