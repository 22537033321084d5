#include "feedline/storage/hdf5_dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "feedline/error.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/synth/synth.h"
#include "feedline/vision/pipeline.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

constexpr int kRows = 24;

// Writes `name` as float32 [kRows, 16] (value row * 100 + column), chunks
// of 8 rows, gzip when `gzip`.
void WriteFloats(hid_t file, const char* name, bool gzip) {
  std::vector<float> values(kRows * 16);
  for (int r = 0; r < kRows; ++r) {
    for (int c = 0; c < 16; ++c) values[r * 16 + c] = static_cast<float>(r * 100 + c);
  }
  const hsize_t dims[2] = {kRows, 16};
  const hsize_t chunk[2] = {8, 16};
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  const hid_t create = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(create, 2, chunk);
  if (gzip) H5Pset_deflate(create, 6);
  const hid_t dataset =
      H5Dcreate2(file, name, H5T_IEEE_F32LE, space, H5P_DEFAULT, create, H5P_DEFAULT);
  H5Dwrite(dataset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  H5Dclose(dataset);
  H5Pclose(create);
  H5Sclose(space);
}

// The test file: "floats" (gzip), "plain" (chunked, no filter), "labels"
// (int16, contiguous), "jpeg" (vlen uint8 JPEGs), "names" (fixed strings).
std::vector<std::vector<uint8_t>> WriteTestFile(const std::string& path) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  WriteFloats(file, "floats", true);
  WriteFloats(file, "plain", false);
  std::vector<int16_t> labels(kRows);
  for (int r = 0; r < kRows; ++r) labels[r] = static_cast<int16_t>(-r);
  const hsize_t rows = kRows;
  const hid_t space = H5Screate_simple(1, &rows, nullptr);
  hid_t dataset =
      H5Dcreate2(file, "labels", H5T_STD_I16LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(dataset, H5T_NATIVE_INT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels.data());
  H5Dclose(dataset);

  std::vector<std::vector<uint8_t>> jpegs;
  std::vector<hvl_t> values;
  for (int r = 0; r < kRows; ++r) jpegs.push_back(vision::SynthesizeJpeg(40 + r, 30, r));
  for (auto& jpeg : jpegs) values.push_back(hvl_t{jpeg.size(), jpeg.data()});
  const hid_t vlen = H5Tvlen_create(H5T_NATIVE_UINT8);
  dataset = H5Dcreate2(file, "jpeg", vlen, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(dataset, vlen, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  H5Dclose(dataset);
  H5Tclose(vlen);

  std::vector<char> names(kRows * 8, 0);
  for (int r = 0; r < kRows; ++r) std::snprintf(&names[r * 8], 8, "row%d", r);
  const hid_t string = H5Tcopy(H5T_C_S1);
  H5Tset_size(string, 8);
  dataset = H5Dcreate2(file, "names", string, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(dataset, string, H5S_ALL, H5S_ALL, H5P_DEFAULT, names.data());
  H5Dclose(dataset);
  H5Tclose(string);
  H5Sclose(space);
  H5Fclose(file);
  return jpegs;
}

std::vector<HDF5Field> AllFields() {
  return {{"floats", "", std::nullopt},
          {"plain", "", std::nullopt},
          {"labels", "label", std::nullopt},
          {"jpeg", "image", std::nullopt},
          {"names", "", std::nullopt}};
}

vision::Pipeline Decode() {
  vision::PipelineOptions options;
  options.dtype = DType::kU8;
  return vision::Pipeline({}, options);
}

TEST(HDF5Dataset, ReadsEveryKindOfFieldRowByRow) {
  TempDir dir;
  const std::string path = dir / "data.h5";
  const std::vector<std::vector<uint8_t>> jpegs = WriteTestFile(path);
  const HDF5Dataset data(path, AllFields(), Decode());
  ASSERT_EQ(data.size(), kRows);
  EXPECT_EQ(data.field_kind(0), HDF5FieldKind::kArray);
  EXPECT_EQ(data.field_kind(3), HDF5FieldKind::kImage);
  EXPECT_EQ(data.field_kind(4), HDF5FieldKind::kString);
  const std::vector<FieldSpec> fixed = data.FixedFields();
  ASSERT_EQ(fixed.size(), 3u);  // the image's shape varies
  EXPECT_EQ(fixed[0].shape, (Shape{16}));
  EXPECT_EQ(fixed[2].dtype, DType::kI32);  // int16 widened
  for (int64_t row : {0, 9, kRows - 1}) {
    SampleContext ctx(0, 0, row);
    Sample sample;
    data.Get(row, sample, ctx);
    for (const char* name : {"floats", "plain"}) {
      const float* values = sample[name].data<float>();
      for (int c = 0; c < 16; ++c) EXPECT_EQ(values[c], row * 100 + c) << name;
    }
    EXPECT_EQ(*sample["label"].data<int32_t>(), -row);
    const Tensor& image = sample["image"];
    EXPECT_EQ(image.shape(), (Shape{30, 40 + row, 3}));
    const Tensor& name = sample["names"];
    EXPECT_EQ(std::string(static_cast<const char*>(name.raw()), name.bytes()),
              "row" + std::to_string(row));
  }
  EXPECT_EQ(data.Source(3), path + ":floats[3]");
}

TEST(HDF5Dataset, ADamagedChunkFailsItsRowsNamingFileDatasetAndRow) {
  TempDir dir;
  const std::string path = dir / "damaged.h5";
  WriteTestFile(path);
  haddr_t offset = 0;
  hsize_t size = 0;
  {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t dataset = H5Dopen2(file, "floats", H5P_DEFAULT);
    const hid_t space = H5Dget_space(dataset);
    unsigned mask = 0;
    hsize_t chunk_offset[2];
    ASSERT_GE(H5Dget_chunk_info(dataset, space, 1, chunk_offset, &mask, &offset, &size), 0);
    H5Sclose(space);
    H5Dclose(dataset);
    H5Fclose(file);
  }
  std::vector<uint8_t> bytes = testing::ReadBytes(path);
  for (hsize_t i = 0; i < 16 && i < size; ++i) bytes[offset + size / 2 + i] ^= 0xFF;
  testing::WriteBytes(path, bytes);

  const HDF5Dataset data(path, {{"floats", "", std::nullopt}});
  SampleContext ctx(0, 0, 0);
  Sample sample;
  data.Get(7, sample, ctx);  // chunk 0
  sample.Clear();
  try {
    data.Get(10, sample, ctx);  // chunk 1: rows 8-15
    FAIL() << "a damaged chunk was read";
  } catch (const SampleError& e) {
    EXPECT_THAT(e.what(), HasSubstr(path));
    EXPECT_THAT(e.what(), HasSubstr("dataset 'floats'"));
    EXPECT_THAT(e.what(), HasSubstr("row 10"));
  }
  sample.Clear();
  EXPECT_NO_THROW(data.Get(16, sample, ctx));  // chunk 2
}

TEST(HDF5Dataset, BadFilesAndFieldsThrowNamingThem) {
  TempDir dir;
  const std::string path = dir / "data.h5";
  WriteTestFile(path);
  EXPECT_THAT(
      [&] {
        HDF5Dataset(path, {{"nothing", "", std::nullopt}});
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("cannot open dataset 'nothing'")));
  EXPECT_THAT(
      [&] {
        HDF5Dataset(path, {{"jpeg", "", true}});
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("an image field needs a pipeline")));
  EXPECT_THAT(
      [&] {
        HDF5Dataset(path, {{"labels", "", true}}, Decode());
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("marked as an image")));
  EXPECT_THAT(
      [&] {
        HDF5Dataset(path, {{"jpeg", "", true}}, vision::Pipeline({vision::Transform::RandomIoUCrop()}));
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("random_iou_crop chooses its crop from the objects")));
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  EXPECT_THAT(
      [&] {
        HDF5Dataset(path, {{"floats", "", std::nullopt}});
      },
      ::testing::ThrowsMessage<Error>(HasSubstr(path + ": cannot open HDF5 file")));
}

TEST(HDF5Dataset, AForkedChildReopensTheFileAndReadsTheSameRows) {
  TempDir dir;
  const std::string path = dir / "data.h5";
  WriteTestFile(path);
  const HDF5Dataset data(path, {{"floats", "", std::nullopt}, {"plain", "", std::nullopt}});
  SampleContext ctx(0, 0, 0);
  Sample sample;
  data.Get(1, sample, ctx);  // opened in the parent
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int failures = 0;
    for (int64_t row = 0; row < kRows; ++row) {
      Sample s;
      SampleContext c(0, 0, row);
      try {
        data.Get(row, s, c);
        failures += s["floats"].data<float>()[5] != row * 100 + 5;
        failures += s["plain"].data<float>()[15] != row * 100 + 15;
      } catch (...) {
        ++failures;
      }
    }
    ::_exit(failures == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // The parent's handles still work.
  sample.Clear();
  data.Get(2, sample, ctx);
  EXPECT_EQ(sample["floats"].data<float>()[0], 200);
}

}  // namespace
}  // namespace feedline::storage
