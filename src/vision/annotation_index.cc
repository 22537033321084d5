#include "feedline/vision/annotation_index.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

// What an index records of the file it was made from, ahead of the arrays.
struct Origin {
  std::string path;  // absolute
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};

std::string Header(const Origin& origin) {
  std::ostringstream out;
  out << "feedline coco index\n" << origin.path << '\n' << origin.size << ' ' << origin.mtime_ns
      << '\n';
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
  origin->mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  return true;
}

bool ReadWhole(const std::string& path, std::string* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool whole = ::fstat(fd, &st) == 0;
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

// Writes `bytes` to `path` through a temporary beside it; false if it could not.
bool WriteAtomically(const std::string& path, std::string_view bytes) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool written = done == bytes.size() && ::close(fd) == 0;
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
  const std::string header = Header(origin);
  std::string bytes;
  if (ReadWhole(index_path, &bytes) && bytes.compare(0, header.size(), header) == 0) {
    try {
      return CocoAnnotations::FromIndex(std::string_view(bytes).substr(header.size()),
                                        index_path);
    } catch (const Error&) {
      // Damaged: parsed again below, and rewritten.
    }
  }
  CocoAnnotations parsed = CocoAnnotations::Read(path);
  // The file changed while it was read: its index would name the old one.
  Origin after;
  if (!StatFile(path, &after) || after.size != origin.size || after.mtime_ns != origin.mtime_ns) {
    return parsed;
  }
  std::error_code ec;
  fs::create_directories(index_dir, ec);
  if (!ec) WriteAtomically(index_path, header + parsed.ToIndex());
  return parsed;
}

}  // namespace feedline::vision
