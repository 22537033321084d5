#include "feedline/vision/file_list.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <utility>

#include "feedline/error.h"
#include "feedline/vision/decode.h"
#include "feedline/vision/read_file.h"

namespace feedline::vision {
namespace {

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::vector<std::string> LabelNames(const ImageList& files) {
  int64_t max_label = -1;
  for (int64_t label : files.labels()) max_label = std::max(max_label, label);
  std::vector<std::string> names;
  for (int64_t i = 0; i <= max_label; ++i) names.push_back(std::to_string(i));
  return names;
}

// A line as it appears in a message: bytes that are not printable ASCII
// shown as \xNN, long lines cut, so a binary file cannot flood a terminal.
std::string Printable(std::string_view line) {
  constexpr size_t kMaxShown = 80;
  std::string out;
  for (size_t i = 0; i < line.size() && i < kMaxShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    }
  }
  if (line.size() > kMaxShown) out += "...";
  return out;
}

}  // namespace

ImageList FileList::Parse(std::string_view text, const std::string& name) {
  ImageList files;
  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    while (!line.empty() && IsSpace(line.back())) line.remove_suffix(1);  // also '\r'
    while (!line.empty() && IsSpace(line.front())) line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;

    auto fail = [&](const std::string& what) {
      throw Error(name + ":" + std::to_string(line_number) + ": " + what + " in '" +
                  Printable(line) + "'");
    };
    size_t split = line.size();
    while (split > 0 && !IsSpace(line[split - 1])) --split;
    if (split == 0) fail("expected 'path label'");
    const std::string_view label_text = line.substr(split);
    std::string_view path = line.substr(0, split);
    while (!path.empty() && IsSpace(path.back())) path.remove_suffix(1);
    int64_t label = -1;
    const char* end = label_text.data() + label_text.size();
    const auto result = std::from_chars(label_text.data(), end, label);
    if (result.ec != std::errc() || result.ptr != end || label < 0) {
      fail("the label '" + Printable(label_text) + "' is not a non-negative integer");
    }
    files.Add(path, label);
  }
  if (files.size() == 0) throw Error("FileList: '" + name + "' lists no files");
  return files;
}

FileList::FileList(const std::string& list_file, const std::string& root, Pipeline pipeline,
                   ReadOptions read)
    : FileList(root, Load(list_file), std::move(pipeline), read) {}

std::string FileList::ReadListText(const std::string& list_file) {
  std::vector<uint8_t> bytes;
  try {
    ReadOptions options;
    options.max_bytes = kMaxListFileBytes;
    ReadFile(list_file.c_str(), bytes, options);
  } catch (const SampleError& e) {
    throw Error("FileList: cannot read list file '" + list_file + "': " + e.message());
  }
  if (DetectFormat(bytes) != ImageFormat::kUnknown) {
    throw Error("FileList: '" + list_file + "' is an image (" +
                ImageFormatName(DetectFormat(bytes)) +
                "), not a file list (lines of 'path label')");
  }
  if (std::find(bytes.begin(), bytes.end(), uint8_t{0}) != bytes.end()) {
    throw Error("FileList: '" + list_file +
                "' is a binary file (it holds NUL bytes), not a file list (lines of 'path label')");
  }
  return std::string(bytes.begin(), bytes.end());
}

FileList::Loaded FileList::Load(const std::string& list_file) {
  Loaded loaded;
  loaded.files = Parse(ReadListText(list_file), list_file);
  loaded.classes = LabelNames(loaded.files);
  return loaded;
}

FileList::FileList(const std::string& root, Loaded loaded, Pipeline pipeline, ReadOptions read)
    : ImageDataset(root, std::move(loaded.files), std::move(loaded.classes), std::move(pipeline),
                   read) {}

}  // namespace feedline::vision
