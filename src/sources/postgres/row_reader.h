// The PostgreSQL RowReader: streams
//   COPY (SELECT <cols> FROM <table> WHERE <range> AND (<filter>) [LIMIT n]) TO STDOUT
//        (FORMAT binary)
// and decodes each field straight into the bundle's ColumnVectors.
//
// Which binary form each column travels in is decided when the reader opens, from the column's
// logical type and the type the server reports for it (domains resolved):
//  - binary, decoded by pg_decode: bool, int2/4/8, oid/xid/cid, xid8, float4/8, numeric, text,
//    varchar, bpchar, name, citext, bytea, json, jsonb, uuid, bit, varbit, date, time, timetz,
//    timestamp, timestamptz, interval, enums, and arrays of all of these;
//  - cast in the SELECT so the wire carries a type decoded above: every other type whose
//    logical type is text (inet, cidr, macaddr, xml, tsvector, geometric types, ranges,
//    composites, ... as `col::text`; arrays of them as `col::text[]`), money as `col::numeric`,
//    PostGIS geometry/geography as int4send(ST_SRID(col)) || ST_AsBinary(col).
//
// With ReadSpec::pg_copy_rows, when every column is a built-in scalar read without a cast (see
// BuiltinWire), Next() does not decode: it checks each tuple's lengths and appends its bytes to
// the bundle's pg_copy (the columns are cleared), for a PostgreSQL target to COPY as they are.
//
// Memory: one CopyData row buffer at a time plus what Next() appends to the caller's bundle.
// Not thread-safe (one reader per thread). On an error the bundle passed to Next() is left in an
// unspecified state (columns may differ in length) and must be discarded; the reader then keeps
// returning that error.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "core/result.h"
#include "postgres/pg_client.h"
#include "postgres/pg_decode.h"
#include "postgres/pg_types.h"
#include "sources/source.h"

namespace dbs::pg {

// Hands a connection back when its reader is done with it (see OpenRowReader).
using ConnRelease = std::function<void(ConnPtr)>;

// Takes over `conn`, which must already be in the transaction (snapshot) to read from, and
// starts the COPY. Errors: NotFound for a missing table or column, PermissionDenied without
// SELECT privilege, FailedPrecondition when a column's type changed since it was described,
// InvalidArgument when the filter or query does not parse.
// `release`, when given, receives the connection when the reader is destroyed after its COPY
// ended without an error: still in its transaction, idle, ready for the next reader of the same
// snapshot. A reader destroyed before the end of its rows, or after an error, closes it instead.
Result<std::unique_ptr<RowReader>> OpenRowReader(ConnPtr conn, const ReadSpec& spec,
                                                 ConnRelease release = nullptr);

// The binary decoding of column `c` when the server sends it as type `oid` in its own binary
// form, without a cast (as pgoutput does in binary mode); nullopt when the column needs a cast
// (types read as text, money, geometry) or the types do not match. `types` must hold `oid`,
// its base and element types.
std::optional<FieldPlan> DirectBinaryPlan(const Column& c, const TypeCache& types, uint32_t oid);

}  // namespace dbs::pg
