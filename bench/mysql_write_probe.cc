// Writes generated rows of the bench table's shape into a fresh MariaDB table with LOAD DATA
// LOCAL INFILE (tab-separated text from memory, what the dbstreams MySQL sink sends) or with a
// prepared INSERT executed for an array of rows at once (MariaDB's bulk execution: binary
// values, no text to parse), for bench/mysql_write_bench.sh. One connection, one transaction
// per batch. Prints rows, wall seconds and the client's CPU seconds; the script adds the
// server's CPU from /proc.
//
//   mysql_write_probe load|bulk|bulktext URL ROWS [BATCH]  (bulktext: every value bound as text)
//   (BATCH: rows per transaction, 10000)
//
// It measures what writing costs, it is not a writer: no escaping (the generated values need
// none), no error mapping.
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

int Fail(const std::string& what) { return dbs::bench::Fail("mysql_write_probe", what); }

constexpr int kCols = 16;

// Row n of the bench table's shape, as text.
struct Row {
  long long id, a;
  int b, c, l;
  std::string d, g, h, i, j, k, m, n, o;
  double e, f;
  bool i_null;
  MYSQL_TIME jt, kt;
};

void Make(long long s, Row* r) {
  r->id = s;
  r->a = s % 1000003;
  r->b = static_cast<int>(s % 97);
  r->c = static_cast<int>(s % 1000);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%lld.%02lld", (s % 100000) / 100, (s % 100000) % 100);
  r->d = buf;
  r->e = static_cast<double>(s) / 7.0;
  r->f = static_cast<double>(s % 1000) / 3.0;
  r->g = "alpha " + std::to_string(s % 7);
  r->h.clear();
  for (int w = 0; w < 6; ++w) r->h += "word" + std::to_string(s % 13) + " ";
  r->i_null = s % 10 == 0;
  r->i = "user" + std::to_string(s % 100000) + "@example.com";
  const long long sec = s % 86400, day = s / 86400;
  std::memset(&r->jt, 0, sizeof r->jt);
  r->jt.year = 2024;
  r->jt.month = 1 + static_cast<unsigned>(day % 12);
  r->jt.day = 1 + static_cast<unsigned>(day % 28);
  r->jt.hour = static_cast<unsigned>(sec / 3600);
  r->jt.minute = static_cast<unsigned>(sec / 60 % 60);
  r->jt.second = static_cast<unsigned>(sec % 60);
  r->jt.time_type = MYSQL_TIMESTAMP_DATETIME;
  std::snprintf(buf, sizeof buf, "%04u-%02u-%02u %02u:%02u:%02u", r->jt.year, r->jt.month,
                r->jt.day, r->jt.hour, r->jt.minute, r->jt.second);
  r->j = buf;
  std::memset(&r->kt, 0, sizeof r->kt);
  r->kt.year = 2024 + static_cast<unsigned>(s % 5);
  r->kt.month = 1 + static_cast<unsigned>(s % 12);
  r->kt.day = 1 + static_cast<unsigned>(s % 28);
  r->kt.time_type = MYSQL_TIMESTAMP_DATE;
  std::snprintf(buf, sizeof buf, "%04u-%02u-%02u", r->kt.year, r->kt.month, r->kt.day);
  r->k = buf;
  r->l = static_cast<int>(s % 2);
  std::snprintf(buf, sizeof buf, "%08llx-0000-4000-8000-%012llx", s,
                (s * 2654435761ULL) & 0xFFFFFFFFFFFFULL);
  r->m = buf;
  r->n = "{\"n\": " + std::to_string(s % 1000) + ", \"tag\": \"t" + std::to_string(s % 7) + "\"}";
  r->o = "w" + std::to_string(s % 5);
}

// LOAD DATA LOCAL INFILE from a buffer.
struct Infile {
  const std::string* data;
  size_t pos;
};
int InfileInit(void** ptr, const char*, void* user) {
  auto* in = static_cast<Infile*>(user);
  in->pos = 0;
  *ptr = in;
  return 0;
}
int InfileRead(void* ptr, char* buf, unsigned int len) {
  auto* in = static_cast<Infile*>(ptr);
  const size_t n = std::min<size_t>(len, in->data->size() - in->pos);
  std::memcpy(buf, in->data->data() + in->pos, n);
  in->pos += n;
  return static_cast<int>(n);
}
void InfileEnd(void*) {}
int InfileError(void*, char* msg, unsigned int len) {
  std::snprintf(msg, len, "infile error");
  return 1;
}

int Load(MYSQL* m, long long rows, long long batch) {
  std::string text;
  Infile in{&text, 0};
  mysql_set_local_infile_handler(m, InfileInit, InfileRead, InfileEnd, InfileError, &in);
  Row r;
  for (long long s = 1; s <= rows; s += batch) {
    text.clear();
    for (long long x = s; x < s + batch && x <= rows; ++x) {
      Make(x, &r);
      char num[128];
      std::snprintf(num, sizeof num, "%lld\t%lld\t%d\t%d\t", r.id, r.a, r.b, r.c);
      text += num;
      text += r.d;
      std::snprintf(num, sizeof num, "\t%.17g\t%.17g\t", r.e, r.f);
      text += num;
      text += r.g + "\t" + r.h + "\t" + (r.i_null ? std::string("\\N") : r.i) + "\t" + r.j + "\t" +
              r.k + "\t" + std::to_string(r.l) + "\t" + r.m + "\t" + r.n + "\t" + r.o + "\n";
    }
    if (mysql_query(m, "START TRANSACTION") != 0) return Fail(mysql_error(m));
    if (mysql_query(m, "LOAD DATA LOCAL INFILE 'batch' INTO TABLE w CHARACTER SET utf8mb4") != 0) {
      return Fail(mysql_error(m));
    }
    if (mysql_query(m, "COMMIT") != 0) return Fail(mysql_error(m));
  }
  return 0;
}

// Executes `st` for `n` rows bound column-wise in `bind`, in one transaction.
int ExecuteArray(MYSQL* m, MYSQL_STMT* st, MYSQL_BIND* bind, size_t n) {
  unsigned int size = static_cast<unsigned int>(n);
  if (mysql_stmt_attr_set(st, STMT_ATTR_ARRAY_SIZE, &size) != 0) {
    return Fail(mysql_stmt_error(st));
  }
  if (mysql_stmt_bind_param(st, bind) != 0) return Fail(mysql_stmt_error(st));
  if (mysql_query(m, "START TRANSACTION") != 0) return Fail(mysql_error(m));
  if (mysql_stmt_execute(st) != 0) return Fail(mysql_stmt_error(st));
  if (mysql_query(m, "COMMIT") != 0) return Fail(mysql_error(m));
  return 0;
}

int Bulk(MYSQL* m, long long rows, long long batch) {
  MYSQL_STMT* st = mysql_stmt_init(m);
  const std::string sql = "INSERT INTO w VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
  if (mysql_stmt_prepare(st, sql.data(), sql.size()) != 0) return Fail(mysql_stmt_error(st));
  const size_t cap = static_cast<size_t>(batch);
  std::vector<Row> rs(cap);
  std::vector<long long> id(cap), a(cap);
  std::vector<int> b(cap), c(cap), l(cap);
  std::vector<double> e(cap), f(cap);
  // Temporal values too are passed by pointer in column-wise binding (variable-length types).
  std::vector<MYSQL_TIME> jt(cap), kt(cap);
  std::vector<MYSQL_TIME*> jp(cap), kp(cap);
  // Strings: per column an array of pointers and one of lengths (column-wise binding).
  std::vector<std::vector<char*>> sp(kCols, std::vector<char*>(cap));
  std::vector<std::vector<unsigned long>> sl(kCols, std::vector<unsigned long>(cap));
  std::vector<char> ind(cap);
  for (long long s = 1; s <= rows; s += batch) {
    const size_t n = static_cast<size_t>(std::min(batch, rows - s + 1));
    for (size_t x = 0; x < n; ++x) {
      Row& r = rs[x];
      Make(s + static_cast<long long>(x), &r);
      id[x] = r.id;
      a[x] = r.a;
      b[x] = r.b;
      c[x] = r.c;
      l[x] = r.l;
      e[x] = r.e;
      f[x] = r.f;
      jt[x] = r.jt;
      kt[x] = r.kt;
      jp[x] = &jt[x];
      kp[x] = &kt[x];
      ind[x] = r.i_null ? STMT_INDICATOR_NULL : STMT_INDICATOR_NONE;
      std::string* strs[kCols] = {};
      strs[4] = &r.d;
      strs[7] = &r.g;
      strs[8] = &r.h;
      strs[9] = &r.i;
      strs[13] = &r.m;
      strs[14] = &r.n;
      strs[15] = &r.o;
      for (int k = 0; k < kCols; ++k) {
        if (strs[k] == nullptr) continue;
        sp[k][x] = strs[k]->data();
        sl[k][x] = strs[k]->size();
      }
    }
    MYSQL_BIND bind[kCols];
    std::memset(bind, 0, sizeof bind);
    auto num = [&](int k, enum_field_types t, void* p) {
      bind[k].buffer_type = t;
      bind[k].buffer = p;
    };
    num(0, MYSQL_TYPE_LONGLONG, id.data());
    num(1, MYSQL_TYPE_LONGLONG, a.data());
    num(2, MYSQL_TYPE_LONG, b.data());
    num(3, MYSQL_TYPE_LONG, c.data());
    num(5, MYSQL_TYPE_DOUBLE, e.data());
    num(6, MYSQL_TYPE_DOUBLE, f.data());
    num(10, MYSQL_TYPE_DATETIME, jp.data());
    num(11, MYSQL_TYPE_DATE, kp.data());
    num(12, MYSQL_TYPE_LONG, l.data());
    for (int k : {4, 7, 8, 9, 13, 14, 15}) {
      bind[k].buffer_type = MYSQL_TYPE_STRING;
      bind[k].buffer = sp[k].data();
      bind[k].length = sl[k].data();
    }
    bind[9].u.indicator = ind.data();
    if (int rc = ExecuteArray(m, st, bind, n); rc != 0) return rc;
  }
  mysql_stmt_close(st);
  return 0;
}

// The bulk INSERT with every value bound as text (what LOAD DATA would read), for telling the
// cost of the text conversions from the cost of LOAD DATA's parsing.
int BulkText(MYSQL* m, long long rows, long long batch) {
  MYSQL_STMT* st = mysql_stmt_init(m);
  const std::string sql = "INSERT INTO w VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
  if (mysql_stmt_prepare(st, sql.data(), sql.size()) != 0) return Fail(mysql_stmt_error(st));
  const size_t cap = static_cast<size_t>(batch);
  std::vector<std::vector<std::string>> text(kCols, std::vector<std::string>(cap));
  std::vector<std::vector<char*>> sp(kCols, std::vector<char*>(cap));
  std::vector<std::vector<unsigned long>> sl(kCols, std::vector<unsigned long>(cap));
  std::vector<char> ind(cap);
  Row r;
  for (long long s = 1; s <= rows; s += batch) {
    const size_t n = static_cast<size_t>(std::min(batch, rows - s + 1));
    for (size_t x = 0; x < n; ++x) {
      Make(s + static_cast<long long>(x), &r);
      char num[64];
      auto fmt = [&](int k, const char* f, auto v) {
        std::snprintf(num, sizeof num, f, v);
        text[k][x] = num;
      };
      fmt(0, "%lld", r.id);
      fmt(1, "%lld", r.a);
      fmt(2, "%d", r.b);
      fmt(3, "%d", r.c);
      text[4][x] = r.d;
      fmt(5, "%.17g", r.e);
      fmt(6, "%.17g", r.f);
      text[7][x] = r.g;
      text[8][x] = r.h;
      text[9][x] = r.i;
      text[10][x] = r.j;
      text[11][x] = r.k;
      fmt(12, "%d", r.l);
      text[13][x] = r.m;
      text[14][x] = r.n;
      text[15][x] = r.o;
      ind[x] = r.i_null ? STMT_INDICATOR_NULL : STMT_INDICATOR_NONE;
      for (int k = 0; k < kCols; ++k) {
        sp[k][x] = text[k][x].data();
        sl[k][x] = text[k][x].size();
      }
    }
    MYSQL_BIND bind[kCols];
    std::memset(bind, 0, sizeof bind);
    for (int k = 0; k < kCols; ++k) {
      bind[k].buffer_type = MYSQL_TYPE_STRING;
      bind[k].buffer = sp[k].data();
      bind[k].length = sl[k].data();
    }
    bind[9].u.indicator = ind.data();
    if (int rc = ExecuteArray(m, st, bind, n); rc != 0) return rc;
  }
  mysql_stmt_close(st);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if ((argc != 4 && argc != 5) || (mode != "load" && mode != "bulk" && mode != "bulktext")) {
    return Fail("usage: mysql_write_probe load|bulk|bulktext URL ROWS [BATCH]");
  }
  auto cfg = dbs::ParseConnectionUrl(argv[2]);
  if (!cfg.ok()) return Fail(cfg.status().ToString());
  dbs::mysql::ConnectOptions o;
  o.role = dbs::mysql::SessionRole::kWrite;
  o.local_infile = true;
  auto conn = dbs::mysql::MysqlConnection::Open(*cfg, o);
  if (!conn.ok()) return Fail(conn.status().ToString());
  MYSQL* m = (*conn)->handle();
  const long long rows = std::stoll(argv[3]);
  const long long batch = argc == 5 ? std::stoll(argv[4]) : 10000;
  const char* ddl =
      "CREATE OR REPLACE TABLE w (id BIGINT PRIMARY KEY, a INT NOT NULL, b INT, c SMALLINT, "
      "d DECIMAL(12,2), e DOUBLE, f DOUBLE, g VARCHAR(32), h VARCHAR(80), i VARCHAR(64), "
      "j DATETIME(6), k DATE, l TINYINT(1), m CHAR(36), n JSON, o VARCHAR(16))";
  if (mysql_query(m, ddl) != 0) return Fail(mysql_error(m));
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = CpuSeconds();
  const int rc = mode == "load"   ? Load(m, rows, batch)
                 : mode == "bulk" ? Bulk(m, rows, batch)
                                  : BulkText(m, rows, batch);
  if (rc != 0) return rc;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s rows=%lld batch=%lld wall=%.2f client_cpu=%.2f\n", mode.c_str(), rows, batch,
              wall, CpuSeconds() - c0);
  return 0;
}
