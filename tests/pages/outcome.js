// How a call ended, as the tests compare it; shared by the test pages.

// Runs fn and returns its result, or the error's observable shape.
export async function attempt(fn) {
  try {
    return { ok: true, value: await fn() };
  } catch (e) {
    return { ok: false, name: e?.name, code: e?.code, status: e?.status, message: e?.message, isError: e instanceof Error };
  }
}

// 'resolved', or the error's name and code ("SessionError INVALID_KEY").
export async function outcome(fn) {
  const r = await attempt(fn);
  return r.ok ? 'resolved' : `${r.name} ${r.code}`;
}
