//! Reads the arguments of `applyHistoryTransaction` and `applyHistoryMutations` into the core's
//! types: every field checked, the items copied (as `addItems` copies them) and given their
//! canonical forms, before anything is written. A malformed argument is `INVALID_TRANSACTION`.

use wasm_bindgen::JsValue;

use crate::core::branch::Usage;
use crate::core::canonical::digest;
use crate::core::error::{Result, SessionError, SessionErrorCode};
use crate::core::session::starts_turn;
use crate::core::transaction::{HistoryTransaction, TransactionKind};

use super::args::{take_items_as, threw};
use super::branch_js::usage_from_js;
use super::canonical::canonical;
use super::js::{self, describe, exact_string};

const CODE: SessionErrorCode = SessionErrorCode::InvalidTransaction;

fn invalid(message: String) -> SessionError {
    SessionError::new(CODE, message)
}

/// A transaction read from its arguments, with the items it writes.
pub struct TakenTransaction {
    pub transaction: HistoryTransaction,
    /// Copies of the items it appends (`items` or `replacement`), each with whether it opens a
    /// turn.
    pub items: Vec<(JsValue, bool)>,
    /// How many of `expectedSuffix` are user messages: the turn before the suffix is the
    /// history's last turn minus these (turns count user messages, without gaps).
    pub suffix_user_messages: u64,
    /// `args.usage`, where given: a run's usage, added to the newest turn the transaction leaves,
    /// in the same IndexedDB transaction (so an answer and what it cost are stored together, and
    /// a retried operation that is already applied adds nothing).
    pub usage: Option<Usage>,
}

fn field(object: &JsValue, what: &str, key: &'static str) -> Result<JsValue> {
    js::get(object, key).map_err(|e| threw(CODE, &format!("{what}.{key}"), &e))
}

fn plain_object(value: &JsValue, what: &str) -> Result<()> {
    if js::is_plain_object(value).map_err(|e| threw(CODE, what, &e))? {
        Ok(())
    } else {
        Err(invalid(format!(
            "{what} must be an object, got {}",
            describe(value)
        )))
    }
}

/// Copies of items, each with whether it opens a turn.
type Copies = Vec<(JsValue, bool)>;

/// Copies the items of `array` (named `what`) and gives each its canonical form.
fn items_with_forms(array: &JsValue, what: &str) -> Result<(Copies, Vec<String>)> {
    let items = take_items_as(array, what, CODE)?;
    let forms = items
        .iter()
        .enumerate()
        .map(|(i, (item, _))| {
            canonical(item).map_err(|why| {
                invalid(format!(
                    "Session history transaction items contain invalid or unsupported data: \
                     {what}[{i}] holds {why}"
                ))
            })
        })
        .collect::<Result<Vec<String>>>()?;
    Ok((items, forms))
}

/// The canonical forms of the items of `array` (named `what`), which are only compared, not
/// stored, so they are not copied; and how many of them are user messages.
fn forms_only(array: &JsValue, what: &str) -> Result<(Vec<String>, u64)> {
    if !js::is_array(array).map_err(|e| threw(CODE, what, &e))? {
        return Err(invalid(format!(
            "{what} must be an array, got {}",
            describe(array)
        )));
    }
    let mut users = 0;
    let mut forms = Vec::new();
    for (i, item) in js::elements(array)
        .map_err(|e| threw(CODE, what, &e))?
        .iter()
        .enumerate()
    {
        plain_object(item, &format!("{what}[{i}]"))?;
        forms.push(canonical(item).map_err(|why| {
            invalid(format!(
                "Session history transaction items contain invalid or unsupported data: \
                 {what}[{i}] holds {why}"
            ))
        })?);
        let text = |key: &'static str| js::get(item, key).ok().and_then(|v| v.as_string());
        if starts_turn(text("role").as_deref(), text("type").as_deref()) {
            users += 1;
        }
    }
    Ok((forms, users))
}

/// `{ operationId, transaction }` with `transaction` one of `{ type: 'append_items', items }`
/// and `{ type: 'replace_suffix', expectedSuffix, replacement }`, with no other field.
pub fn take_transaction(args: &JsValue) -> Result<TakenTransaction> {
    plain_object(args, "the argument of applyHistoryTransaction")?;
    let id = field(args, "args", "operationId")?;
    let operation_id = match exact_string(&id) {
        Some(Ok(id)) if !id.trim().is_empty() => id,
        _ => {
            return Err(invalid(format!(
                "operationId must be a non-empty, well-formed string, got {}",
                describe(&id)
            )))
        }
    };
    let transaction = field(args, "args", "transaction")?;
    plain_object(&transaction, "transaction")?;
    let kind_value = field(&transaction, "transaction", "type")?;
    let mut keys = js::keys(&transaction).map_err(|e| threw(CODE, "transaction", &e))?;
    crate::core::canonical::sort_keys(&mut keys);
    let kind_name = kind_value.as_string().unwrap_or_default();
    // The fields also as the message writes them (a `join` of `&str` would be compiled for
    // this message alone).
    let (kind, fields, listed): (TransactionKind, &[&str], &str) = match kind_name.as_str() {
        "append_items" => (
            TransactionKind::AppendItems,
            &["items", "type"],
            "items, type",
        ),
        "replace_suffix" => (
            TransactionKind::ReplaceSuffix,
            &["expectedSuffix", "replacement", "type"],
            "expectedSuffix, replacement, type",
        ),
        _ => {
            return Err(invalid(format!(
                "transaction.type must be \"append_items\" or \"replace_suffix\", got {}",
                match exact_string(&kind_value) {
                    Some(Ok(s)) => format!("\"{s}\""),
                    _ => describe(&kind_value),
                }
            )))
        }
    };
    if keys != fields {
        return Err(invalid(format!(
            "a {kind_name} transaction has exactly the fields {listed}, got {}",
            keys.join(", ")
        )));
    }
    let (expected_suffix, suffix_user_messages, items, written) = match kind {
        TransactionKind::AppendItems => {
            let items = field(&transaction, "transaction", "items")?;
            let (items, forms) = items_with_forms(&items, "transaction.items")?;
            (Vec::new(), 0, items, forms)
        }
        TransactionKind::ReplaceSuffix => {
            let expected = field(&transaction, "transaction", "expectedSuffix")?;
            let (expected, users) = forms_only(&expected, "transaction.expectedSuffix")?;
            let replacement = field(&transaction, "transaction", "replacement")?;
            let (items, forms) = items_with_forms(&replacement, "transaction.replacement")?;
            (expected, users, items, forms)
        }
    };
    let usage = field(args, "args", "usage")?;
    let usage = match usage.is_undefined() {
        true => None,
        false => Some(usage_from_js(&usage, "applyHistoryTransaction() usage")?),
    };
    let rewrites = !written.starts_with(&expected_suffix);
    let digest = match given_digest(args)? {
        // Set apart from the digests computed here: the same operation id applied both ways is
        // two different transactions.
        Some(given) => format!("k{given}"),
        // The forms are self-delimiting, so their concatenation identifies the transaction.
        None => digest(&format!(
            "{kind_name}|{}|{}",
            expected_suffix.concat(),
            written.concat()
        )),
    };
    Ok(TakenTransaction {
        transaction: HistoryTransaction {
            operation_id,
            kind,
            expected_suffix,
            digest,
            rewrites,
        },
        items,
        suffix_user_messages,
        usage,
    })
}

/// The digest a wrapping session gives for the transaction it stands for, under
/// `args[Symbol.for('agent-sessions.transactionDigest')]`: `EncryptedSession` writes ciphertext
/// with fresh IVs each time, so a retried operation would never have the same digest as the
/// one applied; it gives a keyed digest of the plaintext transaction instead.
fn given_digest(args: &JsValue) -> Result<Option<String>> {
    let key = js_sys::Symbol::for_("agent-sessions.transactionDigest");
    let given = js_sys::Reflect::get(args, &key).map_err(|e| threw(CODE, "args", &e))?;
    if given.is_undefined() {
        return Ok(None);
    }
    match exact_string(&given) {
        Some(Ok(text)) if !text.is_empty() => Ok(Some(text)),
        _ => Err(invalid(format!(
            "the transaction's digest must be a non-empty string, got {}",
            describe(&given)
        ))),
    }
}

/// A history transaction that carries usage but leaves no turn to store it against.
pub fn no_turn_for_usage(session_id: &str) -> SessionError {
    SessionError::new(
        SessionErrorCode::InvalidUsage,
        format!(
            "applyHistoryTransaction() usage needs a turn to be stored against, and this \
             transaction leaves session \"{session_id}\" empty"
        ),
    )
}

/// One `replace_function_call` mutation.
pub struct FunctionCallReplacement {
    pub call_id: String,
    /// A copy of the replacement `function_call` item.
    pub replacement: JsValue,
}

/// `{ mutations }`: the `replace_function_call` mutations, in order. Mutations of another type
/// are left out, as the SDK's `MemorySession` ignores them.
pub fn take_mutations(args: &JsValue) -> Result<Vec<FunctionCallReplacement>> {
    plain_object(args, "the argument of applyHistoryMutations")?;
    let mutations = field(args, "args", "mutations")?;
    if !js::is_array(&mutations).map_err(|e| threw(CODE, "mutations", &e))? {
        return Err(invalid(format!(
            "mutations must be an array, got {}",
            describe(&mutations)
        )));
    }
    let mut taken = Vec::new();
    for (i, mutation) in js::elements(&mutations)
        .map_err(|e| threw(CODE, "mutations", &e))?
        .iter()
        .enumerate()
    {
        let what = format!("mutations[{i}]");
        plain_object(mutation, &what)?;
        if field(mutation, &what, "type")?.as_string().as_deref() != Some("replace_function_call") {
            continue;
        }
        let call_id = match exact_string(&field(mutation, &what, "callId")?) {
            Some(Ok(id)) => id,
            _ => return Err(invalid(format!("{what}.callId must be a string"))),
        };
        let replacement = field(mutation, &what, "replacement")?;
        let array = js_sys::Array::of1(&replacement);
        let (mut items, _) = items_with_forms(&array, &format!("{what}.replacement"))?;
        let (replacement, _) = items.remove(0);
        if js::get(&replacement, "type")
            .ok()
            .and_then(|t| t.as_string())
            .as_deref()
            != Some("function_call")
        {
            return Err(invalid(format!(
                "{what}.replacement must be a function_call item"
            )));
        }
        taken.push(FunctionCallReplacement {
            call_id,
            replacement,
        });
    }
    Ok(taken)
}
