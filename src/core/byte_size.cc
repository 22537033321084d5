#include "feedline/byte_size.h"

#include <limits>

namespace feedline {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// The factor of a lower-case unit, or 0 if it is none.
uint64_t UnitFactor(const std::string& unit) {
  if (unit.empty() || unit == "b") return 1;
  static constexpr std::string_view kPrefixes = "kmgtpe";
  const size_t power = kPrefixes.find(unit[0]);
  if (power == std::string_view::npos) return 0;
  const std::string_view rest = std::string_view(unit).substr(1);
  uint64_t base = 0;
  if (rest.empty() || rest == "i" || rest == "ib") base = 1024;
  if (rest == "b") base = 1000;
  uint64_t factor = base;
  for (size_t i = 0; i < power; ++i) factor *= base;
  return factor;
}

// `reason` follows "is"; a text that is no size at all also gets the rule.
// (Appended piece by piece: GCC 12 warns falsely, -Wrestrict, on a + chain.)
ByteSizeParse Fail(std::string_view text, std::string_view reason, bool with_rule = true) {
  ByteSizeParse failed;
  failed.error.append("\"").append(text).append("\" is ").append(reason);
  if (with_rule) failed.error.append("; a size is ").append(kByteSizeRule);
  return failed;
}

}  // namespace

ByteSizeParse ParseByteSize(std::string_view text) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n && IsSpace(text[i])) ++i;
  if (i < n && (text[i] == '-' || text[i] == '+')) {
    return Fail(text, text[i] == '-' ? "negative" : "not a size: no sign is allowed");
  }
  const size_t whole_begin = i;
  while (i < n && IsDigit(text[i])) ++i;
  const std::string_view whole = text.substr(whole_begin, i - whole_begin);
  if (whole.empty()) return Fail(text, "not a size: it does not begin with a number");
  std::string_view fraction;
  if (i < n && text[i] == '.') {
    const size_t fraction_begin = ++i;
    while (i < n && IsDigit(text[i])) ++i;
    fraction = text.substr(fraction_begin, i - fraction_begin);
  }
  while (i < n && IsSpace(text[i])) ++i;
  std::string unit;
  while (i < n && !IsSpace(text[i])) unit += Lower(text[i++]);
  while (i < n && IsSpace(text[i])) ++i;
  if (i < n) return Fail(text, "not a size: more than a number and a unit");
  const uint64_t factor = UnitFactor(unit);
  if (factor == 0) return Fail(text, "not a size: unknown unit \"" + unit + "\"");

  // Exact arithmetic in 128 bits: the whole part below 2^64 times a factor
  // of at most 2^60, and 18 fraction digits (below 2^60) times the factor.
  constexpr uint64_t kMax = std::numeric_limits<int64_t>::max();
  unsigned __int128 number = 0;
  for (const char digit : whole) {
    number = number * 10 + static_cast<unsigned>(digit - '0');
    if (number > kMax) return Fail(text, "too large: more than 8 EiB (2^63 - 1 bytes)", false);
  }
  constexpr size_t kMaxFractionDigits = 18;
  if (fraction.size() > kMaxFractionDigits) {
    return Fail(text, "not a size: more than 18 digits after the decimal point");
  }
  unsigned __int128 fraction_scaled = 0;  // the fraction times 10^18
  for (size_t d = 0; d < kMaxFractionDigits; ++d) {
    fraction_scaled =
        fraction_scaled * 10 + (d < fraction.size() ? static_cast<unsigned>(fraction[d] - '0') : 0);
  }
  unsigned __int128 ten_to_18 = 1;
  for (size_t d = 0; d < kMaxFractionDigits; ++d) ten_to_18 *= 10;
  const unsigned __int128 bytes = number * factor + fraction_scaled * factor / ten_to_18;
  if (bytes > kMax) return Fail(text, "too large: more than 8 EiB (2^63 - 1 bytes)", false);
  return {static_cast<int64_t>(bytes), std::string()};
}

std::string FormatByteSize(int64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes <= 0 || bytes % 1024 != 0) return std::to_string(bytes);
  int unit = -1;
  while (unit + 1 < 6 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + kUnits[unit];
}

}  // namespace feedline
