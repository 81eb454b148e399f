#!/usr/bin/env bash
# What writing rows into MariaDB costs with LOAD DATA LOCAL INFILE (tab-separated text, what the
# dbstreams MySQL sink sends) against a prepared INSERT executed for an array of rows at once
# (MariaDB's bulk execution, binary values), measured by bench/mysql_write_probe: wall time,
# the client's CPU and the server's (mariadbd's user + system time from /proc), three runs
# each, alternating. Rows of the bench table's shape into a fresh table with its primary key,
# binlog on (ROW), one connection, one transaction per batch.
#
#   bench/mysql_write_bench.sh [ROWS] [BATCH]      (defaults 2000000, 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-2000000}
BATCH=${2:-10000}
BIN=build/release
scripts/setup.sh >/dev/null
scripts/build.sh release >/dev/null
. bench/lib.sh
start_servers --mariadb
"${M[@]}" -e "CREATE DATABASE wbench CHARACTER SET utf8mb4"
url="mysql://root:$MYSQL_PASSWORD@127.0.0.1:$MYSQL_PORT/wbench"
echo "== $ROWS rows in batches of $BATCH"
for run in 1 2 3; do
  for mode in load bulk bulktext; do
    "${M[@]}" -e "DROP TABLE IF EXISTS wbench.w; FLUSH TABLES" && settle
    a=$(mariadbd_cpu)
    out=$("$BIN/bench/mysql_write_probe" "$mode" "$url" "$ROWS" "$BATCH")
    b=$(mariadbd_cpu)
    n=$("${M[@]}" -N -B -e "SELECT count(*) FROM wbench.w")
    echo "run $run: $out server_cpu=$(echo "$b - $a" | bc) count=$n"
  done
done
