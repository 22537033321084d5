#include "feedline/error.h"

#include <sstream>
#include <utility>

namespace feedline {
namespace {

std::string Describe(const char* reason, const std::string& source,
                     const std::string& message, int64_t index) {
  std::ostringstream out;
  out << "sample";
  if (index >= 0) out << " " << index;
  if (!source.empty()) out << " (" << source << ")";
  out << ": " << reason << ": " << message;
  return out.str();
}

// "1 s", "0.25 s": std::to_string would print "1.000000".
std::string FormatSeconds(double seconds) {
  std::ostringstream out;
  out << seconds << " s";
  return out.str();
}

}  // namespace

SampleError::SampleError(FailureKind kind, std::string source, std::string message,
                         int64_t index, FailureOrigin origin)
    : Error(Describe(FailureKindName(kind), source, message, index)),
      kind_(kind),
      source_(std::move(source)),
      message_(std::move(message)),
      index_(index),
      origin_(std::move(origin)) {}

SampleError SampleError::WithIndex(int64_t index) const {
  return SampleError(kind_, source_, message_, index, origin_);
}

TimeoutError::TimeoutError(int64_t index, std::string source, double seconds)
    : SampleError(FailureKind::kTimeout, std::move(source),
                  "took longer than the loader timeout of " + FormatSeconds(seconds),
                  index) {}

}  // namespace feedline
