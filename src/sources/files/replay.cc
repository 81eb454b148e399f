#include "sources/files/replay.h"

#include <algorithm>
#include <filesystem>

#include "sources/files/duck.h"

namespace dbs::files {
namespace {

namespace fs = std::filesystem;

// The change columns (sinks/files/changes.h) as a file holds them.
constexpr char kChangeColumns[] =
    "'_op': 'VARCHAR', '_commit_ts': 'TIMESTAMPTZ', '_position': 'VARCHAR', '_xid': 'VARCHAR', "
    "'_unchanged': 'VARCHAR[]'";

}  // namespace

bool IsChangeFileName(const std::string& name) {
  return name.rfind("changes-", 0) == 0 && FormatOfFile(name).has_value();
}

std::vector<std::string> ChangeFilesIn(const std::string& table_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(table_dir + "/_changes", ec)) {
    const std::string n = e.path().filename().string();
    if (IsChangeFileName(n) && e.is_regular_file()) {
      out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string ManifestReader(const Manifest& m, const std::string& file, bool change_file) {
  const std::string f = SqlString(file);
  std::string cols = change_file ? std::string(kChangeColumns) : "";
  for (size_t i = 0; i < m.stored.size(); ++i) {
    cols += (cols.empty() ? "" : ", ") + SqlString(m.table.columns[i].name) + ": " +
            SqlString(m.stored[i].type);
  }
  switch (m.format) {
    case FileFormat::kParquet:
      return "read_parquet(" + f + ")";
    case FileFormat::kCsv:
      return "read_csv(" + f +
             ", header = true, auto_detect = false, delim = ',', quote = '\"', "
             "escape = '\"', allow_quoted_nulls = false, columns = {" +
             cols + "})";
    case FileFormat::kJsonl:
      return "read_json(" + f + ", format = 'newline_delimited', columns = {" + cols + "})";
  }
  return "";
}

Result<std::string> ReplaySql(const Manifest& m, const std::vector<std::string>& parts,
                              const std::vector<std::string>& changes) {
  std::string cols;
  for (const Column& c : m.table.columns) cols += (cols.empty() ? "" : ", ") + SqlIdent(c.name);
  // Every event in order: the snapshot (file 0) and each change file (1..), row by row.
  std::string ev;
  auto add = [&](const std::string& select) { ev += (ev.empty() ? "" : " UNION ALL ") + select; };
  for (const std::string& p : parts) {
    add("SELECT " + cols +
        ", 'insert' AS _op, CAST(NULL AS VARCHAR[]) AS _unchanged, CAST(0 AS BIGINT) AS _k FROM " +
        ManifestReader(m, p, false));
  }
  for (size_t i = 0; i < changes.size(); ++i) {
    add("SELECT " + cols + ", _op, _unchanged, (CAST(" + std::to_string(i + 1) +
        " AS BIGINT) << 32) + row_number() OVER () AS _k FROM " +
        ManifestReader(m, changes[i], true));
  }
  if (ev.empty()) return "SELECT " + cols + " FROM (SELECT 1) WHERE false";
  const std::string events =
      "WITH ev AS (" + ev +
      "), live AS (SELECT * FROM ev WHERE _op <> 'truncate' AND _k > (SELECT "
      "coalesce(max(_k), -1) FROM ev WHERE _op = 'truncate')) ";

  std::vector<std::string> key;
  for (const std::string& k : m.table.primary_key) key.push_back(SqlIdent(k));
  if (key.empty()) {
    // Whole rows, counted: +1 for the snapshot, inserts and updates, -1 for deletes and old
    // images; a row the source sent only in part cannot be matched.
    return events + "SELECT " + cols + " FROM (SELECT " + cols +
           ", unnest(range(CAST(CASE WHEN _partial THEN error('a change of a table without a "
           "primary "
           "key lacks cells; it cannot be replayed') WHEN _n > 0 THEN _n ELSE 0 END AS BIGINT))) "
           "AS _i "
           "FROM (SELECT " +
           cols +
           ", sum(CASE WHEN _op IN ('insert', 'update') THEN 1 ELSE -1 END) AS _n, "
           "bool_or(_unchanged IS NOT NULL AND len(_unchanged) > 0) AS _partial FROM live "
           "GROUP BY ALL) g) x";
  }
  std::string by;
  for (const std::string& k : key) by += (by.empty() ? "" : ", ") + k;
  std::string filled, out;
  for (const Column& c : m.table.columns) {
    const std::string id = SqlIdent(c.name);
    const bool is_key = std::find(m.table.primary_key.begin(), m.table.primary_key.end(), c.name) !=
                        m.table.primary_key.end();
    out += (out.empty() ? "" : ", ");
    if (is_key) {
      filled += ", " + id;
      out += id;
      continue;
    }
    // The last value the source sent for this key, NULL included (hence the struct).
    filled += ", last_value(CASE WHEN _unchanged IS NULL OR NOT list_contains(_unchanged, " +
              SqlString(c.name) + ") THEN struct_pack(v := " + id +
              ") END IGNORE NULLS) OVER w AS " + id;
    out += id + ".v AS " + id;
  }
  return events + "SELECT " + out + " FROM (SELECT _op, _k" + filled +
         " FROM live WINDOW w AS (PARTITION BY " + by +
         " ORDER BY _k ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) f QUALIFY "
         "row_number() OVER (PARTITION BY " +
         by + " ORDER BY _k DESC) = 1 AND _op IN ('insert', 'update')";
}

}  // namespace dbs::files
