// BulkInsert: writes rows into one MariaDB table with ONE prepared INSERT executed for an array
// of rows at once (MariaDB's bulk execution: mysql_stmt_attr_set(STMT_ATTR_ARRAY_SIZE), one
// COM_STMT_BULK_EXECUTE packet; MariaDB 10.2.7 and later). The server parses no text for most
// values, so it spends about 30% less CPU per row than on LOAD DATA LOCAL INFILE
// (bench/mysql_write_bench.sh), and unlike LOAD DATA a rejected value is an error, not a warning.
//
// Per column the values travel as (column-wise binding, zero-copy where the bundle holds them):
//   integers, booleans into integer/decimal/float/double columns   BIGINT (signed or unsigned)
//   floats into FLOAT/DOUBLE                                        DOUBLE (NaN, infinities and
//                                                                   -0 rejected, as the text path)
//   dates into DATE, timestamps into DATETIME/TIMESTAMP             MYSQL_TIME (zero dates kept;
//                                                                   the session is in UTC)
//   text, decimal, json, enum, set (kRaw writers)                   the bundle's bytes as a string
//   bytes and uuids into BINARY/VARBINARY/BLOB columns              the bytes as a BLOB
//   everything else                                                 the text of mysql_load_encoder
//                                                                   (CellText) with the writer's
//                                                                   SQL expression around "?"
// so every value reaches the column exactly as the text path (LOAD DATA / INSERT) would store it.
//
// Use: AddRow for each row (values are checked on the client: a rejected value names its
// column), Execute when full() or at the end. Bundles passed to AddRow must stay alive and
// unchanged until Execute returns. Not thread-safe; one per table and connection.
#pragma once

#include <mysql.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/bundle.h"
#include "core/result.h"
#include "sinks/mysql/mysql_load_encoder.h"

namespace dbs::mysql {

class MysqlConnection;

class BulkInsert {
 public:
  // True when `conn` takes bulk execution (MariaDB 10.2.7 and later).
  static bool Supported(const MysqlConnection& conn);

  // Prepares `head` (INSERT INTO `db`.`t` (`a`, ...) VALUES ) + one row of placeholders +
  // `tail` (empty, or ON DUPLICATE KEY UPDATE ...) on `conn`, which must outlive this object.
  // `max_bytes`: Execute is due once the rows added take about this many bytes on the wire
  // (keep it under max_allowed_packet). Unsupported when the server will not prepare the
  // statement (max_prepared_stmt_count reached or 0, a proxy without prepared statements).
  static Result<std::unique_ptr<BulkInsert>> Prepare(MysqlConnection* conn,
                                                     const std::vector<ColumnWriter>& writers,
                                                     const std::string& head,
                                                     const std::string& tail, uint64_t max_bytes);
  ~BulkInsert();
  BulkInsert(const BulkInsert&) = delete;
  BulkInsert& operator=(const BulkInsert&) = delete;

  // Adds row `row` of `b`; written column j takes bundle column source_index[j]. On error
  // (InvalidArgument naming the column) every row added since the last Execute is dropped.
  Status AddRow(const Bundle& b, const std::vector<size_t>& source_index, size_t row);
  bool full() const { return bytes_ >= max_bytes_; }

  // Executes the statement for the rows added and forgets them (also on error). On a server
  // error, *failed_row is the index (among the rows of this call) of the row the server named
  // ("... at row N"), or -1 when it named none. *warnings: the statement's warning count.
  Status Execute(std::string_view context, long* failed_row, unsigned* warnings,
                 uint64_t* affected);

 private:
  // How one column's values travel.
  enum class Bind : uint8_t {
    kInt64,
    kUInt64,
    kBool,
    kDouble,
    kDate,
    kDateTime,
    kBytes,
    kBlob,
    kText
  };
  struct Column {
    Bind bind = Bind::kText;
    const ColumnWriter* writer = nullptr;
    std::vector<long long> ints;    // kInt64, kUInt64, kBool
    std::vector<double> doubles;    // kDouble
    std::vector<MYSQL_TIME> times;  // kDate, kDateTime
    std::vector<MYSQL_TIME*> time_ptrs;
    std::vector<const char*> ptrs;  // kBytes, kBlob, kText
    std::vector<unsigned long> lengths;
    std::vector<size_t> offsets;  // kText: where each value starts in `text`
    std::string text;
    std::vector<char> indicators;  // STMT_INDICATOR_NULL / _NONE
  };

  BulkInsert(MysqlConnection* conn, uint64_t max_bytes) : conn_(conn), max_bytes_(max_bytes) {}
  Status AddValue(Column& c, const ColumnVector& col, size_t row);
  static void AddNullSlot(Column& c);
  // Forgets the rows added and not executed.
  void Clear();

  MysqlConnection* conn_;
  MYSQL_STMT* stmt_ = nullptr;
  uint64_t max_bytes_;
  std::vector<ColumnWriter> writers_;
  std::vector<Column> columns_;
  std::vector<MYSQL_BIND> binds_;
  size_t rows_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace dbs::mysql
