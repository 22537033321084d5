#include "feedline/vision/image_dataset.h"

#include <string>
#include <utility>

#include "feedline/error.h"
#include "feedline/vision/read_file.h"

namespace feedline::vision {
namespace {

// Scratch buffers of ImageDataset::Get (Pipeline::Run uses its own).
constexpr int kBytesSlot = 0;
constexpr int kPathSlot = 1;

}  // namespace

void ImageList::Add(std::string_view path, int64_t label) {
  chars_.append(path);
  ends_.push_back(chars_.size());
  labels_.push_back(label);
}

void ImageList::Reserve(size_t files, size_t path_chars) {
  chars_.reserve(path_chars);
  ends_.reserve(files);
  labels_.reserve(files);
}

std::string_view ImageList::path(int64_t index) const {
  const size_t i = static_cast<size_t>(index);
  const size_t begin = i == 0 ? 0 : ends_[i - 1];
  return std::string_view(chars_).substr(begin, ends_[i] - begin);
}

ImageDataset::ImageDataset(std::string root, ImageList files, std::vector<std::string> classes,
                           Pipeline pipeline, ReadOptions read)
    : root_(std::move(root)),
      files_(std::move(files)),
      classes_(std::move(classes)),
      pipeline_(std::move(pipeline)),
      read_(read) {
  if (read_.max_bytes <= 0) {
    throw Error("image dataset: max_file_bytes must be > 0, got " +
                std::to_string(read_.max_bytes));
  }
  pipeline_.CheckWithoutObjects("image dataset " + root_);
  // The pipeline decodes every file: one that is no image fails from its
  // first bytes.
  read_.image = true;
  static_assert(kPathSlot < SampleContext::kDatasetScratchSlots, "scratch slots overlap");
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  const int64_t num_classes = static_cast<int64_t>(classes_.size());
  for (int64_t i = 0; i < files_.size(); ++i) {
    const int64_t label = files_.label(i);
    if (label < 0 || label >= num_classes) {
      throw Error("image dataset: label " + std::to_string(label) + " of '" +
                  std::string(files_.path(i)) + "' is outside [0, " + std::to_string(num_classes) +
                  ")");
    }
  }
}

std::string ImageDataset::Source(int64_t index) const {
  CheckIndex(index, size());
  const std::string_view path = files_.path(index);
  if (root_.empty() || (!path.empty() && path.front() == '/')) return std::string(path);
  std::string out = root_;
  out += '/';
  out += path;
  return out;
}

void ImageDataset::Get(int64_t index, Sample& out, SampleContext& ctx) const {
  CheckIndex(index, size());
  // The path is assembled in a scratch buffer: no allocation per sample.
  std::vector<uint8_t>& path = ctx.scratch(kPathSlot);
  const std::string_view relative = files_.path(index);
  path.clear();
  if (!root_.empty() && !(relative.size() > 0 && relative.front() == '/')) {
    path.insert(path.end(), root_.begin(), root_.end());
    path.push_back('/');
  }
  path.insert(path.end(), relative.begin(), relative.end());
  path.push_back('\0');
  const char* file = reinterpret_cast<const char*>(path.data());

  std::vector<uint8_t>& bytes = ctx.scratch(kBytesSlot);
  {
    auto timer = ctx.Time(Stage::kRead);
    ReadFile(file, bytes, read_);
  }
  pipeline_.Run(bytes, file, out, "image", ctx);
  out.SetScalar<int64_t>("label", files_.label(index));
}

std::vector<FieldSpec> ImageDataset::FixedFields() const {
  std::optional<Shape> shape = pipeline_.FixedShape();
  if (!shape) return {FieldSpec{"label", DType::kI64, Shape{}}};
  return {FieldSpec{"image", pipeline_.dtype(), *shape}, FieldSpec{"label", DType::kI64, Shape{}}};
}

int64_t ImageDataset::label(int64_t index) const {
  CheckIndex(index, size());
  return files_.label(index);
}

std::string_view ImageDataset::file(int64_t index) const {
  CheckIndex(index, size());
  return files_.path(index);
}

}  // namespace feedline::vision
