// FileList: a dataset listed in a text file, one sample per line as
// "relative/path label" (the format of Caffe / PaddleClas list files).
//
// The label is the last whitespace-separated token, a non-negative integer;
// the path is everything before it (so it may contain spaces) and is relative
// to `root` unless absolute. Blank lines and lines starting with '#' are
// skipped; a '\r' before the newline is ignored.
//
// Thread safety: as ImageDataset.
//
// Example:
//   FileList train("train_list.txt", "/data/imagenet", TrainPipeline(224));
#ifndef FEEDLINE_VISION_FILE_LIST_H_
#define FEEDLINE_VISION_FILE_LIST_H_

#include <string>
#include <string_view>
#include <vector>

#include "feedline/export.h"
#include "feedline/vision/image_dataset.h"
#include "feedline/vision/pipeline.h"

namespace feedline::vision {

class FEEDLINE_EXPORT FileList : public ImageDataset {
 public:
  // Throws Error if the list file cannot be read, has no entries, or has a
  // bad line (the message names list_file:line). classes() are the label
  // numbers "0" ... "N-1", N = the largest label + 1.
  FileList(const std::string& list_file, const std::string& root, Pipeline pipeline,
           ReadOptions read = {});

  // The list file's text. Throws Error naming the file if it cannot be read,
  // is not a regular file, is larger than kMaxListFileBytes, is an image or
  // holds NUL bytes (a binary file).
  static std::string ReadListText(const std::string& list_file);
  // A list of a million files is about 50 MB.
  static constexpr int64_t kMaxListFileBytes = int64_t{4} << 30;

  // Parses list-file text; `name` is used in error messages (non-printable
  // bytes of a bad line shown as \xNN).
  static ImageList Parse(std::string_view text, const std::string& name);

 private:
  struct Loaded {
    ImageList files;
    std::vector<std::string> classes;
  };
  static Loaded Load(const std::string& list_file);
  FileList(const std::string& root, Loaded loaded, Pipeline pipeline, ReadOptions read);
};

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_FILE_LIST_H_
