// Change batches built by hand for Sink::ApplyChanges tests: cells (NULL, unchanged, an
// integer, a text), rows with their RowOp, and a builder that owns the transactions and the
// schema map a ChangeBatch points into.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/bundle.h"
#include "core/change.h"
#include "core/schema.h"
#include "sinks/sink.h"

namespace dbs::testing {

// A cell of a hand-built row: NULL, unchanged, an integer or a text.
struct V {
  enum class K { kNull, kUnchanged, kInt, kText } k = K::kNull;
  int64_t i = 0;
  std::string s;
};
inline V Null() { return V{}; }
inline V U() { return V{V::K::kUnchanged, 0, ""}; }
inline V I(int64_t i) { return V{V::K::kInt, i, ""}; }
inline V S(std::string s) { return V{V::K::kText, 0, std::move(s)}; }

struct R {
  RowOp op;
  std::vector<V> cells;
};

inline Bundle Build(const TableSchema& t, const std::vector<R>& rows) {
  Bundle b;
  for (const Column& c : t.columns) b.columns.emplace_back(c.type, c.element_type);
  for (const R& r : rows) {
    b.ops.push_back(r.op);
    for (size_t i = 0; i < t.columns.size(); ++i) {
      const V& v = r.cells[i];
      ColumnVector& col = b.columns[i];
      switch (v.k) {
        case V::K::kNull:
          col.AppendNull();
          break;
        case V::K::kUnchanged:
          col.AppendUnchanged();
          break;
        case V::K::kInt:
          col.AppendInt(v.i);
          break;
        case V::K::kText:
          col.AppendBytes(v.s);
          break;
      }
    }
  }
  return b;
}

inline Column Col(const std::string& name, const std::string& type, LogicalType lt,
                  bool nullable = true) {
  Column c;
  c.name = name;
  c.source_type = type;
  c.type = lt;
  c.nullable = nullable;
  return c;
}

// Owns transactions and the schema map a ChangeBatch points into.
struct BatchBuilder {
  std::map<std::string, TableSchema> tables;
  std::vector<std::unique_ptr<ChangeTxn>> txns;

  void AddTable(const TableSchema& t) { tables[t.QualifiedName()] = t; }
  // One transaction with one segment per (table, rows) pair.
  BatchBuilder& Txn(const std::vector<std::pair<const TableSchema*, std::vector<R>>>& segs) {
    auto txn = std::make_unique<ChangeTxn>();
    txn->xid = "tx" + std::to_string(txns.size() + 1);
    for (const auto& [t, rows] : segs) {
      ChangeSegment seg;
      seg.table = {t->schema, t->name};
      seg.rows = Build(*t, rows);
      txn->segments.push_back(std::move(seg));
    }
    txns.push_back(std::move(txn));
    return *this;
  }
  BatchBuilder& Truncate(const TableSchema& t) {
    auto txn = std::make_unique<ChangeTxn>();
    txn->xid = "tx" + std::to_string(txns.size() + 1);
    ChangeSegment seg;
    seg.table = {t.schema, t.name};
    seg.truncate = true;
    txn->segments.push_back(std::move(seg));
    txns.push_back(std::move(txn));
    return *this;
  }
  ChangeBatch Batch(uint64_t first, uint64_t last, int partition = 0) const {
    ChangeBatch b;
    b.partition = partition;
    b.first_seq = first;
    b.last_seq = last;
    b.position.kind = SourcePosition::Kind::kPgLsn;
    b.position.value = "0/" + std::to_string(last * 100);
    for (const auto& t : txns) b.txns.push_back(t.get());
    b.tables = &tables;
    return b;
  }
};

}  // namespace dbs::testing
