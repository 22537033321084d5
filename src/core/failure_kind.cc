#include "feedline/failure_kind.h"

#include <array>

namespace feedline {
namespace {

// Indexed by the enum's value; the names are those stats and Python show.
constexpr std::array<const char*, kFailureKindCount> kNames = {
    "io",     "format",    "decode",  "checksum", "too_large", "shape",       "type",
    "schema", "exception", "collate", "memory",   "timeout",   "worker died", "cancelled",
};

}  // namespace

const char* FailureKindName(FailureKind kind) {
  const auto i = static_cast<size_t>(kind);
  return i < kNames.size() ? kNames[i] : "unknown";
}

std::optional<FailureKind> FailureKindNamed(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (name == kNames[i]) return static_cast<FailureKind>(i);
  }
  return std::nullopt;
}

}  // namespace feedline
