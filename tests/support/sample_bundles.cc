#include "support/sample_bundles.h"

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "core/array.h"
#include "core/temporal.h"

namespace dbs::testing {
namespace {

class Gen {
 public:
  explicit Gen(uint32_t seed) : rng_(seed) {}
  uint64_t U64() { return rng_(); }
  int Pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool Chance(int percent) { return Pick(100) < percent; }
  std::string Text(size_t max_len) {
    static const char* kPieces[] = {"a",   "Z",  "0",  " ", "é",  "ß",  "中", "😀",
                                    "𝄞",   "\n", "\t", "'", "\"", "\\", ",",  "\xF0\x9F\x8E\x89",
                                    "NULL"};
    std::string s;
    size_t n = static_cast<size_t>(Pick(static_cast<int>(max_len) + 1));
    for (size_t i = 0; i < n; ++i) s += kPieces[Pick(std::size(kPieces))];
    return s;
  }
  std::string Bytes(size_t max_len) {
    std::string s(static_cast<size_t>(Pick(static_cast<int>(max_len) + 1)), '\0');
    for (char& c : s) c = static_cast<char>(U64());
    return s;
  }

 private:
  std::mt19937_64 rng_;
};

template <typename T>
T Extreme(Gen& g) {
  switch (g.Pick(4)) {
    case 0:
      return std::numeric_limits<T>::min();
    case 1:
      return std::numeric_limits<T>::max();
    case 2:
      return T{0};
    default:
      return static_cast<T>(g.U64());
  }
}

double ExtremeDouble(Gen& g) {
  switch (g.Pick(8)) {
    case 0:
      return std::numeric_limits<double>::quiet_NaN();
    case 1:
      return std::numeric_limits<double>::infinity();
    case 2:
      return -std::numeric_limits<double>::infinity();
    case 3:
      return -0.0;
    case 4:
      return std::numeric_limits<double>::denorm_min();
    case 5:
      return std::numeric_limits<double>::max();
    default:
      return static_cast<double>(static_cast<int64_t>(g.U64())) / 1e7;
  }
}

std::string Decimal(Gen& g) {
  switch (g.Pick(8)) {
    case 0:
      return "NaN";
    case 1:
      return "Infinity";
    case 2:
      return "-Infinity";
    case 3:
      return "-0.000000000000000000000000000001";
    case 4:
      return "99999999999999999999999999999999999999.999999999999999999999";
    default: {
      std::string s = g.Chance(50) ? "-" : "";
      s += std::to_string(g.U64());
      s += '.';
      s += std::to_string(g.U64() % 100000);
      return s;
    }
  }
}

int32_t SomeDate(Gen& g) {
  switch (g.Pick(8)) {
    case 0:
      return kDatePosInfinity;
    case 1:
      return kDateNegInfinity;
    case 2:
      return *ParseDate("0000-00-00");
    case 3:
      return *ParseDate("4713-11-24 BC");
    case 4:
      return *ParseDate("5874897-12-31");
    default:
      return static_cast<int32_t>(g.U64() % 100000) - 50000;
  }
}

int64_t SomeTimestamp(Gen& g) {
  switch (g.Pick(8)) {
    case 0:
      return kTimestampPosInfinity;
    case 1:
      return kTimestampNegInfinity;
    case 2:
      return *ParseTimestamp("0000-00-00 00:00:00");
    case 3:
      return *ParseTimestamp("294276-12-31 23:59:59.999999");
    default:
      return static_cast<int64_t>(g.U64() % 4'000'000'000'000'000ULL) - 2'000'000'000'000'000LL;
  }
}

Value ScalarValue(LogicalType t, Gen& g) {
  switch (t) {
    case LogicalType::kBool:
      return Value::Bool(g.Chance(50));
    case LogicalType::kInt8:
      return Value::Int(t, Extreme<int8_t>(g));
    case LogicalType::kInt16:
      return Value::Int(t, Extreme<int16_t>(g));
    case LogicalType::kInt32:
      return Value::Int(t, Extreme<int32_t>(g));
    case LogicalType::kInt64:
      return Value::Int(t, Extreme<int64_t>(g));
    case LogicalType::kUInt8:
      return Value::UInt(t, Extreme<uint8_t>(g));
    case LogicalType::kUInt16:
      return Value::UInt(t, Extreme<uint16_t>(g));
    case LogicalType::kUInt32:
      return Value::UInt(t, Extreme<uint32_t>(g));
    case LogicalType::kUInt64:
      return Value::UInt(t, Extreme<uint64_t>(g));
    case LogicalType::kFloat32:
      return Value::Float32(static_cast<float>(ExtremeDouble(g)));
    case LogicalType::kFloat64:
      return Value::Float64(ExtremeDouble(g));
    case LogicalType::kDecimal:
      return Value::Bytes(t, Decimal(g));
    case LogicalType::kText:
      return Value::Bytes(t, g.Chance(5) ? std::string(70000, 'x') : g.Text(40));
    case LogicalType::kBytes:
      return Value::Bytes(t, g.Bytes(64));
    case LogicalType::kJson:
      return Value::Bytes(t, "{\"k\": [1, 2.5, null, \"" + std::string("😀") + "\"]}");
    case LogicalType::kUuid: {
      Uuid u;
      for (auto& b : u.bytes) b = static_cast<uint8_t>(g.U64());
      return Value::UuidValue(u);
    }
    case LogicalType::kEnum:
      return Value::Bytes(t, g.Chance(50) ? "small" : "");
    case LogicalType::kSet:
      return Value::Bytes(t, g.Chance(50) ? "a,c" : "");
    case LogicalType::kBit: {
      std::string d;
      for (int i = g.Pick(70); i > 0; --i) d += g.Chance(50) ? '1' : '0';
      return Value::Bytes(t, EncodeBits(d));
    }
    case LogicalType::kDate:
      return Value::Date(SomeDate(g));
    case LogicalType::kTime:
      return Value::Micros(
          t, static_cast<int64_t>(g.U64() % 6'000'000'000'000ULL) - 3'000'000'000'000LL);
    case LogicalType::kTimeTz:
      return Value::TimeTzValue(
          TimeTz{static_cast<int64_t>(g.U64() % kMicrosPerDay), (g.Pick(57) - 28) * 1800});
    case LogicalType::kTimestamp:
    case LogicalType::kTimestampTz:
      return Value::Micros(t, SomeTimestamp(g));
    case LogicalType::kInterval:
      return Value::IntervalValue(
          Interval{Extreme<int32_t>(g), Extreme<int32_t>(g), Extreme<int64_t>(g)});
    case LogicalType::kGeometry: {
      // POINT(1 2) in WKB, little-endian.
      std::string wkb("\x01\x01\x00\x00\x00", 5);
      double x = 1, y = 2;
      wkb.append(reinterpret_cast<const char*>(&x), 8);
      wkb.append(reinterpret_cast<const char*>(&y), 8);
      return Value::Bytes(t, EncodeGeometry(4326, wkb));
    }
    default:
      return Value::Null(t);
  }
}

Value ArrayOf(LogicalType elem, Gen& g) {
  ArrayValue a;
  a.element_type = elem;
  switch (g.Pick(3)) {
    case 0:
      break;  // empty
    case 1:
      a.dims = {{g.Pick(5) + 1, 1}};
      break;
    default:
      a.dims = {{2, 0}, {g.Pick(3) + 1, 1}};
      break;
  }
  size_t n = 1;
  for (auto& d : a.dims) n *= static_cast<size_t>(d.length);
  if (a.dims.empty()) n = 0;
  for (size_t i = 0; i < n; ++i) {
    a.elements.push_back(g.Chance(15) ? Value::Null(elem) : ScalarValue(elem, g));
  }
  return Value::Bytes(LogicalType::kArray, *EncodeArray(a));
}

}  // namespace

Bundle MakeZooBundle(size_t rows, uint32_t seed) {
  Gen g(seed);
  Bundle b;
  for (uint8_t t = 1; t < static_cast<uint8_t>(LogicalType::kArray); ++t) {
    b.columns.emplace_back(static_cast<LogicalType>(t));
  }
  const LogicalType kElems[] = {LogicalType::kInt32, LogicalType::kText, LogicalType::kFloat64,
                                LogicalType::kTimestampTz, LogicalType::kUuid};
  for (LogicalType e : kElems) b.columns.emplace_back(LogicalType::kArray, e);
  for (size_t r = 0; r < rows; ++r) {
    for (ColumnVector& c : b.columns) {
      if (g.Chance(15)) {
        c.AppendNull();
      } else if (c.type() == LogicalType::kArray) {
        (void)c.Append(ArrayOf(c.element_type(), g));
      } else {
        (void)c.Append(ScalarValue(c.type(), g));
      }
    }
  }
  return b;
}

Bundle MakeTypicalBundle(size_t rows, uint32_t seed) {
  Gen g(seed);
  Bundle b;
  const LogicalType kTypes[16] = {
      LogicalType::kInt64,   LogicalType::kInt32,   LogicalType::kInt32,       LogicalType::kInt16,
      LogicalType::kDecimal, LogicalType::kFloat64, LogicalType::kFloat64,     LogicalType::kText,
      LogicalType::kText,    LogicalType::kText,    LogicalType::kTimestampTz, LogicalType::kDate,
      LogicalType::kBool,    LogicalType::kUuid,    LogicalType::kJson,        LogicalType::kText};
  for (LogicalType t : kTypes) b.columns.emplace_back(t);
  for (ColumnVector& c : b.columns) c.Reserve(rows, rows * 32);
  static const char* kWords[] = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"};
  for (size_t r = 0; r < rows; ++r) {
    auto& c = b.columns;
    c[0].AppendInt(static_cast<int64_t>(r) + 1);
    c[1].AppendInt(static_cast<int32_t>(g.U64() % 1000000));
    c[2].AppendInt(static_cast<int32_t>(g.U64() % 100));
    c[3].AppendInt(static_cast<int16_t>(g.U64() % 1000));
    c[4].AppendBytes(std::to_string(g.U64() % 1000000) + "." + std::to_string(g.U64() % 100));
    c[5].AppendFloat64(static_cast<double>(g.U64() % 1000000) / 7.0);
    c[6].AppendFloat64(static_cast<double>(g.U64() % 1000) / 3.0);
    c[7].AppendBytes(std::string(kWords[g.Pick(7)]) + " " + kWords[g.Pick(7)]);
    std::string medium;
    for (int i = 0; i < 6; ++i) medium += std::string(kWords[g.Pick(7)]) + " ";
    c[8].AppendBytes(medium);
    if (g.Chance(10)) {
      c[9].AppendNull();
    } else {
      c[9].AppendBytes("user" + std::to_string(g.U64() % 100000) + "@example.com");
    }
    c[10].AppendMicros(1'700'000'000'000'000LL +
                       static_cast<int64_t>(g.U64() % 100'000'000'000'000ULL));
    c[11].AppendDate(19000 + g.Pick(2000));
    c[12].AppendBool(g.Chance(50));
    Uuid u;
    for (auto& x : u.bytes) x = static_cast<uint8_t>(g.U64());
    c[13].AppendUuid(u);
    c[14].AppendBytes("{\"n\": " + std::to_string(g.Pick(1000)) + ", \"tag\": \"" +
                      kWords[g.Pick(7)] + "\"}");
    c[15].AppendBytes(kWords[g.Pick(7)]);
  }
  return b;
}

std::vector<std::vector<Value>> BundleRows(const Bundle& b) {
  std::vector<std::vector<Value>> rows(b.rows());
  for (size_t r = 0; r < b.rows(); ++r) {
    for (const ColumnVector& c : b.columns) rows[r].push_back(c.Get(r));
  }
  return rows;
}

}  // namespace dbs::testing
