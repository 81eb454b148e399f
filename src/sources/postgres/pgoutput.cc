#include "sources/postgres/pgoutput.h"

#include <string>

#include "postgres/pg_binary.h"

namespace dbs::pg {

namespace {

// A bounds-checked big-endian reader over one message.
class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {}
  size_t left() const { return b_.size() - pos_; }
  bool U8(uint8_t* v) {
    if (left() < 1) return false;
    *v = static_cast<uint8_t>(b_[pos_++]);
    return true;
  }
  bool U16(uint16_t* v) {
    if (left() < 2) return false;
    *v = LoadBE16(b_.data() + pos_);
    pos_ += 2;
    return true;
  }
  bool U32(uint32_t* v) {
    if (left() < 4) return false;
    *v = LoadBE32(b_.data() + pos_);
    pos_ += 4;
    return true;
  }
  bool U64(uint64_t* v) {
    if (left() < 8) return false;
    *v = LoadBE64(b_.data() + pos_);
    pos_ += 8;
    return true;
  }
  // A NUL-terminated string.
  bool Str(std::string_view* v) {
    const size_t end = b_.find('\0', pos_);
    if (end == std::string_view::npos) return false;
    *v = b_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return true;
  }
  bool Bytes(size_t n, std::string_view* v) {
    if (left() < n) return false;
    *v = b_.substr(pos_, n);
    pos_ += n;
    return true;
  }

 private:
  std::string_view b_;
  size_t pos_ = 0;
};

Status Bad(PgoutputKind kind, const char* what) {
  return Status::Corruption(std::string("malformed pgoutput message '") + static_cast<char>(kind) +
                            "' from the server (" + what + ")");
}

bool ReadTuple(Reader* r, std::vector<TupleCell>* cells) {
  uint16_t n = 0;
  if (!r->U16(&n)) return false;
  // Every cell takes at least its kind byte.
  if (n > r->left()) return false;
  cells->resize(n);
  for (uint16_t i = 0; i < n; ++i) {
    uint8_t k = 0;
    if (!r->U8(&k)) return false;
    TupleCell& c = (*cells)[i];
    c.data = {};
    switch (k) {
      case 'n':
        c.kind = TupleCell::Kind::kNull;
        break;
      case 'u':
        c.kind = TupleCell::Kind::kUnchanged;
        break;
      case 't':
      case 'b': {
        c.kind = k == 't' ? TupleCell::Kind::kText : TupleCell::Kind::kBinary;
        uint32_t len = 0;
        if (!r->U32(&len) || !r->Bytes(len, &c.data)) return false;
        break;
      }
      default:
        return false;
    }
  }
  return true;
}

}  // namespace

Status DecodePgoutput(std::string_view bytes, int proto_version, bool in_stream,
                      PgoutputMessage* m) {
  if (bytes.empty()) return Status::Corruption("empty pgoutput message from the server");
  Reader r(bytes.substr(1));
  const char tag = bytes[0];
  const auto kind = static_cast<PgoutputKind>(tag);
  m->kind = kind;
  m->xid = m->subxid = 0;
  m->lsn = m->end_lsn = 0;
  m->timestamp = 0;
  m->flags = 0;
  m->oid = 0;
  m->nspname = m->name = m->content = {};
  m->replica_identity = 0;
  m->columns.clear();
  m->old_kind = 0;
  m->old_tuple.clear();
  m->new_tuple.clear();
  m->truncate_oids.clear();
  const bool streaming_kind = tag == 'S' || tag == 'E' || tag == 'c' || tag == 'A';
  if (streaming_kind && proto_version < 2) {
    return Bad(kind, "stream message in protocol version 1");
  }
  // Data messages inside a stream block start with the transaction id.
  auto stream_xid = [&]() { return !in_stream || r.U32(&m->xid); };
  uint64_t u64 = 0;
  switch (kind) {
    case PgoutputKind::kBegin:
      if (!r.U64(&m->lsn) || !r.U64(&u64) || !r.U32(&m->xid)) return Bad(kind, "truncated");
      m->timestamp = static_cast<int64_t>(u64);
      break;
    case PgoutputKind::kCommit:
      if (!r.U8(&m->flags) || !r.U64(&m->lsn) || !r.U64(&m->end_lsn) || !r.U64(&u64)) {
        return Bad(kind, "truncated");
      }
      m->timestamp = static_cast<int64_t>(u64);
      break;
    case PgoutputKind::kOrigin:
      if (!r.U64(&m->lsn) || !r.Str(&m->name)) return Bad(kind, "truncated");
      break;
    case PgoutputKind::kRelation: {
      uint8_t ident = 0;
      uint16_t ncols = 0;
      if (!stream_xid() || !r.U32(&m->oid) || !r.Str(&m->nspname) || !r.Str(&m->name) ||
          !r.U8(&ident) || !r.U16(&ncols)) {
        return Bad(kind, "truncated");
      }
      m->replica_identity = static_cast<char>(ident);
      // Each column takes at least 10 bytes (flags, name terminator, type, typmod).
      if (static_cast<size_t>(ncols) * 10 > r.left()) return Bad(kind, "column count");
      m->columns.resize(ncols);
      for (RelationColumn& c : m->columns) {
        uint32_t mod = 0;
        if (!r.U8(&c.flags) || !r.Str(&c.name) || !r.U32(&c.type_oid) || !r.U32(&mod)) {
          return Bad(kind, "truncated column");
        }
        c.type_mod = static_cast<int32_t>(mod);
      }
      break;
    }
    case PgoutputKind::kType:
      if (!stream_xid() || !r.U32(&m->oid) || !r.Str(&m->nspname) || !r.Str(&m->name)) {
        return Bad(kind, "truncated");
      }
      break;
    case PgoutputKind::kInsert: {
      uint8_t n = 0;
      if (!stream_xid() || !r.U32(&m->oid) || !r.U8(&n)) return Bad(kind, "truncated");
      if (n != 'N') return Bad(kind, "expected a new tuple");
      if (!ReadTuple(&r, &m->new_tuple)) return Bad(kind, "tuple");
      break;
    }
    case PgoutputKind::kUpdate: {
      uint8_t k = 0;
      if (!stream_xid() || !r.U32(&m->oid) || !r.U8(&k)) return Bad(kind, "truncated");
      if (k == 'K' || k == 'O') {
        m->old_kind = static_cast<char>(k);
        if (!ReadTuple(&r, &m->old_tuple)) return Bad(kind, "old tuple");
        if (!r.U8(&k)) return Bad(kind, "truncated");
      }
      if (k != 'N') return Bad(kind, "expected a new tuple");
      if (!ReadTuple(&r, &m->new_tuple)) return Bad(kind, "tuple");
      break;
    }
    case PgoutputKind::kDelete: {
      uint8_t k = 0;
      if (!stream_xid() || !r.U32(&m->oid) || !r.U8(&k)) return Bad(kind, "truncated");
      if (k != 'K' && k != 'O') return Bad(kind, "expected an old tuple");
      m->old_kind = static_cast<char>(k);
      if (!ReadTuple(&r, &m->old_tuple)) return Bad(kind, "old tuple");
      break;
    }
    case PgoutputKind::kTruncate: {
      uint32_t n = 0;
      if (!stream_xid() || !r.U32(&n) || !r.U8(&m->flags)) return Bad(kind, "truncated");
      if (static_cast<uint64_t>(n) * 4 > r.left()) return Bad(kind, "relation count");
      m->truncate_oids.resize(n);
      for (uint32_t& oid : m->truncate_oids) {
        if (!r.U32(&oid)) return Bad(kind, "truncated");
      }
      break;
    }
    case PgoutputKind::kMessage: {
      uint32_t len = 0;
      if (!stream_xid() || !r.U8(&m->flags) || !r.U64(&m->lsn) || !r.Str(&m->name) ||
          !r.U32(&len) || !r.Bytes(len, &m->content)) {
        return Bad(kind, "truncated");
      }
      break;
    }
    case PgoutputKind::kStreamStart:
      if (!r.U32(&m->xid) || !r.U8(&m->flags)) return Bad(kind, "truncated");
      break;
    case PgoutputKind::kStreamStop:
      break;
    case PgoutputKind::kStreamCommit:
      if (!r.U32(&m->xid) || !r.U8(&m->flags) || !r.U64(&m->lsn) || !r.U64(&m->end_lsn) ||
          !r.U64(&u64)) {
        return Bad(kind, "truncated");
      }
      m->timestamp = static_cast<int64_t>(u64);
      break;
    case PgoutputKind::kStreamAbort:
      // Protocol 4 (parallel apply) appends the abort LSN and time; they are not needed here.
      if (!r.U32(&m->xid) || !r.U32(&m->subxid)) return Bad(kind, "truncated");
      return Status::Ok();
    default:
      return Status::Corruption("unknown pgoutput message type 0x" +
                                std::to_string(static_cast<unsigned char>(tag)) +
                                " from the server");
  }
  if (r.left() != 0) return Bad(kind, "trailing bytes");
  return Status::Ok();
}

}  // namespace dbs::pg
