#include "tools/load_shape.h"

#include "tools/command_line.h"

namespace feedline::cli {

const std::vector<std::string>& PipelineNames() {
  static const std::vector<std::string> names = {"train", "val", "decode", "read"};
  return names;
}

CLI::Option* AddLoadShapeOptions(CLI::App* app, LoadShape& shape) {
  CLI::Option* pipeline =
      app->add_option(
             "--pipeline", shape.pipeline,
             "train: random crop + flip + normalize; val: resize + center crop + normalize; "
             "decode: full decode only; read: file bytes only")
          ->check(OneOf(PipelineNames()))
          ->type_name("train|val|decode|read")
          ->capture_default_str();
  app->add_option("--batch", shape.batch, "Samples per batch")
      ->check(IntAtLeast(1))
      ->type_name("N")
      ->capture_default_str();
  app->add_option("--size", shape.image_size, "Output image size of the train and val pipelines")
      ->check(IntAtLeast(1))
      ->type_name("PX")
      ->capture_default_str();
  app->add_option("--seed", shape.seed, "Seed of the shuffle and the augmentation")
      ->check(IntAtLeast(0))
      ->type_name("S")
      ->capture_default_str();
  app->add_option("--step-ms", shape.step_ms,
                  "Simulated training step: the consumer sleeps MS per batch")
      ->check(NumberAtLeast(0))
      ->type_name("MS")
      ->capture_default_str();
  return pipeline;
}

vision::Pipeline ImagePipeline(const std::string& pipeline, int image_size, int64_t max_pixels) {
  vision::DecodeOptions decode;
  decode.max_pixels = max_pixels;
  if (pipeline == "decode") {
    vision::PipelineOptions options;
    options.dtype = DType::kU8;
    options.decode = decode;
    return vision::Pipeline({}, options);
  }
  if (pipeline != "train" && pipeline != "val") {
    throw UsageError("--pipeline: must be one of train, val or decode here, got '" + pipeline +
                     "'");
  }
  // Validated before the recipe is built, so an absurd --size is refused
  // with the option's name.
  const int64_t output_pixels = static_cast<int64_t>(image_size) * image_size;
  if (output_pixels > max_pixels) {
    throw UsageError("--size " + std::to_string(image_size) + " makes images of " +
                     std::to_string(output_pixels) + " pixels, over --max-pixels " +
                     std::to_string(max_pixels));
  }
  if (pipeline == "train") return vision::TrainPipeline(image_size, DType::kF32, decode);
  // torchvision's evaluation recipe keeps the 256 / 224 ratio.
  const int resize = static_cast<int>(image_size * 256.0 / 224.0 + 0.5);
  return vision::ValPipeline(resize, image_size, DType::kF32, decode);
}

}  // namespace feedline::cli
