// StringPrintf: snprintf into a std::string, for short numeric texts: the
// loader's loop report and tuner notes, the feedline command's tables,
// reports and progress lines. Header-only and public, so that the library
// and the programs built on its public headers share one implementation.
//
// Thread safety: a pure function.
//
// Example:
//   out += StringPrintf("%8d %11.1f\n", workers, images_per_s);
#ifndef FEEDLINE_STRING_PRINTF_H_
#define FEEDLINE_STRING_PRINTF_H_

#include <cstddef>
#include <cstdio>
#include <string>

namespace feedline {

// `format` is a printf format that `args` match (checked by the compiler
// where the format is a literal at the call site of snprintf: keep formats
// literal). Output of any length; an encoding error gives "".
template <class... Args>
std::string StringPrintf(const char* format, Args... args) {
  char buffer[256];
  const int n = std::snprintf(buffer, sizeof(buffer), format, args...);
  if (n < 0) return std::string();
  if (static_cast<size_t>(n) < sizeof(buffer)) return std::string(buffer, static_cast<size_t>(n));
  std::string out(static_cast<size_t>(n), '\0');
  std::snprintf(out.data(), out.size() + 1, format, args...);
  return out;
}

}  // namespace feedline

#endif  // FEEDLINE_STRING_PRINTF_H_
