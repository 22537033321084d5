// The guards of a pack's output folder: never where its input is read from,
// and one pack writing to it at a time.
#include "src/storage/pack_folder_guard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "feedline/error.h"
#include "feedline/vision/image_dataset.h"

namespace feedline::storage {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class PackFolderGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("feedline_pack_guard_test_" + std::to_string(::getpid()));
    fs::create_directories(root_ / "images" / "cat");
    fs::create_directories(root_ / "out");
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string Path(const std::string& relative) const { return (root_ / relative).string(); }

  fs::path root_;
};

TEST_F(PackFolderGuardTest, AnOutsideTheImageFolderPasses) {
  EXPECT_NO_THROW(CheckOutsideImageFolder(Path("images"), Path("out")));
  // Whole components: images_packed is not inside images.
  EXPECT_NO_THROW(CheckOutsideImageFolder(Path("images"), Path("images_packed")));
}

TEST_F(PackFolderGuardTest, TheImageFolderOrAFolderInsideItIsRefused) {
  try {
    CheckOutsideImageFolder(Path("images"), Path("images"));
    FAIL() << "OUT is the source";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("is the source folder " + Path("images")));
    EXPECT_THAT(e.what(), HasSubstr("would read it as a pack"));
  }
  try {
    CheckOutsideImageFolder(Path("images"), Path("images/shards"));
    FAIL() << "OUT is inside the source";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("is inside the source folder " + Path("images")));
    EXPECT_THAT(e.what(), HasSubstr("choose an OUT outside"));
  }
}

TEST_F(PackFolderGuardTest, ALinkIntoTheImageFolderIsFollowed) {
  fs::create_directory_symlink(root_ / "images" / "cat", root_ / "link");
  try {
    CheckOutsideImageFolder(Path("images"), Path("link"));
    FAIL() << "the link points inside the source";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("inside the source folder"));
    EXPECT_THAT(e.what(), HasSubstr(Path("images/cat")));  // where the link leads
  }
}

TEST_F(PackFolderGuardTest, AFileListsFolderOrItsFilesFolderIsRefused) {
  const std::string list = Path("images/train.txt");
  vision::ImageList files;
  files.Add("cat/1.jpg", 0);
  // The list's own folder.
  EXPECT_THROW(CheckOutsideFileList(list, Path("."), files, Path("images")), Error);
  // A folder holding listed files.
  try {
    CheckOutsideFileList(Path("train.txt"), Path("images"), files, Path("images/cat"));
    FAIL() << "OUT holds listed files";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("is the folder of files listed in"));
    EXPECT_THAT(e.what(), HasSubstr("(cat/1.jpg)"));
  }
  // Elsewhere, or not there yet: fine.
  EXPECT_NO_THROW(CheckOutsideFileList(list, Path("images"), files, Path("out")));
  EXPECT_NO_THROW(CheckOutsideFileList(list, Path("images"), files, Path("new")));
}

TEST_F(PackFolderGuardTest, OnePackAtATimeHoldsTheFolder) {
  auto first = std::make_unique<PackFolderLock>(Path("out"));
  EXPECT_TRUE(fs::exists(root_ / "out" / kPackLockName));
  try {
    PackFolderLock second(Path("out"));
    FAIL() << "two packs held the folder";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(Path("out") + ": another pack is writing to this folder"));
  }
  first.reset();
  EXPECT_NO_THROW(PackFolderLock again(Path("out")));
  // The lock file stays: removing it would let a third pack lock a new file.
  EXPECT_TRUE(fs::exists(root_ / "out" / kPackLockName));
}

TEST_F(PackFolderGuardTest, AFolderThatCannotHoldTheLockFileIsAnOsError) {
  EXPECT_THROW(PackFolderLock(Path("missing/out")), OsError);
}

}  // namespace
}  // namespace feedline::storage
