#include "feedline/storage/pack.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <thread>
#include <fstream>
#include <memory>
#include <sstream>

#include "feedline/error.h"
#include "feedline/storage/shard_index.h"
#include "feedline/vision/decode.h"
#include "feedline/vision/file_list.h"
#include "feedline/vision/image_folder.h"
#include "src/storage/pack_folder_guard.h"
#include "src/storage/pack_hooks.h"
#include "src/storage/pack_manifest.h"
#include "src/storage/s3_pack.h"
#include "src/storage/shard_writer.h"
#include "src/vision/jpeg_restarts.h"

namespace feedline::storage {
namespace {

namespace fs = std::filesystem;

std::string ShardName(int64_t shard, const char* extension) {
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "shard-%06lld%s", static_cast<long long>(shard), extension);
  return buffer;
}

std::string KeyOf(int64_t position) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%09lld", static_cast<long long>(position));
  return buffer;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteText(const std::string& path, const std::string& text) {
  WriteFileAtomically(
      path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

// The shard number of "shard-NNNNNN.<anything>", or -1.
int64_t ShardNumber(const std::string& name) {
  if (name.size() < 12 || name.compare(0, 6, "shard-") != 0 || name[12] != '.') return -1;
  int64_t n = 0;
  for (size_t i = 6; i < 12; ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

// Removes the shard files numbered `from` and above (a partial shard and
// anything an earlier run left after it).
void RemoveShardsFrom(const std::string& out_dir, int64_t from) {
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(out_dir, ec)) {
    const int64_t n = ShardNumber(entry.path().filename().string());
    if (n >= from) fs::remove(entry.path(), ec);
  }
}

// One source file made ready for its shard: read, and rewritten with
// restart markers when it is a baseline JPEG.
struct PreparedFile {
  std::string path;
  std::vector<uint8_t> bytes;
  std::vector<uint32_t> restarts;
  std::string annotations;  // an encoded DetectionRecord (a detection pack)
  bool has_usable_box = false;
  uint32_t image_height = 0;  // as the record lists it
  uint32_t image_width = 0;
  vision::ImageFormat format = vision::ImageFormat::kUnknown;
  uint64_t bytes_before = 0;  // of a rewritten JPEG, else 0
  bool was_progressive = false;  // a progressive JPEG rewritten as baseline
  std::string error;          // why it could not be read, or empty
};

void PrepareFile(int64_t index, const std::string& path, const vision::ReadOptions& read,
                 const PackOptions& options, std::vector<uint8_t>& scratch, PreparedFile& file) {
  file.path = path;
  file.restarts.clear();
  file.annotations.clear();
  file.bytes_before = 0;
  file.was_progressive = false;
  file.error.clear();
  try {
    vision::ReadFile(path.c_str(), file.bytes, read);
  } catch (const SampleError& e) {
    file.error = e.message();
    return;
  }
  file.format = vision::DetectFormat(file.bytes);
  if (options.annotations) {
    // Of the file as read: a JPEG rewritten below keeps its size.
    try {
      const vision::DetectionRecord record =
          options.annotations(index, vision::ReadImageInfo(file.bytes, path));
      file.annotations = vision::EncodeDetectionRecord(record);
      file.has_usable_box = record.has_usable_box;
      file.image_height = static_cast<uint32_t>(std::max(record.image_height, 0));
      file.image_width = static_cast<uint32_t>(std::max(record.image_width, 0));
    } catch (const Error& e) {  // a SampleError too: what() names the label file
      file.error = std::string("annotations: ") + e.what();
      return;
    }
  }
  if (file.format == vision::ImageFormat::kJpeg && options.jpeg_restart_rows > 0 &&
      vision::internal::AddJpegRestarts(file.bytes,
                                        {options.jpeg_restart_rows, options.jpeg_restart_mcus,
                                         options.jpeg_progressive_to_baseline},
                                        scratch, file.restarts, &file.was_progressive)) {
    file.bytes_before = file.bytes.size();
    file.bytes.swap(scratch);
  } else {
    file.restarts.clear();
    file.was_progressive = false;
  }
}

bool IsAllDigits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

std::string ShardTarName(int64_t shard) { return ShardName(shard, ".tar"); }
std::string ShardIndexName(int64_t shard) { return ShardName(shard, ".idx"); }

PackResult PackImages(const std::string& source, const std::string& root,
                      const vision::ImageList& files, const std::vector<std::string>& classes,
                      const std::string& out_dir, const PackOptions& options) {
  if (IsS3Location(out_dir)) return PackImagesToS3(source, root, files, classes, out_dir, options);
  return PackImagesWithHooks(source, root, files, classes, out_dir, options, {});
}

PackResult PackImagesWithHooks(const std::string& source, const std::string& root,
                               const vision::ImageList& files,
                               const std::vector<std::string>& classes,
                               const std::string& out_dir, const PackOptions& options,
                               const PackHooks& hooks) {
  if (options.shard_bytes < 4 * kTarBlock) {
    throw Error("pack: shard size must be at least 2048 bytes, got " +
                std::to_string(options.shard_bytes));
  }
  if (options.max_file_bytes <= 0) throw Error("pack: max_file_bytes must be > 0");
  if (options.jpeg_restart_rows < 0 || options.jpeg_restart_rows > 64) {
    throw Error("pack: jpeg_restart_rows must be 0 to 64, got " +
                std::to_string(options.jpeg_restart_rows));
  }
  if (options.threads < 0) {
    throw Error("pack: threads must be >= 0, got " + std::to_string(options.threads));
  }
  if (options.jpeg_restart_mcus < 0 || options.jpeg_restart_mcus > 1024) {
    throw Error("pack: jpeg_restart_mcus must be 0 to 1024, got " +
                std::to_string(options.jpeg_restart_mcus));
  }
  // A detection source lists its images itself (PackSource guards image
  // folders and file lists before it lists them).
  if (options.annotations) CheckNotAListedFolder(source, root, files, out_dir);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec || !fs::is_directory(out_dir)) {
    throw Error(out_dir + ": cannot create the output folder" +
                (ec ? ": " + ec.message() : std::string(": not a folder")));
  }
  // Held until the pack returns: a second pack into the folder fails here at
  // once instead of racing this one for the same shard and index files.
  const PackFolderLock lock(out_dir);
  const std::string manifest_path = out_dir + "/pack.txt";
  const std::string shown = hooks.destination.empty() ? out_dir : hooks.destination;
  const std::string shown_manifest =
      hooks.destination.empty() ? manifest_path : hooks.destination + "pack.txt";
  auto write_text = [&](const std::string& name, const std::string& text) {
    WriteText(out_dir + "/" + name, text);
    if (hooks.text_written) hooks.text_written(name, text);
  };
  auto remove_shards_from = [&](int64_t from) {
    RemoveShardsFrom(out_dir, from);
    if (hooks.shards_removed) hooks.shards_removed(from);
  };
  if (hooks.locked) hooks.locked();
  const std::string manifest_head = "feedline-pack 1\nsource " + source + "\nfiles " +
                                    std::to_string(files.size()) + "\nshard_bytes " +
                                    std::to_string(options.shard_bytes) + "\n" +
                                    (options.jpeg_restart_rows == 0
                                         ? std::string()
                                         : "jpeg_restart_rows " +
                                               std::to_string(options.jpeg_restart_rows) + "\n") +
                                    (options.jpeg_restart_rows == 0 || options.jpeg_restart_mcus == 0
                                         ? std::string()
                                         : "jpeg_restart_mcus " +
                                               std::to_string(options.jpeg_restart_mcus) + "\n") +
                                    (options.jpeg_restart_rows == 0 ||
                                             !options.jpeg_progressive_to_baseline
                                         ? std::string()
                                         : "jpeg_progressive baseline\n") +
                                    (options.annotations ? "annotations detection\n" : "");
  const bool has_manifest = fs::exists(manifest_path, ec);
  bool has_shards = false;
  for (const fs::directory_entry& entry : fs::directory_iterator(out_dir, ec)) {
    if (ShardNumber(entry.path().filename().string()) >= 0) has_shards = true;
  }
  bool resume = false;
  if (!options.restart) {
    if (has_manifest) {
      // The same head and nothing else before the counts: a head that is a
      // prefix of the folder's (no restart lines against some) is another pack.
      const bool same = PackManifest(ReadText(manifest_path)).head() == manifest_head;
      if (!same) {
        throw Error(shown +
                    " holds a pack of another source, file count, shard size, JPEG restart "
                    "interval or progressive JPEG setting (see " +
                    shown_manifest + "); pass --restart to replace it, or choose another folder");
      }
      resume = true;
    } else if (has_shards) {
      throw Error(shown + " holds shard files but no pack.txt; pass --restart to replace them");
    }
  }
  if (!resume) remove_shards_from(0);
  write_text("pack.txt", manifest_head);
  std::string class_text;
  for (const std::string& name : classes) class_text += name + "\n";
  write_text("classes.txt", class_text);

  PackResult result;
  int64_t shard = 0;
  int64_t next_file = 0;
  // Complete shards of an earlier run are kept: index valid, first record
  // where the previous one ended, tar of the size the index records.
  while (resume) {
    const std::string index_path = out_dir + "/" + ShardIndexName(shard);
    const std::string tar_path = out_dir + "/" + ShardTarName(shard);
    if (hooks.before_index) hooks.before_index(shard);
    if (!fs::exists(index_path, ec)) break;
    ShardIndex index;
    try {
      index = ReadShardIndex(index_path);
    } catch (const Error&) {
      break;  // redone below
    }
    if (index.records.empty() || index.first_record != static_cast<uint64_t>(result.records) ||
        !IsAllDigits(index.records.back().key)) {
      break;
    }
    if (hooks.shard_whole) {
      if (!hooks.shard_whole(shard, index)) break;
    } else {
      struct stat st;
      if (::stat(tar_path.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != index.tar_size) {
        break;
      }
    }
    next_file = std::stoll(index.records.back().key) + 1;
    result.records += static_cast<int64_t>(index.records.size());
    result.bytes += index.tar_size;
    ++result.reused_shards;
    ++shard;
  }
  remove_shards_from(shard);

  vision::ReadOptions read;
  read.max_bytes = options.max_file_bytes;
  read.image = true;
  std::unique_ptr<ShardWriter> writer;
  auto finish = [&] {
    result.bytes += writer->Finish();
    result.records += writer->records();
    writer.reset();
    if (hooks.shard_finished) hooks.shard_finished(shard);
    ++shard;
    if (options.on_progress) options.on_progress(result.records, files.size());
  };
  const int threads =
      options.threads > 0 ? options.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int64_t chunk = 16 * static_cast<int64_t>(threads);
  std::vector<PreparedFile> prepared(static_cast<size_t>(chunk));
  std::vector<std::vector<uint8_t>> scratch(static_cast<size_t>(threads));
  for (int64_t begin = next_file; begin < files.size(); begin += chunk) {
    const int64_t end = std::min<int64_t>(files.size(), begin + chunk);
    // Prepared in parallel (reading and rewriting is the slow part), then
    // written in listing order by this thread.
    std::atomic<int64_t> next{begin};
    std::exception_ptr failure;
    std::atomic<bool> failed{false};
    auto prepare = [&](int t) {
      for (int64_t i = next++; i < end && !failed; i = next++) {
        const std::string_view relative = files.path(i);
        const std::string path =
            (root.empty() || (!relative.empty() && relative.front() == '/'))
                ? std::string(relative)
                : root + "/" + std::string(relative);
        try {
          PrepareFile(i, path, read, options, scratch[static_cast<size_t>(t)],
                      prepared[static_cast<size_t>(i - begin)]);
        } catch (...) {  // std::bad_alloc
          if (!failed.exchange(true)) failure = std::current_exception();
        }
      }
    };
    if (threads == 1) {
      prepare(0);
    } else {
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) pool.emplace_back(prepare, t);
      for (std::thread& thread : pool) thread.join();
    }
    if (failure) std::rethrow_exception(failure);
    for (int64_t i = begin; i < end; ++i) {
      PreparedFile& file = prepared[static_cast<size_t>(i - begin)];
      if (!file.error.empty()) {
        if (!options.skip_broken) {
          throw Error(file.path + ": cannot be packed: " + file.error +
                      " (--skip-broken leaves such files out)");
        }
        result.skipped.emplace_back(file.path, file.error);
        continue;
      }
      if (file.bytes_before > 0) {
        ++result.rewritten_jpegs;
        result.rewritten_bytes_before += file.bytes_before;
        result.rewritten_bytes_after += file.bytes.size();
        if (file.was_progressive) {
          ++result.progressive_converted;
          result.progressive_bytes_before += file.bytes_before;
          result.progressive_bytes_after += file.bytes.size();
        }
      }
      if (writer && writer->records() > 0 &&
          writer->FinishedBytes() +
                  ShardWriter::RecordBytes(file.bytes.size(), file.annotations.size()) >
              options.shard_bytes) {
        finish();
      }
      if (!writer) {
        writer = std::make_unique<ShardWriter>(out_dir + "/" + ShardTarName(shard),
                                               out_dir + "/" + ShardIndexName(shard),
                                               static_cast<uint64_t>(result.records));
      }
      writer->Add(KeyOf(i), file.bytes, file.format, files.label(i), std::move(file.restarts),
                  RecordAnnotations{std::span<const uint8_t>(
                                        reinterpret_cast<const uint8_t*>(file.annotations.data()),
                                        file.annotations.size()),
                                    file.has_usable_box, file.image_height, file.image_width});
    }
  }
  if (writer && writer->records() > 0) finish();
  if (writer) {  // opened, nothing added: cannot happen, but leave no empty tar
    writer.reset();
    RemoveShardsFrom(out_dir, shard);
  }
  if (result.records == 0) {
    throw Error(source + ": no image could be packed (" + std::to_string(result.skipped.size()) +
                " broken files)");
  }
  result.shards = shard;
  write_text("pack.txt", manifest_head + "records " + std::to_string(result.records) +
                            "\nshards " + std::to_string(result.shards) + "\n");
  return result;
}

PackResult PackSource(const std::string& source, const std::string& out_dir,
                      const PackOptions& options) {
  std::error_code ec;
  // An S3 pack is written to its local staging folder first.
  const std::string local_out =
      IsS3Location(out_dir) ? S3StagingDir(out_dir, options) : out_dir;
  if (fs::is_directory(source, ec)) {
    CheckOutsideImageFolder(source, local_out);
    vision::ImageFolder::Listing listing = vision::ImageFolder::List(source);
    return PackImages(source, source, listing.files, listing.classes, out_dir, options);
  }
  if (!fs::exists(source, ec)) {
    throw OsError(ec ? ec.value() : ENOENT, source, source + ": does not exist");
  }
  vision::ImageList files = vision::FileList::Parse(vision::FileList::ReadListText(source), source);
  int64_t classes = 0;
  for (int64_t label : files.labels()) classes = std::max(classes, label + 1);
  std::vector<std::string> names;
  for (int64_t c = 0; c < classes; ++c) names.push_back(std::to_string(c));
  const fs::path parent = fs::path(source).parent_path();
  const std::string root = parent.empty() ? std::string(".") : parent.string();
  CheckOutsideFileList(source, root, files, local_out);
  return PackImages(source, root, files, names, out_dir, options);
}

}  // namespace feedline::storage
