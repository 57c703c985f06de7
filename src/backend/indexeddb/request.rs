//! Awaiting IndexedDB: a request's result, a transaction's end.
//!
//! The `idb` crate issues the requests; awaiting them is done here, more cheaply than its
//! futures do: one listener serves both of a target's outcomes (a request's `success` and
//! `error`, a transaction's `complete` and `abort`), and one shared cell holds the outcome and
//! the waker, where the crate's futures make a listener for each outcome and a channel for each.
//! The listener is set when the future is made, so a request sent while another one is awaited
//! has its result heard whenever it comes.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use idb::request::{
    CountStoreRequest, GetAllKeysStoreRequest, GetAllStoreRequest, GetStoreRequest,
};
use js_sys::{Array, Function};
use wasm_bindgen::prelude::*;
use web_sys::{Event, IdbRequest, IdbTransaction};

/// The first event fired at a target among those its listener was set for.
pub(super) struct Fired {
    state: Rc<RefCell<State>>,
}

struct State {
    event: Option<Event>,
    waker: Option<Waker>,
    /// The listener, kept until it is called (it then drops itself): a future dropped before
    /// its event leaves nothing behind that the event could call into freed memory.
    listener: Option<Closure<dyn FnMut(Event)>>,
}

impl Fired {
    /// Listens with one function, which `set` installs as the handler of each event awaited.
    pub(super) fn new(set: impl FnOnce(&Function)) -> Fired {
        let state = Rc::new(RefCell::new(State {
            event: None,
            waker: None,
            listener: None,
        }));
        let heard = state.clone();
        let listener = Closure::once(move |event: Event| {
            let (waker, listener) = {
                let mut state = heard.borrow_mut();
                state.event = Some(event);
                (state.waker.take(), state.listener.take())
            };
            drop(listener);
            if let Some(waker) = waker {
                waker.wake();
            }
        });
        set(listener.as_ref().unchecked_ref());
        state.borrow_mut().listener = Some(listener);
        Fired { state }
    }
}

impl Fired {
    /// Whether the event came (without taking it).
    pub(super) fn has_fired(&self) -> bool {
        self.state.borrow().event.is_some()
    }
}

impl Future for Fired {
    type Output = Event;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Event> {
        let mut state = self.state.borrow_mut();
        match state.event.take() {
            Some(event) => Poll::Ready(event),
            None => {
                state.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// Waits for a request's `success` or `error`.
fn settled(request: &IdbRequest) -> Fired {
    Fired::new(|f| {
        request.set_onsuccess(Some(f));
        request.set_onerror(Some(f));
    })
}

/// Waits for a transaction's `complete` or `abort`; the event says which.
pub(super) fn ended(tx: &IdbTransaction) -> Fired {
    Fired::new(|f| {
        tx.set_oncomplete(Some(f));
        tx.set_onabort(Some(f));
    })
}

/// A settled request's result, or its error.
fn outcome(request: &IdbRequest) -> std::result::Result<JsValue, idb::Error> {
    match request.error() {
        Ok(Some(e)) => Err(idb::Error::DomException(e)),
        Ok(None) => request.result().map_err(idb::Error::RequestResultNotFound),
        Err(e) => Err(idb::Error::RequestErrorNotFound(e)),
    }
}

/// A request (the `idb` crate's, or the browser's own), and what its result is made into.
pub(super) trait Sent: Into<IdbRequest> {
    type Output;
    fn output(result: JsValue) -> Self::Output;

    /// Listens to this request now (see [`listening`]).
    fn reply(self) -> Reply<Self::Output> {
        listening(self)
    }
}

/// A request's output, once it is settled.
pub(super) struct Reply<T> {
    request: IdbRequest,
    fired: Fired,
    output: fn(JsValue) -> T,
}

impl<T> Future for Reply<T> {
    type Output = std::result::Result<T, idb::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match Pin::new(&mut this.fired).poll(cx) {
            Poll::Ready(_) => Poll::Ready(outcome(&this.request).map(this.output)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Listens to `request` now and gives its output when it settles.
pub(super) fn listening<R: Sent>(request: R) -> Reply<R::Output> {
    let request: IdbRequest = request.into();
    Reply {
        fired: settled(&request),
        request,
        output: R::output,
    }
}

fn rows(result: JsValue) -> Vec<JsValue> {
    result.unchecked_into::<Array>().to_vec()
}

/// A request as the browser gives it (one the `idb` crate cannot send, or an open request): its
/// result as it is.
impl Sent for IdbRequest {
    type Output = JsValue;
    fn output(result: JsValue) -> JsValue {
        result
    }
}

impl Sent for GetStoreRequest {
    type Output = Option<JsValue>;
    fn output(result: JsValue) -> Option<JsValue> {
        Some(result).filter(|r| !r.is_undefined() && !r.is_null())
    }
}

impl Sent for GetAllStoreRequest {
    type Output = Vec<JsValue>;
    fn output(result: JsValue) -> Vec<JsValue> {
        rows(result)
    }
}

impl Sent for GetAllKeysStoreRequest {
    type Output = Vec<JsValue>;
    fn output(result: JsValue) -> Vec<JsValue> {
        rows(result)
    }
}

impl Sent for CountStoreRequest {
    type Output = u32;
    fn output(result: JsValue) -> u32 {
        result.as_f64().unwrap_or(0.0) as u32
    }
}
