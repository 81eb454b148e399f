// libFuzzer target: the binlog event decoder (sources/mysql/binlog_event.h) on arbitrary bytes
// must give a Status, never crash, read out of bounds or allocate without bound.
//
// Input layout: byte 0 picks the rows event type and checksum handling, bytes 1-2 the length of
// a TABLE_MAP body; then that body, then a rows event body. Every event-level parser also sees
// the whole input as a raw event and as bodies of each event type.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sources/mysql/binlog_event.h"

namespace {

namespace bl = dbs::mysql::binlog;

bl::FormatDescription Fd() {
  bl::FormatDescription fd;
  fd.post_header_lengths.assign(200, 0);
  fd.post_header_lengths[bl::kQueryEvent - 1] = 13;
  fd.post_header_lengths[bl::kTableMapEvent - 1] = 8;
  for (int t : {23, 24, 25}) fd.post_header_lengths[t - 1] = 8;
  for (int t : {30, 31, 32}) fd.post_header_lengths[t - 1] = 10;
  return fd;
}

bl::Event Ev(uint8_t type, std::string_view body) {
  bl::Event e;
  e.header.type = type;
  e.body = body;
  return e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bl::FormatDescription fd = Fd();
  const std::string_view in(reinterpret_cast<const char*>(data), size);

  // Whole input as one raw event / format description.
  (void)bl::ParseEvent(in, (size & 1) ? bl::ChecksumAlg::kCrc32 : bl::ChecksumAlg::kOff, true);
  (void)bl::ParseFormatDescription(in);
  (void)bl::ParseRotate(Ev(bl::kRotateEvent, in));
  (void)bl::ParseQuery(Ev(bl::kQueryEvent, in), fd);
  (void)bl::ParseXid(Ev(bl::kXidEvent, in));
  (void)bl::ParseMariaGtid(Ev(bl::kMariaGtidEvent, in));
  (void)bl::ParseMariaGtidList(Ev(bl::kMariaGtidListEvent, in));
  (void)bl::ParseMysqlGtid(Ev(bl::kMysqlGtidEvent, in));
  (void)bl::MysqlJsonToText(in);
  if (size >= 2) {
    size_t used = 0;
    (void)bl::DecimalToText(in.substr(2), data[0] % 70, data[1] % 35, &used);
  }

  // Table map + rows event.
  if (size < 3) return 0;
  static const uint8_t kRowsTypes[] = {23, 24, 25, 30, 31, 32};
  const uint8_t rows_type = kRowsTypes[data[0] % 6];
  const size_t map_len = (size_t{data[1]} | size_t{data[2]} << 8) % (size - 2);
  const std::string_view map_body = in.substr(3, map_len);
  const std::string_view rows_body = in.substr(3 + map_len);
  auto map = bl::ParseTableMap(Ev(bl::kTableMapEvent, map_body), fd);
  if (!map.ok()) return 0;
  auto rows = bl::ParseRowsEvent(Ev(rows_type, rows_body), fd);
  if (!rows.ok() || rows->column_count != map->column_count()) return 0;
  std::vector<dbs::Column> cols;
  for (size_t i = 0; i < map->column_count(); ++i) cols.push_back(bl::ColumnForTableMap(*map, i));
  std::vector<dbs::ColumnVector> out;
  for (const auto& c : cols) out.emplace_back(c.type);
  std::vector<bl::ColumnTarget> targets;
  for (size_t i = 0; i < cols.size(); ++i) {
    // Every third column is skipped (decoded into scratch) to cover that path too.
    targets.push_back({&cols[i], i % 3 == 2 ? nullptr : &out[i]});
  }
  size_t pos = 0;
  for (int n = 0; n < 1000 && pos < rows->rows.size(); ++n) {
    const size_t before = pos;
    if (!bl::DecodeRow(*map, rows->present, rows->rows, &pos, targets).ok()) break;
    if (rows->kind == bl::RowsKind::kUpdate &&
        !bl::DecodeRow(*map, rows->present_after, rows->rows, &pos, targets).ok()) {
      break;
    }
    if (pos <= before) break;  // a row of zero present columns: stop
  }
  return 0;
}
