#include "sources/mysql/objects.h"

#include <cctype>
#include <cstdlib>
#include <set>

namespace dbs::mysql {

namespace {

const std::string& Str(const TextRow& row, size_t i) {
  static const std::string kEmpty;
  return i < row.size() && row[i] ? *row[i] : kEmpty;
}

bool IdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// One row of a SHOW CREATE statement as {field name: value}.
Result<std::vector<std::pair<std::string, std::optional<std::string>>>> ShowCreate(
    MysqlConnection* conn, const std::string& sql, const std::string& ctx) {
  if (mysql_real_query(conn->handle(), sql.data(), sql.size()) != 0) return conn->LastError(ctx);
  ResultHandle res(mysql_store_result(conn->handle()));
  if (!res) return conn->LastError(ctx);
  std::vector<std::pair<std::string, std::optional<std::string>>> out;
  MYSQL_ROW row = mysql_fetch_row(res.get());
  if (row == nullptr) return out;
  unsigned long* lengths = mysql_fetch_lengths(res.get());
  const unsigned n = mysql_num_fields(res.get());
  MYSQL_FIELD* f = mysql_fetch_fields(res.get());
  for (unsigned i = 0; i < n; ++i) {
    std::optional<std::string> v;
    if (row[i] != nullptr) v = std::string(row[i], lengths[i]);
    out.emplace_back(f[i].name, std::move(v));
  }
  return out;
}

std::string Get(const std::vector<std::pair<std::string, std::optional<std::string>>>& row,
                const std::string& name, bool* present = nullptr) {
  for (const auto& [k, v] : row) {
    if (k == name) {
      if (present) *present = v.has_value();
      return v.value_or("");
    }
  }
  if (present) *present = false;
  return "";
}

std::string InList(MysqlConnection* conn, const std::set<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + conn->Literal(s);
  return out.empty() ? "NULL" : out;
}

}  // namespace

std::string StripQualifier(std::string_view sql, std::string_view schema) {
  std::string out;
  out.reserve(sql.size());
  size_t i = 0;
  const size_t n = sql.size();
  while (i < n) {
    const char c = sql[i];
    if (c == '\'' || c == '"') {  // string literal: copy as is
      size_t j = i + 1;
      while (j < n) {
        if (sql[j] == '\\') {
          j += 2;
          continue;
        }
        if (sql[j] == c) {
          if (j + 1 < n && sql[j + 1] == c) {
            j += 2;
            continue;
          }
          break;
        }
        ++j;
      }
      j = std::min(j + 1, n);
      out.append(sql.substr(i, j - i));
      i = j;
    } else if (c == '-' && i + 1 < n && sql[i + 1] == '-') {  // comment to the end of the line
      size_t j = sql.find('\n', i);
      j = j == std::string_view::npos ? n : j;
      out.append(sql.substr(i, j - i));
      i = j;
    } else if (c == '#') {
      size_t j = sql.find('\n', i);
      j = j == std::string_view::npos ? n : j;
      out.append(sql.substr(i, j - i));
      i = j;
    } else if (c == '/' && i + 1 < n && sql[i + 1] == '*' && (i + 2 >= n || sql[i + 2] != '!')) {
      size_t j = sql.find("*/", i + 2);
      j = j == std::string_view::npos ? n : j + 2;
      out.append(sql.substr(i, j - i));
      i = j;
    } else if (c == '`') {  // quoted identifier
      size_t j = i + 1;
      std::string name;
      while (j < n) {
        if (sql[j] == '`') {
          if (j + 1 < n && sql[j + 1] == '`') {
            name += '`';
            j += 2;
            continue;
          }
          break;
        }
        name += sql[j++];
      }
      j = std::min(j + 1, n);
      if (name == schema && j < n && sql[j] == '.') {
        i = j + 1;  // drop `schema`.
      } else {
        out.append(sql.substr(i, j - i));
        i = j;
      }
    } else if (IdentChar(c) && (i == 0 || (!IdentChar(sql[i - 1]) && sql[i - 1] != '.'))) {
      size_t j = i;
      while (j < n && IdentChar(sql[j])) ++j;
      if (sql.substr(i, j - i) == schema && j < n && sql[j] == '.' &&
          !std::isdigit(static_cast<unsigned char>(c))) {
        i = j + 1;
      } else {
        out.append(sql.substr(i, j - i));
        i = j;
      }
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

std::string StripDefiner(std::string_view sql) {
  const size_t at = sql.find("DEFINER=");
  if (at == std::string_view::npos) return std::string(sql);
  // Only in the statement's head, before the body.
  for (const char* kw : {" VIEW ", " TRIGGER ", " FUNCTION ", " PROCEDURE ", " EVENT "}) {
    const size_t k = sql.find(kw);
    if (k != std::string_view::npos && k < at) return std::string(sql);
  }
  size_t i = at + 8;
  auto skip_name = [&]() {
    if (i < sql.size() && (sql[i] == '`' || sql[i] == '\'' || sql[i] == '"')) {
      const char q = sql[i++];
      while (i < sql.size()) {
        if (sql[i] == q) {
          if (i + 1 < sql.size() && sql[i + 1] == q) {
            i += 2;
            continue;
          }
          ++i;
          return;
        }
        ++i;
      }
    } else {
      while (i < sql.size() && sql[i] != '@' && sql[i] != ' ') ++i;
    }
  };
  skip_name();
  if (i < sql.size() && sql[i] == '@') {
    ++i;
    skip_name();
  }
  size_t from = at;
  if (from > 0 && sql[from - 1] == ' ') --from;
  return std::string(sql.substr(0, from)) + std::string(sql.substr(i));
}

Status DescribeCreateTable(MysqlConnection* conn, TableSchema* t) {
  const std::string ctx = "describing " + t->QualifiedName();
  DBS_ASSIGN_OR_RETURN(
      auto row, ShowCreate(conn, "SHOW CREATE TABLE " + QuoteQualified(t->schema, t->name), ctx));
  const std::string text = Get(row, "Create Table");
  size_t options = text.rfind("\n) ENGINE=");
  if (options == std::string::npos) options = text.rfind(") ENGINE=");
  if (options == std::string::npos) return Status::Ok();
  const size_t partition = text.find("PARTITION BY ", options);
  const std::string head = text.substr(
      options, partition == std::string::npos ? std::string::npos : partition - options);
  const size_t ai = head.find(" AUTO_INCREMENT=");
  if (ai != std::string::npos) {
    int64_t next = 0;
    size_t i = ai + 16;
    bool any = false;
    while (i < head.size() && std::isdigit(static_cast<unsigned char>(head[i]))) {
      if (__builtin_mul_overflow(next, 10, &next) ||
          __builtin_add_overflow(next, head[i] - '0', &next)) {
        any = false;
        break;
      }
      any = true;
      ++i;
    }
    for (Column& c : t->columns) {
      if (c.auto_increment && any) c.next_value = next;
    }
  }
  if (partition != std::string::npos) {
    std::string clause = text.substr(partition);
    while (!clause.empty() && (clause.back() == ' ' || clause.back() == '\n')) clause.pop_back();
    // MySQL wraps it in a version comment: /*!50100 PARTITION BY ... */
    if (partition >= 9 && text.compare(partition - 9, 9, "/*!50100 ") == 0 && clause.size() >= 2 &&
        clause.compare(clause.size() - 2, 2, "*/") == 0) {
      clause.resize(clause.size() - 2);
      while (!clause.empty() && clause.back() == ' ') clause.pop_back();
    }
    t->partition_by = clause;
  }
  return Status::Ok();
}

Result<std::vector<SchemaObject>> DescribeObjects(MysqlConnection* conn,
                                                  const std::vector<TableSchema>& tables) {
  std::vector<SchemaObject> out;
  std::set<std::string> schemas;
  std::set<std::pair<std::string, std::string>> selected;
  for (const TableSchema& t : tables) {
    schemas.insert(t.schema);
    selected.insert({t.schema, t.name});
  }
  if (schemas.empty()) return out;
  const std::string in = InList(conn, schemas);

  auto add = [&](ObjectKind kind, const std::string& schema, const std::string& name,
                 const std::string& table, const std::string& show, const char* field,
                 bool with_mode) -> Status {
    SchemaObject o;
    o.kind = kind;
    o.schema = schema;
    o.name = name;
    o.table = table;
    const std::string ctx =
        "describing " + std::string(ObjectKindName(kind)) + " " + o.QualifiedName();
    auto row = ShowCreate(conn, show, ctx);
    if (!row.ok()) {
      // A definition the user may not read: reported, never guessed.
      o.not_describable = row.status().message();
      out.push_back(std::move(o));
      return Status::Ok();
    }
    bool present = false;
    const std::string def = Get(*row, field, &present);
    if (!present) {
      o.not_describable =
          "the user may not read its definition (SHOW CREATE needs the "
          "owner's rights or SELECT on mysql.proc / SHOW_ROUTINE)";
    } else {
      o.definition = StripQualifier(StripDefiner(def), schema);
    }
    if (with_mode) o.sql_mode = Get(*row, "sql_mode");
    if (kind == ObjectKind::kEvent) {
      // "... ON COMPLETION [NOT] PRESERVE DISABLE [ON SLAVE] DO ..." in the head.
      const size_t body = o.definition.find(" DO ");
      const std::string head = o.definition.substr(0, body);
      o.disabled = head.find(" DISABLE") != std::string::npos;
    }
    out.push_back(std::move(o));
    return Status::Ok();
  };

  // Views.
  DBS_ASSIGN_OR_RETURN(auto views, conn->Query("SELECT TABLE_SCHEMA, TABLE_NAME FROM "
                                               "information_schema.VIEWS WHERE TABLE_SCHEMA IN (" +
                                                   in + ") ORDER BY 1, 2",
                                               "listing views"));
  for (const TextRow& r : views) {
    DBS_RETURN_IF_ERROR(add(ObjectKind::kView, Str(r, 0), Str(r, 1), "",
                            "SHOW CREATE VIEW " + QuoteQualified(Str(r, 0), Str(r, 1)),
                            "Create View", false));
  }
  // Routines.
  DBS_ASSIGN_OR_RETURN(auto routines,
                       conn->Query("SELECT ROUTINE_SCHEMA, ROUTINE_NAME, ROUTINE_TYPE FROM "
                                   "information_schema.ROUTINES WHERE ROUTINE_SCHEMA IN (" +
                                       in + ") ORDER BY 1, 3, 2",
                                   "listing routines"));
  for (const TextRow& r : routines) {
    const bool proc = Str(r, 2) == "PROCEDURE";
    if (!proc && Str(r, 2) != "FUNCTION") continue;  // PACKAGE and friends (MariaDB Oracle mode)
    DBS_RETURN_IF_ERROR(add(proc ? ObjectKind::kProcedure : ObjectKind::kFunction, Str(r, 0),
                            Str(r, 1), "",
                            std::string(proc ? "SHOW CREATE PROCEDURE " : "SHOW CREATE FUNCTION ") +
                                QuoteQualified(Str(r, 0), Str(r, 1)),
                            proc ? "Create Procedure" : "Create Function", true));
  }
  // Triggers of the selected tables.
  DBS_ASSIGN_OR_RETURN(auto triggers,
                       conn->Query("SELECT TRIGGER_SCHEMA, TRIGGER_NAME, EVENT_OBJECT_SCHEMA, "
                                   "EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS WHERE "
                                   "EVENT_OBJECT_SCHEMA IN (" +
                                       in + ") ORDER BY 1, 3, 4, ACTION_ORDER, 2",
                                   "listing triggers"));
  for (const TextRow& r : triggers) {
    if (!selected.count({Str(r, 2), Str(r, 3)})) continue;
    DBS_RETURN_IF_ERROR(add(ObjectKind::kTrigger, Str(r, 0), Str(r, 1), Str(r, 2) + "." + Str(r, 3),
                            "SHOW CREATE TRIGGER " + QuoteQualified(Str(r, 0), Str(r, 1)),
                            "SQL Original Statement", true));
  }
  // Events.
  auto events = conn->Query(
      "SELECT EVENT_SCHEMA, EVENT_NAME FROM information_schema.EVENTS "
      "WHERE EVENT_SCHEMA IN (" +
          in + ") ORDER BY 1, 2",
      "listing events");
  if (events.ok()) {
    for (const TextRow& r : *events) {
      DBS_RETURN_IF_ERROR(add(ObjectKind::kEvent, Str(r, 0), Str(r, 1), "",
                              "SHOW CREATE EVENT " + QuoteQualified(Str(r, 0), Str(r, 1)),
                              "Create Event", true));
    }
  }
  // MariaDB sequences (tables of TABLE_TYPE 'SEQUENCE').
  if (conn->is_mariadb()) {
    DBS_ASSIGN_OR_RETURN(auto seqs,
                         conn->Query("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema."
                                     "TABLES WHERE TABLE_TYPE = 'SEQUENCE' AND TABLE_SCHEMA IN (" +
                                         in + ") ORDER BY 1, 2",
                                     "listing sequences"));
    for (const TextRow& r : seqs) {
      SchemaObject o;
      o.kind = ObjectKind::kSequence;
      o.schema = Str(r, 0);
      o.name = Str(r, 1);
      const std::string ctx = "reading sequence " + o.QualifiedName();
      auto v = conn->Query(
          "SELECT next_not_cached_value, minimum_value, maximum_value, "
          "start_value, increment, cache_size, cycle_option FROM " +
              QuoteQualified(o.schema, o.name),
          ctx);
      if (!v.ok() || v->empty()) {
        o.not_describable = v.ok() ? "the sequence has no state row" : v.status().message();
      } else {
        const TextRow& s = (*v)[0];
        SequenceInfo q;
        auto i64 = [&](size_t i) { return std::strtoll(Str(s, i).c_str(), nullptr, 10); };
        q.last_value = i64(0);
        q.is_called = false;  // next_not_cached_value is the next value handed out
        q.min = i64(1);
        q.max = i64(2);
        q.start = i64(3);
        q.increment = i64(4);
        q.cache = i64(5);
        q.cycle = Str(s, 6) == "1";
        o.sequence = q;
      }
      out.push_back(std::move(o));
    }
  }
  return out;
}

}  // namespace dbs::mysql
