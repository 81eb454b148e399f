// Helpers of the explorer's routes: strict request bodies, paging parameters, and the mapping
// of engine errors onto HTTP statuses (explorer_routes.h lists them).
#pragma once

#include <httplib.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/explorer_routes.h"
#include "core/result.h"

namespace dbs::api {

// Reads typed fields of a JSON object body; status() is the first unknown field.
class BodyReader {
 public:
  BodyReader(const nlohmann::json& body, const std::vector<std::string>& known);
  const Status& status() const { return status_; }
  // "" when absent and not required.
  Result<std::string> String(const std::string& name, bool required, size_t max_bytes) const;
  Result<int64_t> Int(const std::string& name, int64_t def, int64_t min, int64_t max) const;
  Result<bool> Bool(const std::string& name, bool def) const;
  bool Has(const std::string& name) const { return body_.contains(name); }
  const nlohmann::json& Get(const std::string& name) const { return body_[name]; }

 private:
  const nlohmann::json& body_;
  Status status_;
};

struct QueryPage {
  int offset = 0;
  int limit = 50;
};
// ?offset= (default 0) and ?limit= (1 to 500, default 50).
Result<QueryPage> PageOfQuery(const httplib::Request& req);

// A database's failure while browsing is the database's (503), except what names the request's
// mistake (a missing table or column, a bad value: 400/404, a timeout).
Status Upstream(const Status& s);

// A fresh folder under `root` (the system temp folder when empty) for one request's scratch
// files, removed with the object.
class ScratchDir {
 public:
  ScratchDir(const std::string& root, const std::string& what);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Writes `out`'s error into the response (status, {"error": {code, message, fields?}}) and
// returns null; passes a value through.
Result<nlohmann::json> Respond(ExplorerCall& c, Result<nlohmann::json> out);

}  // namespace dbs::api
