// ByteSource: the bytes of one file, wherever they lie, under every format
// that reads files by ranges (packs, Parquet): a local file, a URL served
// over HTTP(S) or S3, or a remote file served from the node's cache. Its one
// verb is ReadRange; Size, Stream and ReadAll are what a format needs around
// it, each with a default over ReadRange that an implementation overrides
// only where it has a cheaper way (one streamed GET, one GET of a whole
// small file). Formats are parsed above it, once (pack_store.h), never in an
// implementation.
//
// ByteSourceWrapper forwards every call to another source: a subclass that
// overrides one method changes that behaviour alone, as a test does to
// inject a fault (a failed range, a short file) under the real code path.
//
// Every error names the source (its path or URL).
//
// Thread safety: every method may be called from many threads at once.
#ifndef FEEDLINE_SRC_STORAGE_BYTE_SOURCE_H_
#define FEEDLINE_SRC_STORAGE_BYTE_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace feedline::storage {

class ByteSource {
 public:
  using Sink = std::function<void(const uint8_t* data, size_t size)>;

  virtual ~ByteSource() = default;

  // The path or URL that errors name.
  virtual const std::string& name() const = 0;

  // Its length, or nullopt if there is no such file; `missing`, when given,
  // then receives why ("No such file or directory", "HTTP 410 (gone)").
  // Throws Error naming it for any other failure.
  virtual std::optional<uint64_t> Size(std::string* missing = nullptr) const = 0;

  // Bytes [offset, offset + size) into `dst`, all of them: a file that ends
  // first, or a failed read, throws Error naming it. size 0: nothing.
  virtual void ReadRange(uint64_t offset, size_t size, uint8_t* dst) const = 0;

  // Hands bytes [offset, offset + size) to `sink` in order, each byte once,
  // as they arrive. An exception from `sink` stops it and propagates.
  // Default: ReadRange in pieces of kStreamPiece.
  virtual void Stream(uint64_t offset, uint64_t size, const Sink& sink) const;

  // The whole file, or nullopt if there is no such file (`missing` as
  // Size's). Throws Error naming it if it holds more than `max_bytes`.
  // Default: Size, then ReadRange.
  virtual std::optional<std::vector<uint8_t>> ReadAll(uint64_t max_bytes,
                                                      std::string* missing = nullptr) const;

  // The bytes of [offset, offset + size) that this thread just read failed
  // the reader's check (a CRC): a source that keeps a copy it can fetch
  // again (the node's cache) replaces it. True: reading the range again may
  // give other bytes; false: they are what the origin holds. Default: false.
  virtual bool Refetch(uint64_t offset, uint64_t size) const;

  // Throws the error of a file found missing, `message` its text: Error,
  // or for a local file OsError ENOENT naming `path` (so that Python raises
  // FileNotFoundError, as open() would).
  [[noreturn]] virtual void ThrowMissing(const std::string& path,
                                         const std::string& message) const;

  static constexpr size_t kStreamPiece = size_t{1} << 20;
};

// Opens the source of the file at a path or URL (what an Env is to
// LevelDB): a store that holds connections or descriptors gives out sources
// over them.
using OpenByteSource = std::function<std::unique_ptr<ByteSource>(const std::string& location)>;

class ByteSourceWrapper : public ByteSource {
 public:
  explicit ByteSourceWrapper(std::unique_ptr<ByteSource> target) : target_(std::move(target)) {}

  const std::string& name() const override { return target_->name(); }
  std::optional<uint64_t> Size(std::string* missing = nullptr) const override {
    return target_->Size(missing);
  }
  void ReadRange(uint64_t offset, size_t size, uint8_t* dst) const override {
    target_->ReadRange(offset, size, dst);
  }
  void Stream(uint64_t offset, uint64_t size, const Sink& sink) const override {
    target_->Stream(offset, size, sink);
  }
  std::optional<std::vector<uint8_t>> ReadAll(uint64_t max_bytes,
                                              std::string* missing = nullptr) const override {
    return target_->ReadAll(max_bytes, missing);
  }
  bool Refetch(uint64_t offset, uint64_t size) const override {
    return target_->Refetch(offset, size);
  }
  [[noreturn]] void ThrowMissing(const std::string& path,
                                 const std::string& message) const override {
    target_->ThrowMissing(path, message);
    // Every override throws; the compiler cannot see through the virtual call.
    __builtin_unreachable();
  }

  const ByteSource& target() const { return *target_; }

 private:
  std::unique_ptr<ByteSource> target_;
};

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_BYTE_SOURCE_H_
