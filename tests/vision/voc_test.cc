#include "feedline/vision/voc.h"

#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "vision/vision_testing.h"

namespace feedline::vision {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// VOC2012's 2007_000032.xml, shortened: two aeroplanes (one difficult) and
// a person, with the <part> and <pose> elements real files have.
constexpr const char* kXml = R"(<annotation>
  <folder>VOC2012</folder>
  <filename>2007_000032.jpg</filename>
  <size><width>500</width><height>281</height><depth>3</depth></size>
  <segmented>1</segmented>
  <object>
    <name>aeroplane</name><pose>Frontal</pose><truncated>0</truncated><difficult>0</difficult>
    <bndbox><xmin>104</xmin><ymin>78</ymin><xmax>375</xmax><ymax>183</ymax></bndbox>
  </object>
  <object>
    <name> aeroplane </name><truncated>1</truncated><difficult>1</difficult>
    <bndbox><xmin>133.5</xmin><ymin>88</ymin><xmax>197</xmax><ymax>123</ymax></bndbox>
  </object>
  <object>
    <name>person</name>
    <bndbox><xmin>195</xmin><ymin>180</ymin><xmax>213</xmax><ymax>229</ymax></bndbox>
    <part><name>head</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>2</xmax><ymax>2</ymax></bndbox></part>
  </object>
</annotation>)";

std::string ErrorOf(const std::string& xml) {
  VocAnnotations voc;
  try {
    voc.Add("x", xml, "x.xml");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(VocAnnotationsTest, ObjectsBecomeBoxesInPixelEdgesWithTheirClassIndex) {
  VocAnnotations voc;
  voc.Add("2007_000032", kXml, "2007_000032.xml");
  ASSERT_EQ(voc.num_images(), 1);
  EXPECT_EQ(voc.id(0), "2007_000032");
  EXPECT_EQ(voc.image(0).width, 500);
  EXPECT_EQ(voc.image(0).height, 281);
  const auto objects = voc.objects(0);
  ASSERT_EQ(objects.size(), 3u);
  // Pixels 104..375 counted from 1 are the edges 103..375 counted from 0.
  EXPECT_THAT(objects[0].box, ElementsAre(103, 77, 375, 183));
  EXPECT_EQ(objects[0].label, 0);
  EXPECT_FALSE(objects[0].difficult);
  EXPECT_THAT(objects[1].box, ElementsAre(132.5f, 87, 197, 123));
  EXPECT_TRUE(objects[1].difficult);
  EXPECT_TRUE(objects[1].truncated);
  EXPECT_EQ(objects[2].label, 14);  // person, not its part's "head"
  EXPECT_FALSE(objects[2].difficult);
  EXPECT_EQ(VocAnnotations::DefaultClasses().size(), 20u);
}

TEST(VocAnnotationsTest, ClassesGivenNameTheLabels) {
  VocAnnotations voc({"person", "aeroplane"});
  voc.Add("a", kXml, "a.xml");
  EXPECT_EQ(voc.objects(0)[0].label, 1);
  EXPECT_EQ(voc.objects(0)[2].label, 0);
  EXPECT_THROW(VocAnnotations(std::vector<std::string>{}), Error);
}

TEST(VocAnnotationsTest, BadAnnotationsAreErrorsNamingTheFileAndTheObject) {
  EXPECT_THAT(ErrorOf("<annotation><object>"), HasSubstr("VOC annotation x.xml: not XML"));
  EXPECT_THAT(ErrorOf("<annotations/>"), HasSubstr("no <annotation> element"));
  EXPECT_THAT(ErrorOf("<annotation><object><name>cat</name></object></annotation>"),
              HasSubstr("object 0 ('cat') has no <bndbox>"));
  EXPECT_THAT(ErrorOf("<annotation><object><name>unicorn</name></object></annotation>"),
              HasSubstr("object 0: class 'unicorn' is not one of the 20 classes given"));
  EXPECT_THAT(ErrorOf("<annotation><object><name>cat</name><bndbox><xmin>1</xmin><ymin>x</ymin>"
                      "<xmax>3</xmax><ymax>4</ymax></bndbox></object></annotation>"),
              HasSubstr("object 0: <ymin> is 'x', not a number"));
  EXPECT_THAT(ErrorOf("<annotation><object><name>cat</name><bndbox><xmin>5</xmin><ymin>1</ymin>"
                      "<xmax>3</xmax><ymax>4</ymax></bndbox></object></annotation>"),
              HasSubstr("has its minimum past its maximum"));
  EXPECT_THAT(ErrorOf("<annotation><object><name>cat</name><bndbox><xmin>1</xmin><ymin>1</ymin>"
                      "<xmax>3</xmax><ymax>1e40</ymax></bndbox></object></annotation>"),
              HasSubstr("<ymax> is 1e40, beyond any image"));
  EXPECT_THAT(ErrorOf("<annotation><size><width>-3</width><height>2</height></size></annotation>"),
              HasSubstr("is not an image's size"));
  EXPECT_THAT(ErrorOf("<annotation><size><width>nan</width><height>2</height></size></annotation>"),
              HasSubstr("<width> is 'nan', not a number"));
}

// One object of class "cat" with `box` and `difficult` as XML text.
std::string CatXml(const std::string& box, const std::string& difficult = "0") {
  return "<annotation><object><name>cat</name><difficult>" + difficult +
         "</difficult><bndbox>" + box + "</bndbox></object></annotation>";
}

TEST(VocAnnotationsTest, TextIsReadAsXmlAndPythonReadIt) {
  const std::string box = "<xmin>1<!-- c -->5</xmin><ymin>+2</ymin><xmax>20</xmax><ymax>9</ymax>";
  VocAnnotations voc;
  voc.Add("a", CatXml(box), "a.xml");
  EXPECT_THAT(voc.objects(0)[0].box, ElementsAre(14, 1, 20, 9));  // 15 and +2
  for (const char* flag : {"0", "0.0", "false", "False", ""}) {
    voc.Add("b", CatXml(box, flag), "b.xml");
    EXPECT_FALSE(voc.objects(voc.num_images() - 1)[0].difficult) << flag;
  }
  for (const char* flag : {"1", "1.0", "true", "TRUE"}) {
    voc.Add("c", CatXml(box, flag), "c.xml");
    EXPECT_TRUE(voc.objects(voc.num_images() - 1)[0].difficult) << flag;
  }
  EXPECT_THAT(ErrorOf(CatXml(box, "maybe")),
              HasSubstr("object 0: <difficult> is 'maybe', not 0, 1, true or false"));
  EXPECT_THAT(ErrorOf(CatXml(box) + "<annotation/>"),
              HasSubstr("not XML: more than one element at the top"));
  EXPECT_THAT(ErrorOf(CatXml(box) + "junk"), HasSubstr("not XML"));
  EXPECT_THROW(VocAnnotations({"cat", "dog", "cat"}), Error);
}

TEST(VocAnnotationsTest, ListsWithAnyLineEndAndFilesThatAreNotFiles) {
  testing::TempDir dir;
  const std::string xml = kXml;
  for (const char* id : {"a", "b", "c"}) {
    testing::WriteBytes(dir / (std::string("Annotations/") + id + ".xml"),
                        std::vector<uint8_t>(xml.begin(), xml.end()));
  }
  const std::string list = "a\rb\r\nc\v\n";
  testing::WriteBytes(dir / "ImageSets/Main/train.txt",
                      std::vector<uint8_t>(list.begin(), list.end()));
  const VocAnnotations voc = VocAnnotations::Read(dir.path(), "train");
  ASSERT_EQ(voc.num_images(), 3);
  EXPECT_EQ(voc.id(2), "c");

  std::filesystem::remove(dir / "Annotations/b.xml");
  std::filesystem::create_directories(dir / "Annotations/b.xml");
  try {
    VocAnnotations::Read(dir.path(), "train");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("Annotations/b.xml cannot be read: it is a folder"));
  }
  std::filesystem::remove(dir / "Annotations/b.xml");
  ASSERT_EQ(::mkfifo((dir / "Annotations/b.xml").c_str(), 0644), 0);
  try {
    VocAnnotations::Read(dir.path(), "train");  // refused, not waited on
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("Annotations/b.xml cannot be read: it is not a regular file"));
  }
}

TEST(VocAnnotationsTest, ReadFollowsTheImageSetAndNamesWhatIsMissing) {
  testing::TempDir dir;
  testing::WriteBytes(dir / "ImageSets/Main/train.txt",
                      std::vector<uint8_t>({'a', '\n', '\n', 'b', ' ', ' ', '1', '\r', '\n'}));
  const std::string xml = kXml;
  testing::WriteBytes(dir / "Annotations/a.xml", std::vector<uint8_t>(xml.begin(), xml.end()));
  testing::WriteBytes(dir / "Annotations/b.xml", std::vector<uint8_t>(xml.begin(), xml.end()));
  VocAnnotations voc = VocAnnotations::Read(dir.path(), "train");
  ASSERT_EQ(voc.num_images(), 2);
  EXPECT_EQ(voc.id(1), "b");
  EXPECT_EQ(voc.objects(1).size(), 3u);
  try {
    VocAnnotations::Read(dir.path(), "val");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("VOC image set " + dir / "ImageSets/Main/val.txt" +
                                    " cannot be read"));
  }
  std::filesystem::remove(dir / "Annotations/b.xml");
  try {
    VocAnnotations::Read(dir.path(), "train");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("VOC annotation " + dir / "Annotations/b.xml" +
                                    " cannot be read"));
  }
}

}  // namespace
}  // namespace feedline::vision
