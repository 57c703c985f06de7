//! Call-order execution for one session object.
//!
//! A caller may start `addItems`, `getItems` and `popItem` without awaiting each one. Every call
//! takes a [`Ticket`] synchronously, when it is made; the ticket's operation starts only after the
//! previous ticket was dropped, so operations take effect in call order even though each of them
//! awaits storage in between.

use std::cell::RefCell;

use futures_channel::oneshot;

#[derive(Debug, Default)]
pub struct OpQueue {
    tail: RefCell<Option<oneshot::Receiver<()>>>,
}

/// A place in the queue. Await [`Ticket::ready`], run the operation, then drop the ticket.
#[derive(Debug)]
pub struct Ticket {
    previous: Option<oneshot::Receiver<()>>,
    _done: oneshot::Sender<()>,
}

impl OpQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next place in the queue. Call this when the operation is requested, not later.
    pub fn enter(&self) -> Ticket {
        let (done, finished) = oneshot::channel();
        let previous = self.tail.replace(Some(finished));
        Ticket {
            previous,
            _done: done,
        }
    }
}

impl Ticket {
    /// Resolves once every operation that entered the queue earlier has finished (succeeded,
    /// failed or was dropped).
    pub async fn ready(&mut self) {
        if let Some(previous) = self.previous.take() {
            // A cancelled receiver means the previous ticket was dropped: it is finished.
            let _ = previous.await;
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
}
