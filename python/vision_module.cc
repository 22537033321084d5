// feedline._feedline.vision: the image pipeline, image datasets, codecs and
// the synthetic-data writer. feedline.vision (Python) builds on it.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "feedline/error.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/storage/detection_shard_dataset.h"
#include "feedline/storage/shard_dataset.h"
#include "feedline/storage/shard_order_sampler.h"
#include "feedline/synth/encode.h"
#include "feedline/synth/synth.h"
#include "feedline/vision/annotation_index.h"
#include "feedline/vision/coco_detection.h"
#include "feedline/vision/voc_detection.h"
#include "feedline/vision/yolo_detection.h"
#include "feedline/vision/auto_augment.h"
#include "feedline/vision/decode.h"
#include "feedline/vision/file_list.h"
#include "feedline/vision/image_dataset.h"
#include "feedline/vision/image_folder.h"
#include "feedline/vision/image_ops.h"
#include "feedline/vision/pipeline.h"
#include "feedline/vision/read_file.h"
#include "feedline/vision/transforms.h"
#include "python/python_support.h"

namespace py = pybind11;

namespace feedline::python {
namespace {

using vision::Interpolation;
using vision::Pipeline;
using vision::Transform;

// A C-contiguous uint8 [H, W, C] array, or Error naming what is wrong.
py::array_t<uint8_t, py::array::c_style> Pixels(const py::array& image, int* height, int* width,
                                                int* channels) {
  auto pixels = py::array_t<uint8_t, py::array::c_style>::ensure(image);
  if (!pixels || !(pixels.ndim() == 2 || pixels.ndim() == 3) ||
      !image.dtype().equal(py::dtype::of<uint8_t>())) {
    throw Error("the image must be a uint8 array of shape [H, W] or [H, W, C]");
  }
  *height = static_cast<int>(pixels.shape(0));
  *width = static_cast<int>(pixels.shape(1));
  *channels = pixels.ndim() == 3 ? static_cast<int>(pixels.shape(2)) : 1;
  return pixels;
}

// A copy of a uint8 [H, W, 3] array, and a view of the copy for the ops.
py::array_t<uint8_t> RgbCopy(const py::array& image, vision::RgbImageView* view) {
  int h, w, c;
  auto pixels = Pixels(image, &h, &w, &c);
  if (c != 3 || pixels.ndim() != 3) throw Error("the image must be a uint8 array [H, W, 3]");
  py::array_t<uint8_t> out({h, w, 3});
  std::memcpy(out.mutable_data(), pixels.data(), static_cast<size_t>(h) * w * 3);
  *view = vision::RgbImageView{out.mutable_data(), h, w};
  return out;
}

// torchvision.transforms.functional's adjust_* on a copy of `image`.
py::array AdjustImage(const py::array& image, const std::string& what, double factor) {
  vision::RgbImageView view;
  py::array_t<uint8_t> out = RgbCopy(image, &view);
  std::vector<uint8_t> scratch;
  if (what != "hue" && !(factor >= 0)) {
    throw Error(what + "_factor must be >= 0, got " + std::to_string(factor));
  }
  py::gil_scoped_release nogil;
  if (what == "brightness") {
    vision::AdjustBrightness(view, factor);
  } else if (what == "contrast") {
    vision::AdjustContrast(view, factor);
  } else if (what == "saturation") {
    vision::AdjustSaturation(view, factor);
  } else if (what == "sharpness") {
    vision::AdjustSharpness(view, factor, scratch);
  } else if (what == "hue") {
    if (!(factor >= -0.5 && factor <= 0.5)) {
      throw Error("hue_factor must be in [-0.5, 0.5], got " + std::to_string(factor));
    }
    vision::AdjustHue(view, factor);
  } else {
    throw Error("unknown adjustment '" + what + "'");
  }
  return out;
}

// torchvision's autoaugment._apply_op on a copy of `image`.
py::array AugmentOp(const py::array& image, const std::string& op_name, double magnitude,
                    const std::string& interpolation, std::array<float, 3> fill) {
  const std::optional<vision::AugmentOp> op = vision::ParseAugmentOp(op_name);
  if (!op) throw Error("op must be one of torchvision's op names (ShearX, ...), got '" + op_name + "'");
  const Interpolation mode = vision::ParseInterpolation(interpolation);
  vision::RgbImageView view;
  py::array_t<uint8_t> out = RgbCopy(image, &view);
  std::vector<uint8_t> scratch;
  py::gil_scoped_release nogil;
  vision::ApplyAugmentOp(view, *op, magnitude, mode, fill, scratch);
  return out;
}

py::bytes ToBytes(const std::vector<uint8_t>& data) {
  return py::bytes(reinterpret_cast<const char*>(data.data()), data.size());
}

std::span<const uint8_t> BytesSpan(const py::buffer_info& info) {
  return std::span<const uint8_t>(static_cast<const uint8_t*>(info.ptr),
                                  static_cast<size_t>(info.size * info.itemsize));
}

// Runs `pipeline` on one encoded image, as a dataset would for sample
// `index` of `epoch` (so with the same random parameters).
py::array RunPipeline(const Pipeline& pipeline, const py::buffer& data, const std::string& source,
                      uint64_t seed, int64_t epoch, int64_t index) {
  pipeline.CheckWithoutObjects("a transform called on one image");
  py::buffer_info info = data.request();
  Sample sample;
  {
    py::gil_scoped_release nogil;
    SampleContext ctx(seed, epoch, index);
    pipeline.Run(BytesSpan(info), source, sample, "image", ctx);
  }
  return CopyToArray(sample["image"]);
}

vision::ReadOptions ReadLimit(int64_t max_file_bytes) {
  vision::ReadOptions read;
  read.max_bytes = max_file_bytes;
  return read;
}

std::shared_ptr<vision::ImageDataset> MakeImageDataset(
    std::string root, const std::vector<std::string>& paths, const std::vector<int64_t>& labels,
    std::vector<std::string> classes, const Pipeline& pipeline, int64_t max_file_bytes) {
  if (paths.size() != labels.size()) throw Error("paths and labels differ in length");
  vision::ImageList files;
  for (size_t i = 0; i < paths.size(); ++i) files.Add(paths[i], labels[i]);
  return std::make_shared<vision::ImageDataset>(
      std::move(root), std::move(files), std::move(classes), pipeline, ReadLimit(max_file_bytes));
}

// Pickling: native datasets and transforms are rebuilt from what they were
// made of, so that they cross to spawned processes and can be saved
// (torch.save of a dataset, torchvision's --cache-dataset). A dataset is
// rebuilt from its listing, not by scanning its folder again.

// Every field of a Transform, in declaration order; FromState reverses it.
py::tuple TransformState(const Transform& t) {
  return py::make_tuple(
      static_cast<int>(t.kind), t.height, t.width, t.max_size, static_cast<int>(t.interpolation),
      t.scale, t.ratio, t.p, t.mean, t.std, t.brightness, t.contrast, t.saturation, t.hue,
      t.num_ops, t.magnitude, t.num_magnitude_bins, static_cast<int>(t.policy), t.fill,
      t.random_value, t.side_range, t.iou_options, t.trials, t.sizes);
}

Transform TransformFromState(const py::tuple& state) {
  if (state.size() != 24) throw Error("a pickled Transform has " + std::to_string(state.size()) +
                                      " fields, expected 24 (pickled by another feedline?)");
  Transform t;
  t.kind = static_cast<Transform::Kind>(state[0].cast<int>());
  t.height = state[1].cast<int>();
  t.width = state[2].cast<int>();
  t.max_size = state[3].cast<int>();
  t.interpolation = static_cast<Interpolation>(state[4].cast<int>());
  t.scale = state[5].cast<std::array<double, 2>>();
  t.ratio = state[6].cast<std::array<double, 2>>();
  t.p = state[7].cast<double>();
  t.mean = state[8].cast<std::array<float, 3>>();
  t.std = state[9].cast<std::array<float, 3>>();
  t.brightness = state[10].cast<std::array<double, 2>>();
  t.contrast = state[11].cast<std::array<double, 2>>();
  t.saturation = state[12].cast<std::array<double, 2>>();
  t.hue = state[13].cast<std::array<double, 2>>();
  t.num_ops = state[14].cast<int>();
  t.magnitude = state[15].cast<int>();
  t.num_magnitude_bins = state[16].cast<int>();
  t.policy = static_cast<vision::AutoAugmentPolicy>(state[17].cast<int>());
  t.fill = state[18].cast<std::array<float, 3>>();
  t.random_value = state[19].cast<bool>();
  t.side_range = state[20].cast<std::array<double, 2>>();
  t.iou_options = state[21].cast<std::vector<double>>();
  t.trials = state[22].cast<int>();
  t.sizes = state[23].cast<std::vector<int>>();
  t.Validate();
  return t;
}

// A dataset's mosaic as it crosses: (size, scale, translate, p,
// cache_bytes, mixup), or None.
using MosaicTuple = std::optional<std::tuple<int, double, double, double, int64_t, double>>;

MosaicTuple MosaicArgument(const std::optional<vision::MosaicOptions>& m) {
  if (!m) return std::nullopt;
  return std::make_tuple(m->size, m->scale, m->translate, m->p, m->cache_bytes, m->mixup);
}

std::optional<vision::MosaicOptions> MosaicOptionsOf(const MosaicTuple& mosaic) {
  if (!mosaic) return std::nullopt;
  const auto& [size, scale, translate, p, cache_bytes, mixup] = *mosaic;
  return vision::MosaicOptions{size, scale, translate, p, cache_bytes, mixup};
}

py::tuple PipelineState(const Pipeline& p) {
  const vision::PipelineOptions& o = p.options();
  return py::make_tuple(p.transforms(), std::string(DTypeName(o.dtype)), o.fused,
                        o.decode.max_pixels, o.decode.jpeg_strict, o.decode.jpeg_fast_idct);
}

Pipeline PipelineFromState(const py::tuple& state) {
  if (state.size() != 6) throw Error("a pickled Pipeline has the wrong number of fields");
  vision::PipelineOptions options;
  options.dtype = ParseDType(state[1].cast<std::string>());
  options.fused = state[2].cast<bool>();
  options.decode.max_pixels = state[3].cast<int64_t>();
  options.decode.jpeg_strict = state[4].cast<bool>();
  options.decode.jpeg_fast_idct = state[5].cast<bool>();
  return Pipeline(state[0].cast<std::vector<Transform>>(), options);
}

// (ImageDataset, its constructor's arguments): any listed image dataset
// (ImageFolder, FileList) comes back as the ImageDataset of its listing.
py::tuple ReduceImageDataset(const vision::ImageDataset& d) {
  std::vector<std::string> paths;
  paths.reserve(static_cast<size_t>(d.size()));
  for (int64_t i = 0; i < d.size(); ++i) paths.emplace_back(d.file(i));
  return py::make_tuple(
      py::type::of<vision::ImageDataset>(),
      py::make_tuple(d.root(), std::move(paths), d.labels(), d.classes(), d.pipeline(),
                     d.read_options().max_bytes));
}

}  // namespace

void BindVision(py::module_& m) {
  py::module_ v = m.def_submodule("vision", "native image pipeline and datasets");

  py::class_<Transform>(v, "Transform")
      .def_static(
          "resize",
          [](int height, int width, const std::string& interpolation, int max_size) {
            if (width == 0)
              return Transform::Resize(height, vision::ParseInterpolation(interpolation), max_size);
            return Transform::Resize(height, width, vision::ParseInterpolation(interpolation));
          },
          py::arg("height"), py::arg("width") = 0, py::arg("interpolation") = "bilinear",
          py::arg("max_size") = 0)
      .def_static("center_crop", py::overload_cast<int, int>(&Transform::CenterCrop),
                  py::arg("height"), py::arg("width"))
      .def_static(
          "random_resized_crop",
          [](int height, int width, std::array<double, 2> scale, std::array<double, 2> ratio,
             const std::string& interpolation) {
            return Transform::RandomResizedCrop(height, width, scale, ratio,
                                                vision::ParseInterpolation(interpolation));
          },
          py::arg("height"), py::arg("width"), py::arg("scale"), py::arg("ratio"),
          py::arg("interpolation") = "bilinear")
      .def_static("random_horizontal_flip", &Transform::RandomHorizontalFlip, py::arg("p") = 0.5)
      .def_static("normalize", &Transform::Normalize, py::arg("mean"), py::arg("std"))
      .def_static("to_chw", &Transform::ToCHW)
      .def_static("color_jitter", &Transform::ColorJitter, py::arg("brightness"),
                  py::arg("contrast"), py::arg("saturation"), py::arg("hue"))
      .def_static(
          "trivial_augment_wide",
          [](int bins, const std::string& interpolation, std::array<float, 3> fill) {
            return Transform::TrivialAugmentWide(bins, vision::ParseInterpolation(interpolation),
                                                 fill);
          },
          py::arg("num_magnitude_bins") = 31, py::arg("interpolation") = "nearest",
          py::arg("fill") = std::array<float, 3>{0, 0, 0})
      .def_static(
          "rand_augment",
          [](int num_ops, int magnitude, int bins, const std::string& interpolation,
             std::array<float, 3> fill) {
            return Transform::RandAugment(num_ops, magnitude, bins,
                                          vision::ParseInterpolation(interpolation), fill);
          },
          py::arg("num_ops") = 2, py::arg("magnitude") = 9, py::arg("num_magnitude_bins") = 31,
          py::arg("interpolation") = "nearest", py::arg("fill") = std::array<float, 3>{0, 0, 0})
      .def_static(
          "auto_augment",
          [](const std::string& policy, const std::string& interpolation,
             std::array<float, 3> fill) {
            return Transform::AutoAugment(vision::ParseAutoAugmentPolicy(policy),
                                          vision::ParseInterpolation(interpolation), fill);
          },
          py::arg("policy") = "imagenet", py::arg("interpolation") = "nearest",
          py::arg("fill") = std::array<float, 3>{0, 0, 0})
      .def_static("random_erasing", &Transform::RandomErasing, py::arg("p"), py::arg("scale"),
                  py::arg("ratio"), py::arg("value"), py::arg("random_value"))
      .def_static("random_zoom_out", &Transform::RandomZoomOut, py::arg("fill"),
                  py::arg("side_range"), py::arg("p"))
      .def_static("random_iou_crop", &Transform::RandomIoUCrop, py::arg("scale"),
                  py::arg("ratio"), py::arg("options"), py::arg("trials"))
      .def_static("random_hsv", &Transform::RandomHSV, py::arg("hgain") = 0.015,
                  py::arg("sgain") = 0.7, py::arg("vgain") = 0.4)
      .def_static("random_photometric_distort", &Transform::RandomPhotometricDistort,
                  py::arg("contrast"), py::arg("saturation"), py::arg("hue"),
                  py::arg("brightness"), py::arg("p"))
      .def_static(
          "random_shortest_size",
          [](std::vector<int> sizes, int max_size, const std::string& interpolation) {
            return Transform::RandomShortestSize(std::move(sizes), max_size,
                                                 vision::ParseInterpolation(interpolation));
          },
          py::arg("sizes"), py::arg("max_size"), py::arg("interpolation") = "bilinear")
      .def_static(
          "scale_jitter",
          [](int height, int width, std::array<double, 2> scale_range,
             const std::string& interpolation) {
            return Transform::ScaleJitter(height, width, scale_range,
                                          vision::ParseInterpolation(interpolation));
          },
          py::arg("target_height"), py::arg("target_width"), py::arg("scale_range"),
          py::arg("interpolation") = "bilinear")
      .def_static("fixed_size_crop", &Transform::FixedSizeCrop, py::arg("height"),
                  py::arg("width"), py::arg("fill"))
      .def("__repr__", &Transform::ToString)
      .def("__eq__", [](const Transform& a, const Transform& b) { return a == b; })
      .def(py::pickle(&TransformState, &TransformFromState));

  py::class_<Pipeline>(v, "Pipeline")
      .def(py::init([](std::vector<Transform> transforms, const std::string& dtype, bool fused,
                       int64_t max_pixels) {
             vision::PipelineOptions options;
             options.dtype = ParseDType(dtype);
             options.fused = fused;
             options.decode.max_pixels = max_pixels;
             return Pipeline(std::move(transforms), options);
           }),
           py::arg("transforms"), py::arg("dtype") = "u8", py::arg("fused") = true,
           py::arg("max_pixels") = vision::kDefaultMaxPixels)
      .def_property_readonly("max_pixels",
                             [](const Pipeline& p) { return p.options().decode.max_pixels; })
      .def("fixed_shape",
           [](const Pipeline& p) -> py::object {
             std::optional<Shape> shape = p.FixedShape();
             if (!shape) return py::none();
             return py::tuple(py::cast(std::vector<int64_t>(shape->begin(), shape->end())));
           })
      .def("run", &RunPipeline, py::arg("data"), py::arg("source") = "", py::arg("seed") = 0,
           py::arg("epoch") = 0, py::arg("index") = 0)
      .def_property_readonly("transforms", &Pipeline::transforms)
      .def("__repr__", &Pipeline::ToString)
      .def(py::pickle(&PipelineState, &PipelineFromState));

  py::class_<vision::ImageDataset, Dataset, std::shared_ptr<vision::ImageDataset>>(v,
                                                                                   "ImageDataset")
      .def(py::init(&MakeImageDataset), py::arg("root"), py::arg("paths"), py::arg("labels"),
           py::arg("classes"), py::arg("pipeline"),
           py::arg("max_file_bytes") = vision::kDefaultMaxFileBytes)
      .def_property_readonly(
          "max_file_bytes",
          [](const vision::ImageDataset& d) { return d.read_options().max_bytes; })
      .def_property_readonly(
          "max_pixels",
          [](const vision::ImageDataset& d) { return d.pipeline().options().decode.max_pixels; })
      .def_property_readonly("root", &vision::ImageDataset::root)
      .def_property_readonly("classes", &vision::ImageDataset::classes)
      .def_property_readonly("labels",
                             [](const vision::ImageDataset& d) { return ToArray(d.labels()); })
      .def("file",
           [](const vision::ImageDataset& d, int64_t i) {
             CheckIndex(i, d.size());
             return std::string(d.file(i));
           })
      .def_property_readonly("pipeline", &vision::ImageDataset::pipeline)
      .def("__reduce__", &ReduceImageDataset);
  py::class_<vision::ImageFolder, vision::ImageDataset, std::shared_ptr<vision::ImageFolder>>(
      v, "ImageFolder")
      .def(py::init([](const std::string& root, Pipeline pipeline, int64_t max_file_bytes) {
             return std::make_shared<vision::ImageFolder>(root, std::move(pipeline),
                                                          ReadLimit(max_file_bytes));
           }),
           py::arg("root"), py::arg("pipeline"),
           py::arg("max_file_bytes") = vision::kDefaultMaxFileBytes,
           py::call_guard<py::gil_scoped_release>());
  py::class_<vision::FileList, vision::ImageDataset, std::shared_ptr<vision::FileList>>(v,
                                                                                        "FileList")
      .def(py::init([](const std::string& list_file, const std::string& root, Pipeline pipeline,
                       int64_t max_file_bytes) {
             return std::make_shared<vision::FileList>(list_file, root, std::move(pipeline),
                                                       ReadLimit(max_file_bytes));
           }),
           py::arg("list_file"), py::arg("root"), py::arg("pipeline"),
           py::arg("max_file_bytes") = vision::kDefaultMaxFileBytes,
           py::call_guard<py::gil_scoped_release>());

  // COCO-format detection (feedline/vision/coco_detection.h). The
  // annotation file is parsed without the GIL.
  py::class_<vision::CocoDetection, Dataset, std::shared_ptr<vision::CocoDetection>>(
      v, "CocoDetection")
      .def(py::init([](const std::string& root, const std::string& annotation_file,
                       Pipeline pipeline, bool masks, bool keep_crowd, bool skip_empty,
                       int64_t max_file_bytes, const std::string& index_dir,
                       int64_t size_divisibility, bool source_masks, MosaicTuple mosaic,
                       bool keypoints, std::vector<int32_t> keypoint_flip) {
             vision::CocoDetectionOptions options;
             options.mosaic = MosaicOptionsOf(mosaic);
             options.keypoints = keypoints;
             options.keypoint_flip = std::move(keypoint_flip);
             options.size_divisibility = size_divisibility;
             options.masks = masks;
             options.source_masks = source_masks;
             options.keep_crowd = keep_crowd;
             options.skip_empty = skip_empty;
             options.read = ReadLimit(max_file_bytes);
             options.index_dir = index_dir;
             return std::make_shared<vision::CocoDetection>(root, annotation_file,
                                                            std::move(pipeline), options);
           }),
           py::arg("root"), py::arg("annotation_file"), py::arg("pipeline"),
           py::arg("masks") = false, py::arg("keep_crowd") = false, py::arg("skip_empty") = false,
           py::arg("max_file_bytes") = vision::kDefaultMaxFileBytes, py::arg("index_dir") = "",
           py::arg("size_divisibility") = 1, py::arg("source_masks") = false,
           py::arg("mosaic") = py::none(), py::arg("keypoints") = false,
           py::arg("keypoint_flip") = std::vector<int32_t>{},
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("root", &vision::CocoDetection::root)
      .def_property_readonly("annotation_file", &vision::CocoDetection::annotation_file)
      .def_property_readonly("pipeline", &vision::CocoDetection::pipeline)
      .def_property_readonly("max_pixels",
                             [](const vision::CocoDetection& d) {
                               return d.pipeline().options().decode.max_pixels;
                             })
      .def_property_readonly("categories",
                             [](const vision::CocoDetection& d) {
                               return d.annotations().categories();
                             })
      .def_property_readonly("image_ids",
                             [](const vision::CocoDetection& d) {
                               std::vector<int64_t> ids;
                               ids.reserve(static_cast<size_t>(d.size()));
                               for (int64_t i = 0; i < d.size(); ++i) {
                                 ids.push_back(d.annotations().image(d.image_index(i)).id);
                               }
                               return ToArray(ids);
                             })
      .def_property_readonly("image_sizes",
                             [](const vision::CocoDetection& d) {
                               // (height, width) of each sample's image, as the file gives them.
                               std::vector<int64_t> heights, widths;
                               for (int64_t i = 0; i < d.size(); ++i) {
                                 const vision::CocoImage& im = d.annotations().image(d.image_index(i));
                                 heights.push_back(im.height);
                                 widths.push_back(im.width);
                               }
                               return py::make_tuple(ToArray(heights), ToArray(widths));
                             })
      .def("file",
           [](const vision::CocoDetection& d, int64_t i) {
             return std::string(d.annotations().file_name(d.image_index(i)));
           })
      .def("__reduce__", [](const vision::CocoDetection& d) {
        const vision::CocoDetectionOptions& o = d.options();
        return py::make_tuple(py::type::of<vision::CocoDetection>(),
                              py::make_tuple(d.root(), d.annotation_file(), d.pipeline(), o.masks,
                                             o.keep_crowd, o.skip_empty, o.read.max_bytes,
                                             o.index_dir, o.size_divisibility, o.source_masks,
                                             MosaicArgument(o.mosaic), o.keypoints,
                                             o.keypoint_flip));
      });

  py::class_<vision::YoloDetection, Dataset, std::shared_ptr<vision::YoloDetection>>(
      v, "YoloDetection")
      .def(py::init([](const std::string& images_dir, Pipeline pipeline, bool masks,
                       int64_t max_file_bytes, int64_t size_divisibility, MosaicTuple mosaic,
                       int keypoints, int keypoint_dims, std::vector<int32_t> keypoint_flip) {
             vision::YoloDetectionOptions options;
             options.masks = masks;
             options.keypoints = keypoints;
             options.keypoint_dims = keypoint_dims;
             options.keypoint_flip = std::move(keypoint_flip);
             options.size_divisibility = size_divisibility;
             options.read = ReadLimit(max_file_bytes);
             options.mosaic = MosaicOptionsOf(mosaic);
             return std::make_shared<vision::YoloDetection>(images_dir, std::move(pipeline),
                                                            options);
           }),
           py::arg("images_dir"), py::arg("pipeline"), py::arg("masks") = false,
           py::arg("max_file_bytes") = vision::kDefaultMaxFileBytes,
           py::arg("size_divisibility") = 1, py::arg("mosaic") = py::none(),
           py::arg("keypoints") = 0, py::arg("keypoint_dims") = 3,
           py::arg("keypoint_flip") = std::vector<int32_t>{},
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("images_dir", &vision::YoloDetection::images_dir)
      .def_property_readonly("pipeline", &vision::YoloDetection::pipeline)
      .def_property_readonly("max_pixels",
                             [](const vision::YoloDetection& d) {
                               return d.pipeline().options().decode.max_pixels;
                             })
      .def("label_file", &vision::YoloDetection::LabelFile)
      .def("__reduce__", [](const vision::YoloDetection& d) {
        return py::make_tuple(py::type::of<vision::YoloDetection>(),
                              py::make_tuple(d.images_dir(), d.pipeline(), d.options().masks,
                                             d.options().read.max_bytes,
                                             d.options().size_divisibility,
                                             MosaicArgument(d.options().mosaic),
                                             d.options().keypoints, d.options().keypoint_dims,
                                             d.options().keypoint_flip));
      });

  v.attr("VOC_CLASSES") = vision::VocAnnotations::DefaultClasses();
  v.def("default_annotation_index_dir", &vision::DefaultAnnotationIndexDir);
  // Pascal VOC detection (feedline/vision/voc_detection.h). The annotation
  // files are parsed without the GIL.
  py::class_<vision::VocDetection, Dataset, std::shared_ptr<vision::VocDetection>>(
      v, "VocDetection")
      .def(py::init([](const std::string& root, const std::string& image_set,
                       Pipeline pipeline, bool keep_difficult, std::vector<std::string> classes,
                       int64_t max_file_bytes, int64_t size_divisibility, MosaicTuple mosaic) {
             vision::VocDetectionOptions options;
             options.mosaic = MosaicOptionsOf(mosaic);
             options.size_divisibility = size_divisibility;
             options.keep_difficult = keep_difficult;
             options.classes = std::move(classes);
             options.read = ReadLimit(max_file_bytes);
             return std::make_shared<vision::VocDetection>(root, image_set, std::move(pipeline),
                                                           options);
           }),
           py::arg("root"), py::arg("image_set"), py::arg("pipeline"),
           py::arg("keep_difficult") = false, py::arg("classes") = std::vector<std::string>(),
           py::arg("max_file_bytes") = vision::kDefaultMaxFileBytes,
           py::arg("size_divisibility") = 1, py::arg("mosaic") = py::none(),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("root", &vision::VocDetection::root)
      .def_property_readonly("image_set", &vision::VocDetection::image_set)
      .def_property_readonly("pipeline", &vision::VocDetection::pipeline)
      .def_property_readonly("max_pixels",
                             [](const vision::VocDetection& d) {
                               return d.pipeline().options().decode.max_pixels;
                             })
      .def_property_readonly("classes",
                             [](const vision::VocDetection& d) {
                               return d.annotations().classes();
                             })
      .def_property_readonly("image_ids",
                             [](const vision::VocDetection& d) {
                               std::vector<std::string> ids;
                               for (int64_t i = 0; i < d.size(); ++i) {
                                 ids.push_back(d.annotations().id(i));
                               }
                               return ids;
                             })
      .def_property_readonly("image_sizes",
                             [](const vision::VocDetection& d) {
                               // (height, width) of each image, as its annotation gives them.
                               std::vector<int64_t> heights, widths;
                               for (int64_t i = 0; i < d.size(); ++i) {
                                 heights.push_back(d.annotations().image(i).height);
                                 widths.push_back(d.annotations().image(i).width);
                               }
                               return py::make_tuple(ToArray(heights), ToArray(widths));
                             })
      .def("__reduce__", [](const vision::VocDetection& d) {
        const vision::VocDetectionOptions& o = d.options();
        return py::make_tuple(py::type::of<vision::VocDetection>(),
                              py::make_tuple(d.root(), d.image_set(), d.pipeline(),
                                             o.keep_difficult, o.classes, o.read.max_bytes,
                                             o.size_divisibility, MosaicArgument(o.mosaic)));
      });

  // Packed shards (feedline/storage): the dataset and the packer.
  py::class_<storage::RemoteOptions>(v, "RemoteOptions")
      .def(py::init<>())
      .def_readwrite("max_attempts", &storage::RemoteOptions::max_attempts)
      .def_readwrite("retry_budget_s", &storage::RemoteOptions::retry_budget_s)
      .def_readwrite("connect_timeout_s", &storage::RemoteOptions::connect_timeout_s)
      .def_readwrite("stall_timeout_s", &storage::RemoteOptions::stall_timeout_s)
      .def_readwrite("backoff_s", &storage::RemoteOptions::backoff_s)
      .def_readwrite("cache_dir", &storage::RemoteOptions::cache_dir)
      .def_readwrite("cache_limit", &storage::RemoteOptions::cache_limit)
      .def_readwrite("prefetch_bytes", &storage::RemoteOptions::prefetch_bytes)
      .def_readwrite("prefetch_requests", &storage::RemoteOptions::prefetch_requests)
      .def_readwrite("download_part_bytes", &storage::RemoteOptions::download_part_bytes)
      .def_readwrite("download_parts", &storage::RemoteOptions::download_parts)
      .def_readwrite("ca_file", &storage::RemoteOptions::ca_file)
      .def("check", &storage::CheckRemoteOptions)
      .def(py::pickle(
          [](const storage::RemoteOptions& o) {
            return py::make_tuple(o.max_attempts, o.retry_budget_s, o.connect_timeout_s,
                                  o.stall_timeout_s, o.backoff_s, o.cache_dir, o.cache_limit,
                                  o.prefetch_bytes, o.prefetch_requests, o.download_part_bytes,
                                  o.download_parts, o.ca_file);
          },
          [](const py::tuple& t) {
            storage::RemoteOptions o;
            o.max_attempts = t[0].cast<int>();
            o.retry_budget_s = t[1].cast<double>();
            o.connect_timeout_s = t[2].cast<double>();
            o.stall_timeout_s = t[3].cast<double>();
            o.backoff_s = t[4].cast<double>();
            o.cache_dir = t[5].cast<std::string>();
            o.cache_limit = t[6].cast<uint64_t>();
            o.prefetch_bytes = t[7].cast<uint64_t>();
            o.prefetch_requests = t[8].cast<int>();
            o.download_part_bytes = t[9].cast<uint64_t>();
            o.download_parts = t[10].cast<int>();
            o.ca_file = t[11].cast<std::string>();
            return o;
          }));
  py::class_<storage::ShardDataset, Dataset, std::shared_ptr<storage::ShardDataset>>(
      v, "ShardDataset")
      // The GIL is released while the shards are found and opened: a remote
      // pack's requests (and their retries) run without it.
      .def(py::init([](const std::string& path_or_glob, Pipeline pipeline,
                       const storage::RemoteOptions& remote) {
             return std::make_shared<storage::ShardDataset>(
                 storage::ShardDataset::Find(path_or_glob, remote), std::move(pipeline),
                 std::vector<std::string>{}, 0, remote);
           }),
           py::arg("path_or_glob"), py::arg("pipeline"),
           py::arg("remote") = storage::RemoteOptions{}, py::call_guard<py::gil_scoped_release>())
      // What __reduce__ rebuilds one from: its shards (each .tar beside its
      // .idx), pipeline, classes and remote options.
      .def(py::init([](const std::vector<std::string>& shards, Pipeline pipeline,
                       std::vector<std::string> classes, const storage::RemoteOptions& remote) {
             std::vector<std::string> index_files;
             for (const std::string& shard : shards) {
               for (std::string& index : storage::ShardDataset::Find(shard, remote)) {
                 index_files.push_back(std::move(index));
               }
             }
             return std::make_shared<storage::ShardDataset>(
                 std::move(index_files), std::move(pipeline), std::move(classes), 0, remote);
           }),
           py::arg("shards"), py::arg("pipeline"), py::arg("classes"),
           py::arg("remote") = storage::RemoteOptions{}, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly(
          "max_pixels",
          [](const storage::ShardDataset& d) { return d.pipeline().options().decode.max_pixels; })
      .def_property_readonly("classes", &storage::ShardDataset::classes)
      .def_property_readonly("labels",
                             [](const storage::ShardDataset& d) { return ToArray(d.labels()); })
      .def_property_readonly("shards", &storage::ShardDataset::shards)
      .def_property_readonly("shard_starts", [](const storage::ShardDataset& d) {
        return ToArray(d.shard_starts());
      })
      .def("key", &storage::ShardDataset::key, py::arg("index"))
      .def_property_readonly("pipeline", &storage::ShardDataset::pipeline)
      .def("__reduce__", [](const storage::ShardDataset& d) {
        return py::make_tuple(py::type::of<storage::ShardDataset>(),
                              py::make_tuple(d.shards(), d.pipeline(), d.classes(),
                                             d.remote_options()));
      });
  py::class_<storage::DetectionShardDataset, Dataset,
             std::shared_ptr<storage::DetectionShardDataset>>(v, "DetectionShardDataset")
      // `shards`: what ShardDataset::Find takes, each (a folder, a glob, a
      // brace list, a URL, or one shard as __reduce__ gives them); the GIL
      // is released while they are found and their indexes read.
      .def(py::init([](const std::vector<std::string>& shards, Pipeline pipeline, bool masks,
                       bool source_masks, bool keep_crowd, bool skip_empty,
                       int64_t size_divisibility, MosaicTuple mosaic,
                       const storage::RemoteOptions& remote) {
             std::vector<std::string> index_files;
             for (const std::string& shard : shards) {
               for (std::string& index : storage::ShardDataset::Find(shard, remote)) {
                 index_files.push_back(std::move(index));
               }
             }
             storage::DetectionShardOptions options;
             options.masks = masks;
             options.source_masks = source_masks;
             options.keep_crowd = keep_crowd;
             options.skip_empty = skip_empty;
             options.size_divisibility = size_divisibility;
             options.mosaic = MosaicOptionsOf(mosaic);
             options.remote = remote;
             return std::make_shared<storage::DetectionShardDataset>(
                 std::move(index_files), std::move(pipeline), options);
           }),
           py::arg("shards"), py::arg("pipeline"), py::arg("masks") = false,
           py::arg("source_masks") = false, py::arg("keep_crowd") = false,
           py::arg("skip_empty") = false, py::arg("size_divisibility") = 1,
           py::arg("mosaic") = py::none(), py::arg("remote") = storage::RemoteOptions{},
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("pipeline", &storage::DetectionShardDataset::pipeline)
      .def_property_readonly("max_pixels",
                             [](const storage::DetectionShardDataset& d) {
                               return d.pipeline().options().decode.max_pixels;
                             })
      .def_property_readonly(
          "image_sizes",
          [](const storage::DetectionShardDataset& d) {
            // (height, width) of each sample's image, from the index.
            std::vector<int64_t> heights, widths;
            for (int64_t i = 0; i < d.size(); ++i) {
              const auto [height, width] = d.image_size(i);
              heights.push_back(height);
              widths.push_back(width);
            }
            return py::make_tuple(ToArray(heights), ToArray(widths));
          })
      .def_property_readonly(
          "shards", [](const storage::DetectionShardDataset& d) { return d.shards().shards(); })
      .def("key",
           [](const storage::DetectionShardDataset& d, int64_t i) {
             return d.shards().key(d.record(i));
           })
      .def("__reduce__", [](const storage::DetectionShardDataset& d) {
        const storage::DetectionShardOptions& o = d.options();
        return py::make_tuple(
            py::type::of<storage::DetectionShardDataset>(),
            py::make_tuple(d.shards().shards(), d.pipeline(), o.masks, o.source_masks,
                           o.keep_crowd, o.skip_empty, o.size_divisibility,
                           MosaicArgument(o.mosaic), o.remote));
      });
  py::class_<storage::ShardOrderSampler, Sampler, std::shared_ptr<storage::ShardOrderSampler>>(
      v, "ShardOrderSampler")
      .def(py::init<std::vector<int64_t>, int64_t, int64_t, uint64_t>(), py::arg("shard_starts"),
           py::arg("size"), py::arg("window"), py::arg("seed"))
      .def_property_readonly("window", &storage::ShardOrderSampler::window);
  v.def("adjust", &AdjustImage, py::arg("image"), py::arg("what"), py::arg("factor"));
  v.def("augment_op", &AugmentOp, py::arg("image"), py::arg("op"), py::arg("magnitude"),
        py::arg("interpolation") = "nearest", py::arg("fill") = std::array<float, 3>{0, 0, 0});

  v.attr("DEFAULT_MAX_PIXELS") = vision::kDefaultMaxPixels;
  v.attr("DEFAULT_MAX_FILE_BYTES") = vision::kDefaultMaxFileBytes;
  v.def(
      "decode_image",
      [](const py::buffer& data, const std::string& source, int64_t max_pixels) {
        if (max_pixels <= 0) {
          throw Error("max_pixels must be > 0, got " + std::to_string(max_pixels));
        }
        py::buffer_info info = data.request();
        std::vector<uint8_t> rgb;
        vision::DecodedImage image;
        {
          py::gil_scoped_release nogil;
          vision::DecodeOptions options;
          options.max_pixels = max_pixels;
          image = vision::DecodeImage(BytesSpan(info), source, rgb, {}, options);
        }
        py::array_t<uint8_t> out({image.height, image.width, 3});
        std::memcpy(out.mutable_data(), rgb.data(), rgb.size());
        return out;
      },
      py::arg("data"), py::arg("source") = "", py::arg("max_pixels") = vision::kDefaultMaxPixels);
  v.def(
      "encode_jpeg",
      [](const py::array& image, int quality) {
        int h, w, c;
        auto pixels = Pixels(image, &h, &w, &c);
        if (c != 3) throw Error("encode_jpeg takes RGB images of shape [H, W, 3]");
        vision::JpegEncodeOptions options;
        options.quality = quality;
        return ToBytes(vision::EncodeJpeg(
            std::span<const uint8_t>(pixels.data(), static_cast<size_t>(pixels.size())), w, h,
            options));
      },
      py::arg("image"), py::arg("quality") = 90);
  v.def(
      "encode_png",
      [](const py::array& image) {
        int h, w, c;
        auto pixels = Pixels(image, &h, &w, &c);
        vision::PngEncodeOptions options;
        options.channels = c;
        return ToBytes(vision::EncodePng(
            std::span<const uint8_t>(pixels.data(), static_cast<size_t>(pixels.size())), w, h,
            options));
      },
      py::arg("image"));
  v.def(
      "synthesize_image",
      [](int width, int height, uint64_t seed) {
        std::vector<uint8_t> rgb = vision::SynthesizeImage(width, height, seed);
        py::array_t<uint8_t> out({height, width, 3});
        std::memcpy(out.mutable_data(), rgb.data(), rgb.size());
        return out;
      },
      py::arg("width"), py::arg("height"), py::arg("seed") = 0);
  v.def("write_image_folder", &vision::WriteSyntheticImageFolder, py::arg("dir"), py::arg("images"),
        py::arg("classes") = 10, py::arg("seed") = 0, py::arg("broken") = 0,
        py::call_guard<py::gil_scoped_release>());
}

}  // namespace feedline::python
