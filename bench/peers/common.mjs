import pg from 'pg';

// Shared by the peer scripts: the workload's payload, its streams and the result line.
// A 200-byte JSON object ({"pad":"<190 pseudo-random letters>"}), the same in every event.
let seed = 42;
const letters = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
let pad = '';
for (let i = 0; i < 190; ++i) {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  pad += letters[seed % letters.length];
}
export const payload = { pad };
export const payloadJson = JSON.stringify(payload);
if (Buffer.byteLength(payloadJson) !== 200) throw new Error('payload is not 200 bytes');

// Arguments: <uri> <case> <events> <streams>
export function args() {
  const [uri, kase, events, streams] = process.argv.slice(2);
  return { uri, kase, events: Number(events), streams: Number(streams) };
}

export const streamName = (i) => `account-${i}`; // category (Message DB) / stream type (Emmett): account

// One JSON line per measurement, read by summarize.mjs.
export function report(peer, kase, events, t0) {
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(JSON.stringify({ peer, case: kase, events, seconds, eps: events / seconds }));
}

export function check(what, got, want) {
  if (got !== want) throw new Error(`${what}: read ${got} events, expected ${want}`);
}

// ANALYZE the database, between the writes and the timed reads: without statistics on a table
// just filled, PostgreSQL may plan a page read as a scan and sort of the rest of the log.
export async function analyze(uri) {
  const db = new pg.Client({ connectionString: uri });
  await db.connect();
  await db.query('ANALYZE');
  await db.end();
}
