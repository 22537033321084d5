#include "feedline/vision/image_folder.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "feedline/data_loader.h"
#include "feedline/error.h"
#include "feedline/synth/encode.h"
#include "feedline/synth/synth.h"
#include "tests/vision/vision_testing.h"

namespace feedline::vision {
namespace {

std::string ErrorOf(const std::string& root) {
  try {
    ImageFolder folder(root, TrainPipeline(32));
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::vector<std::string> Files(const ImageDataset& data) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < data.size(); ++i) out.emplace_back(data.file(i));
  return out;
}

TEST(ImageFolder, ListsLikeTorchvision) {
  testing::TempDir dir;
  const std::vector<uint8_t> jpeg = SynthesizeJpeg(40, 30, 71);
  for (const char* name :
       {"dog/b.jpg", "dog/a.JPEG", "dog/c.Png", "dog/d.webp", "dog/notes.txt", "dog/e.gif",
        "dog/sub/z.jpg", "dog/sub/a.jpg", "dog/sub-b/x.jpg", "dog/sub/deeper/q.jpg", "cat/1.jpg",
        "Zebra/x.jpeg", "cat/.hidden.jpg"}) {
    testing::WriteBytes(dir / name, jpeg);
  }
  testing::WriteBytes(dir / "stray.jpg", jpeg);  // a file at the root is no class
  ImageFolder folder(dir.path(), TrainPipeline(32));
  EXPECT_EQ(folder.classes(), (std::vector<std::string>{"Zebra", "cat", "dog"}));
  // sorted(os.walk(dog)) orders the directories by path: "dog", "dog/sub",
  // "dog/sub-b", "dog/sub/deeper" ('-' sorts before '/'); files by name.
  EXPECT_EQ(Files(folder),
            (std::vector<std::string>{"Zebra/x.jpeg", "cat/.hidden.jpg", "cat/1.jpg", "dog/a.JPEG",
                                      "dog/b.jpg", "dog/c.Png", "dog/d.webp", "dog/sub/a.jpg",
                                      "dog/sub/z.jpg", "dog/sub-b/x.jpg", "dog/sub/deeper/q.jpg"}));
  EXPECT_EQ(folder.labels(), (std::vector<int64_t>{0, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2}));
  EXPECT_EQ(folder.Source(0), dir / "Zebra/x.jpeg");
  EXPECT_THROW(folder.Source(11), IndexError);
}

TEST(ImageFolder, GetDecodesByContentAndLabels) {
  testing::TempDir dir;
  const std::vector<uint8_t> rgb = SynthesizeImage(60, 40, 72);
  testing::WriteBytes(dir / "a/img.jpg", EncodePng(rgb, 60, 40));  // a PNG named .jpg
  testing::WriteBytes(dir / "b/img.jpg", EncodeJpeg(rgb, 60, 40));
  ImageFolder folder(dir.path() + "/", TrainPipeline(32));
  const std::vector<FieldSpec> fixed = folder.FixedFields();
  ASSERT_EQ(fixed.size(), 2u);
  EXPECT_EQ(fixed[0].name, "image");
  EXPECT_EQ(fixed[0].shape, (Shape{3, 32, 32}));
  EXPECT_EQ(fixed[1].name, "label");
  EXPECT_EQ(fixed[1].dtype, DType::kI64);
  for (int64_t i = 0; i < 2; ++i) {
    Sample sample;
    SampleContext ctx(0, 0, i);
    folder.Get(i, sample, ctx);
    EXPECT_EQ(sample["image"].shape(), (Shape{3, 32, 32}));
    EXPECT_EQ(*sample["label"].data<int64_t>(), i);
    EXPECT_GT(ctx.stage_ns(Stage::kRead), 0);
  }
}

TEST(ImageFolder, BrokenFilesAreSampleErrorsNamingThem) {
  testing::TempDir dir;
  testing::WriteBytes(dir / "a/empty.jpg", {});
  ImageFolder folder(dir.path(), TrainPipeline(32));
  Sample sample;
  SampleContext ctx(0, 0, 0);
  testing::ExpectSampleError([&] { folder.Get(0, sample, ctx); }, "format", dir / "a/empty.jpg");
  std::filesystem::remove(dir / "a/empty.jpg");
  testing::ExpectSampleError([&] { folder.Get(0, sample, ctx); }, "io", dir / "a/empty.jpg");
}

// RandomIoUCrop chooses from objects, which a classification folder lacks:
// refused when the dataset is made, not a crop that never happens.
TEST(ImageFolder, RefusesAStepThatNeedsObjects) {
  testing::TempDir dir;
  testing::WriteBytes(dir / "a/x.png", EncodePng(std::vector<uint8_t>(8 * 8 * 3, 7), 8, 8));
  try {
    ImageFolder folder(dir.path(), Pipeline({Transform::RandomIoUCrop()}));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("random_iou_crop chooses its crop from the objects"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(dir.path()), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(ImageFolder(dir.path(), Pipeline({Transform::RandomZoomOut()})));
}

// A FIFO and a symlink to a device, named like images, among good files:
// each is a failed sample naming the file and what it is, found without
// blocking or reading, and a loader that skips them finishes.
TEST(ImageFolder, FifosAndDevicesAreFailedSamplesNotHangs) {
  testing::TempDir dir;
  const std::vector<uint8_t> jpeg = SynthesizeJpeg(40, 30, 74);
  testing::WriteBytes(dir / "a/good1.jpg", jpeg);
  testing::WriteBytes(dir / "a/good2.jpg", jpeg);
  ASSERT_EQ(::mkfifo((dir / "a/x.jpg").c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/zero", dir / "a/y.jpg");
  std::filesystem::create_directories(dir / "a/z.jpg");  // a folder named like an image
  auto run = std::async(std::launch::async, [&] {
    ImageFolder folder(dir.path(), TrainPipeline(16));
    EXPECT_EQ(Files(folder),
              (std::vector<std::string>{"a/good1.jpg", "a/good2.jpg", "a/x.jpg", "a/y.jpg"}));
    Sample sample;
    SampleContext ctx(0, 0, 0);
    EXPECT_EQ(
        testing::ExpectSampleError([&] { folder.Get(2, sample, ctx); }, "io", dir / "a/x.jpg"),
        "is a FIFO, not a regular file");
    EXPECT_EQ(
        testing::ExpectSampleError([&] { folder.Get(3, sample, ctx); }, "io", dir / "a/y.jpg"),
        "is a character device, not a regular file");
    LoaderOptions options;
    options.batch_size = 2;
    options.num_workers = 2;
    options.error_policy = ErrorPolicy::kSkip;
    DataLoader loader(std::make_shared<ImageFolder>(dir.path(), TrainPipeline(16)), options);
    int64_t images = 0;
    while (std::optional<Batch> batch = loader.Next()) images += batch->size();
    EXPECT_EQ(images, 2);
    EXPECT_EQ(loader.stats().errors_by_reason.at("io"), 2);
  });
  if (run.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    ADD_FAILURE() << "reading a FIFO or a device blocked";
    // Opening the FIFO's other end releases a reader blocked in open().
    for (int i = 0; i < 8; ++i) {
      const int fd = ::open((dir / "a/x.jpg").c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) ::close(fd);
    }
  }
  run.get();
}

TEST(ImageFolder, FilesOverMaxFileBytesAreRefused) {
  testing::TempDir dir;
  const std::vector<uint8_t> jpeg = SynthesizeJpeg(40, 30, 75);
  testing::WriteBytes(dir / "a/img.jpg", jpeg);
  ReadOptions read;
  read.max_bytes = static_cast<int64_t>(jpeg.size()) - 1;
  ImageFolder folder(dir.path(), TrainPipeline(16), read);
  EXPECT_EQ(folder.read_options().max_bytes, read.max_bytes);
  Sample sample;
  SampleContext ctx(0, 0, 0);
  const std::string message = testing::ExpectSampleError([&] { folder.Get(0, sample, ctx); },
                                                         "too_large", dir / "a/img.jpg");
  EXPECT_NE(message.find("over the limit of " + std::to_string(read.max_bytes)), std::string::npos)
      << message;
  read.max_bytes = static_cast<int64_t>(jpeg.size());
  ImageFolder(dir.path(), TrainPipeline(16), read).Get(0, sample, ctx);
  read.max_bytes = 0;
  EXPECT_THROW(ImageFolder(dir.path(), TrainPipeline(16), read), Error);
}

// What the system refused is an OsError with errno's number and the path,
// which Python raises as the OSError subclass of that number.
TEST(ImageFolder, ARootTheSystemRefusesIsAnOsErrorWithItsErrnoAndPath) {
  testing::TempDir dir;
  testing::WriteBytes(dir / "file", {1});
  const std::pair<std::string, int> refused[] = {{dir / "nope", ENOENT},
                                                 {dir / "file/sub", ENOTDIR}};
  for (const auto& [root, error_number] : refused) {
    try {
      ImageFolder(root, TrainPipeline(16));
      ADD_FAILURE() << "no error for " << root;
    } catch (const OsError& e) {
      EXPECT_EQ(e.error_number(), error_number) << root;
      EXPECT_EQ(e.path(), root);
    }
  }
}

TEST(ImageFolder, SetupErrorsNameThePath) {
  testing::TempDir dir;
  const std::string missing = dir / "nope";
  EXPECT_NE(ErrorOf(missing).find("'" + missing + "' does not exist"), std::string::npos);
  testing::WriteBytes(dir / "file", {1});
  EXPECT_NE(ErrorOf(dir / "file").find("is not a directory"), std::string::npos);
  std::filesystem::create_directories(dir / "empty_root");
  EXPECT_NE(ErrorOf(dir / "empty_root").find("no class folders in"), std::string::npos);
  testing::WriteBytes(dir / "root/a/x.jpg", {1});
  testing::WriteBytes(dir / "root/b/readme.txt", {1});
  const std::string message = ErrorOf(dir / "root");
  EXPECT_NE(message.find("'b'"), std::string::npos) << message;
  EXPECT_EQ(message.find("'a'"), std::string::npos) << message;
}

TEST(ImageFolder, FollowsSymlinks) {
  testing::TempDir dir;
  const std::vector<uint8_t> jpeg = SynthesizeJpeg(20, 20, 73);
  testing::WriteBytes(dir / "store/one.jpg", jpeg);
  testing::WriteBytes(dir / "store/more/two.jpg", jpeg);
  std::filesystem::create_directories(dir / "root/cls");
  std::filesystem::create_symlink(dir / "store/one.jpg", dir / "root/cls/link.jpg");
  std::filesystem::create_directory_symlink(dir / "store/more", dir / "root/cls/more");
  std::filesystem::create_directory_symlink(dir / "store", dir / "root/linked_class");
  ImageFolder folder(dir / "root", TrainPipeline(16));
  EXPECT_EQ(folder.classes(), (std::vector<std::string>{"cls", "linked_class"}));
  EXPECT_EQ(Files(folder),
            (std::vector<std::string>{"cls/link.jpg", "cls/more/two.jpg", "linked_class/one.jpg",
                                      "linked_class/more/two.jpg"}));
}

TEST(ImageFolder, HasImageExtension) {
  EXPECT_TRUE(HasImageExtension("a.jpg"));
  EXPECT_TRUE(HasImageExtension("a.b.JPEG"));
  EXPECT_TRUE(HasImageExtension("x.WebP"));
  EXPECT_TRUE(HasImageExtension(".png"));
  EXPECT_FALSE(HasImageExtension("jpg"));
  EXPECT_FALSE(HasImageExtension("a.jpgx"));
  EXPECT_FALSE(HasImageExtension("a.gif"));
  EXPECT_FALSE(HasImageExtension("a.jp"));
}

TEST(ImageFolder, ListsManyFilesWithTheirClasses) {
  testing::TempDir dir;
  for (int c = 0; c < 20; ++c) {
    for (int f = 0; f < 50; ++f) {
      testing::WriteBytes(dir / ("c" + std::to_string(c) + "/" + std::to_string(f) + ".jpg"), {});
    }
  }
  const ImageFolder::Listing listing = ImageFolder::List(dir.path());
  ASSERT_EQ(listing.files.size(), 1000);
  ASSERT_EQ(listing.classes.size(), 20u);
  for (int64_t i = 0; i < listing.files.size(); ++i) {
    const std::string path(listing.files.path(i));
    const int64_t label = listing.files.label(i);
    EXPECT_EQ(path.substr(0, path.find('/')), listing.classes[static_cast<size_t>(label)]);
    if (i > 0) {
      EXPECT_LE(listing.files.label(i - 1), label);
      if (listing.files.label(i - 1) == label) {
        EXPECT_LT(listing.files.path(i - 1), path);
      }
    }
  }
}

}  // namespace
}  // namespace feedline::vision
