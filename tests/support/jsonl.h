// JSON Lines text as rows, for tests that read what a file target wrote.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace dbs::testing {

// The objects of `text`, one per non-empty line, appended to *rows; a line that is not JSON
// fails the test, naming `where` (the file or object) and the line.
inline void AppendJsonlRows(const std::string& text, const std::string& where,
                            std::vector<nlohmann::json>* rows) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << where << ": " << line;
    rows->push_back(std::move(j));
  }
}

}  // namespace dbs::testing
