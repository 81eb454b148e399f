#include "security/sealed_config.h"

#include <string>

namespace dbs::security {

using nlohmann::json;

namespace {

bool IsInlinePrivateKey(const json& v) {
  return v.is_string() && v.get<std::string>().find("-----BEGIN") != std::string::npos;
}

void Take(json* node, const json::json_pointer& at, json* out) {
  if (node->is_object()) {
    for (auto it = node->begin(); it != node->end();) {
      const std::string key = it.key();
      const bool secret =
          ((key == "password" || key == "busKey" || key == "sessionToken") &&
           it.value().is_string()) ||
          (key == "key" && at.empty() == false && at.back() == "ssl" && IsInlinePrivateKey(*it));
      if (secret) {
        (*out)[(at / key).to_string()] = it.value();
        it = node->erase(it);
      } else {
        Take(&it.value(), at / key, out);
        ++it;
      }
    }
  } else if (node->is_array()) {
    for (size_t i = 0; i < node->size(); ++i) Take(&(*node)[i], at / i, out);
  }
}

}  // namespace

json TakeSecrets(json* config) {
  json out = json::object();
  Take(config, json::json_pointer(), &out);
  return out;
}

Status PutSecrets(json* config, const json& secrets) {
  if (!secrets.is_object()) return Status::InvalidArgument("sealed secrets are not an object");
  for (const auto& [ptr, value] : secrets.items()) {
    if (ptr.empty() || ptr[0] != '/' || !value.is_string()) {
      return Status::InvalidArgument("sealed secret '" + ptr + "' is malformed");
    }
    // json_pointer throws on a malformed pointer: the text came over the bus.
    try {
      json::json_pointer p(ptr);
      json::json_pointer parent = p.parent_pointer();
      if (!config->contains(parent) || !(*config)[parent].is_object()) {
        return Status::InvalidArgument("sealed secret '" + ptr + "' has no place in the config");
      }
      (*config)[p] = value;
    } catch (const json::exception&) {
      return Status::InvalidArgument("sealed secret '" + ptr + "' is malformed");
    }
  }
  return Status::Ok();
}

}  // namespace dbs::security
