// ImageDataset: a Dataset of labelled image files, each read, decoded and
// transformed by a Pipeline. ImageFolder and FileList are ImageDatasets
// built from a directory tree and a list file.
//
// Every sample has two fields: "image" (the pipeline's output) and "label"
// (an int64 scalar). When the pipeline's output shape is fixed, both are
// declared in FixedFields, so the loader has the image written straight into
// its batch row. File paths are kept back to back in one string: a million
// files cost their names' length, not a million allocations.
//
// Thread safety: immutable after construction; Get may be called from many
// threads at once.
//
// Example:
//   ImageList files;
//   files.Add("cats/1.jpg", 0);
//   files.Add("dogs/7.jpg", 1);
//   ImageDataset data("/data", std::move(files), {"cat", "dog"}, TrainPipeline());
#ifndef FEEDLINE_VISION_IMAGE_DATASET_H_
#define FEEDLINE_VISION_IMAGE_DATASET_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/export.h"
#include "feedline/vision/pipeline.h"
#include "feedline/vision/read_file.h"

namespace feedline::vision {

// Paths (relative to a root, or absolute) with an integer label each.
class FEEDLINE_EXPORT ImageList {
 public:
  void Add(std::string_view path, int64_t label);
  void Reserve(size_t files, size_t path_chars);

  int64_t size() const { return static_cast<int64_t>(labels_.size()); }
  std::string_view path(int64_t index) const;
  int64_t label(int64_t index) const { return labels_[static_cast<size_t>(index)]; }
  const std::vector<int64_t>& labels() const { return labels_; }

 private:
  std::string chars_;           // all paths, back to back
  std::vector<uint64_t> ends_;  // path i is chars_[ends_[i - 1], ends_[i])
  std::vector<int64_t> labels_;
};

class FEEDLINE_EXPORT ImageDataset : public Dataset {
 public:
  // Files are read from `root`/path (or path, if absolute). `classes` names
  // the labels: every label must be in [0, classes.size()) (throws Error).
  // `read` bounds each file read (its max_bytes; files are always checked
  // for an image signature before they are read whole).
  ImageDataset(std::string root, ImageList files, std::vector<std::string> classes,
               Pipeline pipeline, ReadOptions read = {});

  int64_t size() const override { return files_.size(); }
  // Reads the file into ctx.scratch(0), runs the pipeline into "image" and
  // sets "label". Throws SampleError naming the file (see ReadFile and
  // DecodeImage for the reasons): a FIFO, a device or a file over the size
  // limit fails without being read.
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  // The file's path.
  std::string Source(int64_t index) const override;
  std::vector<FieldSpec> FixedFields() const override;

  const std::string& root() const { return root_; }
  const std::vector<std::string>& classes() const { return classes_; }
  // labels()[i] is the label of sample i (for ClassBalancedSampler).
  const std::vector<int64_t>& labels() const { return files_.labels(); }
  int64_t label(int64_t index) const;
  // The path of sample `index` as listed (relative to root unless absolute).
  std::string_view file(int64_t index) const;
  const Pipeline& pipeline() const { return pipeline_; }
  const ReadOptions& read_options() const { return read_; }

 private:
  std::string root_;
  ImageList files_;
  std::vector<std::string> classes_;
  Pipeline pipeline_;
  ReadOptions read_;
};

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_IMAGE_DATASET_H_
