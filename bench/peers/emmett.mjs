// Emmett PostgreSQL through its event store API, on a fresh database (<uri>).
//   node emmett.mjs <uri> append1|append100 <events> <streams>
// append1: one appendToStream per event, streams round-robin, expectedStreamVersion each time.
// append100: appendToStream of 100 events (expectedStreamVersion), then read_streams
// (readStream of each whole stream) and read_all (readMessagesBatch pages of 1000).
import { getPostgreSQLEventStore, readMessagesBatch } from '@event-driven-io/emmett-postgresql';
import { dumbo } from '@event-driven-io/dumbo';
import { args, payload, streamName, report, check, analyze } from './common.mjs';

const { uri, kase, events, streams } = args();
const pool = dumbo({ connectionString: uri });
const store = getPostgreSQLEventStore(uri, { connectionOptions: { dumbo: pool } });
await store.schema.migrate(); // create the emt_* tables outside the timing
const event = { type: 'Deposited', data: payload };
const version = new Array(streams).fill(0n); // Emmett: 0n = no stream yet, n after n events

if (kase === 'append1') {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < events; ++i) {
    const s = i % streams;
    const r = await store.appendToStream(streamName(s), [event], { expectedStreamVersion: version[s] });
    version[s] = r.nextExpectedStreamVersion;
  }
  report('emmett', 'append1', events, t0);
} else {
  const batch = new Array(100).fill(event);
  let t0 = process.hrtime.bigint();
  for (let i = 0; i < events / 100; ++i) {
    const s = i % streams;
    const r = await store.appendToStream(streamName(s), batch, { expectedStreamVersion: version[s] });
    version[s] = r.nextExpectedStreamVersion;
  }
  report('emmett', 'append100', events, t0);
  await analyze(uri); // outside the timing: statistics, as autovacuum would gather them


  t0 = process.hrtime.bigint();
  let n = 0;
  for (let s = 0; s < streams; ++s) n += (await store.readStream(streamName(s))).events.length;
  check('read_streams', n, events);
  report('emmett', 'read_streams', events, t0);

  t0 = process.hrtime.bigint();
  n = 0;
  for (let after = 0n; ;) {
    const r = await readMessagesBatch(pool.execute, { after, batchSize: 1000 });
    n += r.messages.length;
    after = r.currentGlobalPosition;
    if (!r.areMessagesLeft) break;
  }
  check('read_all', n, events);
  report('emmett', 'read_all', events, t0);
}
await store.close();
