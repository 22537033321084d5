// Small detection data sets in the three layouts the command reads (COCO,
// VOC, YOLO), for the command's end-to-end tests.
#ifndef FEEDLINE_TESTS_TOOLS_DETECTION_LAYOUTS_H_
#define FEEDLINE_TESTS_TOOLS_DETECTION_LAYOUTS_H_

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "feedline/synth/encode.h"

namespace feedline::cli::testing {

namespace fs = std::filesystem;

inline void WriteText(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// A 48x32 JPEG of colour `shade`.
inline void WriteJpeg(const std::string& path, int shade) {
  std::vector<uint8_t> rgb(48 * 32 * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(shade + i % 7);
  const std::vector<uint8_t> jpeg = vision::EncodeJpeg(rgb, 48, 32);
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(jpeg.data()), static_cast<std::streamsize>(jpeg.size()));
}

// root/val2017/<i>.jpg and root/annotations/instances_val2017.json, one box
// each; image `missing` is listed but not written.
inline std::string MakeCoco(const std::string& root, int images, int missing = -1) {
  std::string json = R"({"images": [)";
  std::string annotations;
  for (int i = 0; i < images; ++i) {
    const std::string name = std::to_string(i) + ".jpg";
    if (i != missing) WriteJpeg(root + "/val2017/" + name, 20 * i);
    json += (i ? "," : "") + std::string(R"({"id": )") + std::to_string(i + 1) +
            R"(, "file_name": ")" + name + R"(", "height": 32, "width": 48})";
    annotations += (i ? "," : "") + std::string(R"({"id": )") + std::to_string(i + 1) +
                   R"(, "image_id": )" + std::to_string(i + 1) +
                   R"(, "category_id": 3, "iscrowd": 0, "area": 80, "bbox": [2, 3, 10, 8]})";
  }
  json += R"(], "annotations": [)" + annotations + "]}";
  const std::string file = root + "/annotations/instances_val2017.json";
  WriteText(file, json);
  return file;
}

// root/VOC2012 with a "train" set of `images` images, one dog each.
inline std::string MakeVoc(const std::string& root, int images) {
  std::string ids;
  for (int i = 0; i < images; ++i) {
    const std::string id = "2012_" + std::to_string(i);
    WriteJpeg(root + "/VOC2012/JPEGImages/" + id + ".jpg", 30 * i);
    WriteText(root + "/VOC2012/Annotations/" + id + ".xml",
              "<annotation><size><width>48</width><height>32</height><depth>3</depth></size>"
              "<object><name>dog</name><difficult>0</difficult><bndbox><xmin>2</xmin>"
              "<ymin>3</ymin><xmax>20</xmax><ymax>30</ymax></bndbox></object></annotation>");
    ids += id + "\n";
  }
  const std::string set = root + "/VOC2012/ImageSets/Main/train.txt";
  WriteText(set, ids);
  return set;
}

// root/images/train/<i>.jpg and root/labels/train/<i>.txt; image `bad`'s
// second line is not a box.
inline std::string MakeYolo(const std::string& root, int images, int bad = -1) {
  for (int i = 0; i < images; ++i) {
    WriteJpeg(root + "/images/train/" + std::to_string(i) + ".jpg", 25 * i);
    WriteText(root + "/labels/train/" + std::to_string(i) + ".txt",
              "1 0.5 0.5 0.25 0.25\n" + std::string(i == bad ? "2 0.5 oops\n" : ""));
  }
  return root + "/images/train";
}

}  // namespace feedline::cli::testing

#endif  // FEEDLINE_TESTS_TOOLS_DETECTION_LAYOUTS_H_
