// s3:// URLs in a federated statement's file functions, as in
//   SELECT ... FROM read_parquet('s3://lake/events/2026-*/*.parquet') e JOIN pg1.public.users u ...
//
// The embedded DuckDB cannot read S3 here (its httpfs extension cannot be installed offline,
// and its C API has no file-system hook), so the objects a URL names are mirrored into a
// private folder under their own keys, and the URL literal in the statement is replaced by the
// same pattern under that folder. DuckDB then globs, sniffs and reads local files exactly as it
// would have read the objects (Hive partition folders included). docs/federated.md, "S3 URLs".
//
// Contract:
//  - FindS3Urls: every string constant starting with "s3://" that is an argument of a table
//    function (read_parquet, read_csv, read_json, ..., directly or inside a list) anywhere in
//    the statement's syntax tree (json_serialize_sql), with its byte span in `sql`. Which
//    constants are arguments is the parser's decision, never string matching. A URL written
//    other than as a plain '...' literal, and a table named by an s3:// string
//    (FROM 's3://...'), are InvalidArgument saying how to write it.
//  - MirrorS3Urls: each URL is read with the credentials of the source connection (an s3
//    connection of the request) whose bucket is the URL's and whose prefix holds its key; none
//    is InvalidArgument naming the bucket. Globs (* ? [..] within a folder, ** across folders)
//    are matched against the bucket's listing under the folder before the first glob; no match
//    is NotFound naming the URL. At most `max_bytes` are copied in all (InvalidArgument
//    beforehand, with the total). Objects stream to disk in ranged GETs: memory stays bounded.
//    Returns the statement with the literals replaced, and what was read per source (for
//    EXPLAIN).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "federated/federated.h"

namespace dbs::federated {

struct S3UrlLiteral {
  size_t begin = 0, end = 0;  // the literal's bytes in the statement, quotes included
  std::string url;            // its value
};

Result<std::vector<S3UrlLiteral>> FindS3Urls(const nlohmann::json& ast, const std::string& sql);

// "s3://bucket/key/pattern" -> bucket and key pattern; InvalidArgument for anything else.
Status ParseS3Url(const std::string& url, std::string* bucket, std::string* key);

// True when `key` matches the glob `pattern` (see above).
bool MatchKeyGlob(const std::string& pattern, const std::string& key);

// The statement with every literal's span replaced by the quoted replacement, in order.
std::string SpliceLiterals(const std::string& sql, const std::vector<S3UrlLiteral>& literals,
                           const std::vector<std::string>& replacements);

struct MirroredS3 {
  std::string sql;                          // the statement reading the mirror
  std::vector<SourceStatement> statements;  // per URL: the source's alias and what was read
};

// Mirrors the objects of `literals` into `dir` (an existing private folder) and rewrites `sql`.
Result<MirroredS3> MirrorS3Urls(const std::vector<FederatedSource>& sources, const std::string& sql,
                                const std::vector<S3UrlLiteral>& literals, const std::string& dir,
                                uint64_t max_bytes);

}  // namespace dbs::federated
