#!/usr/bin/env bash
# Full-load benchmark: dbstreams side by side with pgloader, pgcopydb and the raw pipes, in one
# run on one machine, every result row-count checked. Prints rows/s, MB/s, the CPU seconds of
# the method's own processes and of the database servers, the peak RSS of the method's process
# tree, and ratios against the peers.
#
#   bench/load_bench.sh [ROWS]          (default 2000000; the issue's size)
#   PEERS=0 ROUNDS=1 bench/load_bench.sh 20000000   (dbstreams only, at the defaults, once: the
#                                           long run that shows linear time and flat memory)
#
# Every method runs ROUNDS times (default 3), the rounds one after the other, and reports the
# run with the median wall time (bench/lib.sh run_rounds).
#
# Starts its own throwaway MariaDB and PostgreSQL (dbstreams-testenv), installs pgloader and
# pgcopydb from Debian when missing. Results go to stdout and bench/results/load-<date>.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-2000000}
BIN=build/release
scripts/setup.sh >/dev/null
scripts/build.sh release >/dev/null
for p in pgloader pgcopydb mydumper time procps; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >/dev/null
done

. bench/lib.sh
start_servers --mariadb --postgres
generate_tables

results=()
# count ENGINE DB TABLE: rows in the target.
count() {
  if [ "$1" = my ]; then "${M[@]}" -N -B "$2" -e "SELECT count(*) FROM $3" 2>/dev/null || echo 0
  else psql -tA "$PGBASE/$2" -c "SELECT count(*) FROM $3" 2>/dev/null || echo 0; fi
}
# fresh ENGINE DB: an empty target database.
fresh() {
  if [ "$1" = my ]; then "${M[@]}" -e "DROP DATABASE IF EXISTS $2; CREATE DATABASE $2 CHARACTER SET utf8mb4"
  else psql -q "$PGBASE/postgres" -c "DROP DATABASE IF EXISTS $2 WITH (FORCE)" -c "CREATE DATABASE $2"; fi
}
# The targets of the methods measured so far (ENGINE:DB), dropped before the next method: a
# loaded table left behind keeps its server busy for minutes at a low CPU rate (PostgreSQL's
# autovacuum, InnoDB's purge and flushing), below what settle notices but not below what the
# next method feels.
done_targets=()
drop_done_targets() {
  local t
  for t in ${done_targets[@]+"${done_targets[@]}"}; do
    if [ "${t%%:*}" = my ]; then "${M[@]}" -e "DROP DATABASE IF EXISTS ${t#*:}"
    else psql -q "$PGBASE/postgres" -c "DROP DATABASE IF EXISTS ${t#*:} WITH (FORCE)"; fi
  done
  done_targets=()
}
# run NAME ENGINE:DB TABLE COMMAND...: times a method (wall, CPU, peak RSS of its whole process
# tree), checks the row count, records a line.
run() {
  local name=$1 engine=${2%%:*} db=${2#*:} table=$3; shift 3
  drop_done_targets
  done_targets+=("$engine:$db")
  fresh "$engine" "$db"
  # Every method starts from the same server state: the previous method's dirty pages and WAL
  # are written out first, not during the next method's timing.
  psql -q "$PGBASE/postgres" -c "CHECKPOINT"
  "${M[@]}" -e "FLUSH TABLES" && sync
  settle
  local srv0; srv0=$(servers_cpu)
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" > "$work/$db.out" 2>&1 &
  local pid=$!
  treepeak "$pid" "$work/peak" &
  local sampler=$!
  if ! wait "$pid"; then
    wait "$sampler" || true
    echo "!! $name failed:"; tail -20 "$work/$db.out"; results+=("$name|FAILED"); return
  fi
  wait "$sampler" || true
  local wall user sys rss n srv
  srv=$(echo "$(servers_cpu) - $srv0" | bc)
  read -r wall user sys rss < "$work/time"
  rss=$(cat "$work/peak")
  n=$(count "$engine" "$db" "$table")
  local ok=ok; [ "$n" = "$ROWS" ] || ok="ROWS=$n"
  # The CPU field is the method's own CPU s and the servers' (servers_cpu), as "own;servers".
  results+=("$name|$wall|$(echo "$user + $sys" | bc);$srv|$((rss / 1024))|$ok")
}
# peer NAME ...: run, unless PEERS=0 (then a SKIPPED line keeps the result indices).
peer() {
  if [ "${PEERS:-1}" = 0 ]; then results+=("$1|SKIPPED"); else run "$@"; fi
}
# checked I FILE: after results[I]'s run, compares its source and target with dbstreams verify
# (counts and per-column checksums; not timed) and appends the verdict to the result line.
# In the first round only (I counts from its first method).
checked() {
  local v
  [ "$round" = 0 ] || return 0
  [[ "${results[$1]}" == *"|FAILED" || "${results[$1]}" == *"|SKIPPED" ]] && return 0
  if "$BIN/apps/dbstreams" verify "$2" > "$work/verify.out" 2>&1; then v="checksums equal"
  else v="VERIFY FAILED: $(tail -1 "$work/verify.out")"; fi
  results[$1]="${results[$1]}, $v"
}

# cfg NAME SOURCE TARGET [EXTRA JSON]: a stream file with the defaults, except verify (the peers
# do not verify either; each result is verified after its timing) and a fresh target table.
cfg() {
  cat > "$work/$1.json" <<JSON
{"name": "$1", "source": "$2", "target": "$3", "tables": ["t"], "verify": false,
 "schemaPolicy": "drop_and_recreate"${4:+, $4}}
JSON
  echo "$work/$1.json"
}
DBS=("$BIN/apps/dbstreams" run --quiet)

# methods: one round of every method, in the order the ratios below index them.
methods() {
  echo "== MariaDB -> PostgreSQL"
  run "dbstreams (defaults)" pg:d1 bench.t "${DBS[@]}" "$(cfg m2p "$MYSQL_URL"bench "$PGBASE/d1")"
  checked 0 "$work/m2p.json"
  peer "dbstreams (dataBundleSize 100)" pg:d2 bench.t "${DBS[@]}" \
    "$(cfg m2p100 "$MYSQL_URL"bench "$PGBASE/d2" '"dataBundleSize": 100')"
  cat > "$work/pgloader.load" <<LOAD
LOAD DATABASE FROM mysql://root:$MYSQL_PASSWORD@127.0.0.1:$MYSQL_PORT/bench
     INTO $PGBASE/d3
WITH prefetch rows = 25000
;
LOAD
  peer "pgloader 3.6.9" pg:d3 bench.t pgloader "$work/pgloader.load"
  pipe_sql="SELECT CONCAT_WS('\t', id, a, IFNULL(b,'\\\\N'), IFNULL(c,'\\\\N'), IFNULL(d,'\\\\N'),
    IFNULL(e,'\\\\N'), IFNULL(f,'\\\\N'), IFNULL(REPLACE(REPLACE(REPLACE(g,'\\\\','\\\\\\\\'),'\t','\\\\t'),'\n','\\\\n'),'\\\\N'),
    IFNULL(REPLACE(REPLACE(REPLACE(h,'\\\\','\\\\\\\\'),'\t','\\\\t'),'\n','\\\\n'),'\\\\N'),
    IFNULL(REPLACE(REPLACE(REPLACE(i,'\\\\','\\\\\\\\'),'\t','\\\\t'),'\n','\\\\n'),'\\\\N'),
    IFNULL(j,'\\\\N'), IFNULL(k,'\\\\N'), IFNULL(l,'\\\\N'), IFNULL(m,'\\\\N'),
    IFNULL(REPLACE(REPLACE(REPLACE(n,'\\\\','\\\\\\\\'),'\t','\\\\t'),'\n','\\\\n'),'\\\\N'),
    IFNULL(o,'\\\\N')) FROM t"
  pipe() {
    psql -q "$PGBASE/d4" -c "CREATE SCHEMA bench; CREATE TABLE bench.t (id bigint PRIMARY KEY, a int,
      b int, c smallint, d numeric(12,2), e float8, f float8, g varchar(32), h varchar(80),
      i varchar(64), j timestamp(6), k date, l smallint, m char(36), n jsonb, o varchar(16))"
    "${M[@]}" --batch --quick --raw --skip-column-names bench -e "$pipe_sql" |
      psql -q "$PGBASE/d4" -c "\\copy bench.t FROM STDIN"
  }
  export -f pipe; export pipe_sql PGBASE
  peer "text pipe (mariadb to psql copy)" pg:d4 bench.t bash -c "$(declare -f pipe); M=(${M[*]}); pipe"

  echo "== PostgreSQL -> PostgreSQL"
  run "dbstreams (defaults)" pg:d5 public.t "${DBS[@]}" "$(cfg p2p "$PGBASE/bench" "$PGBASE/d5")"
  checked 4 "$work/p2p.json"
  peer "dbstreams (dataBundleSize 100)" pg:d6 public.t "${DBS[@]}" \
    "$(cfg p2p100 "$PGBASE/bench" "$PGBASE/d6" '"dataBundleSize": 100')"
  rm -rf "$work/pgcopydb"  # its work folder: a finished earlier round's makes it stop
  peer "pgcopydb 0.10 clone (2 jobs)" pg:d7 public.t pgcopydb clone --source "$PGBASE/bench" \
    --target "$PGBASE/d7" --table-jobs 2 --index-jobs 2 --dir "$work/pgcopydb" --no-owner \
    --no-acl --skip-extensions
  binpipe() {
    pg_dump --section=pre-data -t t "$PGBASE/bench" | psql -q "$PGBASE/d8"
    psql -q "$PGBASE/bench" -c "\\copy t TO STDOUT (FORMAT binary)" |
      psql -q "$PGBASE/d8" -c "\\copy t FROM STDIN (FORMAT binary)"
  }
  peer "binary COPY pipe (no index)" pg:d8 public.t bash -c "$(declare -f binpipe); PGBASE=$PGBASE; binpipe"

  echo "== MariaDB -> MariaDB"
  run "dbstreams (defaults)" my:m1 m1.t "${DBS[@]}" \
    "$(cfg m2m "$MYSQL_URL"bench "$MYSQL_URL"m1 '"targetSchema": "m1"')"
  checked 8 "$work/m2m.json"
  dumppipe() {
    mariadb-dump -h 127.0.0.1 -P "$MYSQL_PORT" -u root "-p$MYSQL_PASSWORD" --single-transaction \
      --quick bench t | mariadb -h 127.0.0.1 -P "$MYSQL_PORT" -u root "-p$MYSQL_PASSWORD" m2
  }
  peer "mariadb-dump into mariadb" my:m2 m2.t bash -c "$(declare -f dumppipe); MYSQL_PORT=$MYSQL_PORT MYSQL_PASSWORD=$MYSQL_PASSWORD dumppipe"
  mydl() {
    # The whole bench database (it holds only t): mydumper 0.10 skips a table named with -T
    # alongside -B.
    rm -rf "$work/mydumper"
    mydumper -h 127.0.0.1 -P "$MYSQL_PORT" -u root -p "$MYSQL_PASSWORD" -B bench \
      -t 2 -r 100000 -o "$work/mydumper" &&
      myloader -h 127.0.0.1 -P "$MYSQL_PORT" -u root -p "$MYSQL_PASSWORD" -B m3 -s bench \
        -t 2 -o -d "$work/mydumper"
  }
  peer "mydumper, myloader (2 threads)" my:m3 m3.t bash -c "$(declare -f mydl); work=$work MYSQL_PORT=$MYSQL_PORT MYSQL_PASSWORD=$MYSQL_PASSWORD mydl"

  echo "== PostgreSQL -> MariaDB"
  run "dbstreams (defaults)" my:m4 m4.t "${DBS[@]}" \
    "$(cfg p2m "$PGBASE/bench" "$MYSQL_URL"m4 '"targetSchema": "m4"')"
  checked 11 "$work/p2m.json"
}
run_rounds

# BUNDLE_SWEEP="65536 262144 1048576 4194304": dbstreams again with each dataBundleBytes, both
# directions into PostgreSQL (the sweep behind the default; not in the ratios).
for b in ${BUNDLE_SWEEP:-}; do
  run "dbstreams M->P dataBundleBytes $b" pg:s1 bench.t "${DBS[@]}" \
    "$(cfg sm$b "$MYSQL_URL"bench "$PGBASE/s1" "\"dataBundleBytes\": $b")"
  run "dbstreams P->P dataBundleBytes $b" pg:s2 public.t "${DBS[@]}" \
    "$(cfg sp$b "$PGBASE/bench" "$PGBASE/s2" "\"dataBundleBytes\": $b")"
done

# rate I: rows/s of results[I], 0 when it failed.
rate() {
  local name wall cpu rss ok
  IFS='|' read -r name wall cpu rss ok <<< "${results[$1]}"
  # A failed method, or one that did not load every row, has no rate.
  if [ "$wall" = FAILED ] || [ "$wall" = SKIPPED ] || [[ "$ok" != ok* ]]; then echo 0; else echo "$ROWS / $wall" | bc -l; fi
}
# ratio I J: results[I]'s rows/s over results[J]'s.
ratio() {
  local a b
  a=$(rate "$1"); b=$(rate "$2")
  if [ "$(echo "$a > 0 && $b > 0" | bc)" = 1 ]; then printf "%.2fx" "$(echo "$a / $b" | bc -l)"
  else echo "n/a"; fi
}
summary() {
  echo "== $ROWS rows, $(nproc) cores, $(date -u +%Y-%m-%d), each method run $ROUNDS times"
  printf "%-34s %9s %9s %8s %9s %9s %s\n" method seconds rows/s MB/s cpu-s server-s peakRSS-MB
  for r in "${results[@]}"; do
    IFS='|' read -r name wall cpu rss ok <<< "$r"
    if [ "$wall" = FAILED ] || [ "$wall" = SKIPPED ]; then printf "%-34s %s\n" "$name" "$wall"; continue; fi
    printf "%-34s %9.1f %9.0f %8.1f %9.1f %9.1f %6s %s\n" "$name" "$wall" \
      "$(echo "$ROWS / $wall" | bc -l)" "$(echo "$BYTES / 1048576 / $wall" | bc -l)" "${cpu%;*}" \
      "${cpu#*;}" "$rss" "$ok"
  done
  echo "(cpu-s: the method's own processes; server-s: what the MariaDB and PostgreSQL servers"
  echo " used during it, source and target; both of the run with the median time)"
  echo
  echo "ratios: dbstreams rows/s over the peer's (issue 12's targets in brackets)"
  printf "%-58s %9s %13s\n" "" "defaults" "bundle 100"
  printf "%-58s %9s %13s\n" "MariaDB -> PostgreSQL vs pgloader (4x)" "$(ratio 0 2)" "$(ratio 1 2)"
  printf "%-58s %9s %13s\n" "MariaDB -> PostgreSQL vs text pipe (1.2x)" "$(ratio 0 3)" "$(ratio 1 3)"
  printf "%-58s %9s %13s\n" "PostgreSQL -> PostgreSQL vs pgcopydb (1.5x)" "$(ratio 4 6)" "$(ratio 5 6)"
  printf "%-58s %9s %13s\n" "PostgreSQL -> PostgreSQL vs binary COPY pipe (0.7x)" "$(ratio 4 7)" \
    "$(ratio 5 7)"
  printf "%-58s %9s\n" "MariaDB -> MariaDB vs mariadb-dump into mariadb (1.5x)" "$(ratio 8 9)"
  printf "%-58s %9s\n" "MariaDB -> MariaDB vs mydumper, myloader (1.5x)" "$(ratio 8 10)"
  printf "%-58s %9s\n" "PostgreSQL -> MariaDB vs mariadb-dump into mariadb (1.5x)" "$(ratio 11 9)"
  printf "%-58s %9s\n" "PostgreSQL -> MariaDB vs mydumper, myloader (1.5x)" "$(ratio 11 10)"
}
mkdir -p bench/results
echo
summary | tee "bench/results/load-$(date -u +%Y%m%d-%H%M%S).txt"
