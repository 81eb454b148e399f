#include "sinks/change_plan.h"

#include <cstring>
#include <map>
#include <unordered_map>

namespace dbs::cdc {

namespace {

// Bytes identifying a key: per key column a NULL marker, then the slot bytes (fixed width) or
// the length and bytes (variable length). Equal values of one column have equal bytes.
std::string KeyBytes(const Image& img, const std::vector<size_t>& key) {
  std::string out;
  for (size_t k : key) {
    const Cell& c = img[k];
    if (c.null()) {
      out.push_back('\0');
      continue;
    }
    out.push_back('\1');
    const ColumnVector& col = *c.col;
    if (col.width() > 0) {
      out.append(col.FixedSlot(c.row), col.width());
    } else {
      std::string_view v = col.GetBytes(c.row);
      const uint32_t n = static_cast<uint32_t>(v.size());
      out.append(reinterpret_cast<const char*>(&n), sizeof n);
      out.append(v);
    }
  }
  return out;
}

Image ImageOf(const Bundle& b, size_t row) {
  Image img(b.columns.size());
  for (size_t i = 0; i < b.columns.size(); ++i) {
    if (!b.columns[i].IsUnchanged(row)) img[i] = Cell{&b.columns[i], row};
  }
  return img;
}

bool Full(const Image& img) {
  for (const Cell& c : img) {
    if (!c.present()) return false;
  }
  return true;
}

Image Merge(Image base, const Image& over) {
  for (size_t i = 0; i < over.size(); ++i) {
    if (over[i].present()) base[i] = over[i];
  }
  return base;
}

Status CheckSegment(const TableSchema& t, const Bundle& b) {
  const std::string name = t.QualifiedName();
  if (b.columns.size() != t.columns.size()) {
    return Status::InvalidArgument("changes of table " + name + " have " +
                                   std::to_string(b.columns.size()) + " columns, its schema has " +
                                   std::to_string(t.columns.size()));
  }
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (b.columns[i].type() != t.columns[i].type ||
        b.columns[i].element_type() != t.columns[i].element_type) {
      return Status::InvalidArgument("changes of table " + name + ": column " + t.columns[i].name +
                                     " holds " + std::string(LogicalTypeName(b.columns[i].type())) +
                                     " values, the schema says " +
                                     std::string(LogicalTypeName(t.columns[i].type)));
    }
  }
  if (b.ops.size() != b.rows()) {
    return Status::InvalidArgument("changes of table " + name + " have " +
                                   std::to_string(b.ops.size()) + " row operations for " +
                                   std::to_string(b.rows()) + " rows");
  }
  return b.Validate();
}

struct TableState {
  long open = -1;  // index of the table's open kKeyed / kKeylessInsert step
  std::unordered_map<std::string, size_t> index;  // key bytes -> entry of the open step
  std::vector<size_t> key;
};

}  // namespace

Result<Plan> PlanBatch(const ChangeBatch& batch) {
  Plan plan;
  std::map<const TableSchema*, TableState> states;
  for (const ChangeTxn* txn : batch.txns) {
    if (txn == nullptr) return Status::InvalidArgument("a change batch holds a null transaction");
    for (const ChangeSegment& seg : txn->segments) {
      const std::string qname = seg.table.QualifiedName();
      if (batch.tables == nullptr) {
        return Status::InvalidArgument("change batch without table schemas (table " + qname + ")");
      }
      auto it = batch.tables->find(qname);
      if (it == batch.tables->end()) {
        return Status::InvalidArgument("transaction " + txn->xid + " changes table " + qname +
                                       ", which the batch has no schema for");
      }
      const TableSchema* ts = &it->second;
      auto [sit, fresh] = states.try_emplace(ts);
      TableState& st = sit->second;
      if (fresh) {
        for (const std::string& k : ts->primary_key) {
          const int i = ts->FindColumn(k);
          if (i < 0) {
            return Status::InvalidArgument("table " + qname + ": primary key column " + k +
                                           " is not among its columns");
          }
          st.key.push_back(static_cast<size_t>(i));
        }
      }
      auto close = [&]() {
        st.open = -1;
        st.index.clear();
      };
      auto add_step = [&](Step::Kind kind) -> Step& {
        Step& s = plan.steps.emplace_back();
        s.kind = kind;
        s.table = ts;
        s.key = st.key;
        return s;
      };
      if (seg.truncate) {
        close();
        add_step(Step::Kind::kTruncate);
        ++plan.changes;
        continue;
      }
      const Bundle& b = seg.rows;
      Status cs = CheckSegment(*ts, b);
      if (!cs.ok()) return cs.WithContext("transaction " + txn->xid);
      const bool keyed = !st.key.empty();
      auto missing_key = [&](const char* what, size_t r) {
        return Status::InvalidArgument("table " + qname + ", transaction " + txn->xid + ", row " +
                                       std::to_string(r + 1) + ": the " + what +
                                       " does not carry every primary key column");
      };
      auto has_key = [&](const Image& img) {
        for (size_t k : st.key) {
          if (!img[k].present()) return false;
        }
        return true;
      };
      // The open kKeyed step of the table (opened on demand) and entry lookups in it.
      auto keyed_step = [&]() -> Step& {
        if (st.open < 0) {
          add_step(Step::Kind::kKeyed);
          st.open = static_cast<long>(plan.steps.size() - 1);
        }
        return plan.steps[static_cast<size_t>(st.open)];
      };
      auto find = [&](const std::string& key) -> KeyedEntry* {
        if (st.open < 0) return nullptr;
        auto e = st.index.find(key);
        if (e == st.index.end()) return nullptr;
        return &plan.steps[static_cast<size_t>(st.open)].entries[e->second];
      };
      auto set = [&](const std::string& key, KeyedEntry::Kind kind, Image img) {
        Step& s = keyed_step();
        auto [e, added] = st.index.try_emplace(key, s.entries.size());
        if (added) {
          s.entries.push_back(KeyedEntry{kind, std::move(img)});
        } else {
          s.entries[e->second] = KeyedEntry{kind, std::move(img)};
        }
      };

      const size_t rows = b.rows();
      for (size_t r = 0; r < rows; ++r) {
        const RowOp op = b.ops[r];
        if (op == RowOp::kUpdateBefore) {
          if (r + 1 >= rows || b.ops[r + 1] != RowOp::kUpdate) {
            return Status::InvalidArgument("table " + qname + ", transaction " + txn->xid +
                                           ", row " + std::to_string(r + 1) +
                                           ": an old row image is not followed by an update");
          }
          continue;
        }
        const bool has_before = r > 0 && b.ops[r - 1] == RowOp::kUpdateBefore;
        Image img = ImageOf(b, r);
        ++plan.changes;
        if (!keyed) {
          switch (op) {
            case RowOp::kInsert: {
              if (st.open < 0) {
                add_step(Step::Kind::kKeylessInsert);
                st.open = static_cast<long>(plan.steps.size() - 1);
              }
              plan.steps[static_cast<size_t>(st.open)].rows.push_back(std::move(img));
              break;
            }
            case RowOp::kDelete: {
              close();
              add_step(Step::Kind::kKeylessDelete).before = std::move(img);
              break;
            }
            case RowOp::kUpdate: {
              if (!has_before) {
                return Status::InvalidArgument(
                    "table " + qname +
                    " has no primary key and the source sent an update "
                    "without the old row (transaction " +
                    txn->xid +
                    "): give the source table a key, or REPLICA IDENTITY FULL / full row images");
              }
              close();
              Step& s = add_step(Step::Kind::kKeylessUpdate);
              s.before = ImageOf(b, r - 1);
              s.after = std::move(img);
              break;
            }
            default:
              return Status::InvalidArgument("table " + qname + ": unknown row operation " +
                                             std::to_string(static_cast<int>(op)));
          }
          continue;
        }
        switch (op) {
          case RowOp::kInsert: {
            if (!has_key(img)) return missing_key("inserted row", r);
            const std::string key = KeyBytes(img, st.key);
            set(key, KeyedEntry::Kind::kUpsert, std::move(img));
            break;
          }
          case RowOp::kDelete: {
            if (!has_key(img)) return missing_key("deleted row", r);
            const std::string key = KeyBytes(img, st.key);
            set(key, KeyedEntry::Kind::kDelete, std::move(img));
            break;
          }
          case RowOp::kUpdate: {
            Image before;
            if (has_before) {
              before = ImageOf(b, r - 1);
              if (!has_key(before)) return missing_key("old row image", r - 1);
              for (size_t k : st.key) {
                if (!img[k].present()) img[k] = before[k];
              }
            }
            if (!has_key(img)) return missing_key("updated row", r);
            const bool full = Full(img);
            const std::string new_key = KeyBytes(img, st.key);
            const std::string old_key = has_before ? KeyBytes(before, st.key) : new_key;
            KeyedEntry* prev = find(old_key);
            if (old_key != new_key) {
              if (full) {
                set(old_key, KeyedEntry::Kind::kDelete, std::move(before));
                set(new_key, KeyedEntry::Kind::kUpsert, std::move(img));
              } else if (prev != nullptr && prev->kind == KeyedEntry::Kind::kUpsert) {
                Image merged = Merge(prev->image, img);
                set(old_key, KeyedEntry::Kind::kDelete, std::move(before));
                set(new_key, KeyedEntry::Kind::kUpsert, std::move(merged));
              } else if (prev != nullptr && prev->kind == KeyedEntry::Kind::kDelete) {
                // The old row is gone: the update changes nothing.
              } else {
                // Earlier partial updates of the old key (in the open step) run first.
                close();
                Step& s = add_step(Step::Kind::kMove);
                s.before = std::move(before);
                s.after = std::move(img);
              }
            } else if (full) {
              set(new_key, KeyedEntry::Kind::kUpsert, std::move(img));
            } else if (prev == nullptr) {
              set(new_key, KeyedEntry::Kind::kUpdate, std::move(img));
            } else if (prev->kind != KeyedEntry::Kind::kDelete) {
              prev->image = Merge(std::move(prev->image), img);
            }
            break;
          }
          default:
            return Status::InvalidArgument("table " + qname + ": unknown row operation " +
                                           std::to_string(static_cast<int>(op)));
        }
      }
    }
  }
  return plan;
}

std::vector<std::vector<size_t>> GroupUpdates(const Step& step) {
  std::vector<std::vector<size_t>> groups;
  std::map<std::vector<bool>, size_t> by_mask;
  for (size_t i = 0; i < step.entries.size(); ++i) {
    const KeyedEntry& e = step.entries[i];
    if (e.kind != KeyedEntry::Kind::kUpdate) continue;
    std::vector<bool> mask(e.image.size());
    for (size_t c = 0; c < e.image.size(); ++c) mask[c] = e.image[c].present();
    auto [it, added] = by_mask.try_emplace(std::move(mask), groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}

std::string CdcStreamName(const SinkOptions& options) {
  if (!options.cdc_stream.empty()) return options.cdc_stream;
  const size_t dot = options.stream.rfind('.');
  return dot == std::string::npos ? options.stream : options.stream.substr(0, dot);
}

const char* PositionKindName(SourcePosition::Kind kind) {
  switch (kind) {
    case SourcePosition::Kind::kPgLsn:
      return "pg_lsn";
    case SourcePosition::Kind::kMysqlGtid:
      return "mysql_gtid";
    case SourcePosition::Kind::kMysqlFilePos:
      return "mysql_file_pos";
    case SourcePosition::Kind::kNone:
      break;
  }
  return "";
}

SourcePosition::Kind PositionKindFromName(std::string_view name) {
  if (name == "pg_lsn") return SourcePosition::Kind::kPgLsn;
  if (name == "mysql_gtid") return SourcePosition::Kind::kMysqlGtid;
  if (name == "mysql_file_pos") return SourcePosition::Kind::kMysqlFilePos;
  return SourcePosition::Kind::kNone;
}

}  // namespace dbs::cdc
