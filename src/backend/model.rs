//! Calls an OpenAI-compatible model server with `fetch`: one POST per model call, retried on
//! 408, 409, 429 and 5xx and on network failures, with backoff (honouring `retry-after-ms` and
//! `Retry-After`), read whole or as server-sent events; a failure of the kind reported inside a
//! successful answer before any of its text was streamed is retried too.
//! The API key goes only into the `Authorization` header of requests to the configured base URL.

use crate::core::json::Value;
use gloo_net::http::{Method, RequestBuilder, Response};
use js_sys::Reflect;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use std::cell::Cell;

use crate::core::run::retry::{
    is_retryable, is_retryable_code, retry_after_seconds, retry_delay_ms,
};
use crate::core::sse::SseParser;
use crate::core::wire::{
    error_code, error_message, parse_response, request_body, usage_of, Api, ModelOutput,
    ModelRequest, ModelSettings, StreamAccumulator, StreamEvent, Usage, WireError,
};

use super::error::abort_error;
use super::js::{self, call_method, error_text, object, resolve_value, Unresolved};

/// A failed model call. `status` is 0 when no HTTP response arrived.
#[derive(Debug, Clone)]
pub struct ModelFailure {
    pub status: u16,
    pub message: String,
    /// No HTTP answer: the network failed the request (a connection dropped). Tried again.
    pub network: bool,
    /// The code the server gave the failure (`rate_limit_exceeded`, `server_error`), if any.
    pub code: Option<String>,
}

impl ModelFailure {
    /// A failure with an HTTP answer (`status`), or none (0) for a reason not the network's.
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        ModelFailure {
            status,
            message: message.into(),
            network: false,
            code: None,
        }
    }
}

/// Why a model call did not produce output.
#[derive(Debug, Clone)]
pub enum CallError {
    Failed(ModelFailure),
    /// The caller's `AbortSignal` fired; carries its reason.
    Aborted(JsValue),
}

fn failed(status: u16, message: impl Into<String>) -> CallError {
    CallError::Failed(ModelFailure::new(status, message))
}

/// The failure of an answer that could not be read (`error`), keeping what the call cost in
/// `spent`.
fn failed_spending(status: u16, error: WireError, spent: &Cell<Usage>, usage: Usage) -> CallError {
    spent.set(usage);
    let code = match &error {
        WireError::ModelFailed(_, code) => code.clone(),
        _ => None,
    };
    CallError::Failed(ModelFailure {
        code,
        ..ModelFailure::new(status, error.to_string())
    })
}

pub struct ModelClient {
    pub base_url: String,
    pub api: Api,
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    /// A caller-supplied `fetch`, else the global one.
    pub fetch: Option<js_sys::Function>,
    pub retries: u32,
    /// How long a call waits for the model to send anything: its answer, or the next bytes of
    /// its body (`timeoutMs`).
    pub timeout_ms: u32,
}

/// How long a call waits for the model to send anything, unless the runner says: 10 minutes,
/// as OpenAI's own client waits.
pub const DEFAULT_TIMEOUT_MS: u32 = 600_000;

/// A timer for one wait of a call, that resolves to a value of its own after `ms`; cleared when
/// dropped (a long stream reads many chunks, each with its timer).
struct Stall {
    promise: js_sys::Promise,
    marker: JsValue,
    id: JsValue,
}

impl Stall {
    fn new(ms: u32) -> Stall {
        let marker: JsValue = js_sys::Object::new().into();
        let mut id = JsValue::UNDEFINED;
        let promise = js_sys::Promise::new(&mut |resolve, _| {
            let fire: js_sys::Function = resolve.bind1(&JsValue::NULL, &marker).unchecked_into();
            id = js::set_timeout(&fire, ms.into());
        });
        Stall {
            promise,
            marker,
            id,
        }
    }
}

impl Drop for Stall {
    fn drop(&mut self) {
        js::clear_timeout(&self.id);
    }
}

/// As [`raced`], and `Ok(None)` where nothing came within `ms`.
async fn raced_within(
    value: JsValue,
    signal: Option<&JsValue>,
    ms: u32,
) -> Result<Option<JsValue>, JsValue> {
    let stall = Stall::new(ms);
    let value = js_sys::Promise::race(&js_sys::Array::of2(&value, &stall.promise));
    let got = raced(value.into(), signal).await?;
    Ok((!js_sys::Object::is(&got, &stall.marker)).then_some(got))
}

/// The error of a call the model sent nothing to for `ms`.
fn stalled(status: u16, ms: u32, what: &str) -> CallError {
    failed(
        status,
        format!("the model sent nothing for {ms} ms {what}: the runner's timeoutMs"),
    )
}

/// The abort reason if `signal` has fired.
pub fn aborted(signal: Option<&JsValue>) -> Option<JsValue> {
    let signal = signal?;
    let fired = Reflect::get(signal, &"aborted".into())
        .ok()
        .and_then(|a| a.as_bool())
        .unwrap_or(false);
    if !fired {
        return None;
    }
    let reason = Reflect::get(signal, &"reason".into()).unwrap_or(JsValue::UNDEFINED);
    Some(if reason.is_undefined() {
        abort_error("the run was aborted")
    } else {
        reason
    })
}

/// An `AbortSignal` that fires after `ms` (`AbortSignal.timeout`); `None` where there is none.
pub fn timeout_signal(ms: u32) -> Option<JsValue> {
    let signals = js::get(&js_sys::global(), "AbortSignal").ok()?;
    call_method(&signals, "timeout", &[JsValue::from(ms)]).ok()
}

/// The signal a request is made with: the caller's, joined (`AbortSignal.any`) with one of the
/// request's own, which is aborted when the request is done with (its answer read, or given up
/// on). A connection left open (a server that sent nothing for `timeoutMs`; a body not read to
/// its end) is then closed, rather than held until the server lets go: the browser keeps six
/// per host. Where signals cannot be joined (no `AbortSignal.any`, a signal of another realm),
/// the caller's alone.
struct CallSignal {
    own: Option<web_sys::AbortController>,
    signal: Option<JsValue>,
}

impl CallSignal {
    fn new(caller: Option<&JsValue>) -> CallSignal {
        let own = web_sys::AbortController::new().ok();
        let mine = own.as_ref().map(|c| JsValue::from(c.signal()));
        let signal = match (caller, mine) {
            (Some(caller), Some(mine)) => js::get(&js_sys::global(), "AbortSignal")
                .and_then(|s| call_method(&s, "any", &[js_sys::Array::of2(caller, &mine).into()]))
                .ok()
                .filter(JsValue::is_object)
                .or_else(|| Some(caller.clone())),
            (caller, mine) => caller.cloned().or(mine),
        };
        CallSignal { own, signal }
    }
}

impl Drop for CallSignal {
    fn drop(&mut self) {
        if let Some(own) = &self.own {
            own.abort();
        }
    }
}

/// What a call made with only a [`timeout_signal`] failed with: its abort is the timeout, a
/// `ModelError` with status 0 saying which request (`what`) had no answer.
pub fn timed_out(ms: u32, what: &'static str) -> impl Fn(CallError) -> CallError {
    move |e| match e {
        CallError::Aborted(_) => failed(0, format!("no answer within {} s to {what}", ms / 1000)),
        other => other,
    }
}

/// `Aborted` with the signal's reason once `signal` has fired.
fn unless_aborted(signal: Option<&JsValue>) -> Result<(), CallError> {
    aborted(signal).map_or(Ok(()), |reason| Err(CallError::Aborted(reason)))
}

/// A promise that rejects when a signal fires, raced against each step of a call that waits on
/// the network: a `fetch` of the caller's, or its body, may not heed the signal, and a Stop must
/// end the call all the same. Its listener is taken off the signal when it is dropped (a page
/// may keep one signal for many runs).
struct AbortRace {
    promise: js_sys::Promise,
    signal: JsValue,
    reject: JsValue,
}

impl AbortRace {
    fn new(signal: Option<&JsValue>) -> Option<AbortRace> {
        let signal = signal?.clone();
        let mut reject = JsValue::UNDEFINED;
        let promise = js_sys::Promise::new(&mut |_, r| reject = r.into());
        let _ = call_method(
            &signal,
            "addEventListener",
            &["abort".into(), reject.clone()],
        );
        Some(AbortRace {
            promise,
            signal,
            reject,
        })
    }
}

impl Drop for AbortRace {
    fn drop(&mut self) {
        let _ = call_method(
            &self.signal,
            "removeEventListener",
            &["abort".into(), self.reject.clone()],
        );
    }
}

/// Waits for `value` (a promise or a plain value): what it resolves to, or its rejection, or the
/// abort of `signal` if that comes first. The listener on the signal lives as long as the wait.
async fn raced(value: JsValue, signal: Option<&JsValue>) -> Result<JsValue, JsValue> {
    let race = AbortRace::new(signal);
    let value = match &race {
        Some(race) => js_sys::Promise::race(&js_sys::Array::of2(&value, &race.promise)).into(),
        None => value,
    };
    resolve_value(value).await.map_err(Unresolved::into_value)
}

/// Waits `ms` milliseconds, or until `signal` fires.
pub async fn sleep(ms: f64, signal: Option<&JsValue>) -> Result<(), CallError> {
    unless_aborted(signal)?;
    match raced(js::timer(ms).into(), signal).await {
        Ok(_) => Ok(()),
        Err(_) => Err(CallError::Aborted(
            aborted(signal).unwrap_or(JsValue::UNDEFINED),
        )),
    }
}

impl ModelClient {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url.trim_end_matches('/'))
    }

    /// The headers every request carries: JSON, the caller's, and the key for this server, each
    /// name in lower case, so that one given twice (the caller's `Content-Type`) is one header
    /// whose last value wins, as `Headers.set` makes it: a caller's `fetch` given an object with
    /// both spellings had them joined into one value (`Bearer a, Bearer b`).
    fn header_list(&self) -> Vec<(String, String)> {
        let mut headers = vec![("content-type".into(), "application/json".to_string())];
        headers.extend(
            self.headers
                .iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v.clone())),
        );
        if let Some(key) = &self.api_key {
            headers.push(("authorization".into(), format!("Bearer {key}")));
        }
        headers
    }

    /// Sends one POST. Without a `fetch` of the caller's, the request is built by `gloo-net` and
    /// given to the global `fetch`; the caller's `fetch` is called as its type says,
    /// `fetch(url, init)`. Either way the answer is read as a `gloo-net` response.
    async fn fetch_once(
        &self,
        path: &str,
        body: &str,
        signal: Option<&JsValue>,
    ) -> Result<Response, CallError> {
        let url = self.url(path);
        let network = |e: &JsValue| {
            CallError::Failed(ModelFailure {
                status: 0,
                network: true,
                ..ModelFailure::new(0, format!("network error: {}", error_text(e)))
            })
        };
        let call = match &self.fetch {
            Some(fetch) => {
                let headers = js_sys::Object::new();
                for (k, v) in self.header_list() {
                    // Defining a property of a fresh plain object does not fail.
                    let _ = Reflect::set(&headers, &k.as_str().into(), &v.into());
                }
                let mut init = vec![
                    ("method", "POST".into()),
                    ("headers", headers.into()),
                    ("body", body.into()),
                ];
                if let Some(s) = signal {
                    init.push(("signal", s.clone()));
                }
                fetch.call2(&JsValue::UNDEFINED, &url.into(), &object(&init))
            }
            None => {
                let fetch = js::get(&js_sys::global(), "fetch")
                    .ok()
                    .filter(JsValue::is_function)
                    .map(JsValue::unchecked_into::<js_sys::Function>)
                    .ok_or_else(|| failed(0, "fetch is not available in this context"))?;
                let mut request = RequestBuilder::new(&url).method(Method::POST);
                for (k, v) in self.header_list() {
                    request = request.header(&k, &v);
                }
                if let Some(s) = signal {
                    request = request.abort_signal(Some(s.unchecked_ref()));
                }
                let request: web_sys::Request = request
                    .body(body)
                    .map_err(|e| failed(0, format!("the request to {url} cannot be made: {e}")))?
                    .into();
                fetch.call1(&JsValue::UNDEFINED, &request)
            }
        }
        .map_err(|e| network(&e))?;
        // The answer of a `fetch` that did not heed the signal, or came too late, is let go
        // when it comes: its body is cancelled, so that the connection closes.
        let let_go = |call: JsValue| {
            js::spawn(Box::pin(async move {
                if let Ok(response) = resolve_value(call).await {
                    if let Ok(body) = js::get(&response, "body") {
                        cancel_quietly(&body);
                    }
                }
            }))
        };
        let response = raced_within(call.clone(), signal, self.timeout_ms)
            .await
            .map_err(|e| match aborted(signal) {
                Some(reason) => {
                    let_go(call.clone());
                    CallError::Aborted(reason)
                }
                None => network(&e),
            })?
            .ok_or_else(|| {
                let_go(call);
                stalled(0, self.timeout_ms, "after the request, no answer")
            })?;
        response
            .dyn_into::<web_sys::Response>()
            .map(Response::from)
            .map_err(|v| {
                failed(
                    0,
                    format!("fetch resolved to {}, not a Response", js::describe(&v)),
                )
            })
    }

    /// POSTs the JSON `body` to `path` (under the base URL), retrying 408, 409, 429 and 5xx answers
    /// and network failures as configured: the successful response. `attempt` counts the retries
    /// made, shared with the caller's own (see [`ModelClient::call`]).
    async fn post(
        &self,
        path: &str,
        body: &str,
        signal: Option<&JsValue>,
        attempt: &mut u32,
    ) -> Result<(Response, CallSignal), CallError> {
        loop {
            unless_aborted(signal)?;
            // Each attempt with a signal of its own: one given up on (its error body stalled) is
            // closed when the next begins, the answer's once its body is read.
            let own = CallSignal::new(signal);
            let request = own.signal.as_ref();
            let response = match self.fetch_once(path, body, request).await {
                Ok(response) => response,
                // A request the network failed (a connection dropped, wifi that came back) is
                // tried again, as an HTTP answer that asks for it is. (Not one given up on after
                // `timeoutMs`, nor an abort.)
                Err(CallError::Failed(f)) if f.network && *attempt < self.retries => {
                    drop(own);
                    sleep(retry_delay_ms(*attempt, None), signal).await?;
                    *attempt += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            // A `fetch` of the caller's may not heed the signal: an abort meanwhile still wins
            // (and the answer's body is let go).
            unless_aborted(request).inspect_err(|_| {
                if let Some(body) = response.body() {
                    cancel_quietly(&body);
                }
            })?;
            let status = response.status();
            if (200..300).contains(&status) {
                return Ok((response, own));
            }
            let wait = retry_after(&response);
            // The body only improves the message: a failure to read it is no error of its own,
            // but an abort while reading it is.
            let text = match read_text(response, request, self.timeout_ms).await {
                Ok(text) => text,
                Err(CallError::Aborted(reason)) => return Err(CallError::Aborted(reason)),
                Err(CallError::Failed(_)) => String::new(),
            };
            // Done with: closed now, before the wait for a retry.
            drop(own);
            if is_retryable(status) && *attempt < self.retries {
                sleep(retry_delay_ms(*attempt, wait), signal).await?;
                *attempt += 1;
                continue;
            }
            let message = match error_message(&text) {
                m if m.is_empty() => format!("HTTP {status}"),
                m => m,
            };
            let code = crate::core::json::from_str(&text)
                .ok()
                .and_then(|v| v.get("error").and_then(error_code));
            return Err(CallError::Failed(ModelFailure {
                code,
                ..ModelFailure::new(status, message)
            }));
        }
    }

    /// One whole (not streamed) call of `model` without tools, apart from any run: what the
    /// summaries, titles and compactions ask.
    pub async fn ask(
        &self,
        model: &str,
        settings: &ModelSettings,
        instructions: &str,
        input: &[Value],
        signal: Option<&JsValue>,
        spent: &Cell<Usage>,
    ) -> Result<ModelOutput, CallError> {
        let body = request_body(
            self.api,
            &ModelRequest {
                model,
                instructions: Some(instructions),
                settings,
                tools: &[],
                input,
                stream: false,
                previous_response_id: None,
                conversation_id: None,
                output_type: None,
            },
        );
        self.call(&body.to_string(), false, signal, &mut |_| {}, spent)
            .await
    }

    /// One model call with this JSON `body`. Text deltas of a streamed response go to
    /// `on_delta` as they arrive. A call that fails though its response said what it cost (one
    /// that stopped short at `max_output_tokens` spent its tokens) leaves that in `spent`: kept
    /// beside the error rather than in it, which every result of the runner carries.
    ///
    /// A failure the server reports inside a successful answer (a stream's `error` event or
    /// failed response, an error body sent with 200) is retried as an HTTP answer of its kind
    /// is (a rate limit, an overload, a server error: see [`is_retryable_code`]), with the same
    /// count of retries, while none of the answer's text was streamed: what the page showed is
    /// never shown twice. What the failed answers cost is counted in the call's usage.
    pub async fn call(
        &self,
        body: &str,
        stream: bool,
        signal: Option<&JsValue>,
        on_delta: &mut dyn FnMut(&str),
        spent: &Cell<Usage>,
    ) -> Result<ModelOutput, CallError> {
        let mut attempt = 0;
        let mut before = Usage::default();
        loop {
            let mut streamed = false;
            let result = {
                let mut relay = |text: &str| {
                    streamed |= !text.is_empty();
                    on_delta(text);
                };
                self.call_once(body, stream, signal, &mut relay, spent, &mut attempt)
                    .await
            };
            let mut cost = before;
            cost.add(&spent.take());
            let retry = match &result {
                Err(CallError::Failed(f)) => {
                    !streamed
                        && (200..300).contains(&f.status)
                        && f.code.as_deref().is_some_and(is_retryable_code)
                        && attempt < self.retries
                }
                _ => false,
            };
            if !retry {
                return match result {
                    Ok(mut output) => {
                        output.usage.add(&before);
                        Ok(output)
                    }
                    Err(e) => {
                        spent.set(cost);
                        Err(e)
                    }
                };
            }
            before = cost;
            if let Err(e) = sleep(retry_delay_ms(attempt, None), signal).await {
                spent.set(before);
                return Err(e);
            }
            attempt += 1;
        }
    }

    /// One attempt of [`ModelClient::call`] (its POST retried as [`ModelClient::post`] says).
    async fn call_once(
        &self,
        body: &str,
        stream: bool,
        signal: Option<&JsValue>,
        on_delta: &mut dyn FnMut(&str),
        spent: &Cell<Usage>,
        attempt: &mut u32,
    ) -> Result<ModelOutput, CallError> {
        let (response, call) = self.post(self.api.path(), body, signal, attempt).await?;
        let signal = call.signal.as_ref();
        // A streamed call answered with JSON (a server that does not stream, a proxy's error
        // body) is read whole: as a stream it was nothing but a cut one.
        let json_answer = response
            .headers()
            .get("content-type")
            .is_some_and(|t| t.as_bytes().windows(4).any(|w| w == b"json"));
        if stream && !json_answer {
            return read_stream(self, &response, signal, on_delta, spent).await;
        }
        let status = response.status();
        let json = read_json(response, signal, self.timeout_ms).await?;
        let output = parse_response(self.api, &json).map_err(|e| {
            failed_spending(status, e, spent, usage_of(self.api, json.get("usage")))
        })?;
        if stream {
            for item in &output.items {
                if item.get("role").and_then(Value::as_str) == Some("assistant") {
                    let text = crate::core::wire::answer_text(item.get("content"));
                    if !text.is_empty() {
                        on_delta(&text);
                    }
                }
            }
        }
        Ok(output)
    }

    /// A POST of `body` to another endpoint of the API (such as `/responses/compact`): its JSON.
    pub async fn post_json(
        &self,
        path: &str,
        body: &str,
        signal: Option<&JsValue>,
    ) -> Result<Value, CallError> {
        let (response, call) = self.post(path, body, signal, &mut 0).await?;
        read_json(response, call.signal.as_ref(), self.timeout_ms).await
    }
}

async fn read_json(
    response: Response,
    signal: Option<&JsValue>,
    timeout_ms: u32,
) -> Result<Value, CallError> {
    let status = response.status();
    let text = read_text(response, signal, timeout_ms).await?;
    // (With the start of what came instead: a wrong `baseUrl`'s web page says where it went.)
    crate::core::json::from_str(&text).map_err(|e| {
        failed(
            status,
            format!("malformed JSON in the response ({e}){}", start_of(&text)),
        )
    })
}

/// `": "` and the start of a body that was not what was asked for (a wrong `baseUrl`'s web page
/// says where the request went), or nothing for an empty one.
fn start_of(text: &str) -> String {
    match error_message(text) {
        m if m.is_empty() => m,
        m => format!(": {m}"),
    }
}

/// `Retry-After` in milliseconds: seconds, or an HTTP date.
fn retry_after(response: &Response) -> Option<f64> {
    // (OpenAI's, in milliseconds, as its own client reads it first.)
    if let Some(ms) = response.headers().get("retry-after-ms") {
        if let Some(ms) = crate::core::json::decimal(ms.trim()).filter(|ms| *ms >= 0.0) {
            return Some(ms);
        }
    }
    let value = response.headers().get("retry-after")?;
    retry_after_seconds(&value).or_else(|| {
        let at = js_sys::Date::parse(&value);
        (!at.is_nan()).then(|| (at - js_sys::Date::now()).max(0.0))
    })
}

/// The body as text. Read on the raw response: `gloo-net`'s own `text()` cannot report a read
/// that an abort with a reason of the caller's (not an `Error`) stopped.
async fn read_text(
    response: Response,
    signal: Option<&JsValue>,
    timeout_ms: u32,
) -> Result<String, CallError> {
    let status = response.status();
    let reading = |e: &JsValue| failed(status, format!("reading the response: {}", error_text(e)));
    let raw: web_sys::Response = response.into();
    let text = raw.text().map_err(|e| reading(&e))?;
    let text = raced_within(text.into(), signal, timeout_ms)
        .await
        .map_err(|e| match aborted(signal) {
            Some(reason) => CallError::Aborted(reason),
            None => reading(&e),
        })?
        // (The body `text()` reads is locked to it: it cannot be cancelled here. The request's
        // own signal, aborted once it is given up on, closes it: see `CallSignal`.)
        .ok_or_else(|| stalled(status, timeout_ms, "more while its answer was read"))?;
    unless_aborted(signal)?;
    Ok(text.as_string().unwrap_or_default())
}

/// Cancels `stream` (a reader or a body) and lets the cancel end as it will: one made after an
/// abort errored the stream rejects, which must not reach the page as an unhandled rejection.
fn cancel_quietly(stream: &JsValue) {
    if let Ok(done) = call_method(stream, "cancel", &[]) {
        if let Ok(done) = done.dyn_into::<js_sys::Promise>() {
            js::spawn(Box::pin(async move {
                let _ = JsFuture::from(done).await;
            }));
        }
    }
}

async fn read_stream(
    client: &ModelClient,
    response: &Response,
    signal: Option<&JsValue>,
    on_delta: &mut dyn FnMut(&str),
    spent: &Cell<Usage>,
) -> Result<ModelOutput, CallError> {
    let status = response.status();
    let Some(body) = response.body() else {
        return Err(failed(status, "the streamed response has no body"));
    };
    let reader = call_method(&body, "getReader", &[])
        .map_err(|e| failed(status, format!("reading the stream: {}", error_text(&e))))?;
    let mut parser = SseParser::new();
    let mut acc = StreamAccumulator::new(client.api);
    // The body's start, and whether it held any event: a body without one is no stream (a wrong
    // `baseUrl`'s web page), told as such, not as a stream cut.
    let mut head = Vec::new();
    let mut any_event = false;
    loop {
        let chunk = call_method(&reader, "read", &[])
            .map_err(|e| failed(status, format!("reading the stream: {}", error_text(&e))))?;
        // One race per read: a race against one abort promise for the whole stream would hold
        // every chunk read (each race's reaction on it) until the stream ended.
        let chunk = raced_within(chunk, signal, client.timeout_ms)
            .await
            .map_err(|e| match aborted(signal) {
                Some(reason) => {
                    cancel_quietly(&reader);
                    CallError::Aborted(reason)
                }
                None => failed(status, format!("the stream broke: {}", error_text(&e))),
            })?
            .ok_or_else(|| {
                cancel_quietly(&reader);
                stalled(status, client.timeout_ms, "in its stream")
            })?;
        // A body of the caller's `fetch` may not heed the signal.
        unless_aborted(signal).inspect_err(|_| cancel_quietly(&reader))?;
        let done = Reflect::get(&chunk, &"done".into())
            .ok()
            .and_then(|d| d.as_bool())
            .unwrap_or(true);
        if done {
            break;
        }
        let bytes = js::get(&chunk, "value")
            .and_then(|value| js::bytes_of(&value))
            .map_err(|e| {
                failed(
                    status,
                    format!(
                        "the stream gave a chunk that is not bytes ({})",
                        error_text(&e)
                    ),
                )
            })?;
        if head.len() < 300 {
            head.extend(bytes.iter().take(300 - head.len()));
        }
        for event in parser.feed(&bytes) {
            any_event = true;
            for e in acc.on_event(&event).map_err(|e| {
                // A stream given up on (a chunk that is no JSON, an error event) is cancelled:
                // its connection closes now, not when the server ends it. (It is still readable
                // here, so the cancel does not reject.)
                let _ = call_method(&reader, "cancel", &[]);
                failed_spending(status, e, spent, acc.spent())
            })? {
                match e {
                    StreamEvent::TextDelta(t) => on_delta(&t),
                }
            }
        }
        if acc.is_done() {
            let _ = call_method(&reader, "cancel", &[]);
            break;
        }
    }
    if !acc.is_done() {
        // The last event, ended by the body's end (a lone `\r` as its blank line): its text is
        // streamed as any other's, and what a failure there spent is counted.
        for event in parser.end() {
            any_event = true;
            for e in acc
                .on_event(&event)
                .map_err(|e| failed_spending(status, e, spent, acc.spent()))?
            {
                match e {
                    StreamEvent::TextDelta(t) => on_delta(&t),
                }
            }
        }
    }
    // Whether what came is a whole response (a stream cut before its end is not, nor an answer
    // cut at its token limit, whose cost is kept).
    let used = acc.spent();
    // (A stream cut in its first event, or of comments only, is a cut stream.)
    let kind = response.headers().get("content-type").unwrap_or_default();
    acc.finish().map_err(|e| match e {
        WireError::Cut
            if !any_event && !kind.as_bytes().windows(12).any(|w| w == b"event-stream") =>
        {
            failed(
                status,
                format!(
                    "the answer is no event stream (content-type {kind}){}",
                    start_of(match std::str::from_utf8(&head) {
                        Ok(text) => text,
                        // (Cut inside a character: up to it.)
                        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default(),
                    })
                ),
            )
        }
        e => failed_spending(status, e, spent, used),
    })
}
