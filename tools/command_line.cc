#include "tools/command_line.h"

#include <sched.h>

#include <charconv>
#include <cstdio>
#include <sstream>
#include <thread>

namespace feedline::cli {
namespace {

bool ParseInteger(const std::string& text, long long* value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end && !text.empty();
}

bool ParseNumber(const std::string& text, double* value) {
  if (text.empty()) return false;
  size_t used = 0;
  try {
    *value = std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == text.size();
}

std::string Join(const std::vector<std::string>& items, const std::string& last) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += (i + 1 == items.size()) ? last : ", ";
    out += items[i];
  }
  return out;
}

std::string FormatNumber(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

}  // namespace

CLI::Validator IntAtLeast(long long min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        long long value;
        if (ParseInteger(text, &value) && value >= min) return "";
        return "must be an integer >= " + std::to_string(min) + ", got '" + text + "'";
      },
      "");
}

CLI::Validator NumberAtLeast(double min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        double value;
        if (ParseNumber(text, &value) && value >= min) return "";
        return "must be a number >= " + FormatNumber(min) + ", got '" + text + "'";
      },
      "");
}

CLI::Validator OneOf(std::vector<std::string> choices) {
  return CLI::Validator(
      [choices](std::string& text) -> std::string {
        for (const std::string& choice : choices) {
          if (text == choice) return "";
        }
        return "must be one of " + Join(choices, " or ") + ", got '" + text + "'";
      },
      "");
}

CLI::Validator WorkersValue() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        long long value;
        if (text == "auto" || (ParseInteger(text, &value) && value >= 0 && value <= 4096))
          return "";
        return "must be an integer from 0 to 4096 or 'auto', got '" + text + "'";
      },
      "");
}

int CpuCount() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware > 0 ? static_cast<int>(hardware) : 1;
}

int ParseWorkers(const std::string& value) {
  if (value == "auto") return CpuCount();
  return std::stoi(value);
}

std::string ParseErrorLine(const std::string& command, const CLI::ParseError& error) {
  std::string message = error.what();
  // CLI11 messages may span lines; the first says what is wrong.
  const size_t newline = message.find('\n');
  if (newline != std::string::npos) message.resize(newline);
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    // "The following argument(s) was/were not expected: --foo bar"
    const size_t colon = message.find(": ");
    std::istringstream extras(colon == std::string::npos ? message : message.substr(colon + 2));
    std::string first, option;
    for (std::string word; extras >> word;) {
      if (first.empty()) first = word;
      if (option.empty() && word.size() > 1 && word[0] == '-')
        option = word.substr(0, word.find('='));
    }
    message = option.empty() ? "unexpected argument '" + first + "'" : "unknown option " + option;
  } else if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    // "--batch: 1 required INT missing"
    const size_t colon = message.find(": ");
    if (colon != std::string::npos) message = message.substr(0, colon) + ": needs a value";
  }
  return command + ": error: " + message + " (see '" + command + " --help')";
}

std::string UnknownCommandLine(const std::string& name, const std::vector<std::string>& commands) {
  return "feedline: error: unknown command '" + name + "': use " + Join(commands, " or ") +
         " (see 'feedline --help')";
}

CLI::Option* AddSourceArgument(CLI::App* app, std::string& source) {
  return app->add_option("SOURCE", source, "Image folder (one subfolder per class) or file list")
      ->type_name("PATH");
}

void AddOutputFlags(CLI::App* app, bool& json, bool& quiet) {
  app->add_flag("--json", json, "End stdout with the results as one JSON object");
  app->add_flag("--quiet", quiet, "No progress on stderr");
}

}  // namespace feedline::cli
