// LocalFileSource: a file on the local file system as a ByteSource, opened
// for each call and closed after it: for files read once or whole (a pack's
// pack.txt, classes.txt and indexes, a tar indexed on the way). Files read
// again and again (a pack's tars) are ShardFileSources, whose descriptors
// stay open.
//
// Thread safety: as ByteSource.
#ifndef FEEDLINE_SRC_STORAGE_LOCAL_FILE_SOURCE_H_
#define FEEDLINE_SRC_STORAGE_LOCAL_FILE_SOURCE_H_

#include <string>

#include "src/storage/byte_source.h"

namespace feedline::storage {

class LocalFileSource : public ByteSource {
 public:
  explicit LocalFileSource(std::string path) : path_(std::move(path)) {}

  const std::string& name() const override { return path_; }
  // Error naming it for anything but a regular file.
  std::optional<uint64_t> Size(std::string* missing = nullptr) const override;
  void ReadRange(uint64_t offset, size_t size, uint8_t* dst) const override;
  // One open and sequential reads.
  void Stream(uint64_t offset, uint64_t size, const Sink& sink) const override;
  [[noreturn]] void ThrowMissing(const std::string& path,
                                 const std::string& message) const override;

 private:
  // A descriptor of the file; throws OsError naming it.
  int Open() const;

  const std::string path_;
};

// The Size of a local file at `path` (stat): nullopt if there is none
// (`missing`: strerror(ENOENT)); Error naming it for anything but a regular
// file, or a failed stat.
std::optional<uint64_t> LocalFileSize(const std::string& path, std::string* missing);

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_LOCAL_FILE_SOURCE_H_
