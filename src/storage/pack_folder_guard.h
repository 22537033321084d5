// Guards of a pack's output folder: it must not lie where the pack's input
// is read from, and only one pack may write to it at a time.
#ifndef FEEDLINE_SRC_STORAGE_PACK_FOLDER_GUARD_H_
#define FEEDLINE_SRC_STORAGE_PACK_FOLDER_GUARD_H_

#include <string>

#include "feedline/vision/image_dataset.h"

namespace feedline::storage {

// The lock file a pack holds in its output folder ("OUT/.pack.lock").
inline constexpr const char* kPackLockName = ".pack.lock";

// Throws Error naming both paths unless `out_dir` lies outside the image
// folder `source` (links followed): shards written into the folder or a
// folder inside it would be listed as images or as a class by a later scan,
// and the folder's pack.txt would make it read as a pack.
void CheckOutsideImageFolder(const std::string& source, const std::string& out_dir);

// For a file list: throws Error naming both paths if `out_dir` is the list's
// folder or a folder holding one of the listed files (`root` + path): the
// pack's files would sit beside the inputs and the folder would then read as
// a pack. A folder below the list's (data/shards beside data/train.txt) is
// fine: a list reads only the files it names.
void CheckOutsideFileList(const std::string& list, const std::string& root,
                          const vision::ImageList& files, const std::string& out_dir);

// The second half of CheckOutsideFileList, for any listing (a detection
// source's images): throws Error naming both if `out_dir` is a folder that
// holds one of `files` (`root` + path), listed from `source`.
void CheckNotAListedFolder(const std::string& source, const std::string& root,
                           const vision::ImageList& files, const std::string& out_dir);

// An exclusive lock on an output folder for the length of a pack: flock on
// OUT/.pack.lock, not waiting. The file stays after the pack (removing it
// would let a third pack lock a new file while a second holds the old one);
// nothing that lists shards reads it.
class PackFolderLock {
 public:
  // Throws Error naming the folder if another pack holds it, or if the lock
  // file cannot be created.
  explicit PackFolderLock(const std::string& out_dir);
  ~PackFolderLock();
  PackFolderLock(const PackFolderLock&) = delete;
  PackFolderLock& operator=(const PackFolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_PACK_FOLDER_GUARD_H_
