#include "sources/postgres/row_reader.h"

#include <optional>

#include "postgres/pg_binary.h"
#include "postgres/pg_decode.h"
#include "postgres/pg_types.h"
#include "sources/postgres/catalog.h"

namespace dbs::pg {

namespace {

// The binary COPY header: signature, flags, header extension length.
constexpr char kCopySignature[] = "PGCOPY\n\377\r\n";  // + '\0': 11 bytes
constexpr size_t kCopySignatureLen = 11;
constexpr size_t kCopyHeaderLen = kCopySignatureLen + 8;

struct Natural {
  Wire wire;
  LogicalType type;
};

// How a (non-domain) type travels in binary and which logical type that gives; nullopt for
// types without a binary decoder here.
std::optional<Natural> NaturalOf(const TypeInfo& t) {
  using L = LogicalType;
  if (t.type_type == 'e') return Natural{Wire::kRaw, L::kEnum};
  if (t.type_type != 'b') return std::nullopt;
  static const struct {
    std::string_view name;
    Wire wire;
    LogicalType type;
  } kTypes[] = {
      {"bool", Wire::kBool, L::kBool},
      {"int2", Wire::kInt2, L::kInt16},
      {"int4", Wire::kInt4, L::kInt32},
      {"int8", Wire::kInt8, L::kInt64},
      {"oid", Wire::kUInt32, L::kUInt32},
      {"xid", Wire::kUInt32, L::kUInt32},
      {"cid", Wire::kUInt32, L::kUInt32},
      {"xid8", Wire::kUInt64, L::kUInt64},
      {"float4", Wire::kFloat4, L::kFloat32},
      {"float8", Wire::kFloat8, L::kFloat64},
      {"numeric", Wire::kNumeric, L::kDecimal},
      {"text", Wire::kRaw, L::kText},
      {"varchar", Wire::kRaw, L::kText},
      {"bpchar", Wire::kBpchar, L::kText},
      {"name", Wire::kRaw, L::kText},
      {"citext", Wire::kRaw, L::kText},
      {"bytea", Wire::kRaw, L::kBytes},
      {"json", Wire::kRaw, L::kJson},
      {"jsonb", Wire::kJsonb, L::kJson},
      {"uuid", Wire::kUuid, L::kUuid},
      {"bit", Wire::kBit, L::kBit},
      {"varbit", Wire::kBit, L::kBit},
      {"date", Wire::kDate, L::kDate},
      {"time", Wire::kTime, L::kTime},
      {"timetz", Wire::kTimeTz, L::kTimeTz},
      {"timestamp", Wire::kTimestamp, L::kTimestamp},
      {"timestamptz", Wire::kTimestamp, L::kTimestampTz},
      {"interval", Wire::kInterval, L::kInterval},
  };
  for (const auto& k : kTypes) {
    if (t.name == k.name) return Natural{k.wire, k.type};
  }
  return std::nullopt;
}

bool IsTextual(LogicalType t) {
  return t == LogicalType::kText || t == LogicalType::kEnum || t == LogicalType::kSet;
}

// Chooses the select expression and binary decoding of one column. `ref` is the quoted column.
Status PlanColumn(const Column& c, const TypeCache& types, uint32_t oid, const std::string& ref,
                  const std::string& table, std::string* expr, FieldPlan* plan) {
  const TypeInfo* base = types.Base(oid);
  if (base == nullptr) return Status::Internal("type of column " + c.name + " not loaded");
  auto mismatch = [&] {
    const TypeInfo* t = types.Find(oid);
    return Status::FailedPrecondition(
        "column " + c.name + " of " + table + " is of type " + (t ? t->formatted : "?") +
        " on the server, which does not match its description (" +
        std::string(LogicalTypeName(c.type)) + "); describe the table again");
  };
  plan->type = c.type;
  *expr = ref;
  if (c.type == LogicalType::kArray) {
    if (base->element == 0) return mismatch();
    const TypeInfo* elem = types.Base(base->element);
    if (elem == nullptr) return Status::Internal("element type of " + c.name + " not loaded");
    plan->wire = Wire::kArray;
    plan->element_type = c.element_type;
    std::optional<Natural> nat = NaturalOf(*elem);
    if (nat && nat->type == c.element_type) {
      plan->element_wire = nat->wire;
    } else if (IsTextual(c.element_type)) {
      plan->element_wire = Wire::kRaw;
      // inet's cast to text adds /32 or /128 to host addresses; the array's output form uses
      // each element's output function, which does not (and keeps bounds and dimensions).
      *expr = elem->name == "inet" ? ref + "::text::text[]" : ref + "::text[]";
    } else if (c.element_type == LogicalType::kDecimal) {
      plan->element_wire = Wire::kNumeric;
      *expr = ref + "::numeric[]";
    } else {
      return mismatch();
    }
    return Status::Ok();
  }
  std::optional<Natural> nat = NaturalOf(*base);
  if (nat && nat->type == c.type) {
    plan->wire = nat->wire;
  } else if (IsTextual(c.type)) {
    plan->wire = Wire::kRaw;
    // abbrev(inet) is inet's output form ("10.0.0.1", "10.0.0.0/8"); inet::text would add
    // /32 or /128 to every host address.
    *expr = base->name == "inet" ? "abbrev(" + ref + ")" : ref + "::text";
  } else if (c.type == LogicalType::kDecimal) {
    plan->wire = Wire::kNumeric;
    *expr = ref + "::numeric";
  } else if (c.type == LogicalType::kGeometry &&
             (base->name == "geometry" || base->name == "geography")) {
    plan->wire = Wire::kGeometry;
    *expr = "int4send(ST_SRID(" + ref + ")) || ST_AsBinary(" + ref + ")";
  } else {
    return mismatch();
  }
  return Status::Ok();
}

class PgRowReader : public RowReader {
 public:
  // `copy_oids` non-empty: rows are handed over as COPY tuples of these types (Bundle::pg_copy).
  PgRowReader(ConnPtr conn, std::string table, std::vector<FieldPlan> plans,
              std::vector<uint32_t> copy_oids, ConnRelease release)
      : conn_(std::move(conn)),
        table_(std::move(table)),
        plans_(std::move(plans)),
        copy_oids_(std::move(copy_oids)),
        release_(std::move(release)) {}
  ~PgRowReader() override {
    if (release_ && done_ && failed_.ok()) release_(std::move(conn_));
  }

  Result<bool> Next(Bundle* out, size_t max_rows, size_t max_bytes) override;

 private:
  Status Fail(Status s) {
    failed_ = s;
    return s;
  }
  Status PrepareBundle(Bundle* out) const;
  // Reads the next CopyData message into buf_; sets done_ at the end of the data.
  Status Fetch();
  Status ParseHeader();
  // Decodes one tuple at pos_ into *out (for COPY tuples: checks its lengths and copies its
  // bytes); sets *trailer when it was the end marker instead.
  Status ParseTuple(Bundle* out, bool* trailer, size_t* bytes);

  ConnPtr conn_;
  std::string table_;
  std::vector<FieldPlan> plans_;
  std::vector<uint32_t> copy_oids_;
  DecodeScratch scratch_;
  FreePtr buf_;
  size_t len_ = 0;
  size_t pos_ = 0;
  bool header_done_ = false;
  bool trailer_seen_ = false;
  bool done_ = false;
  Status failed_;
  ConnRelease release_;
};

Status PgRowReader::PrepareBundle(Bundle* out) const {
  if (!copy_oids_.empty()) {
    if (out->rows() != 0 && out->pg_copy.type_oids != copy_oids_) {
      return Status::InvalidArgument("bundle holds other rows than the COPY tuples read");
    }
    out->columns.clear();
    out->pg_copy.type_oids = copy_oids_;
    return Status::Ok();
  }
  if (out->columns.empty()) {
    out->columns.reserve(plans_.size());
    for (const FieldPlan& p : plans_) out->columns.emplace_back(p.type, p.element_type);
    return Status::Ok();
  }
  if (out->columns.size() != plans_.size()) {
    return Status::InvalidArgument("bundle has " + std::to_string(out->columns.size()) +
                                   " columns, the reader reads " + std::to_string(plans_.size()));
  }
  for (size_t i = 0; i < plans_.size(); ++i) {
    if (out->columns[i].type() != plans_[i].type ||
        out->columns[i].element_type() != plans_[i].element_type) {
      return Status::InvalidArgument("bundle column " + std::to_string(i) +
                                     " has another type than the column read");
    }
  }
  return Status::Ok();
}

Status PgRowReader::Fetch() {
  char* raw = nullptr;
  const int n = PQgetCopyData(conn_.get(), &raw, 0);
  if (n > 0) {
    buf_.reset(raw);
    len_ = static_cast<size_t>(n);
    pos_ = 0;
    return Status::Ok();
  }
  buf_.reset();
  len_ = pos_ = 0;
  if (n == -2) return ErrorStatus(conn_.get(), nullptr, "reading " + table_);
  // n == -1: the COPY ended; its final result says whether it succeeded.
  ResultPtr res(PQgetResult(conn_.get()));
  if (PQresultStatus(res.get()) != PGRES_COMMAND_OK) {
    return ErrorStatus(conn_.get(), res.get(), "reading " + table_);
  }
  while (ResultPtr more{PQgetResult(conn_.get())}) {
  }
  if (!trailer_seen_) return Status::Corruption("reading " + table_ + ": COPY data ended early");
  done_ = true;
  return Status::Ok();
}

Status PgRowReader::ParseHeader() {
  if (len_ - pos_ < kCopyHeaderLen ||
      std::memcmp(buf_.get() + pos_, kCopySignature, kCopySignatureLen) != 0) {
    return Status::Corruption("reading " + table_ + ": not a binary COPY stream");
  }
  const uint32_t ext = LoadBE32(buf_.get() + pos_ + kCopySignatureLen + 4);
  if (len_ - pos_ - kCopyHeaderLen < ext) {
    return Status::Corruption("reading " + table_ + ": truncated COPY header");
  }
  pos_ += kCopyHeaderLen + ext;
  header_done_ = true;
  return Status::Ok();
}

Status PgRowReader::ParseTuple(Bundle* out, bool* trailer, size_t* bytes) {
  const char* p = buf_.get();
  auto corrupt = [&](const char* what) {
    return Status::Corruption("reading " + table_ + ": malformed COPY row (" + what + ")");
  };
  const bool as_copy = !copy_oids_.empty();
  const size_t start = pos_;
  if (len_ - pos_ < 2) return corrupt("truncated");
  const int16_t fields = static_cast<int16_t>(LoadBE16(p + pos_));
  pos_ += 2;
  if (fields == -1) {
    *trailer = true;
    return Status::Ok();
  }
  if (static_cast<size_t>(fields) != plans_.size()) return corrupt("field count");
  for (size_t i = 0; i < plans_.size(); ++i) {
    if (len_ - pos_ < 4) return corrupt("truncated");
    const int32_t n = static_cast<int32_t>(LoadBE32(p + pos_));
    pos_ += 4;
    if (n == -1) {
      if (!as_copy) out->columns[i].AppendNull();
      continue;
    }
    if (n < 0 || len_ - pos_ < static_cast<size_t>(n)) return corrupt("truncated");
    if (!as_copy) {
      Status s = DecodeField(plans_[i], std::string_view(p + pos_, static_cast<size_t>(n)),
                             &out->columns[i], &scratch_);
      if (!s.ok()) return s.WithContext("reading " + table_ + ", column " + std::to_string(i + 1));
    }
    pos_ += static_cast<size_t>(n);
  }
  if (as_copy) {
    out->pg_copy.tuples.append(p + start, pos_ - start);
    ++out->pg_copy.rows;
  }
  *bytes += pos_ - start;
  return Status::Ok();
}

Result<bool> PgRowReader::Next(Bundle* out, size_t max_rows, size_t max_bytes) {
  if (!failed_.ok()) return failed_;
  if (done_) return false;
  if (max_rows == 0) return Status::InvalidArgument("Next() needs max_rows > 0");
  DBS_RETURN_IF_ERROR(PrepareBundle(out));
  size_t rows = 0;
  size_t bytes = out->ByteSize();
  // COPY tuples go into one string: size it for the bundle once (the last tuple may cross
  // max_bytes) instead of growing it by doubling, which copied every bundle about twice more.
  constexpr size_t kReserveCap = 16u << 20;
  if (!copy_oids_.empty() && max_bytes < kReserveCap &&
      out->pg_copy.tuples.capacity() < max_bytes + 16384) {
    out->pg_copy.tuples.reserve(max_bytes + 16384);
  }
  while (rows < max_rows && bytes < max_bytes) {
    if (pos_ == len_) {
      Status s = Fetch();
      if (!s.ok()) return Fail(std::move(s));
      if (done_) return false;
      continue;
    }
    if (!header_done_) {
      Status s = ParseHeader();
      if (!s.ok()) return Fail(std::move(s));
      continue;
    }
    if (trailer_seen_) return Fail(Status::Corruption("reading " + table_ + ": data after end"));
    bool trailer = false;
    Status s = ParseTuple(out, &trailer, &bytes);
    if (!s.ok()) return Fail(std::move(s));
    if (trailer) {
      trailer_seen_ = true;
      continue;
    }
    ++rows;
  }
  return true;
}

}  // namespace

std::optional<FieldPlan> DirectBinaryPlan(const Column& c, const TypeCache& types, uint32_t oid) {
  const TypeInfo* base = types.Base(oid);
  if (base == nullptr) return std::nullopt;
  FieldPlan plan;
  plan.type = c.type;
  if (c.type == LogicalType::kArray) {
    if (base->element == 0) return std::nullopt;
    const TypeInfo* elem = types.Base(base->element);
    if (elem == nullptr) return std::nullopt;
    std::optional<Natural> nat = NaturalOf(*elem);
    if (!nat || nat->type != c.element_type) return std::nullopt;
    plan.wire = Wire::kArray;
    plan.element_type = c.element_type;
    plan.element_wire = nat->wire;
    return plan;
  }
  std::optional<Natural> nat = NaturalOf(*base);
  if (!nat || nat->type != c.type) return std::nullopt;
  plan.wire = nat->wire;
  return plan;
}

Result<std::unique_ptr<RowReader>> OpenRowReader(ConnPtr conn, const ReadSpec& spec,
                                                 ConnRelease release) {
  PGconn* c = conn.get();
  const TableSchema& t = spec.table;
  const std::string display = t.QualifiedName();
  std::vector<const Column*> columns;
  if (spec.columns.empty()) {
    for (const Column& col : t.columns) columns.push_back(&col);
  } else {
    for (const std::string& n : spec.columns) {
      int i = t.FindColumn(n);
      if (i < 0) return Status::NotFound("column " + n + " not found in " + display);
      columns.push_back(&t.columns[static_cast<size_t>(i)]);
    }
  }
  if (columns.empty()) return Status::InvalidArgument("no columns to read from " + display);

  std::string from;
  if (spec.query.empty()) {
    DBS_ASSIGN_OR_RETURN(RelationInfo rel, ResolveRelation(c, TableRef{t.schema, t.name}));
    // ONLY: rows of inheritance children are theirs to read (partitions are read through their
    // parent, which must not be ONLY).
    from = std::string(rel.kind == 'r' ? "ONLY " : "") + QualifiedName(rel.schema, rel.name);
  } else {
    // Newlines: a trailing "-- comment" in the query must not swallow the parenthesis.
    from = "(\n" + TrimQuery(spec.query) + "\n) AS q";
  }
  std::string plain;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i) plain += ", ";
    plain += QuoteIdent(columns[i]->name);
  }

  // The types the server sends for the plain columns (domains come as their base type).
  const std::string ctx = "reading " + display;
  {
    const std::string probe = "SELECT " + plain + " FROM " + from + " LIMIT 0";
    ResultPtr prep(PQprepare(c, "", probe.c_str(), 0, nullptr));
    if (PQresultStatus(prep.get()) != PGRES_COMMAND_OK) return ErrorStatus(c, prep.get(), ctx);
  }
  ResultPtr desc(PQdescribePrepared(c, ""));
  if (PQresultStatus(desc.get()) != PGRES_COMMAND_OK) return ErrorStatus(c, desc.get(), ctx);
  std::vector<uint32_t> oids;
  for (size_t i = 0; i < columns.size(); ++i) {
    oids.push_back(PQftype(desc.get(), static_cast<int>(i)));
  }
  TypeCache types;
  DBS_RETURN_IF_ERROR(types.Load(c, oids));

  std::vector<FieldPlan> plans(columns.size());
  std::string select;
  // COPY tuples pass through when every column is a built-in scalar sent as it is.
  std::vector<uint32_t> copy_oids;
  bool as_copy = spec.pg_copy_rows;
  for (size_t i = 0; i < columns.size(); ++i) {
    std::string expr;
    const std::string ref = QuoteIdent(columns[i]->name);
    DBS_RETURN_IF_ERROR(PlanColumn(*columns[i], types, oids[i], ref, display, &expr, &plans[i]));
    if (i) select += ", ";
    select += expr;
    const std::optional<Wire> builtin = BuiltinWire(oids[i]);
    as_copy = as_copy && expr == ref && builtin && *builtin == plans[i].wire;
    copy_oids.push_back(oids[i]);
  }
  if (!as_copy) copy_oids.clear();

  std::string where;
  if (spec.range) {
    // Page ranges compare ctid with the first tuple of a page: '(page,0)'::tid.
    auto bound = [&](int64_t v) {
      return spec.range->pages ? "'(" + std::to_string(v) + ",0)'::tid" : std::to_string(v);
    };
    const std::string key = spec.range->pages ? "ctid" : QuoteIdent(spec.range->column);
    if (spec.range->lower) where += key + " >= " + bound(*spec.range->lower);
    if (spec.range->upper) {
      if (!where.empty()) where += " AND ";
      where += key + " < " + bound(*spec.range->upper);
    }
  }
  if (!spec.filter.empty()) {
    if (!where.empty()) where += " AND ";
    where += "(" + spec.filter + ")";
  }
  std::string sql = "COPY (SELECT " + select + " FROM " + from;
  if (!where.empty()) sql += " WHERE " + where;
  if (spec.limit != 0) sql += " LIMIT " + std::to_string(spec.limit);
  sql += ") TO STDOUT (FORMAT binary)";

  ResultPtr res(PQexec(c, sql.c_str()));
  if (PQresultStatus(res.get()) != PGRES_COPY_OUT) return ErrorStatus(c, res.get(), ctx);
  return std::unique_ptr<RowReader>(std::make_unique<PgRowReader>(
      std::move(conn), display, std::move(plans), std::move(copy_oids), std::move(release)));
}

}  // namespace dbs::pg
