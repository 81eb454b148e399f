// cdc_probe: drives a change workload on a source and measures replication lag to a target.
//
//   cdc_probe --source URL --target URL --rate CHANGES_PER_S --seconds N [--backlog CHANGES]
//
// Workload: transactions of 5 row changes on table `bench_t` (1 insert, 3 updates, 1 delete:
// the 20/60/20 mix), paced to --rate changes/s (0: as fast as the connections go). Connection i
// of n works on the rows with id % n == i and remembers which exist, so every UPDATE and DELETE
// hits one row: a transaction is exactly 5 row changes in the source's log.
// Probe: every 50 ms a marker row (id, source clock) goes into `bench_probe` on the source;
// a watcher polls the target every 2 ms and records when each marker arrived. Source and
// target run on this machine, so one clock serves both ends. Prints one JSON line:
//   {"rate_target":..,"rate_achieved":..,"markers":..,"lag_p50_ms":..,"lag_p99_ms":..,"lag_max_ms":..}
// --backlog N: only run N changes as fast as possible (no probe) and print the time taken.
//
// Tables: bench_t (id bigint primary key, a int, b text, c numeric(12,2), d timestamp) and
// bench_probe (id bigint primary key, t_us bigint), created by the caller.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "config/connection.h"
#include "core/config.h"
#include "mysql/mysql_client.h"
#include "postgres/pg_client.h"

namespace {

using Clock = std::chrono::steady_clock;

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One SQL session on either engine.
class Session {
 public:
  static dbs::Result<std::unique_ptr<Session>> Open(const std::string& url) {
    auto cfg = dbs::ParseConnectionUrl(url);
    if (!cfg.ok()) return cfg.status();
    auto s = std::make_unique<Session>();
    s->engine_ = cfg->engine;
    if (cfg->engine == dbs::Engine::kPostgres) {
      auto c = dbs::pg::Connect(*cfg);
      if (!c.ok()) return c.status();
      s->pg_ = std::move(*c);
    } else {
      dbs::mysql::ConnectOptions o;
      o.role = dbs::mysql::SessionRole::kWrite;
      auto c = dbs::mysql::MysqlConnection::Open(*cfg, o);
      if (!c.ok()) return c.status();
      s->my_ = std::move(*c);
    }
    return s;
  }
  dbs::Status Exec(const std::string& sql) {
    if (pg_) return dbs::pg::Command(pg_.get(), sql, "bench");
    // One statement per call on MySQL (no multi-statements); the workload's SQL has no ';'
    // inside literals.
    size_t at = 0;
    while (at < sql.size()) {
      size_t end = sql.find(';', at);
      if (end == std::string::npos) end = sql.size();
      if (end > at) {
        dbs::Status st = my_->Exec(std::string_view(sql).substr(at, end - at), "bench");
        if (!st.ok()) return st;
      }
      at = end + 1;
    }
    return dbs::Status::Ok();
  }
  // First column of the first row as an integer, or -1.
  int64_t QueryInt(const std::string& sql) {
    if (pg_) {
      auto r = dbs::pg::Exec(pg_.get(), sql, "bench");
      if (!r.ok() || PQntuples(r->get()) == 0 || dbs::pg::IsNull(r->get(), 0, 0)) return -1;
      return dbs::pg::Int(r->get(), 0, 0);
    }
    auto r = my_->Query(sql, "bench");
    if (!r.ok() || r->empty() || !(*r)[0][0]) return -1;
    return std::stoll(*(*r)[0][0]);
  }
  // First column of every row as integers (NULLs skipped); false on error.
  bool QueryInts(const std::string& sql, std::vector<int64_t>* out) {
    if (pg_) {
      auto r = dbs::pg::Exec(pg_.get(), sql, "bench");
      if (!r.ok()) return false;
      for (int i = 0; i < PQntuples(r->get()); ++i) {
        if (!dbs::pg::IsNull(r->get(), i, 0)) out->push_back(dbs::pg::Int(r->get(), i, 0));
      }
      return true;
    }
    auto r = my_->Query(sql, "bench");
    if (!r.ok()) return false;
    for (const auto& row : *r) {
      if (row[0]) out->push_back(std::stoll(*row[0]));
    }
    return true;
  }
  bool pg() const { return engine_ == dbs::Engine::kPostgres; }

 private:
  dbs::Engine engine_ = dbs::Engine::kPostgres;
  dbs::pg::ConnPtr pg_;
  std::unique_ptr<dbs::mysql::MysqlConnection> my_;
};

// One transaction of the mix over this connection's own rows (`live`): every statement hits
// exactly one existing row, so each transaction is 5 row changes in the source's log.
std::string Txn(Session* s, int64_t* next_id, int64_t step, std::vector<int64_t>* live,
                std::mt19937_64* rng) {
  const int64_t id = *next_id;
  *next_id += step;
  const std::string now = s->pg() ? "localtimestamp" : "NOW(6)";
  std::string sql = s->pg() ? "BEGIN;" : "START TRANSACTION;";
  sql += "INSERT INTO bench_t VALUES (" + std::to_string(id) + ", " +
         std::to_string((*rng)() % 1000) + ", 'row " + std::to_string(id) + "', " +
         std::to_string((*rng)() % 100000) + ".25, " + now + ");";
  live->push_back(id);
  for (int u = 0; u < 3; ++u) {
    const int64_t key = (*live)[(*rng)() % live->size()];
    sql += "UPDATE bench_t SET a = a + 1, c = c + 1, b = 'u" + std::to_string((*rng)() % 100000) +
           "' WHERE id = " + std::to_string(key) + ";";
  }
  const size_t victim = (*rng)() % live->size();
  sql += "DELETE FROM bench_t WHERE id = " + std::to_string((*live)[victim]) + ";";
  (*live)[victim] = live->back();
  live->pop_back();
  sql += "COMMIT;";
  return sql;
}

int Fail(const dbs::Status& s) {
  std::fprintf(stderr, "cdc_probe: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<dbs::FlagSpec> specs = {
      {"source", "", "", "source URL"},
      {"target", "", "", "target URL (the probe watches it)"},
      {"target-table", "", "bench_probe", "probe table name on the target (schema-qualified)"},
      {"rate", "", "0", "row changes per second (0: as fast as possible)"},
      {"seconds", "", "20", "how long to run"},
      {"backlog", "", "0", "run this many changes as fast as possible, no probe"},
      {"connections", "", "2", "workload connections"},
  };
  auto cfg = dbs::Config::Load(specs, argc, argv);
  if (!cfg.ok()) return Fail(cfg.status());
  const std::string source = cfg->GetString("source");
  auto rate = cfg->GetInt("rate", 0, 10'000'000);
  auto seconds = cfg->GetInt("seconds", 1, 3600);
  auto backlog = cfg->GetInt("backlog", 0, 1'000'000'000);
  auto conns = cfg->GetInt("connections", 1, 64);
  if (!rate.ok() || !seconds.ok() || !backlog.ok() || !conns.ok()) {
    return Fail(dbs::Status::InvalidArgument("bad numeric flag"));
  }
  auto probe_src = Session::Open(source);
  if (!probe_src.ok()) return Fail(probe_src.status());
  const int64_t base = (*probe_src)->QueryInt("SELECT COALESCE(MAX(id), 0) FROM bench_t") + 1;

  // Workload threads: connection i inserts ids >= base with id % n == i (see Txn).
  std::atomic<bool> stop{false};
  std::atomic<int64_t> changes{0};
  std::atomic<int> failed{0};
  const int n = static_cast<int>(*conns);
  const int64_t per_conn_backlog = *backlog / 5 / n;
  std::vector<std::thread> workers;
  auto started = Clock::now();
  for (int i = 0; i < n; ++i) {
    workers.emplace_back([&, i] {
      auto s = Session::Open(source);
      if (!s.ok()) {
        failed.fetch_add(1);
        return;
      }
      std::mt19937_64 rng(static_cast<uint64_t>(i) + 1);
      // Connection i owns the rows with id % n == i: the ones there now and the ones it
      // inserts, so no two connections touch one row and no statement misses.
      std::vector<int64_t> live;
      if (!(*s)->QueryInts(
              "SELECT id FROM bench_t WHERE id % " + std::to_string(n) + " = " + std::to_string(i),
              &live) ||
          live.empty()) {
        failed.fetch_add(1);
        return;
      }
      int64_t next = base + ((i - base % n) % n + n) % n;
      const double txn_per_s = *rate > 0 ? static_cast<double>(*rate) / 5.0 / n : 0;
      int64_t done = 0;
      auto t0 = Clock::now();
      while (!stop.load()) {
        if (*backlog > 0 && done >= per_conn_backlog) break;
        if (!(*s)->Exec(Txn(s->get(), &next, n, &live, &rng)).ok()) {
          failed.fetch_add(1);
          return;
        }
        ++done;
        changes.fetch_add(5);
        if (txn_per_s > 0) {
          auto due = t0 + std::chrono::duration<double>(static_cast<double>(done) / txn_per_s);
          std::this_thread::sleep_until(std::chrono::time_point_cast<Clock::duration>(due));
        }
      }
    });
  }
  if (*backlog > 0) {
    for (auto& w : workers) w.join();
    double secs = std::chrono::duration<double>(Clock::now() - started).count();
    std::printf("{\"backlog_changes\":%lld,\"seconds\":%.2f,\"failed\":%d}\n",
                static_cast<long long>(changes.load()), secs, failed.load());
    return failed.load() ? 1 : 0;
  }

  // Probe: markers on the source, a watcher on the target.
  auto target = Session::Open(cfg->GetString("target"));
  if (!target.ok()) return Fail(target.status());
  const std::string table = cfg->GetString("target-table");
  std::mutex mu;
  std::map<int64_t, int64_t> sent;     // marker id -> source insert time (us)
  std::map<int64_t, int64_t> arrived;  // marker id -> seen on target (us)
  int64_t first_marker = (*probe_src)->QueryInt("SELECT COALESCE(MAX(id), 0) FROM bench_probe") + 1;
  std::thread watcher([&] {
    int64_t seen = first_marker - 1;
    while (!stop.load() || seen < first_marker - 1 + static_cast<int64_t>(sent.size())) {
      int64_t m = (*target)->QueryInt("SELECT MAX(id) FROM " + table);
      int64_t now = NowUs();
      if (m > seen) {
        std::lock_guard<std::mutex> l(mu);
        for (int64_t id = seen + 1; id <= m; ++id) arrived[id] = now;
        seen = m;
      }
      if (stop.load() && Clock::now() > started + std::chrono::seconds(*seconds + 30)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  int64_t id = first_marker;
  auto next_marker = Clock::now();
  while (Clock::now() - started < std::chrono::seconds(*seconds)) {
    std::this_thread::sleep_until(next_marker);
    next_marker += std::chrono::milliseconds(50);
    int64_t t = NowUs();
    if (!(*probe_src)
             ->Exec("INSERT INTO bench_probe VALUES (" + std::to_string(id) + ", " +
                    std::to_string(t) + ")")
             .ok()) {
      break;
    }
    std::lock_guard<std::mutex> l(mu);
    sent[id++] = t;
  }
  double secs = std::chrono::duration<double>(Clock::now() - started).count();
  int64_t total = changes.load();
  stop.store(true);
  for (auto& w : workers) w.join();
  watcher.join();
  std::vector<double> lags;
  for (const auto& [mid, t] : sent) {
    auto it = arrived.find(mid);
    if (it != arrived.end()) lags.push_back(static_cast<double>(it->second - t) / 1000.0);
  }
  std::sort(lags.begin(), lags.end());
  auto pct = [&](double p) {
    if (lags.empty()) return -1.0;
    return lags[std::min(lags.size() - 1,
                         static_cast<size_t>(p * static_cast<double>(lags.size())))];
  };
  std::printf(
      "{\"rate_target\":%lld,\"rate_achieved\":%.0f,\"markers\":%zu,\"arrived\":%zu,"
      "\"lag_p50_ms\":%.1f,\"lag_p99_ms\":%.1f,\"lag_max_ms\":%.1f,\"failed\":%d}\n",
      static_cast<long long>(*rate), static_cast<double>(total) / secs, sent.size(), lags.size(),
      pct(0.50), pct(0.99), lags.empty() ? -1.0 : lags.back(), failed.load());
  return failed.load() ? 1 : 0;
}
