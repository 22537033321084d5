// S3TestEnvironment: the AWS configuration of this process pointed at a
// test's SeaweedFsServer (its endpoint, its identity, us-east-1, HOME in a
// scratch folder so that no ~/.aws of the machine is read), every AWS
// variable restored on destruction.
//
// Thread safety: the environment is the process's; one at a time.
#ifndef FEEDLINE_TESTS_STORAGE_S3_TEST_ENVIRONMENT_H_
#define FEEDLINE_TESTS_STORAGE_S3_TEST_ENVIRONMENT_H_

#include <stdlib.h>

#include <map>
#include <string>

#include "tests/storage/seaweedfs_server.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage::testing {

class S3TestEnvironment {
 public:
  explicit S3TestEnvironment(const SeaweedFsServer& server) {
    for (const char* name : kNames) {
      if (const char* value = std::getenv(name)) saved_[name] = value;
      ::unsetenv(name);
    }
    Set("AWS_ACCESS_KEY_ID", SeaweedFsServer::kAccessKey);
    Set("AWS_SECRET_ACCESS_KEY", SeaweedFsServer::kSecretKey);
    Set("AWS_ENDPOINT_URL", server.Endpoint());
    Set("AWS_REGION", "us-east-1");
    Set("HOME", home_.path().string());
  }
  ~S3TestEnvironment() {
    for (const char* name : kNames) ::unsetenv(name);
    for (const auto& [name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  S3TestEnvironment(const S3TestEnvironment&) = delete;
  S3TestEnvironment& operator=(const S3TestEnvironment&) = delete;

  void Set(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

 private:
  static constexpr const char* kNames[] = {
      "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",   "AWS_REGION",
      "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",     "AWS_ENDPOINT_URL_S3", "AWS_PROFILE",
      "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "HOME"};
  std::map<std::string, std::string> saved_;
  TempDir home_;
};

}  // namespace feedline::storage::testing

#endif  // FEEDLINE_TESTS_STORAGE_S3_TEST_ENVIRONMENT_H_
