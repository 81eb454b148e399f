// Creating a run's schema objects (views, routines, triggers, events, sequences) in a
// MySQL/MariaDB target. Internal to the MySQL sink.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "config/stream_config.h"
#include "core/result.h"
#include "core/schema.h"
#include "mysql/mysql_client.h"
#include "sinks/objects_plan.h"

namespace dbs::mysql {

struct CreateObjectsOptions {
  // drop_and_recreate: an object of the same name in the target is replaced; otherwise it is
  // left as it is and reported.
  bool replace = false;
  StreamMode mode = StreamMode::kLoad;  // CDC modes: events are created disabled
  // The target database of a source database.
  std::function<std::string(const std::string&)> target_database;
  // Outcome sources (ObjectOutcome::source) an earlier attempt of the same swap created:
  // reported as migrated, not created again. `created` is called after each new creation, so
  // a crash in the middle resumes where it stopped (MySQL DDL commits at once).
  std::set<std::string> done_before;
  std::function<Status(const std::string& source)> created;
};

// Creates every object `planned` marks migrated, in its order: each with its target database
// current (USE) and its own sql_mode, one statement each (the connection refuses a second).
// Views are retried while others get created. An object the target refuses is reported with
// the server's reason. The session's database and sql_mode are restored at the end. Errors
// only for a lost connection.
Result<std::vector<ObjectOutcome>> CreateObjects(MysqlConnection* conn,
                                                 std::vector<ObjectOutcome> planned,
                                                 const std::vector<SchemaObject>& objects,
                                                 const CreateObjectsOptions& options);

}  // namespace dbs::mysql
