// PackManifest: a pack's pack.txt (pack.h), read in one place. "name value"
// lines: the head (source, file count, shard size, the options that change
// the bytes), then, once the pack is finished, "records N" and "shards N".
// A resume compares heads; a reader takes the counts.
#ifndef FEEDLINE_SRC_STORAGE_PACK_MANIFEST_H_
#define FEEDLINE_SRC_STORAGE_PACK_MANIFEST_H_

#include <cstdint>
#include <string>

namespace feedline::storage {

class PackManifest {
 public:
  explicit PackManifest(std::string text) : text_(std::move(text)) {}

  // The value of the first "NAME value" line, or "" if there is none.
  std::string Value(const std::string& name) const;
  // Whether it has its counts (the pack was finished).
  bool finished() const { return !Value("records").empty(); }
  // The text before the counts: what a resume compares.
  std::string head() const;
  // The shard count of a finished pack. Throws Error naming `where` if it
  // is unfinished or the count is not a positive number. `where`: the
  // pack's folder, ending in '/'.
  int64_t ShardCount(const std::string& where) const;

  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_PACK_MANIFEST_H_
