#include "feedline/vision/file_list.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>
#include <utility>

#include "feedline/error.h"

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

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("FileList: cannot read list file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error("FileList: error reading list file '" + path + "'");
  return text.str();
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
                  std::string(line) + "'");
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
      fail("the label '" + std::string(label_text) + "' is not a non-negative integer");
    }
    files.Add(path, label);
  }
  if (files.size() == 0) throw Error("FileList: '" + name + "' lists no files");
  return files;
}

FileList::FileList(const std::string& list_file, const std::string& root, Pipeline pipeline)
    : FileList(root, Load(list_file), std::move(pipeline)) {}

FileList::Loaded FileList::Load(const std::string& list_file) {
  Loaded loaded;
  loaded.files = Parse(ReadText(list_file), list_file);
  loaded.classes = LabelNames(loaded.files);
  return loaded;
}

FileList::FileList(const std::string& root, Loaded loaded, Pipeline pipeline)
    : ImageDataset(root, std::move(loaded.files), std::move(loaded.classes), std::move(pipeline)) {}

}  // namespace feedline::vision
