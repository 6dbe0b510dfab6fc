-- Message DB measured inside the server: plpgsql loops calling its functions, timed with
-- clock_timestamp(), so no client round trips. Run by run.sh on a fresh database:
--   psql -v case=append1|append100 -v events=N -v streams=N -v payload='{...}' -f mdb-inserver.sql
-- Each result is a NOTICE holding a JSON line (as the .mjs scripts print).
-- append1: write_message per event then COMMIT (a transaction per event), expected_version.
-- append100: 100 x write_message then COMMIT, then read_streams (get_stream_messages per
-- stream, batch 1000) and read_all (get_category_messages('account') pages of 1000).
\set ON_ERROR_STOP on
SET search_path = message_store, public;
SELECT set_config('bench.events', :'events', false), set_config('bench.streams', :'streams', false),
       set_config('bench.payload', :'payload', false), :'case' = 'append1' AS append1 \gset

\if :append1
DO $$
DECLARE
  events int := current_setting('bench.events')::int;
  streams int := current_setting('bench.streams')::int;
  payload jsonb := current_setting('bench.payload')::jsonb;
  version bigint[] := array_fill(-1::bigint, ARRAY[streams]);
  t0 timestamptz := clock_timestamp();
  s int;
  secs float8;
BEGIN
  FOR i IN 0 .. events - 1 LOOP
    s := i % streams + 1;
    PERFORM write_message(gen_random_uuid()::text, 'account-' || (s - 1), 'Deposited', payload, NULL, version[s]);
    version[s] := version[s] + 1;
    COMMIT;
  END LOOP;
  secs := extract(epoch FROM clock_timestamp() - t0);
  RAISE NOTICE '%', json_build_object('peer', 'mdb-sql', 'case', 'append1', 'events', events, 'seconds', secs, 'eps', events / secs);
END $$;
\else
DO $$
DECLARE
  events int := current_setting('bench.events')::int;
  streams int := current_setting('bench.streams')::int;
  payload jsonb := current_setting('bench.payload')::jsonb;
  version bigint[] := array_fill(-1::bigint, ARRAY[streams]);
  t0 timestamptz := clock_timestamp();
  s int;
  secs float8;
BEGIN
  FOR b IN 0 .. events / 100 - 1 LOOP
    s := b % streams + 1;
    FOR k IN 1 .. 100 LOOP
      PERFORM write_message(gen_random_uuid()::text, 'account-' || (s - 1), 'Deposited', payload, NULL, version[s]);
      version[s] := version[s] + 1;
    END LOOP;
    COMMIT;
  END LOOP;
  secs := extract(epoch FROM clock_timestamp() - t0);
  RAISE NOTICE '%', json_build_object('peer', 'mdb-sql', 'case', 'append100', 'events', events, 'seconds', secs, 'eps', events / secs);
END $$;

ANALYZE; -- outside the timing: statistics, as autovacuum would gather them

DO $$
DECLARE
  events int := current_setting('bench.events')::int;
  streams int := current_setting('bench.streams')::int;
  t0 timestamptz := clock_timestamp();
  n bigint;
  c bigint;
  pos bigint;
  secs float8;
BEGIN
  n := 0;
  FOR s IN 0 .. streams - 1 LOOP
    SELECT count(*) INTO c FROM get_stream_messages('account-' || s, 0, 1000);
    n := n + c;
  END LOOP;
  secs := extract(epoch FROM clock_timestamp() - t0);
  IF n <> events THEN RAISE EXCEPTION 'read_streams read % events', n; END IF;
  RAISE NOTICE '%', json_build_object('peer', 'mdb-sql', 'case', 'read_streams', 'events', events, 'seconds', secs, 'eps', events / secs);

  t0 := clock_timestamp();
  n := 0;
  pos := 1;
  LOOP
    SELECT count(*), max(global_position) + 1 INTO c, pos FROM get_category_messages('account', pos, 1000);
    n := n + c;
    EXIT WHEN c < 1000;
  END LOOP;
  secs := extract(epoch FROM clock_timestamp() - t0);
  IF n <> events THEN RAISE EXCEPTION 'read_all read % events', n; END IF;
  RAISE NOTICE '%', json_build_object('peer', 'mdb-sql', 'case', 'read_all', 'events', events, 'seconds', secs, 'eps', events / secs);
END $$;
\endif
