// Printf: snprintf into a std::string, for the command's tables, reports and
// progress lines. The command builds on the public headers only, so it keeps
// this one helper of its own rather than the library's internal one.
//
// Thread safety: a pure function.
//
// Example:
//   out += Printf("%8d %11.1f\n", workers, images_per_s);
#ifndef FEEDLINE_TOOLS_PRINTF_H_
#define FEEDLINE_TOOLS_PRINTF_H_

#include <cstdio>
#include <string>

namespace feedline::cli {

// `format` is a printf format that `args` match (the compiler checks a
// literal format at the call of snprintf: keep formats literal). Output of
// any length.
template <class... Args>
std::string Printf(const char* format, Args... args) {
  char buffer[256];
  const int n = std::snprintf(buffer, sizeof(buffer), format, args...);
  if (n < 0) return std::string();
  if (static_cast<size_t>(n) < sizeof(buffer)) return std::string(buffer, static_cast<size_t>(n));
  std::string out(static_cast<size_t>(n), '\0');
  std::snprintf(out.data(), out.size() + 1, format, args...);
  return out;
}

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_PRINTF_H_
