// How long a change takes to reach another tab: one page writes to a session (an awaited
// `addItems` of one turn), another page listens with `session.subscribe`; the latency is from the
// write resolving in the first page to the event arriving in the second (both clocks are the
// browser's, `performance.timeOrigin + performance.now()`). For comparison, in the same run, the
// floor: a bare `BroadcastChannel` message between the same two pages. Then a burst: the same
// writes back to back: the latency of each event, and how many messages carried them (a writer
// posts the events queued by the time its posting task runs in one message).
//
//   node bench/events.mjs [--writes=100] [--pkg=dir]
//
// Uses the package as built in pkg/ (node scripts/build.mjs builds it), in headless Chromium
// on an on-disk profile (bench/browser.mjs). Prints the median and the 95th percentile of each.
import { benchScript } from './browser.mjs';
import { formatMs, median, benchArgs } from './report.mjs';


const percentile = (values, p) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(p * values.length))];


const { writes, pkg } = benchArgs(process.argv.slice(2), { writes: 100 });
/** In the writer's page: `writes` awaited one-turn writes to session `sessionId`, each time
 * taken when it resolved; `spaced`: 20 ms apart, with a bare message 20 ms after each, its time
 * taken as it is posted. */
async function writeTurns({ dbName, sessionId, writes, spaced }) {
  const pause = () => new Promise((ok) => setTimeout(ok, 20));
  const s = new lib.IndexedDbSession(sessionId, { dbName });
  const channel = spaced ? new BroadcastChannel('bench-bare') : null;
  const out = { writes: [], bare: [] };
  for (let i = 0; i < writes; i++) {
    await s.addItems([{ role: 'user', content: `q${i}` }, { role: 'assistant', content: `a${i}` }]);
    out.writes.push(clock());
    if (!spaced) continue;
    await pause();
    out.bare.push(clock());
    channel.postMessage(i);
    await pause();
  }
  return out;
}

await benchScript(pkg, async (browser) => {
  // Both pages read the same clock, the browser's.
  const before = () => {
    window.clock = () => performance.timeOrigin + performance.now();
  };
  const writer = await browser.appPage({ before });
  const reader = await browser.appPage({ before });
  const dbName = `events-${Date.now().toString(36)}`;
  await reader.evaluate((dbName) => {
    window.received = [];
    window.bare = [];
    new lib.IndexedDbSession('chat', { dbName }).subscribe(() => window.received.push(clock()));
    const channel = new BroadcastChannel('bench-bare');
    channel.onmessage = () => window.bare.push(clock());
  }, dbName);
  const sent = await writer.evaluate(writeTurns, { dbName, sessionId: 'chat', writes, spaced: true });
  await reader.waitForFunction((n) => window.received.length >= n && window.bare.length >= n, writes, { timeout: 30_000 });
  const got = await reader.evaluate(() => ({ received: window.received, bare: window.bare }));
  const events = got.received.map((t, i) => t - sent.writes[i]);
  const bare = got.bare.map((t, i) => t - sent.bare[i]);
  const line = (label, values) =>
    console.log(`${label.padEnd(68)}median ${formatMs(median(values)).padStart(8)}   p95 ${formatMs(percentile(values, 0.95)).padStart(8)}`);
  console.log(`\nagent-sessions change events between two tabs: ${writes} awaited writes of one turn, 20 ms apart\n`);
  line('addItems resolved in one tab -> subscribe listener in the other:', events);
  line('a bare BroadcastChannel message between the same tabs:', bare);
  console.log(`ratio of the medians: ${(median(events) / median(bare)).toFixed(2)}x`);

  // The burst: `writes` awaited writes with no pause between them, heard by the same listener
  // and by a bare listener on the library's channel, which counts the messages.
  await reader.evaluate((dbName) => {
    window.received = [];
    window.messages = 0;
    new lib.IndexedDbSession('burst', { dbName }).subscribe(() => window.received.push(clock()));
    new BroadcastChannel(`agent-sessions:${dbName}`).onmessage = () => (window.messages += 1);
  }, dbName);
  const burst = (await writer.evaluate(writeTurns, { dbName, sessionId: 'burst', writes, spaced: false })).writes;
  await reader.waitForFunction((n) => window.received.length >= n, writes, { timeout: 30_000 });
  const heard = await reader.evaluate(() => ({ received: window.received, messages: window.messages }));
  console.log(`\n${writes} awaited writes of one turn back to back (${formatMs(burst[burst.length - 1] - burst[0])} in all)\n`);
  line('addItems resolved in one tab -> subscribe listener in the other:', heard.received.map((t, i) => t - burst[i]));
  console.log(`messages that carried the ${writes} events: ${heard.messages}`);
});
