#include "src/storage/brace_list.h"

#include <cstdio>

#include "feedline/error.h"

namespace feedline::storage {
namespace {

bool AllDigits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// The words of one group's inside: "0..3" or "a,b,c".
std::vector<std::string> GroupWords(const std::string& inside, const std::string& pattern) {
  const size_t dots = inside.find("..");
  if (dots != std::string::npos) {
    const std::string first = inside.substr(0, dots);
    const std::string last = inside.substr(dots + 2);
    if (!AllDigits(first) || !AllDigits(last) || first.size() > 18 || last.size() > 18) {
      throw Error(pattern + ": bad range {" + inside + "} (expected {FIRST..LAST} of digits)");
    }
    const long long from = std::stoll(first);
    const long long to = std::stoll(last);
    if (to < from) throw Error(pattern + ": range {" + inside + "} ends below its start");
    std::vector<std::string> words;
    for (long long n = from; n <= to; ++n) {
      char text[32];
      std::snprintf(text, sizeof(text), "%0*lld", static_cast<int>(first.size()), n);
      words.push_back(text);
      if (words.size() > 10000000) throw Error(pattern + ": range {" + inside + "} is too long");
    }
    return words;
  }
  std::vector<std::string> words;
  size_t start = 0;
  while (true) {
    const size_t comma = inside.find(',', start);
    words.push_back(inside.substr(start, comma == std::string::npos ? std::string::npos
                                                                    : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return words;
}

}  // namespace

bool HasBraceList(const std::string& pattern) {
  const size_t open = pattern.find('{');
  return open != std::string::npos && pattern.find('}', open) != std::string::npos;
}

std::vector<std::string> ExpandBraceList(const std::string& pattern, size_t max_names) {
  std::vector<std::string> names = {""};
  size_t at = 0;
  while (at < pattern.size()) {
    const size_t open = pattern.find('{', at);
    const std::string literal = pattern.substr(at, open == std::string::npos ? std::string::npos
                                                                             : open - at);
    if (literal.find('}') != std::string::npos) {
      throw Error(pattern + ": '}' without its '{'");
    }
    for (std::string& name : names) name += literal;
    if (open == std::string::npos) break;
    const size_t close = pattern.find('}', open);
    if (close == std::string::npos) throw Error(pattern + ": '{' without its '}'");
    const std::string inside = pattern.substr(open + 1, close - open - 1);
    if (inside.empty() || inside.find('{') != std::string::npos) {
      throw Error(pattern + ": bad group {" + inside + "} (expected {FIRST..LAST} or {a,b,...})");
    }
    const std::vector<std::string> words = GroupWords(inside, pattern);
    if (names.size() * words.size() > max_names) {
      throw Error(pattern + ": stands for more than " + std::to_string(max_names) + " names");
    }
    std::vector<std::string> expanded;
    expanded.reserve(names.size() * words.size());
    for (const std::string& name : names) {
      for (const std::string& word : words) expanded.push_back(name + word);
    }
    names = std::move(expanded);
    at = close + 1;
  }
  return names;
}

}  // namespace feedline::storage
