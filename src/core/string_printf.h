// StringPrintf: snprintf into a std::string, for the short numeric texts of
// reports and progress lines (the loader's loop report, the feedline
// command's progress bar). Header-only, so the command can use it without
// the library exporting it.
#ifndef FEEDLINE_SRC_CORE_STRING_PRINTF_H_
#define FEEDLINE_SRC_CORE_STRING_PRINTF_H_

#include <cstdio>
#include <string>

namespace feedline::internal {

// `format` is a printf format that `args` match (checked by the compiler
// where the format is a literal at the call site of snprintf: keep formats
// literal). Output of any length.
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

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_CORE_STRING_PRINTF_H_
