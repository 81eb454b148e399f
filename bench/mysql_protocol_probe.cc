// Reads one MySQL/MariaDB table to the end with the text protocol (mysql_use_result, what the
// dbstreams source uses) or the binary protocol (a server-side prepared statement, rows fetched
// into bound native buffers), for bench/mysql_protocol_bench.sh. Prints rows, wall seconds and
// the client's CPU seconds; the script adds the server's CPU from /proc.
//
//   mysql_protocol_probe text|binary URL QUERY
//
// The binary mode binds every column as the type the server announces (integers and doubles
// native, temporal values as MYSQL_TIME, the rest as bytes in 64 KiB buffers) and fails on a
// truncated value: it measures what reading costs, it is not a reader.
#include <mysql.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "config/connection.h"
#include "mysql/mysql_client.h"
#include "probe_common.h"

namespace {

using dbs::bench::CpuSeconds;

int Fail(const std::string& what) { return dbs::bench::Fail("mysql_protocol_probe", what); }

// Text protocol: every value arrives as text.
int ReadText(MYSQL* m, const std::string& query, uint64_t* rows, uint64_t* bytes) {
  if (mysql_real_query(m, query.data(), query.size()) != 0) return Fail(mysql_error(m));
  MYSQL_RES* res = mysql_use_result(m);
  if (res == nullptr) return Fail(mysql_error(m));
  const unsigned n = mysql_num_fields(res);
  while (MYSQL_ROW row = mysql_fetch_row(res)) {
    const unsigned long* len = mysql_fetch_lengths(res);
    for (unsigned i = 0; i < n; ++i) *bytes += row[i] == nullptr ? 0 : len[i];
    ++*rows;
  }
  const bool failed = mysql_errno(m) != 0;
  mysql_free_result(res);
  return failed ? Fail(mysql_error(m)) : 0;
}

// Binary protocol: a prepared statement, rows fetched into native buffers.
int ReadBinary(MYSQL* m, const std::string& query, uint64_t* rows, uint64_t* bytes) {
  MYSQL_STMT* st = mysql_stmt_init(m);
  if (st == nullptr) return Fail("mysql_stmt_init failed");
  struct Closer {
    MYSQL_STMT* s;
    ~Closer() { mysql_stmt_close(s); }
  } closer{st};
  if (mysql_stmt_prepare(st, query.data(), query.size()) != 0) return Fail(mysql_stmt_error(st));
  MYSQL_RES* meta = mysql_stmt_result_metadata(st);
  if (meta == nullptr) return Fail("the statement returns no rows");
  const unsigned n = mysql_num_fields(meta);
  MYSQL_FIELD* fields = mysql_fetch_fields(meta);
  std::vector<MYSQL_BIND> bind(n);
  std::vector<std::vector<char>> buf(n);
  std::vector<unsigned long> len(n);
  std::vector<my_bool> null(n), error(n);
  for (unsigned i = 0; i < n; ++i) {
    MYSQL_BIND& b = bind[i];
    std::memset(&b, 0, sizeof b);
    switch (fields[i].type) {
      case MYSQL_TYPE_TINY:
      case MYSQL_TYPE_SHORT:
      case MYSQL_TYPE_INT24:
      case MYSQL_TYPE_LONG:
      case MYSQL_TYPE_LONGLONG:
      case MYSQL_TYPE_YEAR:
        b.buffer_type = MYSQL_TYPE_LONGLONG;
        buf[i].resize(8);
        break;
      case MYSQL_TYPE_FLOAT:
      case MYSQL_TYPE_DOUBLE:
        b.buffer_type = MYSQL_TYPE_DOUBLE;
        buf[i].resize(8);
        break;
      case MYSQL_TYPE_DATE:
      case MYSQL_TYPE_DATETIME:
      case MYSQL_TYPE_TIMESTAMP:
      case MYSQL_TYPE_TIME:
        b.buffer_type = fields[i].type;
        buf[i].resize(sizeof(MYSQL_TIME));
        break;
      default:
        b.buffer_type = MYSQL_TYPE_STRING;
        buf[i].resize(64 * 1024);
        break;
    }
    b.is_unsigned = (fields[i].flags & UNSIGNED_FLAG) != 0;
    b.buffer = buf[i].data();
    b.buffer_length = buf[i].size();
    b.length = &len[i];
    b.is_null = &null[i];
    b.error = &error[i];
  }
  mysql_free_result(meta);
  if (mysql_stmt_execute(st) != 0) return Fail(mysql_stmt_error(st));
  if (mysql_stmt_bind_result(st, bind.data()) != 0) return Fail(mysql_stmt_error(st));
  for (;;) {
    const int r = mysql_stmt_fetch(st);
    if (r == MYSQL_NO_DATA) break;
    if (r == MYSQL_DATA_TRUNCATED) return Fail("a value is longer than its 64 KiB buffer");
    if (r != 0) return Fail(mysql_stmt_error(st));
    for (unsigned i = 0; i < n; ++i) *bytes += null[i] ? 0 : len[i];
    ++*rows;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || (std::string(argv[1]) != "text" && std::string(argv[1]) != "binary")) {
    return Fail("usage: mysql_protocol_probe text|binary URL QUERY");
  }
  auto cfg = dbs::ParseConnectionUrl(argv[2]);
  if (!cfg.ok()) return Fail(cfg.status().ToString());
  auto conn = dbs::mysql::MysqlConnection::Open(*cfg, {});
  if (!conn.ok()) return Fail(conn.status().ToString());
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = CpuSeconds();
  uint64_t rows = 0, bytes = 0;
  const int rc = std::string(argv[1]) == "text"
                     ? ReadText((*conn)->handle(), argv[3], &rows, &bytes)
                     : ReadBinary((*conn)->handle(), argv[3], &rows, &bytes);
  if (rc != 0) return rc;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s rows=%llu bytes=%llu wall=%.2f client_cpu=%.2f\n", argv[1],
              static_cast<unsigned long long>(rows), static_cast<unsigned long long>(bytes), wall,
              CpuSeconds() - c0);
  return 0;
}
