// Planning a ChangeBatch (sinks/sink.h) into set-based steps, shared by the SQL sinks.
//
// ApplyChanges must give exactly the result of applying the batch's row changes one by one, in
// order. PlanBatch turns the changes into a list of steps whose execution in list order has
// that result while letting a sink apply most of them with a few set-based statements:
//  - Tables with a primary key: consecutive changes of a table are compacted per key into ONE
//    entry of a kKeyed step (first-appearance order of keys), so no two changes of one key ever
//    land in the same set-based statement:
//      insert                     -> kUpsert (full image)
//      delete                     -> kDelete (key cells set)
//      update, every cell present -> kUpsert (full image)
//      update with unchanged cells: onto an earlier kUpsert of the key in the step -> kUpsert
//        of the merged image; onto an earlier kUpdate -> kUpdate of the merged cells; onto an
//        earlier kDelete -> nothing (an UPDATE of a missing row changes nothing); else kUpdate
//        (set the present cells of the target's row).
//      key change (a kUpdateBefore row whose key differs from the new key): kDelete of the old
//        key, then the new key as above (a partial image merges onto an earlier full image of
//        the OLD key). A partial image whose old row is only in the target cannot be merged:
//        the table's open step is closed and a kMove step (UPDATE old key -> new key and the
//        present cells) follows.
//    Entries of one kKeyed step have pairwise different keys, so a sink may run its deletes,
//    upserts and updates in any order (per table; tables are independent once foreign keys and
//    triggers are off, see the sinks' headers).
//  - Tables without a primary key: consecutive inserts form one kKeylessInsert step (plain
//    inserts); each delete and update is its own step matching ONE row on every present cell
//    of the old image (updates need a kUpdateBefore row: REPLICA IDENTITY FULL / full images).
//  - A truncate segment closes the table's open step and adds a kTruncate step.
// A table's key is the source TableSchema's primary_key; key cells of a kUpdate that the source
// did not send (MySQL minimal images) are taken from its kUpdateBefore row.
//
// The plan points into the batch's bundles (Cell): it is valid while the batch is. Pure,
// thread-safe. Errors are InvalidArgument naming the table (a segment of a table missing from
// batch.tables, a bundle that does not match its schema, a key cell missing, an update of a
// keyless table without an old image).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sinks/sink.h"

namespace dbs::cdc {

// One cell of a row image; `col == nullptr`: not set (unchanged / not sent).
struct Cell {
  const ColumnVector* col = nullptr;
  size_t row = 0;
  bool present() const { return col != nullptr; }
  bool null() const { return col == nullptr || col->IsNull(row); }
};

// One cell per source column (TableSchema::columns order).
using Image = std::vector<Cell>;

struct KeyedEntry {
  enum class Kind : uint8_t { kUpsert, kDelete, kUpdate } kind = Kind::kUpsert;
  Image image;
};

struct Step {
  enum class Kind : uint8_t {
    kKeyed,          // entries
    kTruncate,       //
    kMove,           // before (old key), after (new key + present cells)
    kKeylessInsert,  // rows
    kKeylessDelete,  // before
    kKeylessUpdate,  // before, after
  } kind = Kind::kKeyed;
  const TableSchema* table = nullptr;  // the source schema from batch.tables
  std::vector<size_t> key;             // indexes of the primary key columns in table->columns
  std::vector<KeyedEntry> entries;
  std::vector<Image> rows;
  Image before;
  Image after;
};

struct Plan {
  std::vector<Step> steps;
  size_t changes = 0;  // row changes (inserts, updates, deletes) plus one per truncate
};

Result<Plan> PlanBatch(const ChangeBatch& batch);

// The kUpdate entries of a kKeyed step grouped by their set of present columns (one UPDATE per
// group), in first-appearance order; each group lists entry indexes.
std::vector<std::vector<size_t>> GroupUpdates(const Step& step);

// SinkOptions::cdc_stream, or `stream` up to its last '.'.
std::string CdcStreamName(const SinkOptions& options);

// Names of SourcePosition::Kind stored in the checkpoint tables ("" for kNone).
const char* PositionKindName(SourcePosition::Kind kind);
SourcePosition::Kind PositionKindFromName(std::string_view name);

}  // namespace dbs::cdc
