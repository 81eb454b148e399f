// Secrets of a stream config on their way to a service. The API takes them out of the config
// (TakeSecrets), seals them to each service's public key (sealed_box.h), and sends the config
// without them; the service opens its box and puts them back (PutSecrets). So no NATS message
// carries a password in clear, and a service that is not a recipient learns nothing.
//
// Secret members: every member named "password", "busKey" (the stream's data key) or
// "sessionToken" (an S3 connection's temporary credentials), at any depth, and "ssl"."key"
// when it holds a PEM private key inline (a path is not a secret).
#pragma once

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace dbs::security {

// Removes the secret members from `config`; returns them as {"<JSON pointer>": value}, an
// empty object when there are none.
nlohmann::json TakeSecrets(nlohmann::json* config);

// Puts secrets taken by TakeSecrets back. InvalidArgument when `secrets` is not such an object
// or a pointer does not name a place in `config` whose parent exists.
Status PutSecrets(nlohmann::json* config, const nlohmann::json& secrets);

}  // namespace dbs::security
