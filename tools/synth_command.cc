#include "tools/synth_command.h"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "feedline/synth/synth.h"

namespace feedline::cli {
namespace {

namespace fs = std::filesystem;

struct SynthArgs {
  std::string dir;
  long long images = 0;
  int classes = 0;
  unsigned long long seed = 0;
  long long broken = 0;
  bool force = false;
  bool json = false;
};

int RunSynthCommand(const SynthArgs& args) {
  std::error_code ec;
  if (fs::exists(args.dir, ec)) {
    if (!fs::is_directory(args.dir, ec))
      throw UsageError("DIR '" + args.dir + "' exists and is not a folder");
    // Files left from another dataset would mix with this one.
    if (!args.force && fs::directory_iterator(args.dir, ec) != fs::directory_iterator()) {
      throw UsageError("DIR '" + args.dir +
                       "' is not empty (pass --force to write into it anyway)");
    }
  }
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::string> broken = vision::WriteSyntheticImageFolder(
      args.dir, args.images, args.classes, args.seed, args.broken);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::cout << "feedline synth: wrote " << args.images << " images in " << args.classes
            << " classes";
  if (!broken.empty()) std::cout << " and " << broken.size() << " broken files";
  std::cout << " to " << args.dir << " in " << std::fixed;
  std::cout.precision(1);
  std::cout << seconds << " s\n";
  for (const std::string& path : broken) std::cout << "broken: " << path << "\n";
  if (args.json) {
    nlohmann::json json = {{"command", "synth"},      {"dir", args.dir},   {"images", args.images},
                           {"classes", args.classes}, {"seed", args.seed}, {"broken", broken}};
    std::cout << json.dump() << "\n";
  }
  std::cout.flush();
  return kExitOk;
}

}  // namespace

Command AddSynthCommand(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("synth",
                                        "Write a photo-like synthetic JPEG dataset in ImageFolder "
                                        "layout (DIR/class_000/img_0000000.jpg, "
                                        "...), plus broken files of various kinds.");
  auto args = std::make_shared<SynthArgs>();
  app->add_option("DIR", args->dir, "Folder to write (created if missing)")
      ->required()
      ->type_name("PATH");
  app->add_option("--images", args->images, "Number of decodable images")
      ->check(IntAtLeast(1))
      ->type_name("N")
      ->required();
  app->add_option("--classes", args->classes, "Number of classes (subfolders)")
      ->check(IntAtLeast(1))
      ->type_name("C")
      ->required();
  app->add_option("--seed", args->seed, "Seed of the image content")
      ->check(IntAtLeast(0))
      ->type_name("S")
      ->capture_default_str();
  app->add_option(
         "--broken", args->broken,
         "Broken files to add: truncated or damaged JPEGs, empty files, random bytes, a GIF or "
         "broken PNG named .jpg")
      ->check(IntAtLeast(0))
      ->type_name("K")
      ->capture_default_str();
  app->add_flag("--force", args->force, "Write into DIR even if it is not empty");
  app->add_flag("--json", args->json, "End stdout with the paths written as one JSON object");
  return {app, [args] { return RunSynthCommand(*args); }};
}

}  // namespace feedline::cli
