// A federated SELECT as a stream's source ("Save as stream" in the explorer): engine
// kFederated connections (config/connection.h) whose tables are the stream's query selectors.
//
// Contract:
//  - Every table of the stream names a query (`{"name": "t", "query": "SELECT ... FROM pg1.
//    public.users u JOIN my1.shop.orders o ON ..."}`), run by the federated engine
//    (federated.h) over the members' aliases; the query's columns become the table's.
//  - Reads are one pass per table (no key ranges), streamed chunk by chunk; DuckDB spills to a
//    private temporary folder beyond its memory limit.
//  - The members' own snapshots are taken when the query runs: the source has no single
//    consistent snapshot across members, and no change stream (load only).
#pragma once

#include <memory>

#include "config/connection.h"
#include "core/result.h"
#include "sources/source.h"

namespace dbs::federated {

Result<std::unique_ptr<Source>> OpenFederatedSource(const ConnectionConfig& config);

}  // namespace dbs::federated
