#!/usr/bin/env bash
# What reading a MariaDB table costs with the text protocol (mysql_use_result) against the
# binary protocol (a server-side prepared statement), measured by bench/mysql_protocol_probe:
# wall time, the client's CPU and the server's (mariadbd's user + system time from /proc),
# three runs each, alternating. The dbstreams MySQL source reads with the binary protocol.
#
#   bench/mysql_protocol_bench.sh [ROWS]      (default 2000000)
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-2000000}
BIN=build/release
scripts/setup.sh >/dev/null
scripts/build.sh release >/dev/null
. bench/lib.sh
start_servers --mariadb
generate_mariadb
url="mysql://root:$MYSQL_PASSWORD@127.0.0.1:$MYSQL_PORT/bench"
echo "== $ROWS rows, SELECT * FROM bench.t"
for run in 1 2 3; do
  for mode in text binary; do
    "${M[@]}" -e "FLUSH TABLES" && settle
    a=$(mariadbd_cpu)
    out=$("$BIN/bench/mysql_protocol_probe" "$mode" "$url" "SELECT * FROM t")
    b=$(mariadbd_cpu)
    echo "run $run: $out server_cpu=$(echo "$b - $a" | bc)"
  done
done
