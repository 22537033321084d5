#include "src/storage/pack_folder_guard.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <unordered_set>

#include "feedline/error.h"

namespace feedline::storage {
namespace {

namespace fs = std::filesystem;

// `path` with links followed; the part that does not exist yet kept as given.
fs::path Resolved(const std::string& path) {
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? fs::absolute(path).lexically_normal() : resolved;
}

// Whether `inner` is `outer` or lies below it (whole components compared:
// /a/prog_copy is not inside /a/prog).
bool IsWithin(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

void CheckOutsideImageFolder(const std::string& source, const std::string& out_dir) {
  const fs::path folder = Resolved(source);
  const fs::path out = Resolved(out_dir);
  if (!IsWithin(out, folder)) return;
  const bool same = IsWithin(folder, out);
  const bool resolved_as_given = out.string() == out_dir && folder.string() == source;
  throw Error(
      "pack: OUT " + out_dir + " is " +
      (same ? "the source folder " : "inside the source folder ") + source +
      (resolved_as_given ? std::string()
       : same            ? " (both are " + folder.string() + ")"
                         : " (" + out.string() + " is in " + folder.string() + ")") +
      ": the shards and pack.txt would mix with the images, and a later scan of " + source +
      (same ? " would read it as a pack" : " would take OUT for a class or its files for images") +
      "; choose an OUT outside " + source);
}

namespace {

// A folder that does not exist yet holds neither a list nor its files.
bool StatFolder(const std::string& path, struct stat& st) {
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

[[noreturn]] void RefuseInputFolder(const std::string& out_dir, const std::string& what) {
  throw Error("pack: OUT " + out_dir + " is the folder of " + what +
              ": the shards and pack.txt would mix with the inputs (and the folder would then "
              "read as a pack); choose another OUT, such as a new folder inside it");
}

}  // namespace

void CheckOutsideFileList(const std::string& list, const std::string& root,
                          const vision::ImageList& files, const std::string& out_dir) {
  struct stat out;
  if (!StatFolder(out_dir, out)) return;
  const std::string list_folder = fs::path(list).parent_path().string();
  struct stat st;
  if (::stat(list_folder.empty() ? "." : list_folder.c_str(), &st) == 0 && SameFile(st, out)) {
    RefuseInputFolder(out_dir, "the file list " + list);
  }
  CheckNotAListedFolder(list, root, files, out_dir);
}

void CheckNotAListedFolder(const std::string& source, const std::string& root,
                           const vision::ImageList& files, const std::string& out_dir) {
  struct stat out;
  if (!StatFolder(out_dir, out)) return;
  struct stat st;
  // One stat per folder the list names (lists name few folders, many times).
  std::unordered_set<std::string_view> folders;
  for (int64_t i = 0; i < files.size(); ++i) {
    const std::string_view path = files.path(i);
    const size_t slash = path.rfind('/');
    const std::string_view folder =
        slash == std::string_view::npos ? std::string_view() : path.substr(0, slash + 1);
    if (!folders.insert(folder).second) continue;
    const std::string full = !folder.empty() && folder.front() == '/'
                                 ? std::string(folder)
                                 : root + "/" + std::string(folder);
    if (::stat(full.c_str(), &st) == 0 && SameFile(st, out)) {
      RefuseInputFolder(out_dir, "files listed in " + source + " (" + std::string(path) + ")");
    }
  }
}

PackFolderLock::PackFolderLock(const std::string& out_dir) {
  const std::string path = out_dir + "/" + kPackLockName;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd_ < 0) {
    const int error = errno;
    throw OsError(error, path,
                  path + ": cannot create the pack's lock file: " + std::strerror(error));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
  const int error = errno;
  if (error == EWOULDBLOCK) {
    ::close(fd_);
    throw Error(out_dir + ": another pack is writing to this folder (it holds " + path +
                "); wait for it to finish, or pack into another folder");
  }
  // A file system without flock: the pack goes on unlocked, as before.
  if (error == ENOLCK || error == EOPNOTSUPP || error == ENOSYS || error == EINVAL) return;
  ::close(fd_);
  throw OsError(error, path,
                path + ": cannot lock the pack's output folder: " + std::strerror(error));
}

PackFolderLock::~PackFolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace feedline::storage
