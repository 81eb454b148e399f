// A table folder written by a load+cdc or cdc stream (sinks/files/changes.h) read as the
// table's current state: the manifest's part files (the snapshot) with the change files of
// <table>/_changes/ applied in order. This is what the run's verification compares with the
// source, and what a file source reads from such a folder.
//
// Replay rules, per key (the manifest's primary key):
//  - the last event of a key decides: insert or update -> the row, delete or update_before ->
//    no row (update_before carries the old key of an update that changed it);
//  - a cell the source did not send (_unchanged) keeps the key's previous value;
//  - a truncate drops everything before it (the snapshot too).
// Without a primary key, rows are counted as whole rows: the snapshot and inserts/updates add
// one, deletes/update_before remove one; a row with unchanged cells cannot be replayed so
// (InvalidArgument).
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "sources/files/file_common.h"

namespace dbs::files {

// Whether `name` (a file name, no folder) is a change file: "changes-*" of a known format.
bool IsChangeFileName(const std::string& name);

// The change files of a table folder (<dir>/_changes/changes-*), in name order (change order);
// empty when there are none.
std::vector<std::string> ChangeFilesIn(const std::string& table_dir);

// The FROM clause reading `file` of a manifest's table with the manifest's stored column types
// (CSV/JSONL), plus the change columns first when `change_file`.
std::string ManifestReader(const Manifest& m, const std::string& file, bool change_file);

// A SELECT giving the table's current state, with the manifest's stored columns (names and
// types as in the part files).
Result<std::string> ReplaySql(const Manifest& m, const std::vector<std::string>& parts,
                              const std::vector<std::string>& changes);

}  // namespace dbs::files
