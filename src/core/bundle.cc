#include "core/bundle.h"

#include "core/array.h"
#include "core/bytes.h"

namespace dbs {
namespace {

constexpr char kMagic[4] = {'D', 'B', 'S', 'B'};
constexpr size_t kHeaderSize = 24;
constexpr uint16_t kFlagHasOps = 1;
constexpr uint16_t kFlagPgCopy = 2;
constexpr uint8_t kColHasNulls = 1;
constexpr uint8_t kColHasUnchanged = 2;

void PutU32(std::string* out, size_t at, uint32_t v) { std::memcpy(out->data() + at, &v, 4); }

void EncodeBody(const Bundle& b, std::string* out) {
  if (b.is_pg_copy()) {
    for (uint32_t oid : b.pg_copy.type_oids) AppendLE<uint32_t>(out, oid);
    out->append(b.pg_copy.tuples);
    return;
  }
  const size_t rows = b.rows();
  const size_t bitmap_bytes = (rows + 7) / 8;
  if (!b.ops.empty()) {
    out->append(reinterpret_cast<const char*>(b.ops.data()), b.ops.size());
  }
  for (const ColumnVector& c : b.columns) {
    uint8_t flags = (c.has_nulls() ? kColHasNulls : 0) | (c.has_unchanged() ? kColHasUnchanged : 0);
    const char head[4] = {static_cast<char>(c.type()), static_cast<char>(c.element_type()),
                          static_cast<char>(flags), 0};
    out->append(head, 4);
    if (c.has_nulls()) {
      out->append(reinterpret_cast<const char*>(c.null_bitmap().data()), bitmap_bytes);
    }
    if (c.has_unchanged()) {
      out->append(reinterpret_cast<const char*>(c.unchanged_bitmap().data()), bitmap_bytes);
    }
    if (c.width() != 0) {
      out->append(c.fixed_data());
      continue;
    }
    const auto& off = c.offsets();
    AppendLE<uint32_t>(out, off[rows]);
    size_t at = out->size();
    out->resize(at + rows * 4);
    char* p = out->data() + at;
    for (size_t i = 0; i < rows; ++i) {
      uint32_t len = off[i + 1] - off[i];
      std::memcpy(p + i * 4, &len, 4);
    }
    out->append(c.heap().data(), off[rows]);
  }
}

}  // namespace

Status ValidateCopyTuples(std::string_view t, size_t rows, size_t fields) {
  size_t pos = 0;
  for (size_t r = 0; r < rows; ++r) {
    if (t.size() - pos < 2) return Status::Corruption("COPY tuples: truncated");
    if (LoadBE16(t.data() + pos) != fields) {
      return Status::Corruption("COPY tuples: row " + std::to_string(r) + " has " +
                                std::to_string(LoadBE16(t.data() + pos)) + " fields, expected " +
                                std::to_string(fields));
    }
    pos += 2;
    for (size_t f = 0; f < fields; ++f) {
      if (t.size() - pos < 4) return Status::Corruption("COPY tuples: truncated");
      const int32_t n = static_cast<int32_t>(LoadBE32(t.data() + pos));
      pos += 4;
      if (n == -1) continue;
      if (n < 0 || t.size() - pos < static_cast<size_t>(n)) {
        return Status::Corruption("COPY tuples: bad field length in row " + std::to_string(r));
      }
      pos += static_cast<size_t>(n);
    }
  }
  if (pos != t.size()) return Status::Corruption("COPY tuples: bytes after the last row");
  return Status::Ok();
}

size_t Bundle::ByteSize() const {
  size_t n = ops.size() + pg_copy.tuples.size() + 4 * pg_copy.type_oids.size();
  for (const ColumnVector& c : columns) n += c.ByteSize() + 4;
  return n;
}

Status Bundle::Validate() const {
  size_t n = rows();
  if (is_pg_copy()) {
    if (!columns.empty() || !ops.empty()) {
      return Status::InvalidArgument("a bundle of COPY tuples has no columns or operations");
    }
    if (n > UINT32_MAX || pg_copy.type_oids.size() > 1600) {
      return Status::InvalidArgument("bundle too large");
    }
    return ValidateCopyTuples(pg_copy.tuples, n, pg_copy.type_oids.size());
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].size() != n) {
      return Status::InvalidArgument("bundle column " + std::to_string(i) + " has " +
                                     std::to_string(columns[i].size()) + " rows, expected " +
                                     std::to_string(n));
    }
  }
  if (!ops.empty() && ops.size() != n) {
    return Status::InvalidArgument("bundle has " + std::to_string(ops.size()) +
                                   " row operations for " + std::to_string(n) + " rows");
  }
  if (n > UINT32_MAX || columns.size() > UINT32_MAX) {
    return Status::InvalidArgument("bundle too large");
  }
  return Status::Ok();
}

Status EncodeBundle(const Bundle& bundle, const EncodeOptions& options, std::string* out) {
  DBS_RETURN_IF_ERROR(bundle.Validate());
  const size_t start = out->size();
  out->append(kMagic, 4);
  AppendLE<uint8_t>(out, kBundleFormatVersion);
  AppendLE<uint8_t>(out, 0);  // compression, patched below
  AppendLE<uint16_t>(out, bundle.is_pg_copy() ? kFlagPgCopy : bundle.ops.empty() ? 0 : kFlagHasOps);
  AppendLE<uint32_t>(out, static_cast<uint32_t>(bundle.rows()));
  AppendLE<uint32_t>(out,
                     static_cast<uint32_t>(bundle.is_pg_copy() ? bundle.pg_copy.type_oids.size()
                                                               : bundle.columns.size()));
  AppendLE<uint32_t>(out, 0);  // body size
  AppendLE<uint32_t>(out, 0);  // stored size

  Compression comp = options.compression;
  size_t body_size;
  if (comp == Compression::kNone || bundle.ByteSize() < options.min_compress_bytes) {
    EncodeBody(bundle, out);
    body_size = out->size() - start - kHeaderSize;
    comp = Compression::kNone;
  } else {
    thread_local std::string scratch;
    scratch.clear();
    EncodeBody(bundle, &scratch);
    body_size = scratch.size();
    DBS_RETURN_IF_ERROR(CompressBlock(comp, options.level, scratch, out));
    // Keep the smaller form: incompressible data is stored as is.
    if (out->size() - start - kHeaderSize >= body_size) {
      out->resize(start + kHeaderSize);
      out->append(scratch);
      comp = Compression::kNone;
    }
    if (scratch.capacity() > (8u << 20)) std::string().swap(scratch);
  }
  if (body_size > UINT32_MAX) {
    out->resize(start);
    return Status::ResourceExhausted("bundle body exceeds 4 GiB");
  }
  (*out)[start + 5] = static_cast<char>(comp);
  PutU32(out, start + 16, static_cast<uint32_t>(body_size));
  PutU32(out, start + 20, static_cast<uint32_t>(out->size() - start - kHeaderSize));
  return Status::Ok();
}

// Builds ColumnVectors from decoded bytes; a friend of ColumnVector.
class BundleDecoder {
 public:
  static Status DecodeColumn(ByteReader* r, size_t rows, ColumnVector** slot,
                             std::vector<ColumnVector>* cols) {
    uint8_t type, elem, flags, reserved;
    if (!r->Read(&type) || !r->Read(&elem) || !r->Read(&flags) || !r->Read(&reserved)) {
      return Status::Corruption("bundle: truncated column header");
    }
    if (!IsValidLogicalType(type) || reserved != 0 || (flags & ~3u) != 0) {
      return Status::Corruption("bundle: bad column header");
    }
    const auto t = static_cast<LogicalType>(type);
    const auto et = static_cast<LogicalType>(elem);
    if (t == LogicalType::kArray) {
      if (!IsValidLogicalType(elem) || et == LogicalType::kArray) {
        return Status::Corruption("bundle: bad array element type");
      }
    } else if (elem != 0) {
      return Status::Corruption("bundle: element type on a non-array column");
    }
    ColumnVector& c = cols->emplace_back(t, et);
    *slot = &c;
    c.rows_ = rows;
    const size_t bitmap_bytes = (rows + 7) / 8;
    DBS_RETURN_IF_ERROR(
        ReadBitmap(r, rows, bitmap_bytes, flags & kColHasNulls, &c.nulls_, &c.has_nulls_));
    DBS_RETURN_IF_ERROR(ReadBitmap(r, rows, bitmap_bytes, flags & kColHasUnchanged, &c.unchanged_,
                                   &c.has_unchanged_));
    if (c.has_unchanged_) {
      if (!c.has_nulls_) return Status::Corruption("bundle: unchanged cells must be null");
      for (size_t i = 0; i < bitmap_bytes; ++i) {
        if (c.unchanged_[i] & ~c.nulls_[i]) {
          return Status::Corruption("bundle: unchanged cells must be null");
        }
      }
    }
    std::string_view data;
    if (c.width_ != 0) {
      if (rows > r->remaining() / c.width_ || !r->Bytes(rows * c.width_, &data)) {
        return Status::Corruption("bundle: truncated column data");
      }
      c.fixed_.assign(data);
      if (t == LogicalType::kBool) {
        for (char b : c.fixed_) {
          if (static_cast<uint8_t>(b) > 1) return Status::Corruption("bundle: bad bool");
        }
      }
      return Status::Ok();
    }
    uint32_t heap_size;
    std::string_view lens;
    if (!r->Read(&heap_size) || rows > r->remaining() / 4 || !r->Bytes(rows * 4, &lens) ||
        !r->Bytes(heap_size, &data)) {
      return Status::Corruption("bundle: truncated column data");
    }
    c.offsets_.resize(rows + 1);
    uint64_t acc = 0;
    c.offsets_[0] = 0;
    for (size_t i = 0; i < rows; ++i) {
      uint32_t len;
      std::memcpy(&len, lens.data() + i * 4, 4);
      acc += len;
      if (acc > heap_size) return Status::Corruption("bundle: value lengths exceed the heap");
      if (len != 0 && c.has_nulls_ && ColumnVector::Bit(c.nulls_, i)) {
        return Status::Corruption("bundle: a null cell has a value");
      }
      c.offsets_[i + 1] = static_cast<uint32_t>(acc);
    }
    if (acc != heap_size) return Status::Corruption("bundle: heap size mismatch");
    c.heap_.assign(data);
    if (t == LogicalType::kArray) {
      for (size_t i = 0; i < rows; ++i) {
        if (c.IsNull(i)) continue;
        Status s = ValidateArray(c.GetBytes(i));
        if (!s.ok()) return s.WithContext("bundle row " + std::to_string(i));
      }
    }
    return Status::Ok();
  }

 private:
  static Status ReadBitmap(ByteReader* r, size_t rows, size_t bytes, bool present,
                           std::vector<uint8_t>* bits, bool* flag) {
    if (!present) return Status::Ok();
    std::string_view data;
    if (!r->Bytes(bytes, &data)) return Status::Corruption("bundle: truncated bitmap");
    bits->assign(data.begin(), data.end());
    if (rows % 8 != 0 && (bits->back() >> (rows % 8)) != 0) {
      return Status::Corruption("bundle: bits set past the last row");
    }
    *flag = true;
    return Status::Ok();
  }
};

Result<Bundle> DecodeBundle(std::string_view bytes, const DecodeLimits& limits) {
  ByteReader h(bytes);
  std::string_view magic;
  uint8_t version, comp;
  uint16_t flags;
  uint32_t rows, ncols, body_size, stored_size;
  if (!h.Bytes(4, &magic) || !h.Read(&version) || !h.Read(&comp) || !h.Read(&flags) ||
      !h.Read(&rows) || !h.Read(&ncols) || !h.Read(&body_size) || !h.Read(&stored_size)) {
    return Status::Corruption("bundle: truncated header");
  }
  if (magic != std::string_view(kMagic, 4)) return Status::Corruption("bundle: bad magic");
  if (version != kBundleFormatVersion) {
    return Status::Unsupported("bundle format version " + std::to_string(version) +
                               " (this build reads version " +
                               std::to_string(kBundleFormatVersion) + ")");
  }
  if (comp > static_cast<uint8_t>(Compression::kLz4) ||
      (flags & ~(kFlagHasOps | kFlagPgCopy)) != 0 || flags == (kFlagHasOps | kFlagPgCopy)) {
    return Status::Corruption("bundle: bad header flags");
  }
  if (rows > limits.max_rows || ncols > limits.max_columns || body_size > limits.max_body_bytes) {
    return Status::ResourceExhausted("bundle exceeds decode limits");
  }
  if (ncols == 0 && rows != 0) return Status::Corruption("bundle: rows without columns");
  if (stored_size != h.remaining()) return Status::Corruption("bundle: stored size mismatch");
  std::string_view stored = bytes.substr(kHeaderSize);

  thread_local std::string scratch;
  std::string_view body = stored;
  if (static_cast<Compression>(comp) != Compression::kNone) {
    DBS_RETURN_IF_ERROR(
        DecompressBlock(static_cast<Compression>(comp), stored, body_size, &scratch));
    body = scratch;
  } else if (body_size != stored_size) {
    return Status::Corruption("bundle: stored size mismatch");
  }

  ByteReader r(body);
  Bundle b;
  if (flags & kFlagPgCopy) {
    if (ncols == 0) return Status::Corruption("bundle: COPY tuples without columns");
    b.pg_copy.type_oids.resize(ncols);
    for (uint32_t i = 0; i < ncols; ++i) {
      if (!r.Read(&b.pg_copy.type_oids[i]) || b.pg_copy.type_oids[i] == 0) {
        return Status::Corruption("bundle: bad COPY column type");
      }
    }
    std::string_view tuples;
    if (!r.Bytes(r.remaining(), &tuples)) return Status::Corruption("bundle: truncated");
    DBS_RETURN_IF_ERROR(ValidateCopyTuples(tuples, rows, ncols));
    b.pg_copy.tuples.assign(tuples);
    b.pg_copy.rows = rows;
    if (scratch.capacity() > (8u << 20)) std::string().swap(scratch);
    return b;
  }
  if (flags & kFlagHasOps) {
    std::string_view ops;
    if (!r.Bytes(rows, &ops)) return Status::Corruption("bundle: truncated row operations");
    b.ops.resize(rows);
    for (uint32_t i = 0; i < rows; ++i) {
      auto op = static_cast<uint8_t>(ops[i]);
      if (op < 1 || op > 4) return Status::Corruption("bundle: bad row operation");
      b.ops[i] = static_cast<RowOp>(op);
    }
  }
  b.columns.reserve(ncols);
  for (uint32_t i = 0; i < ncols; ++i) {
    ColumnVector* c = nullptr;
    Status s = BundleDecoder::DecodeColumn(&r, rows, &c, &b.columns);
    if (!s.ok()) return s.WithContext("column " + std::to_string(i));
  }
  if (r.remaining() != 0) return Status::Corruption("bundle: trailing bytes");
  if (scratch.capacity() > (8u << 20)) std::string().swap(scratch);
  return b;
}

}  // namespace dbs
