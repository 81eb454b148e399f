// The schema objects of a MySQL/MariaDB server besides its tables (core/schema.h,
// SchemaObject), and the parts of a table's structure only SHOW CREATE TABLE tells.
//
// Internal to the MySQL source. Reads with SHOW CREATE ... and information_schema on `conn`;
// nothing is written. Definitions lose their DEFINER clause (the writer's user becomes the
// definer) and the qualifier of their own database (so they can be created in another one).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/schema.h"
#include "mysql/mysql_client.h"

namespace dbs::mysql {

// From SHOW CREATE TABLE: the PARTITION BY clause (t->partition_by) and the AUTO_INCREMENT
// counter (the next_value of the AUTO_INCREMENT column).
Status DescribeCreateTable(MysqlConnection* conn, TableSchema* t);

// For the databases of `tables`: views, functions, procedures, events and (MariaDB) sequences;
// for `tables` themselves: triggers.
Result<std::vector<SchemaObject>> DescribeObjects(MysqlConnection* conn,
                                                  const std::vector<TableSchema>& tables);

// `sql` without the qualifier `schema`. (quoted or not) in front of names, outside string
// literals and comments.
std::string StripQualifier(std::string_view sql, std::string_view schema);
// `sql` without its DEFINER=user@host clause (the first one, before the object's name).
std::string StripDefiner(std::string_view sql);

}  // namespace dbs::mysql
