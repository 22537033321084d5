// Writes the HDF5 files of the command's tests with the HDF5 C library, as
// h5py would: encoded images as variable-length uint8 rows.
#ifndef FEEDLINE_TESTS_TOOLS_HDF5_TEST_FILE_H_
#define FEEDLINE_TESTS_TOOLS_HDF5_TEST_FILE_H_

#include <hdf5.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "feedline/synth/synth.h"

namespace feedline::cli::testing {

// `rows` rows of
//   images    variable-length uint8: a JPEG of (40 + row) x 32 pixels, or
//             "not an image" for the rows in `broken`
//   labels    int64: row % 4
//   features  float32 [rows, 8]: row + column / 10
//   short     int32 [rows - 1]: a dataset one row shorter than the others
inline void WriteHDF5Images(const std::string& path, int rows, const std::set<int>& broken = {}) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t count = static_cast<hsize_t>(rows);
  const hid_t space = H5Screate_simple(1, &count, nullptr);

  std::vector<std::vector<uint8_t>> images;
  for (int r = 0; r < rows; ++r) {
    if (broken.count(r)) {
      const std::string bad = "not an image";
      images.emplace_back(bad.begin(), bad.end());
    } else {
      images.push_back(vision::SynthesizeJpeg(40 + r, 32, static_cast<uint64_t>(r)));
    }
  }
  std::vector<hvl_t> values;
  for (std::vector<uint8_t>& image : images) values.push_back(hvl_t{image.size(), image.data()});
  const hid_t vlen = H5Tvlen_create(H5T_NATIVE_UINT8);
  hid_t dataset = H5Dcreate2(file, "images", vlen, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(dataset, vlen, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  H5Dclose(dataset);
  H5Tclose(vlen);

  std::vector<int64_t> labels;
  for (int r = 0; r < rows; ++r) labels.push_back(r % 4);
  dataset = H5Dcreate2(file, "labels", H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(dataset, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels.data());
  H5Dclose(dataset);
  H5Sclose(space);

  std::vector<float> features;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < 8; ++c) features.push_back(static_cast<float>(r) + c / 10.0f);
  }
  const hsize_t dims[2] = {count, 8};
  const hid_t matrix = H5Screate_simple(2, dims, nullptr);
  dataset =
      H5Dcreate2(file, "features", H5T_IEEE_F32LE, matrix, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(dataset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, features.data());
  H5Dclose(dataset);
  H5Sclose(matrix);

  const hsize_t fewer = count - 1;
  const std::vector<int32_t> zeros(static_cast<size_t>(fewer), 0);
  const hid_t short_space = H5Screate_simple(1, &fewer, nullptr);
  dataset =
      H5Dcreate2(file, "short", H5T_STD_I32LE, short_space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(dataset, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data());
  H5Dclose(dataset);
  H5Sclose(short_space);
  H5Fclose(file);
}

}  // namespace feedline::cli::testing

#endif  // FEEDLINE_TESTS_TOOLS_HDF5_TEST_FILE_H_
