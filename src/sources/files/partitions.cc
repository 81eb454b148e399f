#include "sources/files/partitions.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "sources/files/remote.h"

namespace dbs::files {

namespace fs = std::filesystem;

namespace {

// Characters DuckDB's file globbing would read as a pattern.
bool IsGlobChar(char c) {
  return c == '*' || c == '?' || c == '[' || c == ']' || c == '{' || c == '}' || c == '\\';
}

// A folder name of the mirror that DuckDB decodes to the same value: glob characters are
// percent-encoded (DuckDB percent-decodes hive values).
std::string MirrorComponent(std::string_view component) {
  std::string out;
  static const char kHex[] = "0123456789ABCDEF";
  for (char c : component) {
    if (IsGlobChar(c)) {
      out += '%';
      out += kHex[static_cast<unsigned char>(c) >> 4];
      out += kHex[static_cast<unsigned char>(c) & 15];
    } else {
      out += c;
    }
  }
  return out;
}

std::vector<std::string_view> Components(std::string_view path) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at <= path.size()) {
    size_t slash = path.find('/', at);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > at) out.push_back(path.substr(at, slash - at));
    at = slash + 1;
  }
  return out;
}

}  // namespace

std::optional<std::string> PartitionKeyOf(std::string_view component) {
  const size_t eq = component.find('=');
  if (eq == std::string_view::npos || eq == 0) return std::nullopt;
  const std::string_view key = component.substr(0, eq);
  if (key[0] == '.' || key[0] == '_') return std::nullopt;
  for (char c : key) {
    if (IsGlobChar(c) || c == '%') return std::nullopt;
  }
  return std::string(key);
}

std::optional<std::string> PartitionFolderOf(std::string_view relative) {
  const size_t slash = relative.rfind('/');
  if (slash == std::string_view::npos) return std::string();
  const std::string_view folder = relative.substr(0, slash);
  for (std::string_view c : Components(folder)) {
    if (!PartitionKeyOf(c)) return std::nullopt;
  }
  return std::string(folder);
}

std::vector<std::string> PartitionKeys(std::string_view folder) {
  std::vector<std::string> keys;
  for (std::string_view c : Components(folder)) {
    if (auto k = PartitionKeyOf(c)) keys.push_back(std::move(*k));
  }
  return keys;
}

Result<Partitions> ResolvePartitions(Duck* duck, const std::vector<std::string>& folders,
                                     const std::string& table_dir) {
  Partitions p;
  if (folders.empty()) return p;
  p.keys = PartitionKeys(folders.front());
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < p.keys.size(); ++i) {
    if (!seen.emplace(p.keys[i], i).second) {
      return Status::InvalidArgument(table_dir + ": the partition key '" + p.keys[i] +
                                     "' appears twice in " + folders.front());
    }
  }
  for (const std::string& f : folders) {
    if (PartitionKeys(f) != p.keys) {
      return Status::InvalidArgument(table_dir + ": the partition folders " + folders.front() +
                                     " and " + f + " do not have the same keys in the same order");
    }
  }
  // The mirror: <spill>/<folder>/<i>.csv holding the number i, read back with
  // hive_partitioning, so DuckDB decodes and types the values as it does for real files.
  DBS_ASSIGN_OR_RETURN(auto spill, SpillDir::Create("hive-partitions"));
  std::string list;
  for (size_t i = 0; i < folders.size(); ++i) {
    fs::path dir(spill->path());
    for (std::string_view c : Components(folders[i])) dir /= MirrorComponent(c);
    std::error_code ec;
    fs::create_directories(dir, ec);
    const fs::path file = dir / (std::to_string(i) + ".csv");
    std::ofstream(file) << i << "\n";
    if (ec || !fs::exists(file)) {
      return Status::IoError("cannot write the partition mirror " + file.string());
    }
    list += (i ? ", " : "") + SqlString(file.string());
  }
  std::string cols;
  for (const std::string& k : p.keys) cols += ", CAST(" + SqlIdent(k) + " AS VARCHAR)";
  const std::string from = "read_csv([" + list +
                           "], auto_detect = false, header = false, columns = {'dbs_i': "
                           "'UBIGINT'}, hive_partitioning = true)";
  DBS_ASSIGN_OR_RETURN(DuckResult d, duck->Query("DESCRIBE SELECT * FROM " + from));
  std::map<std::string, std::string> types;
  for (size_t r = 0; r < d.rows(); ++r) {
    types[d.Text(0, r).value_or("")] = d.Text(1, r).value_or("VARCHAR");
  }
  for (const std::string& k : p.keys) {
    auto t = types.find(k);
    if (t == types.end()) {
      return Status::Internal(table_dir + ": DuckDB did not see the partition key " + k);
    }
    p.types.push_back(t->second);
  }
  DBS_ASSIGN_OR_RETURN(DuckResult v, duck->Query("SELECT dbs_i" + cols + " FROM " + from));
  p.values.assign(folders.size(), {});
  for (size_t r = 0; r < v.rows(); ++r) {
    const size_t i = std::strtoull(v.Text(0, r).value_or("0").c_str(), nullptr, 10);
    if (i >= folders.size()) continue;
    for (size_t k = 0; k < p.keys.size(); ++k) p.values[i].push_back(v.Text(1 + k, r));
  }
  for (size_t i = 0; i < folders.size(); ++i) {
    if (p.values[i].size() != p.keys.size()) {
      return Status::Internal(table_dir + ": DuckDB did not read the partition folder " +
                              folders[i]);
    }
  }
  return p;
}

}  // namespace dbs::files
