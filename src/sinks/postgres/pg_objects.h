// Creating a run's schema objects (views, routines, triggers, sequences, ...) in a PostgreSQL
// target, and checking the extensions its tables need. Internal to the PostgreSQL sink.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config/stream_config.h"
#include "core/result.h"
#include "core/schema.h"
#include "postgres/pg_client.h"
#include "sinks/objects_plan.h"

namespace dbs::pg {

struct CreateObjectsOptions {
  // drop_and_recreate: an object of the same name in the target is replaced; otherwise it is
  // left as it is and reported.
  bool replace = false;
  StreamMode mode = StreamMode::kLoad;  // CDC modes: triggers are created disabled
  // The target schema of a source schema.
  std::function<std::string(const std::string&)> target_schema;
};

// Runs inside the caller's transaction (the swap): creates every object `planned` marks
// migrated, in its order, each under its own savepoint with check_function_bodies off and its
// target schema first on the search_path; each definition runs as one statement (the server
// refuses a second one). Views are retried while others get created (a view may read a view
// that comes later). An object the target refuses is rolled back to its savepoint and its
// outcome says why. Returns the outcomes as they turned out. Errors only for a broken
// connection or savepoint handling.
Result<std::vector<ObjectOutcome>> CreateObjects(PGconn* conn, std::vector<ObjectOutcome> planned,
                                                 const std::vector<SchemaObject>& objects,
                                                 const CreateObjectsOptions& options);

// The extension objects among `objects` that the target lacks; for each one, tries
// CREATE EXTENSION (in its source schema when the target has it). `created` receives the names
// created. FailedPrecondition, before anything is written, for an extension that columns need
// and that cannot be created, naming it, the columns, the server's reason and what to do; an
// extension no column needs is only skipped (its outcome says so at the swap).
Status EnsureExtensions(PGconn* conn, const std::vector<SchemaObject>& objects,
                        std::vector<std::string>* created);

}  // namespace dbs::pg
