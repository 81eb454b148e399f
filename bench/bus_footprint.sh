#!/usr/bin/env bash
# The broker's footprint during a load at the defaults: PostgreSQL -> PostgreSQL with
# `dbstreams run --quiet` ("verify": false), sampling every 0.2 s the embedded nats-server's RSS,
# its data folder on disk (the JetStream store) and the RSS of the whole process tree. Run it at
# several sizes to see whether the bus stays within the reader's window.
#
#   bench/bus_footprint.sh [ROWS]          (default 2000000)
#
# Starts its own throwaway PostgreSQL (dbstreams-testenv) and generates the bench table of
# bench/lib.sh (16 columns, about 240 bytes a row). Prints one line of peaks.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-2000000}
BIN=build/release
[ -x "$BIN/apps/dbstreams" ] && [ -x "$BIN/tests/dbstreams-testenv" ] && [ -x "$BIN/bench/treepeak" ] || {
  echo "build first: scripts/build.sh release" >&2; exit 1; }
work=$(mktemp -d /tmp/dbstreams-busbench.XXXXXX)
trap 'kill $TENV 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
. bench/lib.sh
MYSQL_PORT=0 MYSQL_PASSWORD=unused start_servers --postgres
generate_postgres
psql -q "$PGBASE/postgres" -c "CREATE DATABASE dst"
cat > "$work/s.json" <<JSON
{"name": "busbench", "source": "$PGBASE/bench", "target": "$PGBASE/dst", "tables": ["t"], "verify": false}
JSON
mkdir -p "$work/data"
/usr/bin/time -f "%e %U %S" -o "$work/time" "$BIN/apps/dbstreams" run --quiet \
  --data-dir "$work/data" "$work/s.json" \
  > "$work/out" 2>&1 &
pid=$!
treepeak "$pid" "$work/tree" &  # the whole tree's peak RSS (bench/treepeak.cc)
sampler=$!
peak_n=0 peak_s=0
while kill -0 "$pid" 2>/dev/null; do
  for np in $(pgrep nats-server || true); do
    conf=$(tr '\0' '\n' < "/proc/$np/cmdline" 2>/dev/null | grep -A1 -x -- '-c' | tail -1 || true)
    case "$conf" in "$work"/*) ;; *) continue ;; esac  # this run's embedded server only
    rss=$(awk '/VmRSS/{print $2}' "/proc/$np/status" 2>/dev/null || echo 0)
    store=$(du -sb "$(dirname "$conf")" 2>/dev/null | cut -f1 || echo 0)
    [ "${rss:-0}" -gt "$peak_n" ] && peak_n=$rss
    [ "${store:-0}" -gt "$peak_s" ] && peak_s=$store
  done
  sleep 0.2
done
wait "$pid" || { cat "$work/out"; exit 1; }
wait "$sampler" || true
peak_t=$(cat "$work/tree")
read -r wall user sys < "$work/time"
n=$(psql -tA "$PGBASE/dst" -c "SELECT count(*) FROM public.t")
[ "$n" = "$ROWS" ] || { echo "loaded $n rows of $ROWS" >&2; exit 1; }
echo "rows=$ROWS wall=${wall}s cpu=$(echo "$user + $sys" | bc)s nats_rss=$((peak_n / 1024))MB" \
     "store=$((peak_s / 1048576))MB tree=$((peak_t / 1024))MB"
