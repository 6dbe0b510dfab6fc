// Medians of the runs' JSON lines (events/s), as a table or (--json) as JSON.
//   node summarize.mjs <results.jsonl> <events> <streams> <runs> <server> <packages> <json 0|1>
import { readFileSync } from 'node:fs';

const [file, events, streams, runs, server, packages, json] = process.argv.slice(2);
const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const peers = { 'factum-pg': 'factum PostgreSQL', 'factum-sqlite': 'factum SQLite (full)', 'emmett': 'Emmett (Node)', 'mdb-node': 'Message DB (Node pg)', 'mdb-sql': 'Message DB (in-server SQL)' };
const cases = { append1: '1 event/append', append100: '100/append', read_streams: 'read streams', read_all: 'read all/category', append1_procs: '1/append, 16 conns in 4 procs' };
const result = {
  events: Number(events), streams: Number(streams), runs: Number(runs), server, packages: packages.split(' '),
  eventsPerSecond: {},
};
const present = (p) => lines.some((l) => l.peer === p);
for (const p of Object.keys(peers)) {
  if (!present(p)) continue;
  result.eventsPerSecond[p] = {};
  for (const c of Object.keys(cases)) {
    const xs = lines.filter((l) => l.peer === p && l.case === c).map((l) => l.eps);
    result.eventsPerSecond[p][c] = xs.length ? Math.round(median(xs)) : null;
  }
}
if (json === '1') {
  console.log(JSON.stringify(result, null, 2));
} else {
  console.log(`${events} events, ${streams} streams of ${events / streams}, 200-byte JSON payloads; median of ${runs} run(s), events/s`);
  console.log(`server: PostgreSQL ${server}`);
  const rows = [['peer', ...Object.values(cases)]];
  for (const [p, name] of Object.entries(peers)) {
    if (!present(p)) continue;
    rows.push([name, ...Object.keys(cases).map((c) => String(result.eventsPerSecond[p][c] ?? '-'))]);
  }
  const w = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) console.log(r.map((x, i) => (i ? x.padStart(w[i]) : x.padEnd(w[i]))).join(' | '));
}
