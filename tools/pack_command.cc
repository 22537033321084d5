#include "tools/pack_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "feedline/error.h"
#include "feedline/storage/pack.h"
#include "feedline/storage/remote_options.h"
#include "tools/byte_size_option.h"
#include "tools/image_source.h"
#include "tools/pack_source.h"

namespace feedline::cli {
namespace {

struct PackArgs {
  std::string source;
  std::string out;
  std::string staging;
  int64_t shard_size = static_cast<int64_t>(storage::kDefaultShardBytes);
  int64_t max_file_bytes = vision::kDefaultMaxFileBytes;
  bool skip_broken = false;
  bool restart = false;
  int jpeg_restart_rows = storage::PackOptions{}.jpeg_restart_rows;
  int jpeg_restart_mcus = storage::PackOptions{}.jpeg_restart_mcus;
  bool keep_progressive = false;
  int threads = 0;
  bool json = false;
  bool quiet = false;
};

int RunPackCommand(const PackArgs& args) {
  if (args.source.empty()) {
    throw UsageError("SOURCE is required: an image folder, a file list or detection data");
  }
  CheckImageSource(args.source);
  const bool to_s3 = args.out.rfind("s3://", 0) == 0;
  if (!to_s3 && storage::IsRemoteLocation(args.out)) {
    throw UsageError("OUT '" + args.out +
                     "' is an http(s) URL: a pack goes to a local folder or to s3://BUCKET/PREFIX/");
  }
  if (!to_s3 && !args.staging.empty()) {
    throw UsageError("--staging is the local folder of a pack uploaded to s3://, but OUT '" +
                     args.out + "' is a local folder");
  }
  storage::PackOptions options;
  options.staging_dir = args.staging;
  options.shard_bytes = static_cast<uint64_t>(args.shard_size);  // >= 2048
  options.max_file_bytes = args.max_file_bytes;
  options.skip_broken = args.skip_broken;
  options.restart = args.restart;
  options.jpeg_restart_rows = args.jpeg_restart_rows;
  options.jpeg_restart_mcus = args.jpeg_restart_mcus;
  options.jpeg_progressive_to_baseline = !args.keep_progressive;
  options.threads = args.threads;
  const bool show_progress = !args.quiet && isatty(fileno(stderr));
  if (show_progress) {
    options.on_progress = [](int64_t done, int64_t total) {
      std::fprintf(stderr, "\rpacked %lld/%lld files\033[K", static_cast<long long>(done),
                   static_cast<long long>(total));
    };
  }
  const auto start = std::chrono::steady_clock::now();
  storage::PackResult result;
  try {
    result = PackAnySource(args.source, args.out, options);
  } catch (const Error& e) {
    if (show_progress) std::fprintf(stderr, "\r\033[K");
    throw;
  }
  if (show_progress) std::fprintf(stderr, "\r\033[K");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& [path, reason] : result.skipped) {
    std::cout << "skipped: " << path << ": " << reason << "\n";
  }
  std::cout << "feedline pack: " << result.records << " images in " << result.shards << " shards ("
            << result.bytes << " bytes) in " << args.out;
  if (result.reused_shards > 0) std::cout << ", " << result.reused_shards << " kept from before";
  if (!result.skipped.empty()) std::cout << ", " << result.skipped.size() << " broken skipped";
  std::cout.precision(1);
  std::cout << std::fixed << ", " << seconds << " s\n";
  if (result.rewritten_jpegs > 0) {
    const double change = 100.0 * (static_cast<double>(result.rewritten_bytes_after) -
                                   static_cast<double>(result.rewritten_bytes_before)) /
                          static_cast<double>(result.rewritten_bytes_before);
    std::cout.precision(2);
    std::cout << result.rewritten_jpegs << " JPEGs rewritten with restart markers ("
              << std::showpos << change << std::noshowpos << " % bytes)";
    if (result.progressive_converted > 0) {
      const double progressive_change =
          100.0 *
          (static_cast<double>(result.progressive_bytes_after) -
           static_cast<double>(result.progressive_bytes_before)) /
          static_cast<double>(result.progressive_bytes_before);
      std::cout << ", " << result.progressive_converted
                << " of them progressive ones written as baseline (" << std::showpos
                << progressive_change << std::noshowpos << " % bytes)";
    }
    std::cout << "\n";
  }
  if (args.json) {
    nlohmann::json skipped = nlohmann::json::array();
    for (const auto& [path, reason] : result.skipped) {
      skipped.push_back({{"path", path}, {"reason", reason}});
    }
    nlohmann::json json = {{"command", "pack"},       {"source", args.source},
                           {"out", args.out},         {"records", result.records},
                           {"shards", result.shards}, {"reused_shards", result.reused_shards},
                           {"bytes", result.bytes},   {"seconds", seconds},
                           {"skipped", skipped},
                           {"rewritten_jpegs", result.rewritten_jpegs},
                           {"rewritten_bytes_before", result.rewritten_bytes_before},
                           {"rewritten_bytes_after", result.rewritten_bytes_after},
                           {"progressive_converted", result.progressive_converted},
                           {"progressive_bytes_before", result.progressive_bytes_before},
                           {"progressive_bytes_after", result.progressive_bytes_after}};
    std::cout << json.dump() << "\n";
  }
  std::cout.flush();
  return kExitOk;
}

}  // namespace

Command AddPackCommand(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "pack",
      "Pack an image folder or file list into tar shards (WebDataset layout: key.jpg, key.cls) "
      "with an index per shard for random access, into a folder or an S3 prefix. Detection "
      "data (a COCO instances file, a VOC image set, a YOLO images folder) is packed with each "
      "image's annotations (key.det). Rerun to resume an interrupted pack.");
  auto args = std::make_shared<PackArgs>();
  AddSourceArgument(app, args->source);
  app->add_option("OUT", args->out,
                  "Folder to write the shards to (created if missing), or s3://BUCKET/PREFIX/ to "
                  "upload each shard as soon as it is written (endpoint and credentials from the "
                  "AWS configuration)")
      ->required()
      ->type_name("DIR|URL");
  app->add_option("--staging", args->staging,
                  "An s3:// OUT only: the local folder the pack is written to before each file "
                  "is uploaded (it keeps the indexes, and at most two shards at a time); default: "
                  "a folder in $TMPDIR named after the URL, so that a rerun resumes")
      ->type_name("DIR");
  AddByteSizeOption(app, "--shard-size", args->shard_size, "Largest shard", 2048,
                    int64_t{1} << 50);
  AddByteSizeOption(app, "--max-file-bytes", args->max_file_bytes,
                    "A larger file is broken, refused before it is read", 1,
                    std::numeric_limits<int64_t>::max());
  app->add_flag("--skip-broken", args->skip_broken,
                "Leave out files that cannot be read or are no JPEG, PNG or WebP (and list them) "
                "instead of stopping");
  app->add_flag("--restart", args->restart,
                "Replace the shards in OUT instead of resuming an earlier pack");
  app->add_option("--jpeg-restart-rows", args->jpeg_restart_rows,
                  "Rewrite baseline JPEGs losslessly with a restart marker every N MCU rows, so "
                  "that a crop decodes only its rows (same pixels); 0 stores the files unchanged")
      ->check(CLI::Range(0, 64))
      ->type_name("N")
      ->capture_default_str();
  app->add_option("--jpeg-restart-mcus", args->jpeg_restart_mcus,
                  "A restart marker every N MCUs instead (the nearest divisor of a row's MCUs), "
                  "so that a crop also skips the columns beside it; 0: whole rows")
      ->check(CLI::Range(0, 1024))
      ->type_name("N")
      ->capture_default_str();
  app->add_flag("--keep-progressive", args->keep_progressive,
                "Store progressive JPEGs unchanged instead of rewriting them losslessly as "
                "baseline ones with restart markers (same pixels; a crop of a progressive JPEG "
                "decodes every scan of the whole image)");
  app->add_option("--threads", args->threads,
                  "Threads reading and rewriting files (0: one per core); the shards are the same "
                  "bytes whatever the number")
      ->check(CLI::Range(0, 1024))
      ->type_name("N")
      ->capture_default_str();
  AddOutputFlags(app, args->json, args->quiet);
  return {app, [args] { return RunPackCommand(*args); }};
}

}  // namespace feedline::cli
