#include "core/change_codec.h"

#include <nlohmann/json.hpp>

#include "core/bytes.h"
#include "core/schema.h"

namespace dbs {
namespace {

constexpr char kMagic[4] = {'D', 'B', 'S', 'C'};
constexpr uint8_t kTxnRecord = 1;
constexpr uint8_t kSchemaRecord = 2;

void PutStr(std::string* out, std::string_view s) {
  AppendLE<uint32_t>(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

void PutPosition(std::string* out, const SourcePosition& p) {
  AppendLE<uint8_t>(out, static_cast<uint8_t>(p.kind));
  PutStr(out, p.value);
  PutStr(out, p.file_pos);
}

bool GetStr(ByteReader* r, std::string* out) {
  uint32_t n = 0;
  std::string_view v;
  if (!r->Read(&n) || !r->Bytes(n, &v)) return false;
  out->assign(v);
  return true;
}

bool GetPosition(ByteReader* r, SourcePosition* p) {
  uint8_t kind = 0;
  if (!r->Read(&kind) || kind > static_cast<uint8_t>(SourcePosition::Kind::kMysqlFilePos)) {
    return r->Fail();
  }
  p->kind = static_cast<SourcePosition::Kind>(kind);
  return GetStr(r, &p->value) && GetStr(r, &p->file_pos);
}

Status Bad(const std::string& what) {
  return Status::Corruption("malformed change message: " + what);
}

}  // namespace

ChangeMessageWriter::ChangeMessageWriter(EncodeOptions options) : options_(options) {}

Status ChangeMessageWriter::AddTxn(const ChangeTxn& txn) {
  std::string rec;
  AppendLE<uint8_t>(&rec, kTxnRecord);
  PutStr(&rec, txn.xid);
  PutPosition(&rec, txn.position);
  AppendLE<int64_t>(&rec, txn.commit_time_us);
  AppendLE<uint8_t>(&rec, txn.final ? 1 : 0);
  AppendLE<uint32_t>(&rec, txn.part);
  AppendLE<uint32_t>(&rec, static_cast<uint32_t>(txn.segments.size()));
  std::string bundle;
  for (const auto& seg : txn.segments) {
    PutStr(&rec, seg.table.schema);
    PutStr(&rec, seg.table.name);
    AppendLE<uint8_t>(&rec, seg.truncate ? 1 : 0);
    bundle.clear();
    DBS_RETURN_IF_ERROR(EncodeBundle(seg.rows, options_, &bundle));
    PutStr(&rec, bundle);
  }
  body_ += rec;
  ++records_;
  return Status::Ok();
}

Status ChangeMessageWriter::AddSchemaChange(const SchemaChangeRecord& c) {
  std::string rec;
  AppendLE<uint8_t>(&rec, kSchemaRecord);
  PutStr(&rec, c.table.schema);
  PutStr(&rec, c.table.name);
  PutStr(&rec, c.statement);
  AppendLE<uint8_t>(&rec, c.only_added_columns ? 1 : 0);
  AppendLE<uint32_t>(&rec, static_cast<uint32_t>(c.added_columns.size()));
  for (const auto& a : c.added_columns) PutStr(&rec, a);
  PutStr(&rec, ToJson(c.schema).dump());
  PutPosition(&rec, c.position);
  body_ += rec;
  ++records_;
  return Status::Ok();
}

void ChangeMessageWriter::Append(ChangeMessageWriter&& other) {
  body_ += other.body_;
  records_ += other.records_;
  other.body_.clear();
  other.records_ = 0;
}

std::string ChangeMessageWriter::Finish(uint64_t seq, const SourcePosition& resume) {
  std::string out(kMagic, 4);
  AppendLE<uint8_t>(&out, kChangeFormatVersion);
  AppendLE<uint64_t>(&out, seq);
  PutPosition(&out, resume);
  AppendLE<uint32_t>(&out, records_);
  out += body_;
  body_.clear();
  records_ = 0;
  return out;
}

Result<ChangeMessage> DecodeChangeMessage(std::string_view bytes, const DecodeLimits& limits) {
  ByteReader r(bytes);
  std::string_view magic;
  uint8_t version = 0;
  uint32_t count = 0;
  if (!r.Bytes(4, &magic) || magic != std::string_view(kMagic, 4)) return Bad("no DBSC magic");
  if (!r.Read(&version) || version != kChangeFormatVersion) {
    return Status::Corruption("change message version " + std::to_string(version) +
                              " is not supported (this build reads version " +
                              std::to_string(kChangeFormatVersion) + ")");
  }
  ChangeMessage msg;
  if (!r.Read(&msg.seq) || !GetPosition(&r, &msg.resume) || !r.Read(&count)) {
    return Bad("truncated header");
  }
  // Every record takes at least 10 bytes: bounds the reservation by the input.
  if (count > r.remaining() / 10 + 1) return Bad("record count exceeds the message");
  std::vector<ChangeRecord>& out = msg.records;
  out.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    uint8_t kind = 0;
    if (!r.Read(&kind)) return Bad("truncated record");
    if (kind == kTxnRecord) {
      ChangeTxn txn;
      uint8_t final = 0;
      uint32_t nseg = 0;
      if (!GetStr(&r, &txn.xid) || !GetPosition(&r, &txn.position) ||
          !r.Read(&txn.commit_time_us) || !r.Read(&final) || final > 1 || !r.Read(&txn.part) ||
          !r.Read(&nseg)) {
        return Bad("truncated transaction");
      }
      txn.final = final == 1;
      if (nseg > r.remaining() / 13 + 1) return Bad("segment count exceeds the message");
      for (uint32_t s = 0; s < nseg; ++s) {
        ChangeSegment seg;
        uint8_t trunc = 0;
        uint32_t len = 0;
        std::string_view bundle;
        if (!GetStr(&r, &seg.table.schema) || !GetStr(&r, &seg.table.name) || !r.Read(&trunc) ||
            trunc > 1 || !r.Read(&len) || !r.Bytes(len, &bundle)) {
          return Bad("truncated segment");
        }
        seg.truncate = trunc == 1;
        auto b = DecodeBundle(bundle, limits);
        if (!b.ok())
          return Bad("segment of " + seg.table.QualifiedName() + ": " + b.status().message());
        seg.rows = std::move(*b);
        if (seg.rows.rows() > 0 && seg.rows.ops.size() != seg.rows.rows()) {
          return Bad("segment of " + seg.table.QualifiedName() + " has rows without operations");
        }
        txn.segments.push_back(std::move(seg));
      }
      out.emplace_back(std::move(txn));
    } else if (kind == kSchemaRecord) {
      SchemaChangeRecord c;
      uint8_t only = 0;
      uint32_t n = 0;
      std::string json;
      if (!GetStr(&r, &c.table.schema) || !GetStr(&r, &c.table.name) || !GetStr(&r, &c.statement) ||
          !r.Read(&only) || only > 1 || !r.Read(&n) || n > r.remaining() / 4) {
        return Bad("truncated schema change");
      }
      c.only_added_columns = only == 1;
      for (uint32_t k = 0; k < n; ++k) {
        std::string a;
        if (!GetStr(&r, &a)) return Bad("truncated schema change");
        c.added_columns.push_back(std::move(a));
      }
      if (!GetStr(&r, &json) || !GetPosition(&r, &c.position)) {
        return Bad("truncated schema change");
      }
      auto parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_discarded()) return Bad("schema change table is not JSON");
      auto t = TableFromJson(parsed);
      if (!t.ok()) return Bad("schema change table: " + t.status().message());
      c.schema = std::move(*t);
      out.emplace_back(std::move(c));
    } else {
      return Bad("unknown record kind " + std::to_string(kind));
    }
  }
  if (r.remaining() != 0) return Bad("trailing bytes");
  return msg;
}

Bundle SliceBundle(const Bundle& b, size_t begin, size_t end) {
  Bundle out;
  out.columns.reserve(b.columns.size());
  for (const auto& c : b.columns) {
    ColumnVector col(c.type(), c.element_type());
    col.Reserve(end - begin);
    for (size_t r = begin; r < end; ++r) col.AppendFrom(c, r);
    out.columns.push_back(std::move(col));
  }
  if (!b.ops.empty()) out.ops.assign(b.ops.begin() + begin, b.ops.begin() + end);
  return out;
}

std::vector<ChangeTxn> SplitTxn(const ChangeTxn& txn, size_t max_rows) {
  if (max_rows == 0) max_rows = 1;
  std::vector<ChangeTxn> parts;
  auto new_part = [&]() {
    ChangeTxn p;
    p.xid = txn.xid;
    p.position = txn.position;
    p.commit_time_us = txn.commit_time_us;
    p.final = false;
    p.part = txn.part + static_cast<uint32_t>(parts.size());
    parts.push_back(std::move(p));
  };
  new_part();
  size_t in_part = 0;
  for (const auto& seg : txn.segments) {
    size_t n = seg.rows.rows();
    if (n == 0) {
      parts.back().segments.push_back(seg);
      continue;
    }
    size_t at = 0;
    while (at < n) {
      if (in_part == max_rows) {
        new_part();
        in_part = 0;
      }
      size_t take = std::min(n - at, max_rows - in_part);
      // Never split an kUpdateBefore from its kUpdate row.
      if (at + take < n && take > 1 && seg.rows.ops[at + take - 1] == RowOp::kUpdateBefore) --take;
      ChangeSegment part;
      part.table = seg.table;
      part.truncate = false;
      part.rows = (at == 0 && take == n) ? seg.rows : SliceBundle(seg.rows, at, at + take);
      parts.back().segments.push_back(std::move(part));
      at += take;
      in_part += take;
    }
  }
  parts.back().final = txn.final;
  return parts;
}

}  // namespace dbs
