# What the benchmarks share (sourced by bench/*_bench.sh, which set BIN and ROWS first): a
# scratch folder, throwaway servers, the 2M-row bench table, and the timing helpers.

work=$(mktemp -d /tmp/dbstreams-bench.XXXXXX)
trap 'kill $TENV 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

# start_servers FLAGS...: dbstreams-testenv with those servers (--mariadb --postgres --s3), on
# free ports, until the script exits; its variables (MYSQL_PORT, PGPORT, S3_ENDPOINT, ...) are
# exported, and M (the mariadb client) and PGBASE set.
start_servers() {
  mkfifo "$work/hold"
  "$BIN/tests/dbstreams-testenv" "$@" --env-file "$work/env" < "$work/hold" \
    > "$work/testenv.log" 2>&1 &
  TENV=$!
  exec 9> "$work/hold"   # keeps testenv's stdin open until we exit
  for _ in $(seq 1 120); do [ -s "$work/env" ] && break; sleep 0.5; done
  set -a; . "$work/env"; set +a
  M=(mariadb -h 127.0.0.1 -P "$MYSQL_PORT" -u root "-p$MYSQL_PASSWORD" --default-character-set=utf8mb4)
  PGBASE="postgres://postgres:${PGPASSWORD:-}@127.0.0.1:${PGPORT:-}"  # set with --postgres
  # With --mariadb: the server's process, for mariadbd_cpu.
  [ "${MYSQL_PORT:-0}" = 0 ] || MARIADBD_PID=$("${M[@]}" -N -B -e "SELECT @@pid_file" | xargs cat)
  # With --postgres: the postmaster, for servers_cpu.
  [ "${PGPORT:-0}" = 0 ] ||
    POSTMASTER_PID=$(psql -tA "$PGBASE/postgres" -c "SHOW data_directory" | xargs -I{} head -1 {}/postmaster.pid)
}

# generate_tables: bench.t with ROWS rows (16 columns) in MariaDB and PostgreSQL; BYTES is the
# PostgreSQL table's size.
generate_tables() {
  echo "== generating $ROWS rows (16 columns) in MariaDB and PostgreSQL"
  generate_mariadb
  generate_postgres
}

# generate_mariadb: bench.t with ROWS rows in MariaDB.
generate_mariadb() {
  "${M[@]}" -e "CREATE DATABASE bench CHARACTER SET utf8mb4"
  "${M[@]}" bench -e "
  CREATE TABLE t (
    id BIGINT PRIMARY KEY, a INT NOT NULL, b INT, c SMALLINT, d DECIMAL(12,2), e DOUBLE, f DOUBLE,
    g VARCHAR(32), h VARCHAR(80), i VARCHAR(64), j DATETIME(6), k DATE, l TINYINT(1),
    m CHAR(36), n JSON, o VARCHAR(16));
  INSERT INTO t SELECT seq, seq % 1000003, seq % 97, seq % 1000, (seq % 100000) / 100.0,
    seq / 7.0, (seq % 1000) / 3.0, CONCAT('alpha ', seq % 7), REPEAT(CONCAT('word', seq % 13, ' '), 6),
    IF(seq % 10 = 0, NULL, CONCAT('user', seq % 100000, '@example.com')),
    '2024-01-01' + INTERVAL seq SECOND, '2024-01-01' + INTERVAL (seq % 2000) DAY, seq % 2,
    UUID(), CONCAT('{\"n\": ', seq % 1000, ', \"tag\": \"t', seq % 7, '\"}'), CONCAT('w', seq % 5)
  FROM seq_1_to_$ROWS;"
}

# generate_postgres: bench.t with ROWS rows in PostgreSQL; BYTES is its size.
generate_postgres() {
  psql -q "$PGBASE/postgres" -c "CREATE DATABASE bench"
  psql -q "$PGBASE/bench" -c "
  CREATE TABLE t (
    id bigint PRIMARY KEY, a int NOT NULL, b int, c smallint, d numeric(12,2), e float8, f float8,
    g varchar(32), h varchar(80), i varchar(64), j timestamptz, k date, l boolean,
    m uuid, n jsonb, o varchar(16));
  INSERT INTO t SELECT g, g % 1000003, g % 97, g % 1000, (g % 100000) / 100.0, g / 7.0,
    (g % 1000) / 3.0, 'alpha ' || g % 7, repeat('word' || g % 13 || ' ', 6),
    CASE WHEN g % 10 = 0 THEN NULL ELSE 'user' || g % 100000 || '@example.com' END,
    '2024-01-01'::timestamptz + g * interval '1 second', '2024-01-01'::date + g % 2000, g % 2 = 0,
    gen_random_uuid(), ('{\"n\": ' || g % 1000 || ', \"tag\": \"t' || g % 7 || '\"}')::jsonb, 'w' || g % 5
  FROM generate_series(1, $ROWS) g;"
  psql -q "$PGBASE/bench" -c "VACUUM ANALYZE t"
  BYTES=$(psql -tA "$PGBASE/bench" -c "SELECT pg_table_size('t')")
}

# settle: waits (at most two minutes) until the machine is idle, i.e. under 10 % CPU busy over
# a second. The servers keep working after a load (InnoDB purge and page flushing after the
# generated table, PostgreSQL's autovacuum after the previous method); that work must not land
# in whichever method happens to come next.
settle() {
  local i a b busy
  for i in $(seq 1 120); do
    a=$(awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat)
    sleep 1
    b=$(awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat)
    busy=$(echo "$a $b" | awk '{d=$4-$2; print (d > 0 ? int(100 * ($3 - $1) / d) : 0)}')
    [ "$busy" -lt 10 ] && return 0
  done
  echo "   (the machine did not become idle; measuring anyway)"
}
# treepeak PID FILE: while PID lives, samples (every 0.1 s) the summed RSS in KB of PID and
# all its descendants (for dbstreams: the command, its reader and writers and the embedded
# nats-server) and keeps the peak in FILE. /usr/bin/time's figure is one process's peak. The
# sampler is bench/treepeak.cc: it reads /proc itself, where a loop forking ps and awk cost a
# ninth of a core that the measured method lost.
treepeak() {
  "$BIN/bench/treepeak" "$1" "$2"
}

# fold_rounds N: `results` holds ROUNDS rounds of the same N methods (round r's method i at
# r * N + i); folds them into N lines, one a method: the wall and CPU seconds of its run with
# the median wall time, the largest peak RSS of all its runs, and the first round's verdict.
# A method that lost rows in any round keeps that line instead; rounds that failed are counted
# on the line, and the median is of the others (of two: the faster). One machine's
# timings scatter by a fifth from run to run (other tenants, page cache, the servers' own
# background work); the median of three is what the issue measures.
fold_rounds() {
  local n=$1 rounds=$((${#results[@]} / $1)) i r folded=()
  for ((i = 0; i < n; i++)); do
    local runs=() walls="" name wall cpu rss ok bad="" failed=0 first="" maxrss=0 verdict="" line med
    for ((r = 0; r < rounds; r++)); do
      line=${results[$((r * n + i))]}
      IFS='|' read -r name wall cpu rss ok <<< "$line"
      [ -n "$first" ] || first="$name|$wall"
      if [ "$wall" = SKIPPED ]; then bad="$name|SKIPPED"; continue; fi
      # A round that failed (a peer's own error, say) is counted and named, and the median is
      # taken over the rounds that finished: one bad round does not hide the others.
      if [ "$wall" = FAILED ]; then failed=$((failed + 1)); continue; fi
      [[ "$ok" == ok* ]] || bad=${bad:-$line}
      [ -n "$verdict" ] || verdict=$ok
      [ "$rss" -gt "$maxrss" ] && maxrss=$rss
      runs+=("$wall|$cpu")
      walls="$walls${walls:+ / }$wall"
    done
    if [ -n "$bad" ]; then folded+=("$bad"); continue; fi
    if [ "${#runs[@]}" = 0 ]; then folded+=("$first"); continue; fi
    med=$(printf '%s\n' "${runs[@]}" | sort -t'|' -k1,1g | sed -n "$(((${#runs[@]} + 1) / 2))p")
    [ "$rounds" -gt 1 ] && verdict="$verdict, median of ${#runs[@]} ($walls s)"
    [ "$failed" = 0 ] || verdict="$verdict, FAILED in $failed of $rounds rounds"
    folded+=("$name|${med%%|*}|${med#*|}|$maxrss|$verdict")
  done
  results=(${folded[@]+"${folded[@]}"})
}

# run_rounds: calls the script's `methods` (one round of every method, appending to `results`)
# ROUNDS times (default 3), the rounds one after the other, then folds them (fold_rounds).
run_rounds() {
  ROUNDS=${ROUNDS:-3}
  for ((round = 0; round < ROUNDS; round++)); do
    echo "== round $((round + 1)) of $ROUNDS"
    methods
  done
  fold_rounds $((${#results[@]} / ROUNDS))
}

# mariadbd_cpu: the CPU seconds (user + system) the MariaDB server has used so far.
mariadbd_cpu() {
  awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f\n", ($14 + $15) / hz}' "/proc/$MARIADBD_PID/stat"
}
# servers_cpu: the CPU seconds both database servers have used so far: mariadbd, and the
# postmaster with its backends and workers (those that ended, counted by the kernel in the
# postmaster's children times, and those alive). The difference across a method is the work
# it made the servers do, which a method's own CPU figure leaves out: a bulk load's cost is
# mostly there.
servers_cpu() {
  local pids=() c
  [ -z "${MARIADBD_PID:-}" ] || pids+=("/proc/$MARIADBD_PID/stat")
  if [ -n "${POSTMASTER_PID:-}" ]; then
    pids+=("/proc/$POSTMASTER_PID/stat")
    for c in $(pgrep -P "$POSTMASTER_PID"); do pids+=("/proc/$c/stat"); done
  fi
  # utime + stime, and for the postmaster also cutime + cstime (its ended children); a child
  # that ends while this runs is missed or counted twice, a few milliseconds.
  cat "${pids[@]}" 2>/dev/null | awk -v hz="$(getconf CLK_TCK)" -v pm="${POSTMASTER_PID:-0}" \
    '{ t += $14 + $15; if ($1 == pm) t += $16 + $17 } END { printf "%.2f\n", t / hz }'
}
