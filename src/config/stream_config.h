// Stream configuration: what to move, from where to where, and how (docs/stream-config.md).
//
// ParseStreamConfig validates untrusted JSON completely: unknown fields, wrong types and
// out-of-range values are InvalidArgument errors that name the field ("tables[2].columns must
// be an array of strings"). Nothing is defaulted silently except the documented defaults.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "config/connection.h"
#include "core/compress.h"
#include "core/result.h"
#include "typemap/type_mapping_options.h"

namespace dbs {

enum class StreamMode { kLoad, kCdc, kLoadCdc };
enum class SchemaPolicy { kFailIfExists, kCreateMissing, kDropAndRecreate, kValidateExisting };
enum class WriteMode { kAppend, kTruncateAndLoad, kUpsert, kFailIfNotEmpty };
// What a writer does with a MySQL zero date when the target cannot store it.
enum class ZeroDatePolicy { kNull, kError, kNegInfinity };
// What a file source does with a row that does not parse (wrong field count, a value not of
// its column's type, invalid UTF-8, a broken JSON line): fail the run naming file, line and
// column, or leave the row out and report it (docs/files.md, "Malformed rows").
enum class MalformedRows { kFail, kSkip };

std::string_view StreamModeName(StreamMode m);
std::string_view SchemaPolicyName(SchemaPolicy p);
std::string_view WriteModeName(WriteMode m);

// File sources without a manifest: the CSV dialect, where the user sets it; every unset field
// is sniffed by DuckDB from the file (docs/files.md, "CSV dialect").
struct CsvDialectSettings {
  std::optional<std::string> delimiter;    // one character ("\t" for tab)
  std::optional<std::string> quote;        // one character, or "" (no quoting)
  std::optional<std::string> escape;       // one character, or "" (none)
  std::optional<bool> header;              // false: columns are named column0, column1, ...
  std::optional<std::string> null_string;  // the text that stands for NULL ("": an empty field)
  std::optional<std::string> encoding;     // "utf-8", "utf-16" or "latin-1"
  bool empty() const {
    return !delimiter && !quote && !escape && !header && !null_string && !encoding;
  }
};

struct TableSelector {
  // "schema.table" or "table"; '*' and '?' are wildcards in either part. Without a schema the
  // source's database (MySQL) or "public" (PostgreSQL) is meant.
  std::string pattern;
  std::vector<std::string> columns;  // empty: all columns
  std::string filter;                // SQL boolean expression on the source (WHERE clause)
  std::string query;                 // custom SELECT; then `pattern` is the target table name
  std::string target;                // target table name; empty: the source name
  // File sources without a manifest: DuckDB types that replace the sniffed ones, by column
  // name ("DECIMAL(12,2)", "BIGINT", "VARCHAR", ...; see ValidColumnType). Empty: as sniffed.
  std::map<std::string, std::string> column_types = {};
  // File sources without a manifest, CSV files: the dialect settings (`csv`).
  CsvDialectSettings csv = {};
  // File sources: a glob relative to the source's folder or prefix ("events/2026-*/*.parquet";
  // `*`, `?` and `[...]` match within one path part) whose files are together the table
  // `pattern` names (`files`). Empty: the table is a file or folder found under the source.
  std::string files = {};
};

struct StructureOptions {
  bool tables = true;
  bool indexes = true;
  bool foreign_keys = true;
  bool checks = true;
  // Views, routines, triggers, sequences, events, policies, rules and extensions of the
  // selected schemas (core/schema.h, SchemaObject): migrated where the target takes them,
  // reported otherwise. Off: none is created, each is reported as skipped.
  bool objects = true;
};

struct StreamLimits {
  uint64_t rows = 0;                // stop after this many rows per table (0: no limit)
  uint64_t events = 0;              // CDC: stop after this many change events
  std::chrono::seconds elapsed{0};  // stop after this long
};

// Change data capture settings (modes cdc and load+cdc).
struct CdcSettings {
  bool inserts = true;  // operation filter: which row changes are applied
  bool updates = true;
  bool deletes = true;
  std::string slot_name;         // PostgreSQL; empty: "dbs_<stream>"
  std::string publication_name;  // PostgreSQL; empty: "dbs_<stream>"
  uint32_t server_id = 0;        // MySQL/MariaDB replica id; 0: derived from the stream name
  // Changes per target transaction: many small source transactions are applied together (in
  // commit order, atomically) up to this many row changes.
  uint32_t batch_changes = 5000;
  // How long the reader waits to fill a message before publishing (latency vs. throughput).
  std::chrono::milliseconds max_delay{5};
  // Start position for mode cdc ("" = from now): "0/16B3748", a GTID set or "file:offset".
  std::string start_position;
};

struct StreamConfig {
  std::string name;  // [A-Za-z0-9_-], 1..64 chars
  StreamMode mode = StreamMode::kLoad;
  ConnectionConfig source;
  ConnectionConfig target;
  std::string target_schema;  // PostgreSQL schema / MySQL database; empty: the source's name
  std::vector<TableSelector> tables;
  std::vector<std::string> exclude;  // patterns, as in TableSelector::pattern
  // A bundle ends at `bundle_size` rows or `bundle_bytes` bytes of row data, whichever comes
  // first (and always under 3/4 of NATS max_payload). The default is sized by bytes: rows of
  // any width travel in messages the broker handles well (docs/benchmarks.md, the sweep).
  uint32_t bundle_size = 100'000;    // rows per bundle, at most (dataBundleSize)
  uint32_t bundle_bytes = 1u << 20;  // bytes of row data per bundle, at most (dataBundleBytes)
  SchemaPolicy schema_policy = SchemaPolicy::kCreateMissing;
  WriteMode write_mode = WriteMode::kAppend;
  StructureOptions structure;
  StreamLimits limits;
  int readers = 2;  // parallel read connections
  // Tables larger than this are split into chunks of it (splitRows); 0: the source's default
  // (Source::DefaultSplitRows: MySQL/MariaDB 250,000; PostgreSQL no split).
  uint64_t split_rows = 0;
  Compression compression = Compression::kLz4;
  ZeroDatePolicy zero_date = ZeroDatePolicy::kError;
  MalformedRows malformed_rows = MalformedRows::kFail;  // file sources only
  bool verify = true;                                   // compare counts and checksums after a load
  bool keep_partial = false;  // on failure, keep what was written (else drop new tables)
  // Row data on the bus encrypted with `bus_key` (security/data_cipher.h). The API keeps one
  // key per stream in its secrets store and sends it sealed; `dbstreams run` makes one per run;
  // separate stream-reader/stream-writer processes need it in the stream file. A key given
  // turns encryption on.
  bool bus_encryption = false;
  std::string bus_key;  // 64 hex digits; a secret (never logged, sealed on the bus)
  CdcSettings cdc;
  TypeMappingOptions type_mapping;  // `typeMapping`: the documented type-mapping choices
};

Result<StreamConfig> ParseStreamConfig(const nlohmann::json& j);
Result<StreamConfig> LoadStreamConfigFile(const std::string& path);
// "<where> is not valid JSON: line L, column C: <what the parser expected>" for a document
// that does not parse.
std::string JsonSyntaxError(const std::string& where, const std::string& text);

// The target schema (PostgreSQL) or database (MySQL) of a source table: targetSchema when set;
// else for a MySQL target its connection's database (or the source schema when none is given);
// else (PostgreSQL target) the source schema name — a MySQL database becomes a schema.
std::string TargetSchemaFor(const StreamConfig& config, const std::string& source_schema);

// True when `type` is a plain DuckDB type name that may be spliced into SQL: words of letters,
// digits and '_' separated by single spaces, optionally followed by integer parameters
// "(12,2)" and "[]" suffixes ("DECIMAL(12,2)", "TIMESTAMP WITH TIME ZONE", "VARCHAR[]").
// Whether DuckDB knows the type is checked where the file is read.
bool ValidColumnType(const std::string& type);

// True when `name` (schema, table) matches `pattern` ("s.t", "t", wildcards '*', '?').
bool MatchTablePattern(const std::string& pattern, const std::string& schema,
                       const std::string& table, const std::string& default_schema);

}  // namespace dbs
