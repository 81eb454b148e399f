#!/usr/bin/env bash
# Files benchmark: dbstreams loads into and out of Parquet and CSV files, side by side with the
# fastest honest baselines of the machine, in one run, every result row-count checked. Prints
# rows/s, MB/s, CPU seconds and the peak RSS of the whole process tree, and ratios.
#
#   bench/files_bench.sh [ROWS]          (default 2000000)
#
# Baselines (issue 13): the source's own read limit for table -> files (mariadb --batch --quick
# and PostgreSQL's binary COPY into /dev/null), and psql \copy of the same CSV for files ->
# PostgreSQL. Also reported, not compared: MariaDB -> Parquet on S3 (s3rver from npm, a
# JavaScript server on the local disk: its speed is not an S3 service's). Results go to stdout
# and bench/results/files-<date>.txt.
#
# Every method runs ROUNDS times (default 3), the rounds one after the other, and reports the
# run with the median wall time (bench/lib.sh run_rounds).
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-2000000}
BIN=build/release
scripts/setup.sh >/dev/null
scripts/build.sh release >/dev/null
for p in time procps bc; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >/dev/null
done
. bench/lib.sh
start_servers --mariadb --postgres --s3
generate_tables
results=()

# manifest_rows DIR: the rows a file target's manifest lists (0 without one).
manifest_rows() {
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rows"])' "$1/_manifest.json" \
    2>/dev/null || echo 0
}
# frun NAME COUNT-COMMAND COMMAND...: times a method (wall, CPU, peak RSS of its process tree);
# COUNT-COMMAND prints the rows it produced.
frun() {
  local name=$1 counter=$2; shift 2
  psql -q "$PGBASE/postgres" -c "CHECKPOINT"
  "${M[@]}" -e "FLUSH TABLES" && sync
  settle
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" > "$work/out" 2>&1 &
  local pid=$!
  treepeak "$pid" "$work/peak" &
  local sampler=$!
  if ! wait "$pid"; then
    wait "$sampler" || true
    echo "!! $name failed:"; tail -20 "$work/out"; results+=("$name|FAILED"); return
  fi
  wait "$sampler" || true
  local wall user sys rss n ok=ok
  read -r wall user sys rss < "$work/time"
  rss=$(cat "$work/peak")
  n=$(eval "$counter")
  [ "$n" = "$ROWS" ] || ok="ROWS=$n"
  results+=("$name|$wall|$(echo "$user + $sys" | bc)|$((rss / 1024))|$ok")
}
fresh_pg() { psql -q "$PGBASE/postgres" -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -c "CREATE DATABASE $1"; }
pg_count() { psql -tA "$PGBASE/$1" -c "SELECT count(*) FROM $2" 2>/dev/null || echo 0; }
cfg() {
  cat > "$work/$1.json" <<JSON
{"name": "$1", "source": $2, "target": $3, "verify": false${4:+, $4}}
JSON
  echo "$work/$1.json"
}
DBS=("$BIN/apps/dbstreams" run --quiet)

# methods: one round of every method, in the order the ratios below index them.
methods() {
  echo "== MariaDB -> Parquet (local)"
  rm -rf "$work/m2f" "$work/p2f"
  frun "dbstreams MariaDB -> Parquet" "manifest_rows $work/m2f/t" "${DBS[@]}" \
    "$(cfg m2f "\"${MYSQL_URL}bench\"" "\"file://$work/m2f?format=parquet\"" '"tables": ["t"]')"
  frun "mariadb --batch --quick > /dev/null" "echo $ROWS" \
    bash -c "$(printf '%q ' "${M[@]}") --batch --quick --skip-column-names bench -e 'SELECT * FROM t' > /dev/null"
  echo "== PostgreSQL -> Parquet (local)"
  frun "dbstreams PostgreSQL -> Parquet" "manifest_rows $work/p2f/t" "${DBS[@]}" \
    "$(cfg p2f "\"$PGBASE/bench\"" "\"file://$work/p2f?format=parquet\"" '"tables": ["t"]')"
  frun "COPY (FORMAT binary) > /dev/null" "echo $ROWS" \
    psql -q "$PGBASE/bench" -c "\\copy t TO '/dev/null' (FORMAT binary)"

  echo "== CSV and Parquet -> PostgreSQL"
  mkdir -p "$work/csv"
  [ -f "$work/csv/t.csv" ] ||
    psql -q "$PGBASE/bench" -c "\\copy t TO '$work/csv/t.csv' (FORMAT csv, HEADER true)"
  fresh_pg c1
  frun "dbstreams CSV -> PostgreSQL" "pg_count c1 public.t" "${DBS[@]}" \
    "$(cfg c2p "\"file://$work/csv\"" "\"$PGBASE/c1\"")"
  fresh_pg c2
  csvcopy() {
    pg_dump --section=pre-data -t t "$PGBASE/bench" | psql -q "$PGBASE/c2"
    psql -q "$PGBASE/c2" -c "\\copy t FROM '$work/csv/t.csv' (FORMAT csv, HEADER true)"
  }
  frun "psql \\copy of the CSV" "pg_count c2 public.t" \
    bash -c "$(declare -f csvcopy); PGBASE=$PGBASE work=$work csvcopy"
  fresh_pg c3
  frun "dbstreams Parquet -> PostgreSQL" "pg_count c3 public.t" "${DBS[@]}" \
    "$(cfg f2p "\"file://$work/p2f\"" "\"$PGBASE/c3\"")"

  echo "== MariaDB -> Parquet on S3 (s3rver; reported, not compared)"
  s3=$(printf '{"url": "s3://%s/m2s3?endpoint=%s&format=parquet", "user": "%s", "password": "%s"}' \
    "$S3_BUCKET" "$S3_ENDPOINT" "$S3_ACCESS_KEY" "$S3_SECRET_KEY")
  frun "dbstreams MariaDB -> Parquet on s3rver" "echo $ROWS" "${DBS[@]}" \
    "$(cfg m2s3 "\"${MYSQL_URL}bench\"" "$s3" '"tables": ["t"], "schemaPolicy": "drop_and_recreate"')"
}
run_rounds

rate() {
  local name wall cpu rss ok
  IFS='|' read -r name wall cpu rss ok <<< "${results[$1]}"
  if [ "$wall" = FAILED ] || [[ "$ok" != ok* ]]; then echo 0; else echo "$ROWS / $wall" | bc -l; fi
}
ratio() {
  local a b
  a=$(rate "$1"); b=$(rate "$2")
  if [ "$(echo "$a > 0 && $b > 0" | bc)" = 1 ]; then printf "%.2fx" "$(echo "$a / $b" | bc -l)"
  else echo "n/a"; fi
}
summary() {
  echo "== $ROWS rows, $(nproc) cores, $(date -u +%Y-%m-%d), each method run $ROUNDS times"
  printf "%-40s %9s %9s %8s %9s %s\n" method seconds rows/s MB/s cpu-s peakRSS-MB
  for r in "${results[@]}"; do
    IFS='|' read -r name wall cpu rss ok <<< "$r"
    if [ "$wall" = FAILED ]; then printf "%-40s FAILED\n" "$name"; continue; fi
    printf "%-40s %9.1f %9.0f %8.1f %9.1f %6s %s\n" "$name" "$wall" \
      "$(echo "$ROWS / $wall" | bc -l)" "$(echo "$BYTES / 1048576 / $wall" | bc -l)" "$cpu" "$rss" "$ok"
  done
  echo
  echo "ratios: dbstreams rows/s over the baseline's (issue 13's targets in brackets)"
  printf "%-58s %9s\n" "MariaDB -> Parquet vs mariadb --batch --quick (0.8x)" "$(ratio 0 1)"
  printf "%-58s %9s\n" "PostgreSQL -> Parquet vs binary COPY to /dev/null (0.8x)" "$(ratio 2 3)"
  printf "%-58s %9s\n" "CSV -> PostgreSQL vs psql \\copy (1.0x)" "$(ratio 4 5)"
  printf "%-58s %9s\n" "Parquet -> PostgreSQL vs psql \\copy of the CSV (1.0x)" "$(ratio 6 5)"
}
mkdir -p bench/results
echo
summary | tee "bench/results/files-$(date -u +%Y%m%d-%H%M%S).txt"
