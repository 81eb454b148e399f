// PartStager: see part_stager.h for the contract.
#include "sinks/files/part_stager.h"

#include <algorithm>
#include <filesystem>

#include "core/logging.h"

namespace dbs::files {

Result<size_t> PartStager::Apply(const std::vector<const BundleRef*>& refs) {
  const TableSchema& t = *refs.front()->table;
  auto drop_all = [&] {
    for (const BundleRef* r : refs) settled_.dropped.push_back(r->id);
  };
  std::set<std::string>& applied = applied_[t.name];
  if (Status s = target_->Refresh(t.name, &applied); !s.ok()) {
    drop_all();
    return s.WithContext("staging " + t.name);
  }
  auto part = [&]() -> OpenPart& { return open_[t.name]; };  // Commit erases it
  const uint64_t per = std::max<uint64_t>(1, fo_.rows_per_file);
  std::vector<const BundleRef*> fresh;
  uint64_t fresh_rows = 0;
  size_t staged = 0;
  Status failed;
  // Hands `fresh` to the open part (opening one), and commits the part when `commit`.
  auto flush = [&](bool commit) -> Status {
    if (!fresh.empty()) {
      if (!part().stream) {
        part().first = fresh.front()->id;
        uint64_t bytes = 0, rows = 0;
        for (const BundleRef* r : fresh) {
          bytes += r->bundle->ByteSize();
          rows += r->bundle->rows();
        }
        auto opened = PartStream::Open(t, fo_, zero_date_, target_->TempPath(t.name, part().first),
                                       bytes / std::max<uint64_t>(1, rows));
        if (!opened.ok()) return opened.status();
        part().stream = std::move(opened).value();
      }
      std::vector<const Bundle*> bundles;
      for (const BundleRef* r : fresh) {
        bundles.push_back(r->bundle);
        part().ids.push_back(r->id);
        part().counts.push_back(r->bundle->rows());
        part().id_set.insert(r->id);
      }
      staged += fresh.size();
      fresh.clear();
      fresh_rows = 0;
      Status added = part().stream->Add(bundles);
      if (!added.ok()) return added;
    }
    return commit ? Commit(t.name) : Status::Ok();
  };
  size_t i = 0;
  for (; i < refs.size() && failed.ok(); ++i) {
    const BundleRef* r = refs[i];
    if (applied.count(r->id)) {  // committed before (a redelivery): acknowledge it
      settled_.committed.push_back(r->id);
      continue;
    }
    bool again = part().id_set.count(r->id) > 0;
    for (const BundleRef* f : fresh) again = again || f->id == r->id;
    if (again) continue;  // staged already: settled with its part
    const uint64_t before = (part().stream ? part().stream->rows() : 0) + fresh_rows;
    if (before > 0 && before + r->bundle->rows() > per) failed = flush(true);
    fresh.push_back(r);
    fresh_rows += r->bundle->rows();
    if (fo_.bytes_per_file > 0 && failed.ok()) {
      // The size limit: each bundle is handed over at once, and the part committed once its
      // file as written so far (for Parquet, its finished row groups) reaches the limit.
      failed = flush(false);
      if (failed.ok()) {
        std::error_code ec;
        const uint64_t size = std::filesystem::file_size(part().stream->path(), ec);
        if (!ec && size >= fo_.bytes_per_file) failed = Commit(t.name);
      }
    }
  }
  if (failed.ok()) {
    const uint64_t total = (part().stream ? part().stream->rows() : 0) + fresh_rows;
    failed = flush(total >= per);
  }
  if (!failed.ok()) {
    // The open part is lost: its bundles, and the ones not handed to it, are redelivered.
    for (const BundleRef* f : fresh) settled_.dropped.push_back(f->id);
    for (; i < refs.size(); ++i) settled_.dropped.push_back(refs[i]->id);
    auto it = open_.find(t.name);
    if (it != open_.end()) {
      Drop(&it->second);
      open_.erase(it);
    }
    return failed.WithContext("staging " + t.name);
  }
  return staged;
}

Status PartStager::CommitAll() {
  std::vector<std::string> tables;
  for (const auto& [name, part] : open_) tables.push_back(name);
  Status first;
  for (const std::string& name : tables) {
    Status s = Commit(name);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

void PartStager::Refuse(const std::vector<BundleRef>& bundles) {
  for (const BundleRef& b : bundles) settled_.dropped.push_back(b.id);
}

void PartStager::DropAll() {
  for (auto& [name, part] : open_) Drop(&part);
  open_.clear();
}

void PartStager::Drop(OpenPart* part) {
  if (part->stream) {
    const std::string tmp = part->stream->path();
    part->stream.reset();
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
  }
  for (std::string& id : part->ids) settled_.dropped.push_back(std::move(id));
  *part = OpenPart();
}

Status PartStager::Commit(const std::string& table) {
  auto it = open_.find(table);
  if (it == open_.end()) return Status::Ok();
  OpenPart part = std::move(it->second);
  open_.erase(it);
  if (!part.stream) return Status::Ok();
  auto fail = [&](const Status& s) {
    Drop(&part);
    return s.WithContext("committing a part of " + table);
  };
  auto rows = part.stream->Close();
  if (!rows.ok()) return fail(rows.status());
  std::set<std::string>& applied = applied_[table];
  auto committed = target_->CommitPart(table, &part, *rows, &applied);
  if (!committed.ok()) return fail(committed.status());
  if (!*committed) {
    Log(LogLevel::kInfo, "writer", "part dropped: another writer committed one of its bundles",
        {F("table", table), F("first bundle", part.first)});
    Drop(&part);
    return Status::Ok();
  }
  for (std::string& id : part.ids) {
    applied.insert(id);
    settled_.committed.push_back(std::move(id));
  }
  return Status::Ok();
}

}  // namespace dbs::files
