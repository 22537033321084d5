#include "feedline/vision/annotation_index.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string_view>

#include "feedline/error.h"

namespace feedline::vision {
namespace {

namespace fs = std::filesystem;

// What an index records of the file it was made from, ahead of the arrays:
// its path, size, inode and both times. Any write to the file changes its
// ctime, which (unlike the mtime) cannot be set back, and a copy made with
// its times kept (cp -p, rsync -t, tar) is a new inode: either way the
// index no longer matches and the file is parsed again.
struct Origin {
  std::string path;  // absolute
  uint64_t size = 0;
  uint64_t inode = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;

  bool operator==(const Origin&) const = default;
};

// A checksum of the arrays, so that a damaged index is parsed again rather
// than loaded with plausible but wrong values (FromIndex checks only that
// every offset is in range). Not cryptographic: it finds a disk's or a
// copy's damage, 8 bytes a step.
uint64_t Checksum(std::string_view bytes) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ bytes.size();
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    h = (h ^ word) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
  }
  for (; i < bytes.size(); ++i) h = (h ^ static_cast<unsigned char>(bytes[i])) * 0x100000001b3ull;
  return h ^ (h >> 31);
}

std::string Header(const Origin& origin, uint64_t checksum) {
  std::ostringstream out;
  out << "feedline coco index\n"
      << origin.path << '\n'
      << origin.size << ' ' << origin.inode << ' ' << origin.mtime_ns << ' ' << origin.ctime_ns
      << ' ' << checksum << '\n';
  return out.str();
}

// FNV-1a of the path: the index's file name (the header has the path itself).
std::string IndexName(const std::string& path) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : path) h = (h ^ c) * 1099511628211ull;
  char name[40];
  std::snprintf(name, sizeof(name), "%016llx.coco-index", static_cast<unsigned long long>(h));
  return name;
}

bool StatFile(const std::string& path, Origin* origin) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  std::error_code ec;
  origin->path = fs::absolute(path, ec).lexically_normal().string();
  if (ec) return false;
  origin->size = static_cast<uint64_t>(st.st_size);
  origin->inode = static_cast<uint64_t>(st.st_ino);
  origin->mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  origin->ctime_ns = int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec;
  return true;
}

// The whole of a regular file; false for anything else (opened without
// blocking, so that a FIFO in its place cannot stall the start).
bool ReadWhole(const std::string& path, std::string* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  bool whole = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (whole) {
    out->resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < out->size()) {
      const ssize_t n = ::read(fd, out->data() + done, out->size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    whole = done == out->size();
  }
  ::close(fd);
  return whole;
}

// Writes `parts` to `path` through a temporary beside it, named for this
// process and call; false if it could not.
bool WriteAtomically(const std::string& path, std::string_view header, std::string_view body) {
  static std::atomic<uint64_t> calls{0};
  const std::string temporary =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(calls.fetch_add(1));
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool written = true;
  for (std::string_view part : {header, body}) {
    size_t done = 0;
    while (written && done < part.size()) {
      const ssize_t n = ::write(fd, part.data() + done, part.size() - done);
      if (n <= 0) written = false;
      else done += static_cast<size_t>(n);
    }
  }
  written = ::close(fd) == 0 && written;
  if (!written || ::rename(temporary.c_str(), path.c_str()) != 0) {
    ::unlink(temporary.c_str());
    return false;
  }
  return true;
}

}  // namespace

std::string DefaultAnnotationIndexDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/feedline/annotation-index";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') {
    return std::string(home) + "/.cache/feedline/annotation-index";
  }
  return "";
}

CocoAnnotations ReadCocoAnnotations(const std::string& path, const std::string& index_dir) {
  Origin origin;
  if (index_dir.empty() || !StatFile(path, &origin)) return CocoAnnotations::Read(path);
  const std::string index_path = index_dir + "/" + IndexName(origin.path);
  std::string bytes;
  if (ReadWhole(index_path, &bytes)) {
    // The header names the file as it is now and the arrays' checksum.
    const std::string expected = Header(origin, 0);
    const size_t checksum_at = expected.size() - 2;  // the "0\n" written for it above
    const size_t end = bytes.find('\n', checksum_at);
    if (end != std::string::npos && bytes.compare(0, checksum_at, expected, 0, checksum_at) == 0) {
      const std::string_view arrays = std::string_view(bytes).substr(end + 1);
      const std::string checksum = bytes.substr(checksum_at, end - checksum_at);
      if (checksum == std::to_string(Checksum(arrays))) {
        try {
          return CocoAnnotations::FromIndex(arrays, index_path);
        } catch (const Error&) {
          // Damaged in a way the checksum missed: parsed again below.
        }
      }
    }
  }
  CocoAnnotations parsed = CocoAnnotations::Read(path);
  // The file changed while it was read: its index would name the old one.
  Origin after;
  if (!StatFile(path, &after) || !(after == origin)) return parsed;
  std::error_code ec;
  fs::create_directories(index_dir, ec);
  if (!ec) {
    const std::string arrays = parsed.ToIndex();
    WriteAtomically(index_path, Header(origin, Checksum(arrays)), arrays);
  }
  return parsed;
}

}  // namespace feedline::vision
