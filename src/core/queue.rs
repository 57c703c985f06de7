//! Call-order execution for one session object.
//!
//! A caller may start `addItems`, `getItems` and `popItem` without awaiting each one. Every call
//! takes a [`Ticket`] synchronously, when it is made; the ticket's operation starts only after the
//! previous ticket was dropped, so operations take effect in call order even though each of them
//! awaits storage in between.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Poll, Waker};

#[derive(Debug, Default)]
pub struct OpQueue {
    tail: RefCell<Option<Rc<Gate>>>,
}

/// Opens when its ticket is dropped. A ticket dropped before its turn came leaves the gate it
/// was waiting on in its own (`earlier`), so the next ticket still waits for every earlier one.
#[derive(Debug, Default)]
struct Gate {
    open: Cell<bool>,
    earlier: RefCell<Option<Rc<Gate>>>,
    waiter: RefCell<Option<Waker>>,
}

/// A place in the queue. Await [`Ticket::ready`], run the operation, then drop the ticket.
#[derive(Debug)]
pub struct Ticket {
    previous: Option<Rc<Gate>>,
    done: Rc<Gate>,
}

impl OpQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next place in the queue. Call this when the operation is requested, not later.
    pub fn enter(&self) -> Ticket {
        let done = Rc::new(Gate::default());
        let previous = self.tail.replace(Some(done.clone()));
        Ticket { previous, done }
    }
}

impl Ticket {
    /// Resolves once every operation that entered the queue earlier has finished (succeeded,
    /// failed or was dropped).
    pub async fn ready(&mut self) {
        let mut previous = self.previous.take();
        poll_fn(|cx| loop {
            let Some(gate) = previous.take() else {
                return Poll::Ready(());
            };
            if gate.open.get() {
                previous = gate.earlier.take();
                continue;
            }
            *gate.waiter.borrow_mut() = Some(cx.waker().clone());
            previous = Some(gate);
            return Poll::Pending;
        })
        .await
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        *self.done.earlier.borrow_mut() = self.previous.take();
        self.done.open.set(true);
        let waiter = self.done.waiter.borrow_mut().take();
        if let Some(waiter) = waiter {
            waiter.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_executor::LocalPool;
    use futures_util::task::LocalSpawnExt;
    use futures_util_stub::yield_now;
    use std::rc::Rc;

    /// A tiny "yield once" future so operations interleave on a single-threaded executor.
    mod futures_util_stub {
        use std::future::Future;
        use std::pin::Pin;
        use std::task::{Context, Poll};

        pub fn yield_now() -> impl Future<Output = ()> {
            struct Yield(bool);
            impl Future for Yield {
                type Output = ();
                fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
                    if self.0 {
                        Poll::Ready(())
                    } else {
                        self.0 = true;
                        cx.waker().wake_by_ref();
                        Poll::Pending
                    }
                }
            }
            Yield(false)
        }
    }

    #[test]
    fn operations_run_in_the_order_they_entered() {
        let queue = OpQueue::new();
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut pool = LocalPool::new();
        let spawner = pool.spawner();
        // The first operation yields many times; without the queue the others would overtake it.
        for (i, yields) in [(0, 50), (1, 0), (2, 10), (3, 0)] {
            let mut ticket = queue.enter();
            let log = log.clone();
            spawner
                .spawn_local(async move {
                    ticket.ready().await;
                    log.borrow_mut().push(format!("start {i}"));
                    for _ in 0..yields {
                        yield_now().await;
                    }
                    log.borrow_mut().push(format!("end {i}"));
                    drop(ticket);
                })
                .unwrap();
        }
        pool.run();
        let expected: Vec<String> = (0..4)
            .flat_map(|i| [format!("start {i}"), format!("end {i}")])
            .collect();
        assert_eq!(*log.borrow(), expected);
    }

    #[test]
    fn a_ticket_dropped_before_its_turn_does_not_let_a_later_one_overtake() {
        let queue = OpQueue::new();
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut pool = LocalPool::new();
        let spawner = pool.spawner();
        // What the first operation waits for (storage, in the library), released by the test.
        let outside = OpQueue::new();
        let held = outside.enter();
        let mut storage = outside.enter();
        let mut first = queue.enter();
        let dropped = queue.enter();
        let mut last = queue.enter();
        {
            let log = log.clone();
            spawner
                .spawn_local(async move {
                    first.ready().await;
                    log.borrow_mut().push("start first");
                    storage.ready().await;
                    log.borrow_mut().push("end first");
                    drop(first);
                })
                .unwrap();
        }
        {
            let log = log.clone();
            spawner
                .spawn_local(async move {
                    last.ready().await;
                    log.borrow_mut().push("start last");
                    drop(last);
                })
                .unwrap();
        }
        pool.run_until_stalled();
        // The operation between them is abandoned while the first one is under way.
        drop(dropped);
        pool.run_until_stalled();
        assert_eq!(*log.borrow(), ["start first"]);
        drop(held);
        pool.run();
        assert_eq!(*log.borrow(), ["start first", "end first", "start last"]);
    }

    #[test]
    fn a_ticket_whose_predecessors_are_done_is_ready_at_once() {
        let queue = OpQueue::new();
        drop(queue.enter());
        drop(queue.enter());
        let mut ticket = queue.enter();
        let mut pool = LocalPool::new();
        let ran = Rc::new(Cell::new(false));
        let seen = ran.clone();
        pool.spawner()
            .spawn_local(async move {
                ticket.ready().await;
                seen.set(true);
            })
            .unwrap();
        pool.run_until_stalled();
        assert!(ran.get());
    }
}
