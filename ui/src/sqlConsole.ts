// The SQL console's mode and starter statement. The console route (POST /explorer/console) runs
// SQL on a database, so the console runs federated (POST /explorer/federated, DuckDB SQL in which
// a table is alias.schema.table, docs/federated.md) with several sources and also with a single S3
// bucket or Local folder, whose files and folders are the tables of its schema `public`
// (docs/files.md). Pure: no API calls, no Vue.
import type { Connection } from './api'
import { connectionPlace } from './connections'
import { nextAlias, type FederatedSource } from './explorer'

// Buckets and folders: their tables are files, read by DuckDB.
export const isFileEngine = (engine: string | undefined) => engine === 's3' || engine === 'file'

// Whether the console runs its sources federated: several of them, or one bucket or folder.
export function isFederated(sources: Pick<FederatedSource, 'connectionId'>[], engineOf: (id: string) => string | undefined): boolean {
  return sources.length > 1 || (sources.length === 1 && isFileEngine(engineOf(sources[0].connectionId)))
}

// An identifier in DuckDB's (and PostgreSQL's) SQL: as it is when it needs no quotes.
export const duckIdent = (n: string) => (/^[a-z_][a-z0-9_]*$/.test(n) ? n : '"' + n.replace(/"/g, '""') + '"')

// The table a single bucket or folder's starter reads: the one picked in the tree (of the
// schema public), else the first of its tables (null: not known yet), preferring schema public.
export function starterTable(tables: { schema: string; name: string }[] | null, picked?: { schema?: string; table?: string }): { schema: string; name: string } | null {
  if (picked?.table) return { schema: picked.schema || 'public', name: picked.table }
  if (!tables?.length) return null
  return tables.find((t) => t.schema === 'public') ?? tables[0]
}

export interface StarterInput {
  conn?: Pick<Connection, 'name' | 'engine' | 'bucket' | 'prefix' | 'path'>  // the first source's connection
  aliases: string[]  // the sources' aliases, in order
  federated: boolean
  schema?: string  // picked in the tree for the first source's connection
  table?: string
  tables?: { schema: string; name: string }[] | null  // the first source's tables, when known
}

// The statement the console starts with (and writes again while the user has not changed it).
export function starterSql(o: StarterInput): string {
  const c = o.conn
  if (!c) return 'SELECT 1 AS one'
  if (o.federated && o.aliases.length === 1 && isFileEngine(c.engine)) {
    const alias = o.aliases[0]
    const head = `-- DuckDB SQL on ${c.name} (${connectionPlace(c)}): each file or folder there is a table of ${alias}.public`
    const t = starterTable(o.tables ?? null, { schema: o.schema, table: o.table })
    if (!t) return `${head}\nSELECT 1 AS one`
    return `${head}\nSELECT *\nFROM ${alias}.${duckIdent(t.schema)}.${duckIdent(t.name)}\nLIMIT 100`
  }
  if (o.federated) return `-- DuckDB SQL over ${o.aliases.join(', ')}: a table is alias.schema.table\nSELECT 1 AS one`
  const q = (n: string) => (c.engine === 'mysql' ? '`' + n.replace(/`/g, '``') + '`' : '"' + n.replace(/"/g, '""') + '"')
  const plain = (n: string) => (/^[a-z_][a-z0-9_]*$/.test(n) ? n : q(n))
  if (o.table && o.schema) return `SELECT *\nFROM ${plain(o.schema)}.${plain(o.table)}\nLIMIT 100`
  return `-- ${c.engine === 'mysql' ? 'MySQL / MariaDB' : 'PostgreSQL'} SQL on ${c.name}\nSELECT 1 AS one`
}

// A default alias names its kind (pg1, my2, s3, files_2: pg, my, s3, files); null for others.
const aliasWord = (alias: string) => /^(pg|my)\d+$/i.exec(alias)?.[1].toLowerCase() ?? /^(s3|files)(_\d+)?$/i.exec(alias)?.[1].toLowerCase() ?? null
const engineWord = (engine: string) => aliasWord(nextAlias(engine, new Set()))

// When a source's connection is changed to one of another kind, a default alias follows it
// (my1 becomes s3 when the connection picked is a bucket); an alias the user typed stays. The
// sources with new aliases, or null when none changes.
export function followAliases(sources: FederatedSource[], engineOf: (id: string) => string | undefined): FederatedSource[] | null {
  let changed = false
  const out = sources.map((s) => ({ ...s }))
  out.forEach((s, i) => {
    const engine = engineOf(s.connectionId)
    const word = aliasWord(s.alias)
    if (!engine || !word || word === engineWord(engine)) return
    s.alias = nextAlias(engine, new Set(out.filter((_, j) => j !== i).map((x) => x.alias.toLowerCase())))
    changed = true
  })
  return changed ? out : null
}
