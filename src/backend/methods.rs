//! Session methods, each reading its arguments and running queued on a [`SessionState`]: those
//! of branches, turn listings, usage, the archive and whole-history rewrites. Of these, an
//! `IndexedDbSession` has the ones [`call`] names (making and deleting branches, rewrites, the
//! archive) served by the second sessions module, through [`call`], in the object's call order
//! (see `store::in_order`); the main module's exported class calls all of them for a
//! `MemorySession`, and the rest for an `IndexedDbSession` too.

use std::rc::Rc;

use js_sys::{Array, Promise};
use wasm_bindgen::JsValue;

use super::args::{
    field, take_archive_window, take_items, take_items_as, take_options, take_replace_options,
    ReplaceOptions,
};
use super::branch_js::{args as branch_args, From};
use super::js;
use super::session::{self, SessionState};
use super::transaction::take_mutations;
use crate::core::error::{Result, SessionError, SessionErrorCode};

/// Runs the method `name` (one the second module serves) with the arguments `args` on `state`;
/// any other name rejects.
pub fn call<S: SessionState>(state: &Rc<S>, name: &str, args: &Array) -> Promise {
    let (a, b) = (args.get(0), args.get(1));
    match name {
        "applyHistoryMutations" => apply_history_mutations(state, &a),
        "replaceHistoryWithCompaction" => replace_history_with_compaction(state, &a),
        "replaceHistory" => replace_history(state, &a, &b),
        "getArchivedItems" => get_archived_items(state, &a),
        "createBranchFromTurn" => create_branch_from_turn(state, &a, &b),
        "createBranchFromContent" => create_branch_from_content(state, &a, &b),
        "deleteBranch" => delete_branch(state, &a),
        _ => session::rejected(unknown(name)),
    }
}

fn unknown(name: &str) -> SessionError {
    SessionError::new(
        SessionErrorCode::InvalidOptions,
        format!("no session method \"{name}\" in this module"),
    )
}

/// Reads and checks the arguments of the method `name` (one of [`call`]'s) when it is called, as
/// every method does, and gives the arguments to hand the second module when the call's turn
/// comes: copies of its items, so that what the caller changes after the call changes nothing.
pub fn taken(name: &str, args: &Array) -> Result<Array> {
    let (a, b) = (args.get(0), args.get(1));
    let copies = |items: Vec<(JsValue, bool)>| -> JsValue {
        items
            .into_iter()
            .map(|(item, _)| item)
            .collect::<Array>()
            .into()
    };
    Ok(match name {
        "createBranchFromTurn" => {
            branch_args::turn(&a, name)?;
            branch_args::optional_name(&b, name)?;
            Array::of2(&a, &b)
        }
        "createBranchFromContent" => {
            branch_args::text(&a, name)?;
            branch_args::optional_name(&b, name)?;
            Array::of2(&a, &b)
        }
        "deleteBranch" => {
            branch_args::name(&a, name)?;
            Array::of1(&a)
        }
        "getArchivedItems" => {
            let (limit, skip) = take_archive_window(&a)?;
            let limit = limit.map_or(JsValue::UNDEFINED, |n| (n as f64).into());
            Array::of1(&js::object(&[("limit", limit), ("before", (skip as f64).into())]).into())
        }
        "replaceHistoryWithCompaction" => Array::of1(&copies(take_items(&a)?)),
        "replaceHistory" => {
            let items = copies(take_items(&a)?);
            // Each option read once; the copy is checked as the method checks its options (and
            // the options given, for names it does not take: the copy has none).
            let options = take_options(&b, "options")?;
            super::args::only_keys(&options, "options", &["archive", "expectedItems"])?;
            let expected = field(&options, "options", "expectedItems")?;
            let expected = match expected.is_undefined() || expected.is_null() {
                true => expected,
                false => copies(take_items_as(
                    &expected,
                    "options.expectedItems",
                    SessionErrorCode::InvalidOptions,
                )?),
            };
            let archive = field(&options, "options", "archive")?;
            let options: JsValue =
                js::object(&[("archive", archive), ("expectedItems", expected)]).into();
            take_replace_options(&options)?;
            Array::of2(&items, &options)
        }
        "applyHistoryMutations" => {
            let mutations: Array = take_mutations(&a)?
                .into_iter()
                .map(|m| {
                    JsValue::from(js::object(&[
                        ("type", "replace_function_call".into()),
                        ("callId", m.call_id.as_str().into()),
                        ("replacement", m.replacement),
                    ]))
                })
                .collect();
            Array::of1(&js::object(&[("mutations", mutations.into())]).into())
        }
        _ => return Err(unknown(name)),
    })
}

pub fn apply_history_mutations<S: SessionState>(state: &Rc<S>, args: &JsValue) -> Promise {
    session::queued(
        state,
        "applyHistoryMutations",
        || take_mutations(args),
        // (Whether it changed anything: for the change event only.)
        async |s, mutations| s.apply_mutations(mutations).await.map(JsValue::from),
    )
}

pub fn replace_history_with_compaction<S: SessionState>(state: &Rc<S>, items: &JsValue) -> Promise {
    session::queued(
        state,
        "replaceHistoryWithCompaction",
        || take_items(items),
        async |s, items| {
            let archived = ReplaceOptions {
                archive: true,
                expected: None,
            };
            s.replace_history(items, archived)
                .await
                .map(|()| JsValue::UNDEFINED)
        },
    )
}

pub fn replace_history<S: SessionState>(
    state: &Rc<S>,
    items: &JsValue,
    options: &JsValue,
) -> Promise {
    session::queued(
        state,
        "replaceHistory",
        || Ok((take_items(items)?, take_replace_options(options)?)),
        async |s, (items, options)| {
            s.replace_history(items, options)
                .await
                .map(|()| JsValue::UNDEFINED)
        },
    )
}

pub fn get_archived_items<S: SessionState>(state: &Rc<S>, options: &JsValue) -> Promise {
    session::queued(
        state,
        "getArchivedItems",
        || take_archive_window(options),
        async |s, (limit, skip)| {
            let items = s.archived_items(limit, skip).await?;
            Ok(items.into_iter().collect::<Array>().into())
        },
    )
}

pub fn create_branch_from_turn<S: SessionState>(
    state: &Rc<S>,
    turn: &JsValue,
    name: &JsValue,
) -> Promise {
    let what = "createBranchFromTurn";
    session::queued(
        state,
        what,
        || {
            Ok((
                branch_args::turn(turn, what)?,
                branch_args::optional_name(name, what)?,
            ))
        },
        async |s, (turn, name)| Ok(s.create_branch(From::Turn(turn), name).await?.into()),
    )
}

pub fn create_branch_from_content<S: SessionState>(
    state: &Rc<S>,
    text: &JsValue,
    name: &JsValue,
) -> Promise {
    let what = "createBranchFromContent";
    session::queued(
        state,
        what,
        || {
            Ok((
                branch_args::text(text, what)?,
                branch_args::optional_name(name, what)?,
            ))
        },
        async |s, (text, name)| Ok(s.create_branch(From::Text(text), name).await?.into()),
    )
}

pub fn switch_branch<S: SessionState>(state: &Rc<S>, id: &JsValue) -> Promise {
    let what = "switchBranch";
    session::queued(
        state,
        what,
        || branch_args::name(id, what),
        // (`false`: a session not stored, left so; the caller gets `undefined`.)
        async |s, id| s.switch_branch(id).await.map(JsValue::from),
    )
}

pub fn list_branches<S: SessionState>(state: &Rc<S>) -> Promise {
    session::queued(
        state,
        "listBranches",
        || Ok(()),
        async |s, ()| s.list_branches().await,
    )
}

pub fn delete_branch<S: SessionState>(state: &Rc<S>, id: &JsValue) -> Promise {
    let what = "deleteBranch";
    session::queued(
        state,
        what,
        || branch_args::name(id, what),
        async |s, id| s.delete_branch(id).await.map(|()| JsValue::UNDEFINED),
    )
}

pub fn get_turns<S: SessionState>(state: &Rc<S>, options: &JsValue) -> Promise {
    let what = "getTurns";
    session::queued(
        state,
        what,
        || branch_args::branch_option(options, what),
        async |s, branch| s.turns(branch, None).await,
    )
}

pub fn find_turns<S: SessionState>(state: &Rc<S>, text: &JsValue, options: &JsValue) -> Promise {
    let what = "findTurns";
    session::queued(
        state,
        what,
        || {
            Ok((
                branch_args::text(text, what)?,
                branch_args::branch_option(options, what)?,
            ))
        },
        async |s, (text, branch)| s.turns(branch, Some(text)).await,
    )
}

pub fn get_session_usage<S: SessionState>(state: &Rc<S>, options: &JsValue) -> Promise {
    let what = "getSessionUsage";
    session::queued(
        state,
        what,
        || branch_args::branch_option(options, what),
        async |s, branch| s.session_usage(branch).await,
    )
}

pub fn get_turn_usage<S: SessionState>(
    state: &Rc<S>,
    turn: &JsValue,
    options: &JsValue,
) -> Promise {
    let what = "getTurnUsage";
    session::queued(
        state,
        what,
        || {
            Ok((
                branch_args::optional_turn(turn, what)?,
                branch_args::branch_option(options, what)?,
            ))
        },
        async |s, (turn, branch)| s.turn_usage(branch, turn).await,
    )
}

pub fn get_tool_usage<S: SessionState>(state: &Rc<S>, options: &JsValue) -> Promise {
    let what = "getToolUsage";
    session::queued(
        state,
        what,
        || branch_args::branch_option(options, what),
        async |s, branch| s.tool_usage(branch).await,
    )
}
