#include "run/plan.h"

#include "reader/load_reader.h"
#include "sources/source.h"
#include "writer/load_writer.h"

namespace dbs {

Result<RunPlan> PlanStream(const StreamConfig& config) {
  DBS_ASSIGN_OR_RETURN(auto source, Source::Open(config.source));
  DBS_ASSIGN_OR_RETURN(std::vector<PlannedTable> planned, PlanTables(source.get(), config));
  std::vector<TableSchema> described, tables;
  std::vector<std::string> names;
  for (const PlannedTable& t : planned) {
    if (t.selector.query.empty()) described.push_back(t.schema);
    names.push_back(t.schema.QualifiedName());
    TableSchema target = t.schema;
    target.name = t.target_name;
    tables.push_back(std::move(target));
  }
  std::vector<SchemaObject> objects;
  if (config.structure.objects) {
    auto o = source->DescribeObjects(described);
    if (!o.ok()) return o.status().WithContext("describing the schema objects");
    objects = std::move(o).value();
  }
  SinkOptions so = WriterSinkOptions(config, "plan");
  so.plan_only = true;
  so.objects = objects;
  DBS_ASSIGN_OR_RETURN(auto sink, Sink::Open(config.target, so));
  return PlanRun(sink.get(), tables, names, objects);
}

}  // namespace dbs
