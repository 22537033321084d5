#include "src/storage/parted_download.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <thread>
#include <vector>

#include "feedline/error.h"
#include "src/core/mutex.h"
#include "src/storage/local_file.h"

namespace feedline::storage {
namespace {

// FILE.progress: this header, then one little-endian uint64 per part (the
// bytes of it received).
constexpr char kMagic[8] = {'F', 'L', 'P', 'A', 'R', 'T', 'S', '1'};
constexpr uint64_t kHeaderBytes = 24;  // magic, size, part_bytes

std::string ProgressPathOf(const std::string& file) { return file + ".progress"; }

void PutU64(uint8_t* at, uint64_t value) {
  for (int i = 0; i < 8; ++i) at[i] = static_cast<uint8_t>(value >> (8 * i));
}
uint64_t GetU64(const uint8_t* at) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | at[i];
  return value;
}

// What has arrived of each part: read from FILE.progress when it matches
// this download, else from FILE's length (received from the first byte on),
// and the progress file written afresh to say so.
std::vector<uint64_t> ReceivedSoFar(const PartedDownload& d, const LocalFile& file,
                                    const LocalFile& progress, bool progress_existed,
                                    size_t parts) {
  std::vector<uint64_t> received(parts, 0);
  if (progress_existed && progress.Size() == kHeaderBytes + 8 * parts) {
    std::vector<uint8_t> bytes(kHeaderBytes + 8 * parts);
    progress.ReadAt(bytes.data(), bytes.size(), 0);
    const bool matches = std::memcmp(bytes.data(), kMagic, 8) == 0 &&
                         GetU64(bytes.data() + 8) == d.size &&
                         GetU64(bytes.data() + 16) == d.part_bytes;
    if (matches) {
      const uint64_t length = file.Size();
      for (size_t k = 0; k < parts; ++k) {
        const uint64_t start = k * d.part_bytes;
        const uint64_t part = std::min(d.part_bytes, d.size - start);
        // Never more than the part, nor than the file holds.
        const uint64_t held = length > start ? length - start : 0;
        received[k] = std::min({GetU64(bytes.data() + kHeaderBytes + 8 * k), part, held});
      }
      return received;
    }
  }
  if (!progress_existed) {
    // Written from the first byte on: its length is what arrived.
    uint64_t length = std::min(file.Size(), d.size);
    for (size_t k = 0; k < parts && length > 0; ++k) {
      received[k] = std::min(length, std::min(d.part_bytes, d.size - k * d.part_bytes));
      length -= received[k];
    }
  } else {
    file.Truncate(0);  // another download's progress: start again
  }
  std::vector<uint8_t> bytes(kHeaderBytes + 8 * parts);
  std::memcpy(bytes.data(), kMagic, 8);
  PutU64(bytes.data() + 8, d.size);
  PutU64(bytes.data() + 16, d.part_bytes);
  for (size_t k = 0; k < parts; ++k) PutU64(bytes.data() + kHeaderBytes + 8 * k, received[k]);
  progress.Truncate(0);
  progress.WriteAt(bytes.data(), bytes.size(), 0);
  return received;
}

// The first failure of the parts running at once; the others stop at their
// next piece.
class FirstFailure {
 public:
  void Set(std::exception_ptr failure) {
    internal::MutexLock lock(&mu_);
    if (!first_) first_ = std::move(failure);
    failed_.store(true);
  }
  bool failed() const { return failed_.load(); }
  void Rethrow() {
    internal::MutexLock lock(&mu_);
    if (first_) std::rethrow_exception(first_);
  }

 private:
  internal::Mutex mu_;
  std::exception_ptr first_ GUARDED_BY(mu_);
  std::atomic<bool> failed_{false};
};

// Thrown by a part's sink to end its request once another part failed.
struct Stopped {};

}  // namespace

uint64_t DownloadInParts(const ByteSource& origin, const PartedDownload& d) {
  if (d.part_bytes == 0 || d.parts_at_once < 1) {
    throw Error(d.file + ": a parted download needs part_bytes > 0 and parts_at_once >= 1");
  }
  const size_t parts = static_cast<size_t>((d.size + d.part_bytes - 1) / d.part_bytes);
  const LocalFile file = LocalFile::OpenForWriting(d.file);
  const std::string progress_path = ProgressPathOf(d.file);
  struct stat st;
  const bool progress_existed = ::stat(progress_path.c_str(), &st) == 0;
  const LocalFile progress = LocalFile::OpenForWriting(progress_path);
  const std::vector<uint64_t> received = ReceivedSoFar(d, file, progress, progress_existed, parts);
  uint64_t already = 0;
  std::vector<size_t> pending;
  for (size_t k = 0; k < parts; ++k) {
    already += received[k];
    if (received[k] < std::min(d.part_bytes, d.size - k * d.part_bytes)) pending.push_back(k);
  }

  FirstFailure failure;
  std::atomic<size_t> next{0};
  auto fetch_parts = [&] {
    try {
      for (size_t at = next++; at < pending.size() && !failure.failed(); at = next++) {
        const size_t k = pending[at];
        const uint64_t start = k * d.part_bytes;
        const uint64_t end = std::min(start + d.part_bytes, d.size);
        uint64_t have = received[k];
        origin.Stream(start + have, end - start - have, [&](const uint8_t* data, size_t size) {
          if (failure.failed()) throw Stopped{};
          file.WriteAt(data, size, start + have);
          have += size;
          uint8_t count[8];
          PutU64(count, have);
          progress.WriteAt(count, 8, kHeaderBytes + 8 * k);
        });
      }
    } catch (const Stopped&) {
    } catch (...) {
      failure.Set(std::current_exception());
    }
  };
  const size_t threads = std::min(pending.size(), static_cast<size_t>(d.parts_at_once));
  std::vector<std::thread> helpers;
  for (size_t i = 1; i < threads; ++i) helpers.emplace_back(fetch_parts);
  fetch_parts();
  for (std::thread& helper : helpers) helper.join();
  failure.Rethrow();
  // A file written from the first byte on by a longer download.
  if (file.Size() > d.size) file.Truncate(d.size);
  return already;
}

void RestartDownload(const std::string& file) {
  LocalFile::OpenForWriting(file, /*truncate=*/true);
  const std::string progress = ProgressPathOf(file);
  if (::unlink(progress.c_str()) != 0 && errno != ENOENT) {
    throw Error(ErrnoMessage("cannot remove", progress));
  }
}

void FinishDownload(const std::string& file) {
  const std::string progress = ProgressPathOf(file);
  if (::unlink(progress.c_str()) != 0 && errno != ENOENT) {
    throw Error(ErrnoMessage("cannot remove", progress));
  }
}

}  // namespace feedline::storage
