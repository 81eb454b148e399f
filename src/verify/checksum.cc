#include "verify/checksum.h"

#include <xxhash.h>

#include <arpa/inet.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "core/array.h"
#include "core/temporal.h"
#include "reader/load_reader.h"
#include "sinks/mysql/mysql_load_encoder.h"
#include "typemap/type_text.h"

namespace dbs {
namespace {

bool IsNumeric(LogicalType t) {
  return IsSignedInt(t) || IsUnsignedInt(t) || t == LogicalType::kBool ||
         t == LogicalType::kDecimal;
}

bool IsTextual(LogicalType t) {
  return t == LogicalType::kText || t == LogicalType::kEnum || t == LogicalType::kSet ||
         t == LogicalType::kJson || t == LogicalType::kBytes;
}

// "+001.2300" -> "1.23", "-0.0" -> "0", "5." -> "5"; other text is returned unchanged.
std::string CanonicalDecimal(std::string_view s) {
  std::string_view t = s;
  bool neg = false;
  if (!t.empty() && (t[0] == '-' || t[0] == '+')) {
    neg = t[0] == '-';
    t.remove_prefix(1);
  }
  size_t dot = t.find('.');
  std::string_view ip = t.substr(0, dot);
  std::string_view fp = dot == std::string_view::npos ? std::string_view() : t.substr(dot + 1);
  for (char c : ip) {
    if (c < '0' || c > '9') return std::string(s);
  }
  for (char c : fp) {
    if (c < '0' || c > '9') return std::string(s);
  }
  while (ip.size() > 1 && ip[0] == '0') ip.remove_prefix(1);
  while (!fp.empty() && fp.back() == '0') fp.remove_suffix(1);
  if (ip.empty()) ip = "0";
  std::string out;
  if (neg && !(ip == "0" && fp.empty())) out += '-';
  out += ip;
  if (!fp.empty()) {
    out += '.';
    out += fp;
  }
  return out;
}

// Numbers as PostgreSQL's jsonb keeps them: 1.5e10 and 15000000000 are one value, so
// integral floats within the exact double range become integers.
void NormalizeJsonNumbers(nlohmann::json* j) {
  if (j->is_number_float()) {
    double d = j->get<double>();
    if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9007199254740992.0) {
      *j = static_cast<int64_t>(d);
    }
  } else if (j->is_structured()) {
    for (auto& e : *j) NormalizeJsonNumbers(&e);
  }
}

std::string CanonicalJson(std::string_view s) {
  nlohmann::json j = nlohmann::json::parse(s, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::string(s);
  NormalizeJsonNumbers(&j);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// An IP address (with an optional /prefix) in one canonical spelling: inet_ntop's form of the
// address, then the prefix exactly when the text has one. Text that is no address is kept.
std::string CanonicalInet(std::string_view s) {
  std::string addr(s.substr(0, s.find('/')));
  std::string_view prefix = s.find('/') == std::string_view::npos ? "" : s.substr(s.find('/'));
  unsigned char buf[16];
  char out[INET6_ADDRSTRLEN];
  const int family = addr.find(':') == std::string::npos ? AF_INET : AF_INET6;
  if (inet_pton(family, addr.c_str(), buf) != 1 ||
      inet_ntop(family, buf, out, sizeof out) == nullptr) {
    return std::string(s);
  }
  return std::string(out) + std::string(prefix);
}

bool IsPgInet(const Column& c) {
  const std::string b = PgBaseName(c.source_type);
  return b == "inet" || b == "cidr";
}

bool IsMysqlInet(const Column& c) {
  const std::string b = MysqlBaseName(c.source_type);
  return b == "inet4" || b == "inet6";
}

// Whether a column keeps a JSON document's text exactly: PostgreSQL json or text, MariaDB's
// json (longtext), any MySQL text column; not jsonb, not MySQL 8's binary json.
bool KeepsJsonText(const Column& c, Engine e) {
  if (e == Engine::kPostgres) return PgBaseName(c.source_type) != "jsonb";
  return MysqlBaseName(c.source_type) != "json";
}

std::string Float(double d, int digits) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, d);
  return buf;
}

std::string NumberText(const ColumnVector& c, size_t row) {
  LogicalType t = c.type();
  if (IsSignedInt(t)) return std::to_string(c.GetInt(row));
  if (IsUnsignedInt(t)) return std::to_string(c.GetUInt(row));
  if (t == LogicalType::kBool) return c.GetBool(row) ? "1" : "0";
  if (t == LogicalType::kFloat64) return Float(c.GetFloat64(row), 17);
  if (t == LogicalType::kFloat32) return Float(c.GetFloat32(row), 9);
  return CanonicalDecimal(c.GetBytes(row));
}

}  // namespace

CellRule RuleFor(const Column& source, Engine se, const Column& target, Engine te) {
  if (source.type == LogicalType::kArray && target.type == LogicalType::kArray) {
    return CellRule::kArrayExact;
  }
  // A MySQL target holds an array as JSON (compared by kByType); files, and PostgreSQL text
  // columns loaded from them, hold it as ArrayToString writes it. (A text column PostgreSQL
  // filled itself by array_out may spell bool, float, bytea or timestamptz elements otherwise,
  // and would be reported as differing: no dbstreams mapping does that.)
  if (source.type == LogicalType::kArray && IsTextual(target.type) && te != Engine::kMysql) {
    return CellRule::kArrayText;
  }
  auto is_inet = [](const Column& c, Engine e) {
    return e == Engine::kPostgres ? IsPgInet(c) : IsMysqlInet(c);
  };
  if (is_inet(source, se) || is_inet(target, te)) return CellRule::kInet;
  if (source.type == LogicalType::kJson && KeepsJsonText(target, te)) return CellRule::kJsonText;
  return CellRule::kByType;
}

std::optional<std::string> CanonicalCell(const ColumnVector& c, size_t row, LogicalType s,
                                         ZeroDatePolicy zero_date, CellRule rule) {
  if (c.IsNull(row)) return std::nullopt;
  const LogicalType t = c.type();
  switch (rule) {
    case CellRule::kJsonText:
      if (IsTextual(t)) return std::string(c.GetBytes(row));
      break;
    case CellRule::kInet:
      if (IsTextual(t)) return CanonicalInet(c.GetBytes(row));
      break;
    case CellRule::kArrayExact:
    case CellRule::kArrayText:
      if (t == LogicalType::kArray) {
        auto a = DecodeArray(c.GetBytes(row));
        if (a.ok()) return ArrayToString(*a);
      } else if (rule == CellRule::kArrayText && IsTextual(t)) {
        return std::string(c.GetBytes(row));
      }
      break;
    case CellRule::kByType:
      break;
  }
  if (IsNumeric(s) && (IsNumeric(t) || t == LogicalType::kText)) {
    return t == LogicalType::kText ? CanonicalDecimal(c.GetBytes(row)) : NumberText(c, row);
  }
  switch (s) {
    case LogicalType::kFloat32:
      if (t == LogicalType::kFloat32) return Float(c.GetFloat32(row), 9);
      if (t == LogicalType::kFloat64) return Float(static_cast<float>(c.GetFloat64(row)), 9);
      break;
    case LogicalType::kFloat64:
      if (t == LogicalType::kFloat64) return Float(c.GetFloat64(row), 17);
      if (t == LogicalType::kFloat32) return Float(c.GetFloat32(row), 9);
      break;
    case LogicalType::kJson:
      if (IsTextual(t)) return CanonicalJson(c.GetBytes(row));
      break;
    case LogicalType::kUuid:
      if (t == LogicalType::kUuid) return UuidToString(c.GetUuid(row));
      if (IsTextual(t)) {
        Uuid u;
        if (ParseUuid(c.GetBytes(row), &u)) return UuidToString(u);
      }
      break;
    case LogicalType::kDate:
      if (t == LogicalType::kDate) {
        int32_t d = c.GetDate(row);
        if (DateKind(d) == TemporalKind::kZeroDate) {
          if (zero_date == ZeroDatePolicy::kNull) return std::nullopt;
          if (zero_date == ZeroDatePolicy::kNegInfinity) d = kDateNegInfinity;
        }
        return FormatDate(d);
      }
      break;
    case LogicalType::kTimestamp:
    case LogicalType::kTimestampTz:
      if (t == LogicalType::kTimestamp || t == LogicalType::kTimestampTz) {
        int64_t v = c.GetMicros(row);
        if (TimestampKind(v) == TemporalKind::kZeroDate) {
          if (zero_date == ZeroDatePolicy::kNull) return std::nullopt;
          if (zero_date == ZeroDatePolicy::kNegInfinity) v = kTimestampNegInfinity;
        }
        return std::to_string(v);
      }
      break;
    case LogicalType::kTime:
      // MySQL TIME kept as a PostgreSQL interval (typeMapping.mysqlTimeAsInterval).
      if (t == LogicalType::kInterval) {
        Interval iv = c.GetInterval(row);
        if (iv.months == 0) return FormatTime(iv.days * int64_t{86400000000} + iv.micros);
        return Value::IntervalValue(iv).ToString();
      }
      break;
    case LogicalType::kArray:
      // Arrays compare in their JSON form: a MySQL target has no arrays and stores this JSON
      // (lower bounds are not part of it; PostgreSQL targets keep them, checked by the tests).
      if (t == LogicalType::kArray) {
        auto j = mysql::ArrayToJson(c.GetBytes(row));
        if (j.ok()) return CanonicalJson(*j);
      } else if (IsTextual(t)) {
        return CanonicalJson(c.GetBytes(row));
      }
      break;
    case LogicalType::kSet:
      if (t == LogicalType::kArray) {  // a set kept as text[]
        auto a = DecodeArray(c.GetBytes(row));
        if (!a.ok()) break;
        std::string out;
        for (const Value& e : a->elements) {
          if (!out.empty()) out += ',';
          if (!e.is_null()) out += e.AsBytes();
        }
        return out;
      }
      break;
    default:
      break;
  }
  if (t == s || (IsTextual(s) && IsTextual(t))) {
    if (IsVarLen(t) && t != LogicalType::kBit && t != LogicalType::kArray) {
      return std::string(c.GetBytes(row));
    }
    return c.Get(row).ToString();
  }
  // A value stored as text in the target: compare with the source's text form.
  if (IsTextual(t)) return std::string(c.GetBytes(row));
  return c.Get(row).ToString();
}

RowHasher::RowHasher(std::vector<LogicalType> source_types, ZeroDatePolicy zero_date)
    : types_(std::move(source_types)),
      rules_(types_.size(), CellRule::kByType),
      zero_date_(zero_date) {}

RowHasher::RowHasher(std::vector<LogicalType> source_types, std::vector<CellRule> rules,
                     std::vector<size_t> key, ZeroDatePolicy zero_date)
    : types_(std::move(source_types)),
      rules_(std::move(rules)),
      key_(std::move(key)),
      zero_date_(zero_date) {
  rules_.resize(types_.size(), CellRule::kByType);
}

namespace {
// Length-prefixed cells; NULL is a marker a length prefix can never start with below 2^24.
void AppendCell(const std::optional<std::string>& cell, std::string* buf) {
  if (!cell) {
    *buf += '\xff';
    return;
  }
  uint32_t n = static_cast<uint32_t>(cell->size());
  buf->append(reinterpret_cast<const char*>(&n), 4);
  *buf += *cell;
}
}  // namespace

void RowHasher::Cells(const Bundle& b, size_t r,
                      std::vector<std::optional<std::string>>* out) const {
  out->resize(std::min(b.columns.size(), types_.size()));
  for (size_t i = 0; i < out->size(); ++i) {
    (*out)[i] = CanonicalCell(b.columns[i], r, types_[i], zero_date_, rules_[i]);
  }
}

uint64_t RowHasher::RowHash(const std::vector<std::optional<std::string>>& cells) {
  std::string buf;
  for (const auto& c : cells) AppendCell(c, &buf);
  return XXH3_64bits(buf.data(), buf.size());
}

uint64_t RowHasher::KeyHash(const std::vector<std::optional<std::string>>& cells) const {
  if (key_.empty()) return RowHash(cells);
  std::string buf;
  for (size_t k : key_) {
    if (k < cells.size()) AppendCell(cells[k], &buf);
  }
  return XXH3_64bits(buf.data(), buf.size());
}

void RowHasher::Add(const Bundle& b, TableChecksum* acc) const {
  std::vector<std::optional<std::string>> cells;
  for (size_t r = 0; r < b.rows(); ++r) {
    Cells(b, r, &cells);
    uint64_t h = RowHash(cells);
    acc->rows++;
    acc->sum += h;
    acc->xor_all ^= h;
  }
}

void RowHasher::Add(const Bundle& b, TableDigest* acc) const {
  acc->columns.resize(types_.size());
  acc->buckets.resize(kVerifyBuckets);
  std::vector<std::optional<std::string>> cells;
  for (size_t r = 0; r < b.rows(); ++r) {
    Cells(b, r, &cells);
    const uint64_t h = RowHash(cells);
    acc->total.rows++;
    acc->total.sum += h;
    acc->total.xor_all ^= h;
    // Without a key, a column's sum covers the multiset of its values.
    const uint64_t key = key_.empty() ? 0 : KeyHash(cells);
    for (size_t i = 0; i < cells.size(); ++i) {
      acc->columns[i] += cells[i] ? XXH3_64bits_withSeed(cells[i]->data(), cells[i]->size(), key)
                                  : XXH3_64bits_withSeed("\xff", 1, key + 1);
    }
    acc->buckets[(key_.empty() ? h : key) % kVerifyBuckets] += h;
  }
}

namespace {

// Reads the table of `spec` (its `columns`, or all) in bundles and hands each to `add`.
template <typename Add>
Status ScanTable(Snapshot* snapshot, const ReadSpec& spec, const Add& add) {
  DBS_ASSIGN_OR_RETURN(auto reader, snapshot->OpenReader(spec));
  std::vector<const Column*> cols;
  if (spec.columns.empty()) {
    for (const Column& c : spec.table.columns) cols.push_back(&c);
  }
  for (const std::string& n : spec.columns) {
    int i = spec.table.FindColumn(n);
    if (i < 0)
      return Status::NotFound("column " + n + " not found in " + spec.table.QualifiedName());
    cols.push_back(&spec.table.columns[static_cast<size_t>(i)]);
  }
  bool more = true;
  while (more) {
    Bundle b;
    for (const Column* c : cols) b.columns.emplace_back(c->type, c->element_type);
    DBS_ASSIGN_OR_RETURN(more, reader->Next(&b, 4096, 16u << 20));
    add(b);
  }
  return Status::Ok();
}

}  // namespace

Result<TableChecksum> ChecksumTable(Snapshot* snapshot, const ReadSpec& spec,
                                    const RowHasher& hasher) {
  TableChecksum acc;
  DBS_RETURN_IF_ERROR(ScanTable(snapshot, spec, [&](const Bundle& b) { hasher.Add(b, &acc); }));
  return acc;
}

Result<TableDigest> DigestTable(Snapshot* snapshot, const ReadSpec& spec, const RowHasher& hasher) {
  TableDigest acc;
  acc.columns.resize(hasher.columns());
  acc.buckets.resize(kVerifyBuckets);
  DBS_RETURN_IF_ERROR(ScanTable(snapshot, spec, [&](const Bundle& b) { hasher.Add(b, &acc); }));
  return acc;
}

namespace {

using Cells = std::vector<std::optional<std::string>>;

// The rows of one bucket, by key text (tables without a key: by the whole row).
Result<std::multimap<std::string, Cells>> ReadBucket(Snapshot* snapshot, const ReadSpec& spec,
                                                     const std::vector<const Column*>& cols,
                                                     const RowHasher& hasher, size_t bucket) {
  DBS_ASSIGN_OR_RETURN(auto reader, snapshot->OpenReader(spec));
  std::multimap<std::string, Cells> out;
  Cells cells;
  bool more = true;
  while (more) {
    Bundle b;
    for (const Column* c : cols) b.columns.emplace_back(c->type, c->element_type);
    DBS_ASSIGN_OR_RETURN(more, reader->Next(&b, 4096, 16u << 20));
    for (size_t r = 0; r < b.rows(); ++r) {
      hasher.Cells(b, r, &cells);
      const uint64_t h = hasher.KeyHash(cells);
      if (h % kVerifyBuckets != bucket) continue;
      std::string key;
      if (hasher.key().empty()) {
        for (const auto& c : cells) AppendCell(c, &key);
      } else {
        for (size_t k : hasher.key()) AppendCell(cells[k], &key);
      }
      out.emplace(std::move(key), cells);
    }
  }
  return out;
}

// A cell for a message: quoted, control bytes escaped, at most 120 bytes.
std::string Shown(const std::optional<std::string>& cell) {
  if (!cell) return "NULL";
  std::string out = "'";
  for (unsigned char ch : cell->substr(0, 120)) {
    if (ch < 0x20 || ch == 0x7f || ch == '\\' || ch == '\'') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  out += cell->size() > 120 ? "'..." : "'";
  return out;
}

std::string KeyText(const RowHasher& hasher, const std::vector<std::string>& names,
                    const Cells& cells) {
  std::string out;
  const bool whole = hasher.key().empty();
  const size_t n = whole ? cells.size() : hasher.key().size();
  for (size_t i = 0; i < n; ++i) {
    const size_t c = whole ? i : hasher.key()[i];
    out += (i == 0 ? "" : ", ") + names[c] + "=" + Shown(cells[c]);
  }
  return whole ? "row (" + out + ")" : "key " + out;
}

// Finds one differing row in a bucket whose sums differ on the two sides.
std::string SampleDifference(const std::multimap<std::string, Cells>& src,
                             const std::multimap<std::string, Cells>& dst, const RowHasher& hasher,
                             const std::vector<std::string>& names,
                             const std::vector<std::string>& differing) {
  for (const auto& [key, cells] : src) {
    auto [lo, hi] = dst.equal_range(key);
    if (lo == hi) return KeyText(hasher, names, cells) + ": in the source, not in the target";
    if (hasher.key().empty()) continue;
    const Cells& other = lo->second;
    // Prefer a column the per-column sums flagged.
    std::string first;
    for (size_t i = 0; i < cells.size() && i < other.size(); ++i) {
      if (cells[i] == other[i]) continue;
      std::string d = KeyText(hasher, names, cells) + ": column " + names[i] + ": source " +
                      Shown(cells[i]) + ", target " + Shown(other[i]);
      if (std::find(differing.begin(), differing.end(), names[i]) != differing.end()) return d;
      if (first.empty()) first = d;
    }
    if (!first.empty()) return first;
  }
  for (const auto& [key, cells] : dst) {
    if (src.count(key) < dst.count(key)) {
      return KeyText(hasher, names, cells) + ": in the target, not in the source";
    }
  }
  return "";
}

}  // namespace

std::string TableVerdict::Describe() const {
  std::string out = source_table + " -> " + target_table + ": rows " + std::to_string(source.rows) +
                    "/" + std::to_string(target.rows);
  if (match()) return out + ", equal";
  if (!columns.empty()) {
    out += ", values differ in column(s) ";
    for (size_t i = 0; i < columns.size(); ++i) out += (i == 0 ? "" : ", ") + columns[i];
  } else {
    out += ", checksums differ";
  }
  if (!sample.empty()) out += "; " + sample;
  return out;
}

Result<std::vector<TableVerdict>> VerifyStream(const StreamConfig& config) {
  DBS_ASSIGN_OR_RETURN(auto source, Source::Open(config.source));
  DBS_ASSIGN_OR_RETURN(auto target, Source::Open(config.target));
  DBS_ASSIGN_OR_RETURN(std::vector<PlannedTable> tables, PlanTables(source.get(), config));
  DBS_ASSIGN_OR_RETURN(auto src_snap, source->BeginSnapshot(1));
  DBS_ASSIGN_OR_RETURN(auto dst_snap, target->BeginSnapshot(1));
  std::vector<TableVerdict> out;
  for (const PlannedTable& t : tables) {
    TableVerdict v;
    v.source_table = t.schema.QualifiedName();
    TableRef tref{TargetSchemaFor(config, t.schema.schema), t.target_name};
    v.target_table = tref.QualifiedName();
    auto desc = target->Describe(tref);
    if (!desc.ok()) return desc.status().WithContext("verifying " + v.target_table);

    std::vector<LogicalType> types;
    std::vector<CellRule> rules;
    std::vector<std::string> names;
    std::vector<const Column*> src_cols, dst_cols;
    for (const Column& c : t.schema.columns) {
      const int ti = desc->FindColumn(c.name);
      if (ti < 0) {
        return Status::NotFound("verifying " + v.target_table + ": column " + c.name +
                                " is missing on the target");
      }
      const Column& tc = desc->columns[static_cast<size_t>(ti)];
      types.push_back(c.type);
      rules.push_back(RuleFor(c, config.source.engine, tc, config.target.engine));
      names.push_back(c.name);
      src_cols.push_back(&c);
      dst_cols.push_back(&tc);
    }
    std::vector<size_t> key;
    if (t.selector.query.empty()) {
      for (const std::string& k : t.schema.primary_key) {
        auto it = std::find(names.begin(), names.end(), k);
        if (it == names.end()) {
          key.clear();  // a key column that is not read: compare without a key
          break;
        }
        key.push_back(static_cast<size_t>(it - names.begin()));
      }
    }
    RowHasher hasher(types, rules, key, config.zero_date);
    ReadSpec rs;
    rs.table = t.schema;
    rs.filter = t.selector.filter;
    rs.query = t.selector.query;
    rs.limit = config.limits.rows;
    DBS_ASSIGN_OR_RETURN(TableDigest sd, DigestTable(src_snap.get(), rs, hasher));
    ReadSpec ts;
    ts.table = *desc;
    ts.columns = names;
    DBS_ASSIGN_OR_RETURN(TableDigest td, DigestTable(dst_snap.get(), ts, hasher));
    v.source = sd.total;
    v.target = td.total;
    for (size_t i = 0; i < names.size(); ++i) {
      if (sd.columns[i] != td.columns[i]) v.columns.push_back(names[i]);
    }
    // Without a key, equal column multisets with different rows still differ as rows.
    if (!key.empty() || v.source != v.target) {
      size_t bucket = kVerifyBuckets;
      for (size_t b = 0; b < kVerifyBuckets && bucket == kVerifyBuckets; ++b) {
        if (sd.buckets[b] != td.buckets[b]) bucket = b;
      }
      if (bucket < kVerifyBuckets) {
        DBS_ASSIGN_OR_RETURN(auto sb, ReadBucket(src_snap.get(), rs, src_cols, hasher, bucket));
        DBS_ASSIGN_OR_RETURN(auto tb, ReadBucket(dst_snap.get(), ts, dst_cols, hasher, bucket));
        v.sample = SampleDifference(sb, tb, hasher, names, v.columns);
      }
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace dbs
