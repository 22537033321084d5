#include "feedline/vision/image_folder.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "feedline/error.h"

namespace feedline::vision {
namespace {

// Symlink loops would otherwise recurse forever (os.walk does too).
constexpr int kMaxDepth = 32;

class DirHandle {
 public:
  explicit DirHandle(const std::string& path) : dir_(::opendir(path.c_str())) {
    if (dir_ == nullptr) {
      const int error = errno;
      throw OsError(error, path,
                    "ImageFolder: cannot read directory '" + path + "': " + std::strerror(error));
    }
  }
  DirHandle(const DirHandle&) = delete;
  DirHandle& operator=(const DirHandle&) = delete;
  ~DirHandle() { ::closedir(dir_); }
  DIR* get() const { return dir_; }

 private:
  DIR* dir_;
};

bool IsDotOrDotDot(const char* name) {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

// Whether entry `e` of directory `dir` is a directory. readdir's d_type
// answers without a system call; only symlinks and file systems that do not
// fill d_type need a stat (which follows the link, like os.walk(followlinks=True)).
bool IsDirectory(const std::string& dir, const dirent* e) {
  if (e->d_type == DT_DIR) return true;
  if (e->d_type != DT_LNK && e->d_type != DT_UNKNOWN) return false;
  struct stat st;
  const std::string path = dir + "/" + e->d_name;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

struct DirectoryFiles {
  std::string relative;  // to the class folder; "" for the folder itself
  std::vector<std::string> names;
};

void Walk(const std::string& path, const std::string& relative, int depth,
          std::vector<DirectoryFiles>& out) {
  if (depth > kMaxDepth) {
    throw Error("ImageFolder: '" + path + "' is nested more than " + std::to_string(kMaxDepth) +
                " folders deep (a symlink loop?)");
  }
  DirectoryFiles here{relative, {}};
  std::vector<std::string> subdirectories;
  {
    DirHandle dir(path);
    while (const dirent* e = ::readdir(dir.get())) {
      if (IsDotOrDotDot(e->d_name)) continue;
      // An entry named like an image is taken as a file without a stat, even
      // when it is a symlink (datasets are often trees of symlinks).
      if (HasImageExtension(e->d_name) && e->d_type != DT_DIR) {
        here.names.emplace_back(e->d_name);
      } else if (IsDirectory(path, e)) {
        subdirectories.emplace_back(e->d_name);
      }
    }
  }
  out.push_back(std::move(here));
  for (const std::string& sub : subdirectories) {
    Walk(path + "/" + sub, relative.empty() ? sub : relative + "/" + sub, depth + 1, out);
  }
}

// The files of one class folder, as paths relative to the root, in
// torchvision's order: sorted(os.walk(folder)) orders directories by their
// path, then each directory's files by name.
std::vector<std::string> ListClass(const std::string& root, const std::string& name) {
  std::vector<DirectoryFiles> directories;
  Walk(root + "/" + name, "", 0, directories);
  std::sort(
      directories.begin(), directories.end(),
      [](const DirectoryFiles& a, const DirectoryFiles& b) { return a.relative < b.relative; });
  std::vector<std::string> files;
  for (DirectoryFiles& d : directories) {
    std::sort(d.names.begin(), d.names.end());
    const std::string prefix = d.relative.empty() ? name + "/" : name + "/" + d.relative + "/";
    for (const std::string& file : d.names) files.push_back(prefix + file);
  }
  return files;
}

}  // namespace

bool HasImageExtension(std::string_view name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return false;
  std::string_view ext = name.substr(dot + 1);
  if (ext.size() < 3 || ext.size() > 4) return false;
  char lower[5] = {};
  for (size_t i = 0; i < ext.size(); ++i) {
    lower[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(ext[i])));
  }
  const std::string_view e(lower, ext.size());
  return e == "jpg" || e == "jpeg" || e == "png" || e == "webp";
}

ImageFolder::Listing ImageFolder::List(const std::string& root_arg) {
  std::string root = root_arg;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  struct stat st;
  if (root.empty() || ::stat(root.c_str(), &st) != 0) {
    const int error = root.empty() ? ENOENT : errno;
    throw OsError(error, root_arg,
                  "ImageFolder: root '" + root_arg + "' does not exist" +
                      (error == ENOENT ? std::string() : std::string(": ") + std::strerror(error)));
  }
  if (!S_ISDIR(st.st_mode)) {
    throw Error("ImageFolder: root '" + root_arg + "' is not a directory");
  }
  Listing listing;
  {
    DirHandle dir(root);
    while (const dirent* e = ::readdir(dir.get())) {
      if (!IsDotOrDotDot(e->d_name) && IsDirectory(root, e)) {
        listing.classes.emplace_back(e->d_name);
      }
    }
  }
  if (listing.classes.empty()) {
    throw Error("ImageFolder: no class folders in '" + root_arg +
                "' (expected one subfolder per class)");
  }
  std::sort(listing.classes.begin(), listing.classes.end());

  // Class folders are listed in parallel: on network file systems each
  // readdir is a round trip.
  const size_t num_classes = listing.classes.size();
  std::vector<std::vector<std::string>> per_class(num_classes);
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::exception_ptr failure;
  auto work = [&] {
    try {
      for (size_t c = next++; c < num_classes; c = next++) {
        per_class[c] = ListClass(root, listing.classes[c]);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!failure) failure = std::current_exception();
      next = num_classes;
    }
  };
  const size_t threads =
      std::clamp<size_t>(std::thread::hardware_concurrency(), 1, std::min<size_t>(num_classes, 16));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);

  size_t files = 0, chars = 0;
  std::string empty;
  for (size_t c = 0; c < num_classes; ++c) {
    if (per_class[c].empty()) {
      if (!empty.empty()) empty += ", ";
      empty += "'" + listing.classes[c] + "'";
    }
    files += per_class[c].size();
    for (const std::string& f : per_class[c]) chars += f.size();
  }
  if (!empty.empty()) {
    throw Error("ImageFolder: no image files (.jpg, .jpeg, .png, .webp) in the class folders " +
                empty + " of '" + root_arg + "'");
  }
  listing.files.Reserve(files, chars);
  for (size_t c = 0; c < num_classes; ++c) {
    for (const std::string& f : per_class[c]) listing.files.Add(f, static_cast<int64_t>(c));
    std::vector<std::string>().swap(per_class[c]);  // release as we go
  }
  return listing;
}

ImageFolder::ImageFolder(const std::string& root, Pipeline pipeline, ReadOptions read)
    : ImageFolder(root, List(root), std::move(pipeline), read) {}

ImageFolder::ImageFolder(const std::string& root, Listing listing, Pipeline pipeline,
                         ReadOptions read)
    : ImageDataset(root, std::move(listing.files), std::move(listing.classes), std::move(pipeline),
                   read) {}

}  // namespace feedline::vision
