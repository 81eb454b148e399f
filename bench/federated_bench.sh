#!/usr/bin/env bash
# Federated join benchmark: a PostgreSQL table and a MariaDB table of ROWS rows each, joined on
# the key by the federated engine (src/federated: our readers feeding the embedded DuckDB),
# beside the classic way: copy the MariaDB table into the same PostgreSQL, then join there.
# Prints time and peak RSS of each, and checks that both give the same answer.
#
#   bench/federated_bench.sh [ROWS]          (default 2000000; the issue's size)
#
# Starts its own throwaway MariaDB and PostgreSQL (dbstreams-testenv). Results go to stdout and
# bench/results/federated-<date>.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-2000000}
BIN=build/release
[ -x "$BIN/bench/federated_query" ] && [ -x "$BIN/tests/dbstreams-testenv" ] || {
  echo "build first: scripts/build.sh release" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time

work=$(mktemp -d /tmp/dbstreams-fbench.XXXXXX)
trap 'kill $TENV 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
mkfifo "$work/hold"
"$BIN/tests/dbstreams-testenv" --mariadb --postgres --env-file "$work/env" < "$work/hold" \
  > "$work/testenv.log" 2>&1 &
TENV=$!
exec 9> "$work/hold"   # keeps testenv's stdin open until we exit
for _ in $(seq 1 120); do [ -s "$work/env" ] && break; sleep 0.5; done
set -a; . "$work/env"; set +a
M=(mariadb -h 127.0.0.1 -P "$MYSQL_PORT" -u root "-p$MYSQL_PASSWORD" --default-character-set=utf8mb4)
PGBASE="postgres://postgres:$PGPASSWORD@127.0.0.1:$PGPORT"

echo "== generating $ROWS rows in PostgreSQL (a) and MariaDB (b)"
psql -q "$PGBASE/postgres" -c "CREATE DATABASE bench"
psql -q "$PGBASE/bench" -c "
CREATE TABLE a (id bigint PRIMARY KEY, v int NOT NULL, pad text);
INSERT INTO a SELECT g, g % 1000, md5(g::text) FROM generate_series(1, $ROWS) g;"
psql -q "$PGBASE/bench" -c "VACUUM ANALYZE a"
"${M[@]}" -e "CREATE DATABASE bench"
"${M[@]}" bench -e "
CREATE TABLE b (id BIGINT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(64));
INSERT INTO b SELECT seq, seq % 997, MD5(seq) FROM seq_1_to_$ROWS; ANALYZE TABLE b;" >/dev/null

# What both ways compute: the matching rows, a sum over both tables and over b's text.
JOIN="SELECT count(*) AS n, sum(a.v + b.v) AS s, sum(length(b.pad)) AS l"
# measure NAME COMMAND...: wall seconds and peak RSS (MB) of a command, via GNU time.
measure() {
  local name=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" > "$work/$name.out"
  read -r secs kb < "$work/time"
  echo "$secs $((kb / 1024))"
}

echo "== federated: PostgreSQL a JOIN MariaDB b through DuckDB (memory limit 1GB, spill folder)"
read -r fsecs frss < <(measure federated "$BIN/bench/federated_query" \
  --source "pg1=$PGBASE/bench" --source "my1=mysql://root:$MYSQL_PASSWORD@127.0.0.1:$MYSQL_PORT/bench" \
  --memory-limit 1GB --temp-dir "$work/spill" --threads 2 \
  --sql "$JOIN FROM pg1.public.a a JOIN my1.bench.b b ON a.id = b.id")
fed=$(tr -d ' "[]' < "$work/federated.out")

echo "== copy + join: MariaDB b copied into PostgreSQL (mariadb | psql COPY), then joined there"
psql -q "$PGBASE/bench" -c "CREATE TABLE b (id bigint PRIMARY KEY, v int NOT NULL, pad text)"
read -r csecs crss < <(measure copy bash -c "set -o pipefail; ${M[*]@Q} bench --batch --skip-column-names --quick \
  -e 'SELECT id, v, pad FROM b' | psql -q '$PGBASE/bench' -c 'COPY b FROM STDIN'")
read -r jsecs jrss < <(measure pgjoin psql -tA -F, "$PGBASE/bench" -c "$JOIN FROM a JOIN b ON a.id = b.id")
pg=$(tr -d ' ' < "$work/pgjoin.out")
pgmem=$(psql -tA "$PGBASE/bench" -c "SHOW work_mem")

[ "$fed" = "$pg" ] || { echo "MISMATCH: federated $fed, PostgreSQL $pg" >&2; exit 1; }
out=bench/results/federated-$(date -u +%Y%m%dT%H%M%SZ).txt
mkdir -p bench/results
{
  echo "federated join benchmark: $ROWS rows per table, $(nproc) cores, $(date -u)"
  echo "result (both ways): $fed"
  printf '%-34s %10s %14s\n' "method" "seconds" "peak RSS MB"
  printf '%-34s %10s %14s\n' "federated (DuckDB + our readers)" "$fsecs" "$frss"
  printf '%-34s %10s %14s\n' "copy MariaDB -> PostgreSQL" "$csecs" "$crss (clients)"
  printf '%-34s %10s %14s\n' "join in PostgreSQL" "$jsecs" "(server, work_mem $pgmem)"
  total=$(echo "$csecs $jsecs" | awk '{print $1 + $2}')
  printf '%-34s %10s\n' "copy + join" "$total"
} | tee "$out"
