#include "src/storage/pack_manifest.h"

#include <cstdio>
#include <sstream>

#include "feedline/error.h"

namespace feedline::storage {

std::string PackManifest::Value(const std::string& name) const {
  std::istringstream lines(text_);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(name + " ", 0) == 0) return line.substr(name.size() + 1);
  }
  return {};
}

std::string PackManifest::head() const {
  if (text_.rfind("records ", 0) == 0) return {};
  const size_t records = text_.find("\nrecords ");
  return records == std::string::npos ? text_ : text_.substr(0, records + 1);
}

int64_t PackManifest::ShardCount(const std::string& where) const {
  const std::string shards = Value("shards");
  if (!finished() || shards.empty()) {
    throw Error(where +
                ": the pack is unfinished (pack.txt has no record or shard count); run "
                "'feedline pack' with the same SOURCE and OUT again to finish it");
  }
  long long count = -1;
  char extra = 0;
  if (std::sscanf(shards.c_str(), "%lld%c", &count, &extra) != 1 || count < 1) {
    throw Error(where + "pack.txt: bad shard count '" + shards + "'");
  }
  return count;
}

}  // namespace feedline::storage
