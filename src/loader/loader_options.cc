#include "feedline/loader_options.h"

#include "feedline/error.h"

namespace feedline {

const char* ErrorPolicyName(ErrorPolicy policy) {
  switch (policy) {
    case ErrorPolicy::kRaise: return "raise";
    case ErrorPolicy::kSkip: return "skip";
    case ErrorPolicy::kReplace: return "replace";
  }
  return "?";
}

ErrorPolicy ParseErrorPolicy(const std::string& name) {
  if (name == "raise") return ErrorPolicy::kRaise;
  if (name == "skip") return ErrorPolicy::kSkip;
  if (name == "replace") return ErrorPolicy::kReplace;
  throw Error("error_policy must be raise, skip or replace, got '" + name + "'");
}

const char* WorkerModeName(WorkerMode mode) {
  switch (mode) {
    case WorkerMode::kThread: return "thread";
    case WorkerMode::kProcess: return "process";
    case WorkerMode::kAuto: return "auto";
  }
  return "?";
}

WorkerMode ParseWorkerMode(const std::string& name) {
  if (name == "thread") return WorkerMode::kThread;
  if (name == "process") return WorkerMode::kProcess;
  if (name == "auto") return WorkerMode::kAuto;
  throw Error("worker_mode must be thread, process or auto, got '" + name + "'");
}

}  // namespace feedline
