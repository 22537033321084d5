// RawImageDataset: the files of an ImageFolder or FileList, only read
// ("bytes": the file size) or read and fully decoded ("height", "width").
// `bench --pipeline read|decode` measure storage and decoder speed with it,
// and `verify` decodes every file with it. Decoding is full-size and strict,
// so it finds damage that a cropped decode could skip.
//
// Thread safety: immutable; Get() may be called from many threads at once.
#ifndef FEEDLINE_TOOLS_RAW_IMAGE_DATASET_H_
#define FEEDLINE_TOOLS_RAW_IMAGE_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/vision/decode.h"
#include "feedline/vision/image_dataset.h"
#include "feedline/vision/read_file.h"
#include "tools/source_limits.h"

namespace feedline::cli {

class RawImageDataset : public Dataset {
 public:
  enum class Mode { kRead, kDecode };

  // Files are `root`/path, or path when absolute, read under
  // limits.max_file_bytes and decoded under limits.max_pixels.
  RawImageDataset(std::string root, vision::ImageList files, Mode mode,
                  const SourceLimits& limits = {});

  int64_t size() const override { return files_.size(); }
  // kRead: "bytes" (i64, the file size); kDecode: "height" and "width" (i64)
  // of the decoded image. Both: "label" (i64). Throws SampleError naming the
  // file ("io" when it cannot be read or is not a regular file, "too_large"
  // over a limit, the decoder's reason otherwise). Both modes refuse a file
  // whose first bytes are no image signature before reading the rest.
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  std::string Source(int64_t index) const override;
  std::vector<FieldSpec> FixedFields() const override;

 private:
  std::string root_;
  vision::ImageList files_;
  Mode mode_;
  vision::ReadOptions read_;
  vision::DecodeOptions decode_;
};

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_RAW_IMAGE_DATASET_H_
