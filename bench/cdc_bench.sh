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
# pgcopydb 0.10 `follow` (wal2json) runs the same PostgreSQL -> PostgreSQL measurements; where
# it fails, its row says "FAILED: <reason>" and the run goes on.
# Starts its own throwaway NATS, MariaDB and PostgreSQL (dbstreams-testenv).
set -euo pipefail
cd "$(dirname "$0")/.."
CHANGES=${1:-1000000}
SECS=${2:-20}
BIN=build/release
scripts/setup.sh >/dev/null
scripts/build.sh release >/dev/null
# /usr/bin/time for peak RSS; pgcopydb and wal2json, the logical decoding plugin its follow needs.
for p in time pgcopydb postgresql-15-wal2json; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >/dev/null
done

work=$(mktemp -d /tmp/dbstreams-cdcbench.XXXXXX)
pids=()
PGCPID=
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -z "$PGCPID" ] || kill -KILL -- "-$PGCPID" 2>/dev/null || true
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

# pgcopydb 0.10 `follow`: wal2json slot "pgcopydb" and sentinel table (schema pgcopydb) on the
# source, replication origin "pgcopydb" on the target, its files under $work/pgcopydb. It runs
# in its own session so that all its sub-processes stop together. Nothing here aborts the run:
# a failure becomes a "FAILED: <reason>" result, and pgc_cleanup always removes the processes,
# the slot, the sentinel schema and the origin.
PGCDIR="$work/pgcopydb"
PGC=(--source "$PGBASE/csrc" --target "$PGBASE/d_pgc" --dir "$PGCDIR" --slot-name pgcopydb
  --origin pgcopydb)
printf '[include-only-table]\npublic.bench_t\npublic.bench_probe\n' > "$work/pgc-filters.ini"
pgc_start() { # label pgcopydb-args...
  setsid /usr/bin/time -f "%e %U %S %M" -o "$work/$1.time" pgcopydb "${@:2}" \
    > "$work/$1.log" 2>&1 &
  PGCPID=$!
}
# TERM to its pgcopydb processes (not to /usr/bin/time, which then writes the peak RSS), then
# KILL whatever is left of the session.
pgc_stop() {
  [ -n "$PGCPID" ] || return 0
  local p; p=$(pgrep -g "$PGCPID" -x pgcopydb || true)
  # shellcheck disable=SC2086
  [ -z "$p" ] || kill -TERM $p 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$PGCPID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$PGCPID" 2>/dev/null || true
  wait "$PGCPID" 2>/dev/null || true
  PGCPID=
}
pgc_cleanup() {
  pgc_stop
  for _ in $(seq 1 20); do # the walsender may take a moment to release the slot
    psql -q "$PGBASE/csrc" -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
        WHERE slot_name = 'pgcopydb'" -c "DROP SCHEMA IF EXISTS pgcopydb CASCADE" \
      -c "SELECT pg_replication_origin_drop(roname) FROM pg_replication_origin
        WHERE roname = 'pgcopydb'" > /dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "!! pgcopydb cleanup failed: drop slot/origin \"pgcopydb\" by hand"
}
pgc_reason() { # label -> first error of its log, without time and pid
  local e
  e=$(grep -E " (ERROR|FATAL) " "$work/$1.log" | head -1 | sed -E 's/^[0-9:]+ [0-9]+ //' | cut -c1-160)
  echo "${e:-no error logged; last line: $(tail -1 "$work/$1.log" | sed -E 's/^[0-9:]+ [0-9]+ //' |
    cut -c1-120)}"
}
# label -> where its apply stands: the apply replays one SQL file per WAL segment, made from the
# receiver's JSON file of that segment once the receiver has moved on to the next one.
pgc_state() {
  echo "sentinel replay_lsn $(psql -tA "$PGBASE/csrc" -c "SELECT replay_lsn FROM pgcopydb.sentinel" \
    2>/dev/null), source at $(psql -tA "$PGBASE/csrc" -c "SELECT pg_current_wal_lsn()"), receiver \
writing $(basename "$(readlink "$PGCDIR/cdc/latest" 2>/dev/null || echo none)"), last apply log \
line: $(grep -E "Replaying|Catching up|Applied" "$work/$1.log" | tail -1 |
    sed -E 's/^[0-9:]+ [0-9]+ INFO +//; s|"[^"]*/([^/"]+)"|\1|')"
}
pgc_rss() { tail -1 "$work/$1.time" 2>/dev/null | awk '{print int($4/1024) " MB"}'; }
# Fresh target d_pgc: schema, COPY of bench_t and bench_probe, then live follow, all by
# `pgcopydb clone --follow` (it creates the slot in the snapshot it copies). Returns once the
# apply is enabled (COPY done); 1 when it exited before.
pgc_clone() { # label
  psql -q "$PGBASE/postgres" -c "DROP DATABASE IF EXISTS d_pgc WITH (FORCE)" -c "CREATE DATABASE d_pgc"
  rm -rf "$PGCDIR"
  pgc_start "$1" clone --follow "${PGC[@]}" --filters "$work/pgc-filters.ini" --no-owner --no-acl
  for _ in $(seq 1 1200); do
    grep -q "sentinel has enabled applying changes" "$work/$1.log" && return 0
    kill -0 "$PGCPID" 2>/dev/null || return 1
    sleep 0.25
  done
  return 1
}
# Waits until the row bench_probe.id = marker is on the target (pgcopydb applies in commit
# order, so everything before it is there too). Gives up when pgcopydb exits or its sentinel
# replay_lsn has not moved for 90 s (it applies one file, i.e. one WAL segment, at a time and
# updates replay_lsn after each); PGC_WHY then says why.
pgc_wait_marker() { # label marker-id
  local last="" since; since=$(date +%s)
  PGC_WHY=""
  while :; do
    [ "$(psql -tA "$PGBASE/d_pgc" -c "SELECT count(*) FROM bench_probe WHERE id = $2" \
      2>/dev/null)" = 1 ] && return 0
    if ! kill -0 "$PGCPID" 2>/dev/null; then PGC_WHY="pgcopydb exited: $(pgc_reason "$1")"; return 1; fi
    local r; r=$(psql -tA "$PGBASE/csrc" -c "SELECT replay_lsn FROM pgcopydb.sentinel" 2>/dev/null)
    if [ "$r" != "$last" ]; then last=$r; since=$(date +%s)
    elif [ $(($(date +%s) - since)) -ge 90 ]; then
      PGC_WHY="no apply progress for 90 s: $(pgc_state "$1")"; return 1
    fi
    sleep 0.2
  done
}
digest="SELECT count(*) || ':' || md5(string_agg(t::text, '|' ORDER BY id)) FROM bench_t t"

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
same=$([ "$(psql -tA "$PGBASE/csrc" -c "$digest")" = "$(psql -tA "$PGBASE/d_nat" -c "$digest")" ] &&
  echo "verified (count + md5 equal)" || echo "DIFFERENT")
secs=$(echo "$t1 - $t0" | bc)
record "catch-up native logical replication" \
  "$(printf '%.0f changes/s (%.1f s)' "$(echo "$CHANGES / $secs" | bc -l)" "$secs")" "$same"

# pgcopydb follow: clone --follow, stop, backlog, then `follow --resume` until the target has it.
# The clock runs from the start of `follow` until a marker row inserted after the backlog is on
# the target; then count + md5 as for native replication.
catchup_pgcopydb() {
  local name="catch-up pgcopydb follow"
  pgc_cleanup
  if ! pgc_clone pgc-clone; then
    record "$name" "FAILED: clone --follow: $(pgc_reason pgc-clone)" ""; pgc_cleanup; return
  fi
  pgc_stop
  echo "   backlog: $("$PROBE" --source "$PGBASE/csrc" --backlog "$CHANGES")"
  local marker; marker=$(psql -qtA "$PGBASE/csrc" -c "INSERT INTO bench_probe
    SELECT COALESCE(MAX(id), 0) + 1, 0 FROM bench_probe RETURNING id" || true)
  if [ -z "$marker" ]; then record "$name" "FAILED: could not insert the marker row" ""; pgc_cleanup; return; fi
  local t0 t1 secs src dst
  t0=$(date +%s.%N)
  pgc_start pgc-follow follow --resume --not-consistent "${PGC[@]}"
  if pgc_wait_marker pgc-follow "$marker"; then
    t1=$(date +%s.%N)
    pgc_stop
    secs=$(echo "$t1 - $t0" | bc)
    src=$(psql -tA "$PGBASE/csrc" -c "$digest"); dst=$(psql -tA "$PGBASE/d_pgc" -c "$digest")
    if [ "$src" = "$dst" ]; then
      record "$name" "$(printf '%.0f changes/s (%.1f s)' "$(echo "$CHANGES / $secs" | bc -l)" "$secs")" \
        "verified (count + md5 equal); peak RSS $(pgc_rss pgc-follow)"
    else
      record "$name" "FAILED: target differs after the apply (source ${src%%:*} rows, target \
${dst%%:*} rows, md5 $([ "${src#*:}" = "${dst#*:}" ] && echo equal || echo different))" \
        "$(printf 'applied in %.1f s' "$secs")"
    fi
  else
    pgc_stop
    record "$name" "FAILED: $PGC_WHY" "log: $(pgc_reason pgc-follow)"
  fi
  pgc_cleanup
}
catchup_pgcopydb

catchup_dbstreams cdc_mpg "$MYSQL_URL"msrc d_mdbs "msrc.bench_t"

echo "== (b) live lag, $SECS s per rate"
# The source keeps changing between dbstreams runs (the other methods' backlogs, ~1M changes
# each), and a restarted stream first catches up with all of it. Lag is measured on a stream
# that is current: a warm-up row goes in on the source and the probe starts once it arrived.
warm_up() { # source-url target-db probe-table
  local sql_in="INSERT INTO bench_probe VALUES (-1, 0)" sql_out="DELETE FROM bench_probe WHERE id = -1"
  local t0; t0=$(date +%s)
  if [[ $1 == postgres* ]]; then psql -q "$1" -c "$sql_in"; else "${M[@]}" msrc -e "$sql_in"; fi
  local arrived=no
  for _ in $(seq 1 1200); do
    [ "$(psql -tA "$PGBASE/$2" -c "SELECT count(*) FROM $3 WHERE id = -1" 2>/dev/null)" = 1 ] &&
      arrived=yes && break
    sleep 0.25
  done
  if [[ $1 == postgres* ]]; then psql -q "$1" -c "$sql_out"; else "${M[@]}" msrc -e "$sql_out"; fi
  if [ $arrived = yes ]; then
    echo "   (stream current after $(( $(date +%s) - t0 )) s)"
  else
    echo "   !! the warm-up row did not arrive within 5 minutes: this rate's lag includes catch-up"
  fi
}
lag_dbstreams() { # name source target-db probe-table config
  for rate in 1000 5000 0; do
    start_stream "$5" "$1-lag$rate"
    warm_up "$2" "$3" "$4"
    sleep 1
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
# pgcopydb follow from a fresh clone --follow kept running (no stop and resume); rate=max only
# when it kept up at 5000. A run where not every marker arrived is a failure.
lag_pgcopydb() {
  local ok=0 rate name out markers arrived
  pgc_cleanup
  if ! pgc_clone pgc-lag; then
    record "lag pgcopydb" "FAILED: clone --follow: $(pgc_reason pgc-lag)" ""; pgc_cleanup; return
  fi
  for rate in 1000 5000 0; do
    name="lag pgcopydb rate=${rate/#0/max}"
    if [ "$rate" = 0 ] && [ "$ok" = 0 ]; then
      record "$name" "not run: it did not keep up at 5000 changes/s" ""; continue
    fi
    if ! kill -0 "$PGCPID" 2>/dev/null; then
      record "$name" "FAILED: pgcopydb exited: $(pgc_reason pgc-lag)" ""; continue
    fi
    out=$("$PROBE" --source "$PGBASE/csrc" --target "$PGBASE/d_pgc" \
      --target-table public.bench_probe --rate "$rate" --seconds "$SECS" || true)
    markers=$(sed -nE 's/.*"markers":([0-9]+).*/\1/p' <<< "$out")
    arrived=$(sed -nE 's/.*"arrived":([0-9]+).*/\1/p' <<< "$out")
    if [ -n "$markers" ] && [ "$markers" -gt 0 ] && [ "$arrived" = "$markers" ]; then
      record "$name" "$out" ""
      [ "$rate" = 5000 ] && ok=1
    else
      record "$name" "FAILED: ${arrived:-?} of ${markers:-?} markers arrived within $((SECS + 30)) s; \
$(pgc_state pgc-lag)" "${out:-the probe printed nothing}"
    fi
  done
  pgc_stop
  record "lag pgcopydb peak RSS" "$(pgc_rss pgc-lag)" "(clone --follow, whole session)"
  pgc_cleanup
}
lag_pgcopydb
lag_dbstreams cdc_mpg "$MYSQL_URL"msrc d_mdbs msrc.bench_probe "$work/cdc_mpg.json"

echo
echo "== results ($(nproc) cores, $CHANGES changes, $(date -u +%Y-%m-%d))"
for r in "${results[@]}"; do
  IFS='|' read -r name value check <<< "$r"
  printf "%-40s %s  %s\n" "$name" "$value" "$check"
done
