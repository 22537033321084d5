#include "src/storage/s3_config.h"

#include <cstdlib>
#include <fstream>
#include <map>

#include "feedline/error.h"

namespace feedline::storage {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

std::string Trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return {};
  return s.substr(begin, s.find_last_not_of(" \t\r") - begin + 1);
}

// The `key = value` lines of section [name] of an INI file ({} if none).
std::map<std::string, std::string> IniSection(const std::string& path, const std::string& name) {
  std::map<std::string, std::string> values;
  std::ifstream in(path);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      inside = Trim(line.substr(1, line.size() - 2)) == name;
      continue;
    }
    const size_t equals = line.find('=');
    if (inside && equals != std::string::npos) {
      values[Trim(line.substr(0, equals))] = Trim(line.substr(equals + 1));
    }
  }
  return values;
}

std::string FirstOf(std::initializer_list<std::string> values) {
  for (const std::string& value : values) {
    if (!value.empty()) return value;
  }
  return {};
}

}  // namespace

S3Config LoadS3Config() {
  S3Config config;
  const std::string home = Env("HOME");
  config.profile = FirstOf({Env("AWS_PROFILE"), "default"});
  const std::string credentials_file =
      FirstOf({Env("AWS_SHARED_CREDENTIALS_FILE"), home.empty() ? "" : home + "/.aws/credentials"});
  const std::string config_file =
      FirstOf({Env("AWS_CONFIG_FILE"), home.empty() ? "" : home + "/.aws/config"});
  // ~/.aws/config names profiles "[profile NAME]", except the default.
  std::map<std::string, std::string> profile_config =
      IniSection(config_file, config.profile == "default" ? "default" : "profile " + config.profile);
  if (!Env("AWS_ACCESS_KEY_ID").empty() && !Env("AWS_SECRET_ACCESS_KEY").empty()) {
    config.access_key = Env("AWS_ACCESS_KEY_ID");
    config.secret_key = Env("AWS_SECRET_ACCESS_KEY");
    config.session_token = Env("AWS_SESSION_TOKEN");
  } else {
    std::map<std::string, std::string> credentials = IniSection(credentials_file, config.profile);
    config.access_key = credentials["aws_access_key_id"];
    config.secret_key = credentials["aws_secret_access_key"];
    config.session_token = credentials["aws_session_token"];
  }
  config.region = FirstOf({Env("AWS_REGION"), Env("AWS_DEFAULT_REGION"),
                           profile_config["region"], "us-east-1"});
  config.endpoint = FirstOf({Env("AWS_ENDPOINT_URL_S3"), Env("AWS_ENDPOINT_URL"),
                             profile_config["endpoint_url"]});
  while (!config.endpoint.empty() && config.endpoint.back() == '/') config.endpoint.pop_back();
  return config;
}

std::string S3HttpUrl(const S3Config& config, const std::string& s3_url) {
  const std::string rest = s3_url.substr(5);  // after "s3://"
  const size_t slash = rest.find('/');
  const std::string bucket = rest.substr(0, slash);
  if (bucket.empty()) throw Error(s3_url + ": no bucket (expected s3://BUCKET/KEY)");
  const std::string key = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (!config.endpoint.empty()) return config.endpoint + "/" + bucket + "/" + key;
  return "https://" + bucket + ".s3." + config.region + ".amazonaws.com/" + key;
}

std::string QueryEncode(const std::string& text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

std::string XmlElement(const std::string& body, const std::string& tag, size_t from) {
  const std::string open = "<" + tag + ">";
  const std::string close = "</" + tag + ">";
  const size_t begin = body.find(open, from);
  if (begin == std::string::npos) return {};
  const size_t end = body.find(close, begin + open.size());
  if (end == std::string::npos) return {};
  return body.substr(begin + open.size(), end - begin - open.size());
}

}  // namespace feedline::storage
