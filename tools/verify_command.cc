#include "tools/verify_command.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "feedline/error.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "tools/source.h"

namespace feedline::cli {
namespace {

struct VerifyArgs {
  SourceArgs input;  // SOURCE, --fields, --max-file-bytes, --max-pixels
  std::string threads = "auto";
  bool json = false;
  bool quiet = false;
};

// Progress is reported every this many samples.
constexpr int64_t kProgressEvery = 256;

int RunVerifyCommand(const VerifyArgs& args) {
  // Every image decoded whole. Shards (`feedline pack`): indexes checked on
  // opening, each record's tar header and checksum on reading. HDF5: every
  // row of every field read.
  const ParsedSource source = ParseSource(args.input);
  std::shared_ptr<const Dataset> dataset =
      OpenSource(source, "decode", /*image_size=*/0, args.input.limits);
  const int threads = std::max(1, ParseWorkers(args.threads));
  const int64_t total = dataset->size();

  const bool show_progress = !args.quiet && isatty(fileno(stderr));
  std::vector<BrokenFile> broken = FindBrokenSamples(*dataset, threads, [&](int64_t done) {
    if (show_progress)
      std::fprintf(stderr, "\rchecked %lld/%lld files\033[K", static_cast<long long>(done),
                   static_cast<long long>(total));
  });
  if (show_progress) std::fprintf(stderr, "\r\033[K");

  std::map<std::string, int64_t> by_reason;
  for (const BrokenFile& file : broken) {
    ++by_reason[file.reason];
    std::cout << "broken: " << file.path << ": " << file.reason << ": " << file.message << "\n";
  }
  std::cout << "feedline verify: " << total << " files, "
            << total - static_cast<int64_t>(broken.size()) << " ok, " << broken.size() << " broken";
  if (!by_reason.empty()) {
    std::cout << " (";
    bool first = true;
    for (const auto& [reason, count] : by_reason) {
      std::cout << (first ? "" : ", ") << reason << ": " << count;
      first = false;
    }
    std::cout << ")";
  }
  std::cout << "\n";

  if (args.json) {
    nlohmann::json json = {{"command", "verify"},
                           {"source", args.input.source},
                           {"source_kind", SourceKindName(source.kind)},
                           {"files", total},
                           {"ok", total - static_cast<int64_t>(broken.size())},
                           {"broken", nlohmann::json::array()},
                           {"by_reason", by_reason}};
    for (const BrokenFile& file : broken) {
      json["broken"].push_back(
          {{"path", file.path}, {"reason", file.reason}, {"message", file.message}});
    }
    std::cout << json.dump() << "\n";
  }
  std::cout.flush();
  return broken.empty() ? kExitOk : kExitFailure;
}

}  // namespace

std::vector<BrokenFile> FindBrokenSamples(const Dataset& dataset, int threads,
                                          const std::function<void(int64_t done)>& on_progress) {
  const int64_t total = dataset.size();
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::mutex mu;
  std::vector<BrokenFile> broken;  // guarded by mu

  auto work = [&](int worker_id) {
    Sample sample;
    for (int64_t i = next.fetch_add(1); i < total; i = next.fetch_add(1)) {
      // A context per sample: its scratch buffers are made again, which costs
      // little next to reading and decoding a file.
      SampleContext ctx(/*seed=*/0, /*epoch=*/0, i, worker_id);
      sample.Clear();
      BrokenFile file;
      std::string error_source;  // the file the SampleError names
      bool failed = true;
      try {
        dataset.Get(i, sample, ctx);
        failed = false;
      } catch (const SampleError& e) {
        file.reason = e.reason();
        file.message = e.message();
        error_source = e.source();
      } catch (const std::exception& e) {
        file.reason = "exception";
        file.message = e.what();
      }
      if (failed) {
        file.index = i;
        try {
          file.path = dataset.Source(i);
        } catch (const std::exception&) {
          file.path = "#" + std::to_string(i);
        }
        // Another file than the sample's own is at fault (a YOLO image's
        // label file, say): the message names it.
        if (!error_source.empty() && error_source != file.path) {
          file.message = error_source + ": " + file.message;
        }
        std::lock_guard<std::mutex> lock(mu);
        broken.push_back(std::move(file));
      }
      const int64_t finished = done.fetch_add(1) + 1;
      if (on_progress && (finished % kProgressEvery == 0 || finished == total)) {
        std::lock_guard<std::mutex> lock(mu);
        on_progress(finished);
      }
    }
  };

  const int count = static_cast<int>(std::clamp<int64_t>(threads, 1, std::max<int64_t>(1, total)));
  std::vector<std::thread> pool;
  for (int t = 1; t < count; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& thread : pool) thread.join();

  std::sort(broken.begin(), broken.end(), [](const BrokenFile& a, const BrokenFile& b) {
    return std::tie(a.path, a.index) < std::tie(b.path, b.index);
  });
  return broken;
}

Command AddVerifyCommand(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "verify",
      "Decode every image of SOURCE (an image folder, a file list, shards written by "
      "'feedline pack', or the rows of an HDF5 file) in parallel and list each broken file "
      "with its reason. Exits 1 if any file is broken.");
  auto args = std::make_shared<VerifyArgs>();
  AddSourceOptions(app, args->input);
  app->add_option("--threads", args->threads, "Decoding threads; auto: one per CPU")
      ->check(WorkersValue())
      ->type_name("N|auto")
      ->capture_default_str();
  AddOutputFlags(app, args->json, args->quiet);
  return {app, [args] { return RunVerifyCommand(*args); }};
}

}  // namespace feedline::cli
