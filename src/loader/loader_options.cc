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

}  // namespace feedline
