// Timeouts made to fire at once, for the tests of requests the library gives up on after minutes
// (a test cannot wait that long): while `fn` runs, `AbortSignal.timeout(ms)` gives a signal that
// fires after 300 ms, and records the `ms` it was asked for. Resolves to `{ asked, value }`.
export async function withQuickTimeouts(fn) {
  const timeout = AbortSignal.timeout;
  const asked = [];
  AbortSignal.timeout = (ms) => {
    asked.push(ms);
    const controller = new AbortController();
    setTimeout(() => controller.abort(new DOMException('signal timed out', 'TimeoutError')), 300);
    return controller.signal;
  };
  try {
    return { asked, value: await fn() };
  } finally {
    AbortSignal.timeout = timeout;
  }
}
