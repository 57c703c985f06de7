//! Which history a run sends, and which of what the model is sent is new to the session.

use crate::core::json::{json, Value};

use crate::core::session::starts_turn;
use crate::core::wire::{call_id, is_answered_call, is_call_output, item_type};

/// The history to send: drops tool outputs whose call is not in it (cut off by a limit) and
/// calls without their output (function calls, and the SDK's computer, shell and apply-patch
/// calls: a server refuses any of them unanswered), so the model never sees half of a tool
/// exchange; and a reasoning
/// item that led to a dropped call goes with it (the Responses API refuses a reasoning item
/// without the item that followed it). A call an output of `input` (what the run sends after the
/// history) answers is answered.
pub fn select_history(items: Vec<Value>, input: &[Value]) -> Vec<Value> {
    select_where(items, input, None)
}

/// What a session input callback returned (`items`), without the halves of tool exchanges among
/// the items it took from the history (`from_history`, by position), and the reasoning that led
/// to a call dropped so, as [`select_history`] leaves them out: the API refuses them, and the SDK
/// drops such calls too. What it made or took from the new input is sent as it is.
pub fn select_returned(items: Vec<Value>, from_history: &[bool]) -> Vec<Value> {
    select_where(items, &[], Some(from_history))
}

/// [`select_history`], dropping only the items at the positions `prunable` holds `true` for
/// (every item where `None`).
fn select_where(items: Vec<Value>, input: &[Value], prunable: Option<&[bool]>) -> Vec<Value> {
    let prunable = |i: usize| prunable.is_none_or(|p| p.get(i).copied().unwrap_or(false));
    // Each output answers the newest call of its id before it not yet answered: a server that
    // numbers its calls per response (`call_0` each time, as some local ones do) leaves an
    // unanswered call (a run paused for approval and left) kept by an older pair of that id.
    let mut keep: Vec<bool> = items
        .iter()
        .enumerate()
        .map(|(k, i)| !prunable(k) || !(is_answered_call(i) || is_call_output(i)))
        .collect();
    keep.resize(items.len() + input.len(), true);
    let mut waiting: Vec<(&str, usize)> = Vec::new();
    for (k, item) in items.iter().chain(input).enumerate() {
        let Some(id) = call_id(item) else { continue };
        if is_answered_call(item) {
            // (An older call of that id left unanswered stays out.)
            waiting.retain(|(w, _)| *w != id);
            waiting.push((id, k));
        } else if is_call_output(item) {
            if let Some(at) = waiting.iter().position(|(w, _)| *w == id) {
                let (_, call) = waiting.remove(at);
                keep[call] = true;
                keep[k] = true;
            }
        }
    }
    // From the newest back: whether everything a reasoning item led to went (the items of its
    // response after it: calls, hosted calls, an answer; up to the next reasoning item, output
    // or message of another role).
    let (mut gone, mut run) = (false, false);
    for i in (0..items.len()).rev() {
        let item = &items[i];
        if item_type(item) == "reasoning" {
            keep[i] &= !gone || !prunable(i);
            run = false;
        } else if !of_response(item) {
            (gone, run) = (!keep[i], false);
        } else {
            gone = !keep[i] && (gone || !run);
            run = true;
        }
    }
    let mut keep = keep.into_iter();
    items
        .into_iter()
        .filter(|_| keep.next().unwrap_or(true))
        .collect()
}

/// Whether an item is one a model response gives (a reasoning item, a call, an answer), not a
/// message of another role or a tool's output.
fn of_response(item: &Value) -> bool {
    let role = item.get("role").and_then(Value::as_str);
    !(is_call_output(item) || role.is_some_and(|r| r != "assistant"))
}

/// Whether an item is one a model gives in its response, other than a reasoning item: an
/// assistant message, a call (a function's, a hosted tool's: `*_call`, the SDK's
/// `hosted_tool_call` but an MCP approval's response, which the app gives), an MCP tool listing
/// or approval request.
fn model_output(item: &Value) -> bool {
    let kind = item_type(item);
    match kind {
        "mcp_list_tools" | "mcp_approval_request" => true,
        "hosted_tool_call" => {
            item.get("name").and_then(Value::as_str) != Some("mcp_approval_response")
        }
        _ => {
            kind.ends_with("_call") || item.get("role").and_then(Value::as_str) == Some("assistant")
        }
    }
}

/// A window of the newest items without the items it begins with of a response that began
/// before it (`before`, the item just before the window, is of that response: a reasoning item
/// or a model's output), up to the next reasoning item: the Responses API refuses a call or an
/// answer sent without the reasoning item that led to it. A call an output of `input` answers
/// stays, with what follows it (it is sent with that output). Outputs of the calls left out go
/// in [`select_history`].
pub fn from_response_start(
    before: Option<&Value>,
    mut window: Vec<Value>,
    input: &[Value],
) -> Vec<Value> {
    if before.is_some_and(|b| item_type(b) == "reasoning" || model_output(b)) {
        let answered = |item: &Value| {
            call_id(item).is_some_and(|id| {
                input
                    .iter()
                    .any(|o| is_call_output(o) && call_id(o) == Some(id))
            })
        };
        let inside = window
            .iter()
            .take_while(|i| model_output(i) && !answered(i))
            .count();
        window.drain(..inside);
    }
    window
}

/// The items of the newest `n` whole turns (a turn starts at a user message), for a session that
/// cannot read turns itself.
pub fn newest_turns(items: Vec<Value>, n: u64) -> Vec<Value> {
    if n == 0 {
        return Vec::new();
    }
    let cut = start_of_newest(&items, n);
    // A compaction summary at the head of the history belongs to no turn: it stays.
    let summaries = items
        .iter()
        .take(cut)
        .take_while(|i| crate::core::compaction::is_compaction(i))
        .count();
    let mut items = items;
    let kept = items.split_off(cut);
    items.truncate(summaries);
    items.extend(kept);
    items
}

/// A window a session read as turns (`getRecentTurns(n)`) cut to its newest `n`, where it gave
/// more (a session that ignores its argument); as it gave them otherwise, with whatever it gave
/// before them.
pub fn at_most_turns(items: Vec<Value>, n: u64) -> Vec<Value> {
    match turn_starts(&items).len() as u64 > n {
        true => newest_turns(items, n),
        false => items,
    }
}

/// `items` without their newest `n` turns: what they held before those turns were written.
pub fn without_newest_turns(mut items: Vec<Value>, n: u64) -> Vec<Value> {
    if n > 0 {
        let cut = start_of_newest(&items, n);
        items.truncate(cut);
    }
    items
}

/// Where the newest `n` turns of `items` start (0 when they hold fewer).
fn start_of_newest(items: &[Value], n: u64) -> usize {
    let starts = turn_starts(items);
    match (starts.len() as u64).checked_sub(n) {
        Some(first) => starts[first as usize],
        None => 0,
    }
}

/// Where each of the turns among `items` starts (at a user message).
fn turn_starts(items: &[Value]) -> Vec<usize> {
    items
        .iter()
        .enumerate()
        .filter(|(_, i)| {
            let text = |key: &str| i.get(key).and_then(Value::as_str);
            starts_turn(text("role"), text("type"))
        })
        .map(|(i, _)| i)
        .collect()
}

/// Where an item a session input callback returned came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The very history object number `h` the callback was given (it may have edited it).
    History(usize),
    /// The very new-input object the callback was given.
    NewInput,
    /// An object the callback made.
    Made,
}

/// The items of `model_input` that are not history: what a session input callback added or kept
/// of the new input. New-input objects are always new; history objects never are; an object the
/// callback made is history when it equals a history item not yet accounted for (each history
/// item accounts for one at most), so history the callback repeats, reorders or edits is never
/// saved twice, and a new message that repeats an old one is still saved.
pub fn new_turn_items(history: &[Value], model_input: &[Value], origins: &[Origin]) -> Vec<Value> {
    let origin = |i: usize| origins.get(i).copied().unwrap_or(Origin::Made);
    let mut used = vec![false; history.len()];
    for i in 0..model_input.len() {
        if let Origin::History(h) = origin(i) {
            if let Some(u) = used.get_mut(h) {
                *u = true;
            }
        }
    }
    model_input
        .iter()
        .enumerate()
        .filter(|(i, item)| match origin(*i) {
            Origin::History(_) => false,
            Origin::NewInput => true,
            Origin::Made => match (0..history.len()).find(|h| !used[*h] && &history[*h] == *item) {
                Some(h) => {
                    used[h] = true;
                    false
                }
                None => true,
            },
        })
        .map(|(_, item)| item.clone())
        .collect()
}

/// The new input of a run as items: a string becomes one user message.
pub fn input_items_from_text(text: &str) -> Vec<Value> {
    vec![json!({"type": "message", "role": "user", "content": text})]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::run::fixtures::*;

    #[test]
    fn history_never_holds_half_a_tool_exchange() {
        let items = vec![
            out("cut"),
            user("q"),
            call("a"),
            out("a"),
            call("dangling"),
            answer("x"),
        ];
        assert_eq!(
            select_history(items, &[]),
            vec![user("q"), call("a"), out("a"), answer("x")]
        );
        let raw = vec![
            json!({"type": "function_call", "call_id": "r"}),
            json!({"type": "function_call_output", "call_id": "r", "output": "1"}),
        ];
        assert_eq!(select_history(raw.clone(), &[]), raw);
        // The SDK's shell, computer and apply-patch calls are paired with their outputs too: a
        // server refuses any call sent without its output.
        let shell = json!({"type": "shell_call", "callId": "s", "action": {"commands": ["ls"]}});
        let shell_out = json!({"type": "shell_call_output", "callId": "s", "output": []});
        let patch = json!({"type": "apply_patch_call", "callId": "p", "operation": {}});
        let computer = json!({"type": "computer_call", "callId": "c", "action": {}});
        let computer_out = json!({"type": "computer_call_result", "callId": "c", "output": {}});
        assert_eq!(
            select_history(
                vec![
                    user("q"),
                    shell.clone(),
                    shell_out.clone(),
                    patch,
                    computer.clone(),
                    computer_out.clone(),
                    json!({"type": "apply_patch_call_output", "callId": "gone", "status": "completed"}),
                ],
                &[]
            ),
            vec![user("q"), shell, shell_out, computer, computer_out]
        );
        // A server that numbers its calls per response: a call of an id answered before, left
        // unanswered (a run paused for approval and left), is dropped all the same; so is an
        // output of an id whose call came after it, and a second output of one call.
        let items = vec![
            user("q1"),
            call("call_0"),
            out("call_0"),
            answer("a1"),
            user("q2"),
            call("call_0"),
            user("q3"),
            out("late"),
            call("late"),
            call("twice"),
            out("twice"),
            out("twice"),
        ];
        assert_eq!(
            select_history(items, &[]),
            vec![
                user("q1"),
                call("call_0"),
                out("call_0"),
                answer("a1"),
                user("q2"),
                user("q3"),
                call("twice"),
                out("twice"),
            ]
        );
    }

    #[test]
    fn a_reasoning_item_goes_with_the_call_it_led_to() {
        let thought = |t: &str| json!({"type": "reasoning", "id": t, "summary": []});
        // A call left waiting (for approval) when the user asked something else.
        let items = vec![
            user("q1"),
            thought("r1"),
            thought("r2"),
            call("waiting"),
            user("q2"),
        ];
        assert_eq!(select_history(items, &[]), vec![user("q1"), user("q2")]);
        // A call the run's new input answers (its output sent by hand) is kept, with its
        // reasoning; one of the history it does not answer is not.
        let items = vec![user("q"), thought("r"), call("c1")];
        assert_eq!(
            select_history(items.clone(), &[out("c1")]),
            vec![user("q"), thought("r"), call("c1")]
        );
        assert_eq!(select_history(items, &[out("c2")]), vec![user("q")]);
        // Parallel calls: one answered keeps the reasoning before them both.
        let items = vec![user("q"), thought("r"), call("a"), call("b"), out("a")];
        assert_eq!(
            select_history(items, &[]),
            vec![user("q"), thought("r"), call("a"), out("a")]
        );
        // Whichever of them is answered.
        let items = vec![user("q"), thought("r"), call("b"), call("a"), out("a")];
        assert_eq!(
            select_history(items, &[]),
            vec![user("q"), thought("r"), call("a"), out("a")]
        );
        // Each reasoning item with its own call; a hosted call kept keeps its reasoning.
        let hosted = json!({"type": "hosted_tool_call", "name": "web_search_call"});
        let items = vec![
            user("q"),
            thought("r1"),
            call("gone"),
            thought("r2"),
            call("a"),
            out("a"),
            thought("r3"),
            call("gone too"),
            hosted.clone(),
        ];
        assert_eq!(
            select_history(items, &[]),
            vec![
                user("q"),
                thought("r2"),
                call("a"),
                out("a"),
                thought("r3"),
                hosted
            ]
        );
        // Reasoning before an answer stays.
        let items = vec![user("q"), thought("r"), answer("x")];
        assert_eq!(select_history(items.clone(), &[]), items);
    }

    #[test]
    fn a_callback_that_halves_a_history_tool_exchange_sends_neither_half() {
        let thought = json!({"type": "reasoning", "id": "rs", "summary": []});
        // From the history: a reasoning item and its call, whose output the callback left out;
        // an output whose call it left out; a whole pair. Made by it: a call of its own.
        let items = vec![
            user("q"),
            thought.clone(),
            call("a"),
            out("b"),
            call("c"),
            out("c"),
            call("mine"),
            user("next"),
        ];
        let from_history = [true, true, true, true, true, true, false, false];
        assert_eq!(
            select_returned(items, &from_history),
            vec![user("q"), call("c"), out("c"), call("mine"), user("next")]
        );
        // A history call the new input answers stays.
        assert_eq!(
            select_returned(vec![call("a"), out("a")], &[true, false]),
            vec![call("a"), out("a")]
        );
    }

    #[test]
    fn a_window_begun_inside_a_response_leaves_that_response_out() {
        let thought = json!({"type": "reasoning", "id": "rs", "summary": []});
        let window = |before: &Value, items: Vec<Value>| {
            select_history(from_response_start(Some(before), items, &[]), &[])
        };
        // The window's call and answer came after a reasoning item it does not hold: the call
        // goes, its output with it; the next response is whole.
        assert_eq!(
            window(
                &thought,
                vec![call("a"), out("a"), thought.clone(), answer("x")]
            ),
            vec![thought.clone(), answer("x")]
        );
        assert_eq!(window(&thought, vec![answer("x")]), Vec::<Value>::new());
        // Begun at the second of two parallel calls.
        assert_eq!(
            window(&call("a"), vec![call("b"), out("a"), out("b"), user("q")]),
            vec![user("q")]
        );
        // A window that begins with a response, a message or an output is whole.
        let items = vec![thought.clone(), call("a"), out("a"), answer("x")];
        assert_eq!(window(&user("q"), items.clone()), items);
        assert_eq!(window(&out("z"), items.clone()), items);
        let items = vec![user("q"), answer("x")];
        assert_eq!(window(&answer("w"), items.clone()), items);
        assert_eq!(window(&thought, vec![out("a"), user("q")]), vec![user("q")]);
        // Up to the next reasoning item: what follows it is whole (hosted calls, an answer).
        let search = json!({"type": "web_search_call", "id": "ws", "status": "completed"});
        assert_eq!(
            window(&thought, vec![search.clone(), thought.clone(), answer("x")]),
            vec![thought.clone(), answer("x")]
        );
        // Items the app gives are no model's: an MCP approval's response, a custom tool's
        // output, an item of no kind known.
        let approval =
            json!({"type": "hosted_tool_call", "name": "mcp_approval_response", "id": "a"});
        let custom_out = json!({"type": "custom_tool_call_output", "call_id": "x", "output": "o"});
        let unknown = json!({"type": "item_reference", "id": "r"});
        for item in [approval, custom_out, unknown] {
            let items = vec![item, thought.clone(), answer("x")];
            assert_eq!(
                from_response_start(Some(&thought), items.clone(), &[]),
                items
            );
        }
        // A call the run's new input answers stays, with what follows it.
        let mcp = json!({"type": "mcp_approval_request", "id": "m"});
        assert_eq!(
            from_response_start(
                Some(&answer("w")),
                vec![mcp, call("a"), call("b")],
                &[out("a")]
            ),
            vec![call("a"), call("b")]
        );
        // Nothing before it, or a compaction: whole.
        assert_eq!(
            from_response_start(None, vec![answer("x")], &[]),
            vec![answer("x")]
        );
        for summary in [
            json!({"type": "compaction", "encrypted_content": "e"}),
            crate::core::compaction::summary_item("s", 0),
        ] {
            assert_eq!(
                from_response_start(Some(&summary), vec![answer("x")], &[]),
                vec![answer("x")]
            );
        }
    }

    #[test]
    fn the_newest_turns_come_off_whole() {
        let items = vec![
            answer("summary"),
            user("q1"),
            call("c"),
            out("c"),
            answer("a1"),
            user("q2"),
            answer("a2"),
        ];
        assert_eq!(without_newest_turns(items.clone(), 0), items);
        assert_eq!(without_newest_turns(items.clone(), 1), items[..5].to_vec());
        assert_eq!(
            without_newest_turns(items.clone(), 2),
            vec![answer("summary")]
        );
        assert_eq!(without_newest_turns(items, 3), Vec::<Value>::new());
    }

    #[test]
    fn only_items_the_callback_added_are_new() {
        use Origin::*;
        let history = vec![user("a"), answer("b"), user("a")];
        let model_input = vec![
            answer("b"),
            user("a"),
            user("new"),
            user("a"),
            user("extra"),
        ];
        assert_eq!(
            new_turn_items(&history, &model_input, &[]),
            vec![user("new"), user("extra")]
        );
        // Repeating a history item more often than it occurs makes the extra copy new.
        let model_input = vec![answer("b"), answer("b")];
        assert_eq!(
            new_turn_items(&history, &model_input, &[]),
            vec![answer("b")]
        );
        // A history object the callback edited is still history.
        let model_input = vec![user("edited"), user("new")];
        assert_eq!(
            new_turn_items(&history, &model_input, &[History(0), Made]),
            vec![user("new")]
        );
        // The new input is new even when it repeats an earlier message word for word.
        let model_input = vec![answer("b"), user("a")];
        assert_eq!(
            new_turn_items(&history, &model_input, &[History(1), NewInput]),
            vec![user("a")]
        );
    }

    #[test]
    fn the_newest_turns_start_at_a_user_message() {
        let items = vec![
            json!({"role": "system", "content": "s"}),
            user("q1"),
            call("c"),
            out("c"),
            user("q2"),
            answer("a2"),
        ];
        assert_eq!(
            newest_turns(items.clone(), 1),
            vec![user("q2"), answer("a2")]
        );
        assert_eq!(newest_turns(items.clone(), 2).len(), 5);
        // A window read as turns is cut only where it holds more than asked.
        assert_eq!(
            at_most_turns(items.clone(), 1),
            vec![user("q2"), answer("a2")]
        );
        assert_eq!(at_most_turns(items.clone(), 2), items);
        assert_eq!(
            newest_turns(items.clone(), 3).len(),
            6,
            "the items before the first turn too"
        );
        assert!(newest_turns(items, 0).is_empty());
        // A compaction summary at the head stays with any window (a system item does not).
        let summary =
            json!({"role": "system", "content": "so far", "agent-sessions.summary": true});
        let compacted = vec![
            summary.clone(),
            user("q1"),
            answer("a1"),
            user("q2"),
            answer("a2"),
        ];
        assert_eq!(
            newest_turns(compacted.clone(), 1),
            vec![summary, user("q2"), answer("a2")]
        );
        assert_eq!(newest_turns(compacted.clone(), 2), compacted);
        assert!(newest_turns(compacted, 0).is_empty());
    }
}
