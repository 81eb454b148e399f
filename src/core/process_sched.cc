#include "core/process_sched.h"

#include <sched.h>

namespace dbs {

Status TuneProcessScheduling(const EnvLookup& env) {
  const std::string choice = env("DBS_SCHED_POLICY").value_or("");
  int policy;
  if (choice.empty() || choice == "batch") {
    policy = SCHED_BATCH;
  } else if (choice == "normal") {
    policy = SCHED_OTHER;
  } else {
    return Status::InvalidArgument("DBS_SCHED_POLICY is '" + choice +
                                   "': use batch (the default) or normal");
  }
  const sched_param param{};  // priority 0: the only one SCHED_OTHER and SCHED_BATCH take
  // pid 0: the calling thread; the threads it starts later inherit its policy. A refusal
  // (EPERM from a sandbox) keeps the current policy, which is what the contract promises.
  (void)sched_setscheduler(0, policy, &param);
  return Status::Ok();
}

}  // namespace dbs
