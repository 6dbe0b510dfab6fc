// Message DB from Node (pg), on a fresh database (<uri>) where message_store is installed.
//   node mdb-node.mjs <uri> append1|append100 <events> <streams>
// append1: SELECT write_message(...) per event in autocommit, expected_version each time.
// append100: BEGIN, 100 x write_message (expected_version v, v+1, ...), COMMIT; then
// read_streams (get_stream_messages per stream, batch 1000 >= stream length) and
// read_all (get_category_messages('account') pages of 1000).
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { args, payloadJson, streamName, report, check } from './common.mjs';

const { uri, kase, events, streams } = args();
const db = new pg.Client({ connectionString: uri, options: '-c search_path=message_store,public' });
await db.connect();
const version = new Array(streams).fill(-1); // Message DB: -1 = no stream, positions from 0
const write = (s) => db.query({
  name: 'write',
  text: 'SELECT write_message($1, $2, $3, $4, NULL, $5)',
  values: [randomUUID(), streamName(s), 'Deposited', payloadJson, version[s]++],
});

if (kase === 'append1') {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < events; ++i) await write(i % streams);
  report('mdb-node', 'append1', events, t0);
} else {
  let t0 = process.hrtime.bigint();
  for (let i = 0; i < events / 100; ++i) {
    await db.query('BEGIN');
    for (let k = 0; k < 100; ++k) await write(i % streams);
    await db.query('COMMIT');
  }
  report('mdb-node', 'append100', events, t0);
  await db.query('ANALYZE'); // outside the timing: statistics, as autovacuum would gather them

  t0 = process.hrtime.bigint();
  let n = 0;
  for (let s = 0; s < streams; ++s) {
    const r = await db.query({ name: 'stream', text: 'SELECT * FROM get_stream_messages($1, 0, 1000)', values: [streamName(s)] });
    n += r.rows.length;
  }
  check('read_streams', n, events);
  report('mdb-node', 'read_streams', events, t0);

  t0 = process.hrtime.bigint();
  n = 0;
  for (let position = 1; ;) {
    const r = await db.query({ name: 'category', text: "SELECT * FROM get_category_messages('account', $1, 1000)", values: [position] });
    n += r.rows.length;
    if (r.rows.length < 1000) break;
    position = Number(r.rows[r.rows.length - 1].global_position) + 1;
  }
  check('read_all', n, events);
  report('mdb-node', 'read_all', events, t0);
}
await db.end();
