#include "explorer/federated_session.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "explorer/console_internal.h"
#include "federated/result_stream.h"

namespace dbs::explorer {
namespace {

class FederatedSession : public QuerySession {
 public:
  FederatedSession(std::vector<federated::FederatedSource> sources,
                   federated::FederatedOptions options, std::string folder)
      : sources_(std::move(sources)), options_(std::move(options)), folder_(std::move(folder)) {
    options_.temp_dir = folder_;
  }
  ~FederatedSession() override {
    {
      std::lock_guard<std::mutex> l(mu_);
      cursor_.reset();
    }
    std::error_code ec;
    std::filesystem::remove_all(folder_, ec);
  }

  Result<ConsolePage> Execute(const std::string& sql, int64_t max_rows) override {
    if (cursor_) return Status::FailedPrecondition("the session already runs a statement");
    auto opened = federated::QueryCursor::Open(sources_, sql, options_);
    if (!opened.ok()) return Interrupted(opened.status());
    {
      std::lock_guard<std::mutex> l(mu_);
      cursor_ = std::move(*opened);
      if (cancelled_) {
        return reason_.Interrupted(Status::Cancelled("cancelled while the sources were opened"));
      }
    }
    if (Status started = cursor_->Start(); !started.ok()) return Interrupted(started);
    ConsolePage page;
    for (const auto& c : cursor_->columns()) page.columns.push_back({c.name, c.type});
    DBS_RETURN_IF_ERROR(Page(max_rows, &page));
    return page;
  }

  Result<ConsolePage> Fetch(int64_t max_rows) override {
    if (!cursor_) return Status::FailedPrecondition("no statement runs in this session");
    ConsolePage page;
    for (const auto& c : cursor_->columns()) page.columns.push_back({c.name, c.type});
    DBS_RETURN_IF_ERROR(Page(max_rows, &page));
    return page;
  }

  Result<ConsolePlan> Explain(const std::string& sql, bool analyze) override {
    if (analyze) {
      return Status::InvalidArgument(
          "analyze is not offered for federated statements: EXPLAIN shows what each source is "
          "asked for");
    }
    auto plan = federated::Explain(sources_, sql, options_);
    if (!plan.ok()) return Interrupted(plan.status());
    ConsolePlan out;
    out.text = plan->text;
    nlohmann::json sources = nlohmann::json::array();
    for (const auto& s : plan->sources) {
      sources.push_back({{"alias", s.alias}, {"statement", s.statement}});
    }
    out.json = {{"sources", sources}};
    return out;
  }

  void Cancel(bool timeout) override {
    reason_.Set(timeout);
    std::lock_guard<std::mutex> l(mu_);
    cancelled_ = true;
    if (cursor_) cursor_->Interrupt();
  }

  Status Close() override {
    std::lock_guard<std::mutex> l(mu_);
    cursor_.reset();
    return Status::Ok();
  }

  int64_t server_session_id() const override { return 0; }
  bool read_only() const override { return true; }

 private:
  Status Page(int64_t max_rows, ConsolePage* page) {
    bool more = false;
    auto rows = cursor_->Next(max_rows, &more);
    if (!rows.ok()) return Interrupted(rows.status());
    page->rows = std::move(*rows);
    page->has_more = more;
    return Status::Ok();
  }
  // A failure after a cancel is the cancel's (Cancelled or Timeout).
  Status Interrupted(const Status& s) {
    bool cancelled;
    {
      std::lock_guard<std::mutex> l(mu_);
      cancelled = cancelled_;
    }
    return cancelled ? reason_.Interrupted(s) : s;
  }

  const std::vector<federated::FederatedSource> sources_;
  federated::FederatedOptions options_;
  const std::string folder_;
  std::mutex mu_;  // cursor_ (pointer) and cancelled_, against Cancel from other threads
  std::unique_ptr<federated::QueryCursor> cursor_;
  bool cancelled_ = false;
  CancelReason reason_;
};

}  // namespace

Result<std::unique_ptr<QuerySession>> OpenFederatedSession(
    std::vector<federated::FederatedSource> sources, federated::FederatedOptions options,
    const std::string& temp_root) {
  std::error_code ec;
  std::filesystem::path base = temp_root.empty() ? std::filesystem::temp_directory_path(ec)
                                                 : std::filesystem::path(temp_root);
  std::string tmpl = (base / "dbstreams-console-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return Status::IoError("cannot create a spill folder under " + base.string());
  }
  return std::unique_ptr<QuerySession>(
      new FederatedSession(std::move(sources), std::move(options), tmpl));
}

}  // namespace dbs::explorer
