#!/usr/bin/env bash
# CDC benchmark: dbstreams side by side with PostgreSQL's native logical replication (the
# reference for PostgreSQL -> PostgreSQL), in one run on one machine.
#
#   bench/cdc_bench.sh [CHANGES] [SECONDS]     (defaults: 1000000 changes, 20 s per lag run)
#
# (a) catch-up: with the stream stopped, a backlog of CHANGES row changes (transactions of 5:
#     1 insert, 3 updates, 1 delete = the 20/60/20 mix) is built on the source; then the stream
#     starts and the clock runs until the target has applied everything: changes/s.
# (b) live lag: the same mix at 1k, 5k changes/s and as fast as the machine goes while
#     replicating, while a probe inserts a marker row every 50 ms on the source and watches for
#     it on the target (bench/cdc_probe.cc): lag p50/p99.
# Every result is checked: dbstreams by `dbstreams verify` (counts and checksums), native
# replication by comparing count and an md5 of all rows.
# Starts its own throwaway NATS, MariaDB and PostgreSQL (dbstreams-testenv).
set -euo pipefail
cd "$(dirname "$0")/.."
CHANGES=${1:-1000000}
SECS=${2:-20}
BIN=build/release
scripts/setup.sh >/dev/null
scripts/build.sh release >/dev/null
dpkg-query -W -f='${Status}' time 2>/dev/null | grep -q "install ok installed" ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null

work=$(mktemp -d /tmp/dbstreams-cdcbench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  kill "$TENV" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkfifo "$work/hold"
"$BIN/tests/dbstreams-testenv" --nats --mariadb --postgres --env-file "$work/env" < "$work/hold" \
  > "$work/testenv.log" 2>&1 &
TENV=$!
exec 9> "$work/hold"
for _ in $(seq 1 120); do [ -s "$work/env" ] && break; sleep 0.5; done
set -a; . "$work/env"; set +a
M=(mariadb -h 127.0.0.1 -P "$MYSQL_PORT" -u root "-p$MYSQL_PASSWORD" --default-character-set=utf8mb4)
PGBASE="postgres://postgres:$PGPASSWORD@127.0.0.1:$PGPORT"
psql -q "$PGBASE/postgres" -c "ALTER SYSTEM SET max_replication_slots = 20" \
  -c "ALTER SYSTEM SET max_wal_senders = 20" >/dev/null
# The test fixture runs PostgreSQL with synchronous_commit off (fast tests); then a commit
# reaches the WAL senders only at the next WAL writer round (200 ms), which would dominate
# every lag figure. Production settings here: commits are flushed when they return.
psql -q "$PGBASE/postgres" -c "ALTER SYSTEM SET synchronous_commit = on" \
  -c "ALTER SYSTEM SET wal_writer_delay = '10ms'" -c "SELECT pg_reload_conf()" >/dev/null
PROBE="$BIN/bench/cdc_probe"
SEED=100000

pg_tables() {
  psql -q "$PGBASE/$1" -c "CREATE TABLE bench_t (id bigint PRIMARY KEY, a int, b text,
      c numeric(12,2), d timestamp); CREATE TABLE bench_probe (id bigint PRIMARY KEY, t_us bigint)"
}
pg_seed() {
  psql -q "$PGBASE/$1" -c "INSERT INTO bench_t SELECT g, g % 1000, 'seed ' || g, g / 4.0,
      localtimestamp FROM generate_series(1, $SEED) g"
}
echo "== sources: PostgreSQL csrc, MariaDB msrc ($SEED seed rows each)"
psql -q "$PGBASE/postgres" -c "CREATE DATABASE csrc"
pg_tables csrc; pg_seed csrc
"${M[@]}" -e "CREATE DATABASE msrc CHARACTER SET utf8mb4"
"${M[@]}" msrc -e "CREATE TABLE bench_t (id BIGINT PRIMARY KEY, a INT, b TEXT, c DECIMAL(12,2),
    d DATETIME(6)); CREATE TABLE bench_probe (id BIGINT PRIMARY KEY, t_us BIGINT);
    INSERT INTO bench_t SELECT seq, seq % 1000, CONCAT('seed ', seq), seq / 4.0, NOW(6)
    FROM seq_1_to_$SEED"

results=()
record() { results+=("$1|$2|$3"); echo "   $1: $2 $3"; }

# dbstreams as separate reader and writer processes on the test NATS.
cfg() { # name source target
  cat > "$work/$1.json" <<JSON
{"name": "$1", "mode": "load+cdc", "source": "$2", "target": "$3",
 "tables": ["bench_t", "bench_probe"], "schemaPolicy": "drop_and_recreate", "verify": false}
JSON
  echo "$work/$1.json"
}
start_stream() { # config label
  /usr/bin/time -f "%e %U %S %M" -o "$work/$2-writer.time" \
    "$BIN/apps/stream-writer" --nats-url "$NATS_URL" --log-level warn "$1" \
    > "$work/$2-writer.log" 2>&1 &
  WPID=$!; pids+=("$WPID")
  /usr/bin/time -f "%e %U %S %M" -o "$work/$2-reader.time" \
    "$BIN/apps/stream-reader" --nats-url "$NATS_URL" --log-level warn "$1" \
    > "$work/$2-reader.log" 2>&1 &
  RPID=$!; pids+=("$RPID")
}
# Drains: the reader publishes what the source committed until now; both then exit.
drain_stream() {
  local rp
  rp=$(pgrep -P "$RPID" stream-reader || echo "$RPID")
  kill -TERM "$rp" 2>/dev/null || echo "!! the reader had already exited: $(tail -3 "$work/$1-reader.log")"
  wait "$RPID" || { echo "!! reader failed"; tail -20 "$work/$1-reader.log"; }
  wait "$WPID" || { echo "!! writer failed"; tail -20 "$work/$1-writer.log"; }
}
wait_rows() { # url-db table n
  for _ in $(seq 1 1200); do
    n=$(psql -tA "$PGBASE/$1" -c "SELECT count(*) FROM $2" 2>/dev/null || echo 0)
    [ "$n" -ge "$3" ] && return 0
    sleep 0.25
  done
  echo "!! timeout waiting for $3 rows in $1.$2"; return 1
}
verify() {
  if "$BIN/apps/dbstreams" verify "$1" > "$work/verify.out" 2>&1; then echo verified; else
    echo "VERIFY FAILED"; cat "$work/verify.out" >&2; fi
}
peak() { # label -> "reader MB / writer MB"
  echo "$(awk '{print int($4/1024)}' "$work/$1-reader.time") / $(awk '{print int($4/1024)}' \
    "$work/$1-writer.time") MB"
}

catchup_dbstreams() { # name source-url target-db probe-table-on-target
  local name=$1 src=$2 db=$3
  psql -q "$PGBASE/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
  local c; c=$(cfg "$name" "$src" "$PGBASE/$db")
  start_stream "$c" "$name-load"
  wait_rows "$db" "$4" 1 >/dev/null 2>&1 || true
  sleep 3
  drain_stream "$name-load"
  echo "   backlog: $("$PROBE" --source "$src" --backlog "$CHANGES")"
  local t0 t1
  t0=$(date +%s.%N)
  start_stream "$c" "$name"
  sleep 1
  drain_stream "$name"
  t1=$(date +%s.%N)
  local secs; secs=$(echo "$t1 - $t0" | bc)
  record "catch-up $name" "$(printf '%.0f changes/s (%.1f s)' "$(echo "$CHANGES / $secs" | bc -l)" "$secs")" \
    "$(verify "$c"); peak RSS reader/writer $(peak "$name")"
}

echo "== (a) catch-up of $CHANGES changes"
catchup_dbstreams cdc_pgpg "$PGBASE/csrc" d_dbs "public.bench_t"

# Native logical replication.
psql -q "$PGBASE/postgres" -c "CREATE DATABASE d_nat"
pg_tables d_nat
psql -q "$PGBASE/csrc" -c "CREATE PUBLICATION nat_pub FOR TABLE bench_t, bench_probe" \
  -c "SELECT pg_create_logical_replication_slot('nat_sub', 'pgoutput')" >/dev/null
# Publisher and subscriber share one cluster here: the slot is made above, else CREATE
# SUBSCRIPTION waits for itself.
psql -q "$PGBASE/d_nat" -c "CREATE SUBSCRIPTION nat_sub CONNECTION
  'host=127.0.0.1 port=$PGPORT user=postgres password=$PGPASSWORD dbname=csrc'
  PUBLICATION nat_pub WITH (create_slot = false, slot_name = 'nat_sub')"
for _ in $(seq 1 600); do
  s=$(psql -tA "$PGBASE/d_nat" -c "SELECT count(*) FROM pg_subscription_rel WHERE srsubstate <> 'r'")
  [ "$s" = 0 ] && break; sleep 0.25
done
psql -q "$PGBASE/d_nat" -c "ALTER SUBSCRIPTION nat_sub DISABLE"
sleep 1
echo "   backlog: $("$PROBE" --source "$PGBASE/csrc" --backlog "$CHANGES")"
end_lsn=$(psql -tA "$PGBASE/csrc" -c "SELECT pg_current_wal_lsn()")
t0=$(date +%s.%N)
psql -q "$PGBASE/d_nat" -c "ALTER SUBSCRIPTION nat_sub ENABLE"
for _ in $(seq 1 36000); do
  ok=$(psql -tA "$PGBASE/csrc" -c "SELECT confirmed_flush_lsn >= '$end_lsn' FROM pg_replication_slots
    WHERE slot_name = 'nat_sub'")
  [ "$ok" = t ] && break; sleep 0.05
done
t1=$(date +%s.%N)
digest="SELECT count(*) || ':' || md5(string_agg(t::text, '|' ORDER BY id)) FROM bench_t t"
same=$([ "$(psql -tA "$PGBASE/csrc" -c "$digest")" = "$(psql -tA "$PGBASE/d_nat" -c "$digest")" ] &&
  echo "verified (count + md5 equal)" || echo "DIFFERENT")
secs=$(echo "$t1 - $t0" | bc)
record "catch-up native logical replication" \
  "$(printf '%.0f changes/s (%.1f s)' "$(echo "$CHANGES / $secs" | bc -l)" "$secs")" "$same"

catchup_dbstreams cdc_mpg "$MYSQL_URL"msrc d_mdbs "msrc.bench_t"

echo "== (b) live lag, $SECS s per rate"
lag_dbstreams() { # name source target-db probe-table config
  for rate in 1000 5000 0; do
    start_stream "$5" "$1-lag$rate"
    sleep 2
    local out; out=$("$PROBE" --source "$2" --target "$PGBASE/$3" --target-table "$4" \
      --rate "$rate" --seconds "$SECS")
    drain_stream "$1-lag$rate"
    record "lag $1 rate=${rate/#0/max}" "$out" "$(verify "$5")"
  done
}
lag_dbstreams cdc_pgpg "$PGBASE/csrc" d_dbs public.bench_probe "$work/cdc_pgpg.json"
for rate in 1000 5000 0; do
  out=$("$PROBE" --source "$PGBASE/csrc" --target "$PGBASE/d_nat" --target-table public.bench_probe \
    --rate "$rate" --seconds "$SECS")
  record "lag native rate=${rate/#0/max}" "$out" ""
done
lag_dbstreams cdc_mpg "$MYSQL_URL"msrc d_mdbs msrc.bench_probe "$work/cdc_mpg.json"

echo
echo "== results ($(nproc) cores, $CHANGES changes, $(date -u +%Y-%m-%d))"
for r in "${results[@]}"; do
  IFS='|' read -r name value check <<< "$r"
  printf "%-40s %s  %s\n" "$name" "$value" "$check"
done
