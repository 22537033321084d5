#include "tools/raw_image_dataset.h"

#include <utility>

#include "feedline/vision/decode.h"
#include "feedline/vision/read_file.h"

namespace feedline::cli {

RawImageDataset::RawImageDataset(std::string root, vision::ImageList files, Mode mode,
                                 const SourceLimits& limits)
    : root_(std::move(root)), files_(std::move(files)), mode_(mode) {
  read_.max_bytes = limits.max_file_bytes;
  read_.image = true;
  decode_.max_pixels = limits.max_pixels;
}

std::string RawImageDataset::Source(int64_t index) const {
  CheckIndex(index, size());
  const std::string_view path = files_.path(index);
  if (root_.empty() || (!path.empty() && path.front() == '/')) return std::string(path);
  std::string full = root_;
  if (full.back() != '/') full += '/';
  full += path;
  return full;
}

void RawImageDataset::Get(int64_t index, Sample& out, SampleContext& ctx) const {
  const std::string path = Source(index);
  std::vector<uint8_t>& bytes = ctx.scratch(0);
  {
    auto timer = ctx.Time(Stage::kRead);
    vision::ReadFile(path.c_str(), bytes, read_);
  }
  if (mode_ == Mode::kRead) {
    out.SetScalar<int64_t>("bytes", static_cast<int64_t>(bytes.size()));
  } else {
    auto timer = ctx.Time(Stage::kDecode);
    const vision::DecodedImage image =
        vision::DecodeImage(bytes, path, ctx.scratch(1), {}, decode_);
    out.SetScalar<int64_t>("height", image.height);
    out.SetScalar<int64_t>("width", image.width);
  }
  out.SetScalar<int64_t>("label", files_.label(index));
}

std::vector<FieldSpec> RawImageDataset::FixedFields() const {
  if (mode_ == Mode::kRead) {
    return {{"bytes", DType::kI64, Shape{}}, {"label", DType::kI64, Shape{}}};
  }
  return {{"height", DType::kI64, Shape{}},
          {"width", DType::kI64, Shape{}},
          {"label", DType::kI64, Shape{}}};
}

}  // namespace feedline::cli
