// Line-by-line reading of JSON Lines files, for the file source's malformed-row policy `skip`:
// each line is judged on its own, so a broken one is left out and named by its line.
//
// Contract:
//  - LineReader streams a file (plain, .gz or .zst, by its name) and hands out one line at a
//    time without its "\n" or "\r\n", numbered from 1; memory is bounded by the longest line
//    plus a read buffer. Lines longer than kMaxLineBytes are handed out cut, flagged `too_long`.
//  - Errors are IoError (unreadable) or Corruption (a compressed stream that does not
//    decompress), naming the file; never retryable.
//  - ValidUtf8 is strict UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"

namespace dbs::files {

bool ValidUtf8(std::string_view s);

class LineReader {
 public:
  static constexpr size_t kMaxLineBytes = 64u << 20;

  // `path` is read; `display` names it in errors.
  static Result<std::unique_ptr<LineReader>> Open(const std::string& path,
                                                  const std::string& display);
  virtual ~LineReader() = default;
  // The next line into *line (its number into *number); false at the end of the file.
  Result<bool> Next(std::string* line, uint64_t* number, bool* too_long);

 protected:
  explicit LineReader(std::string display) : display_(std::move(display)) {}
  // Up to `n` decompressed bytes into buf; 0 at the end.
  virtual Result<size_t> Read(char* buf, size_t n) = 0;
  std::string display_;

 private:
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
  uint64_t number_ = 0;
};

}  // namespace dbs::files
