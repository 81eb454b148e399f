// The stream editor's table picker and the config's `tables` entries (docs/stream-config.md):
// picked tables of one schema (or all of them, `schema.*`), per-table options (the columns to read,
// a filter, a target name, DuckDB column types for file sources) and custom queries. The picker's
// state becomes entries and entries become the picker's state again; entries the picker cannot
// show (other patterns, several schemas, keys it does not know) are left to the JSON tab. The
// browser's checks of the options mirror the server's. Pure: no API calls, no Vue.

// One picked table's options. Empty values are "not set" and not sent.
export interface TableOptions {
  columns: string[] | null              // null: every column; else these, in this order
  filter: string                        // an SQL condition the source evaluates
  target: string                        // the target table's name ('': the source's)
  columnTypes: Record<string, string>   // file sources: column -> DuckDB type
}

// A custom query: its result becomes table `name` (`schema.table`, or a plain name in the
// source's default schema).
export interface CustomQuery { name: string; query: string; target: string }

export interface Picker {
  schema: string | null
  allTables: boolean                       // `schema.*`
  selected: string[]                       // picked tables of `schema`, in this order
  options: Record<string, TableOptions>    // per table (absent or empty: none)
  queries: CustomQuery[]
}

// Which part of the picker an entry came from, to put the API's `tables[i]` errors next to it.
export type Owner = { kind: 'table'; table: string } | { kind: 'all' } | { kind: 'query'; index: number }

export const emptyOptions = (): TableOptions => ({ columns: null, filter: '', target: '', columnTypes: {} })
export const emptyPicker = (): Picker => ({ schema: null, allTables: true, selected: [], options: {}, queries: [] })

export const hasOptions = (o?: TableOptions | null): o is TableOptions =>
  !!o && (o.columns !== null || o.filter.trim() !== '' || o.target.trim() !== '' || Object.keys(o.columnTypes).length > 0)

export function cloneOptions(o?: TableOptions | null): TableOptions {
  return o ? { columns: o.columns ? [...o.columns] : null, filter: o.filter, target: o.target, columnTypes: { ...o.columnTypes } } : emptyOptions()
}

// A table's entry: the plain name, or an object with the options that are set.
export function tableEntry(schema: string, table: string, o?: TableOptions | null): string | Record<string, unknown> {
  const name = `${schema}.${table}`
  if (!hasOptions(o)) return name
  const e: Record<string, unknown> = { name }
  if (o.columns !== null) e.columns = [...o.columns]
  if (o.filter.trim()) e.filter = o.filter.trim()
  if (o.target.trim()) e.target = o.target.trim()
  if (Object.keys(o.columnTypes).length) e.columnTypes = { ...o.columnTypes }
  return e
}

export function queryEntry(q: CustomQuery): Record<string, unknown> {
  const e: Record<string, unknown> = { name: q.name.trim(), query: q.query }
  if (q.target.trim()) e.target = q.target.trim()
  return e
}

// The `tables` entries of the picker (undefined: nothing picked, the key is not sent), and for
// each entry what it came from. Picked tables keep their order; with all tables, the tables that
// have options come first (the first entry that matches a table applies), then `schema.*`;
// custom queries come last.
export function buildTables(p: Picker): { entries: unknown[]; owners: Owner[] } | undefined {
  const entries: unknown[] = []
  const owners: Owner[] = []
  if (p.schema) {
    const names = p.allTables ? Object.keys(p.options).filter((t) => hasOptions(p.options[t])) : p.selected
    for (const t of names) {
      entries.push(tableEntry(p.schema, t, p.options[t]))
      owners.push({ kind: 'table', table: t })
    }
    if (p.allTables) {
      entries.push(`${p.schema}.*`)
      owners.push({ kind: 'all' })
    }
  }
  p.queries.forEach((q, index) => {
    entries.push(queryEntry(q))
    owners.push({ kind: 'query', index })
  })
  return entries.length || p.schema ? { entries, owners } : undefined
}

const TABLE_KEYS = ['name', 'columns', 'filter', 'target', 'columnTypes']
const QUERY_KEYS = ['name', 'query', 'target']
const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v)
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string')
const hasWildcard = (s: string) => /[*?]/.test(s)
function splitName(s: string): { schema: string; table: string } | null {
  const dot = s.indexOf('.')
  return dot > 0 && dot < s.length - 1 ? { schema: s.slice(0, dot), table: s.slice(dot + 1) } : null
}

// The picker's state for a config's `tables` (absent or empty: no schema chosen yet, all
// tables), or null when the entries do not fit the picker: a pattern other than `schema.*`, names
// without a schema or of several schemas, a table named twice, a table named after `schema.*`,
// keys or value types the picker does not edit. Such entries are edited in the JSON tab.
export function parseTables(tables: unknown): Picker | null {
  if (tables === undefined || tables === null) return emptyPicker()
  if (!Array.isArray(tables)) return null
  if (!tables.length) return emptyPicker()
  const p: Picker = { schema: null, allTables: false, selected: [], options: {}, queries: [] }
  let all = false
  let plain = false
  const table = (name: unknown): string | null => {
    if (typeof name !== 'string') return null
    const n = splitName(name)
    if (!n || (p.schema !== null && n.schema !== p.schema)) return null
    p.schema = n.schema
    if (n.table === '*') return all ? null : '*'
    if (hasWildcard(n.table) || all || p.selected.includes(n.table)) return null
    return n.table
  }
  for (const e of tables) {
    if (typeof e === 'string') {
      const t = table(e)
      if (t === null) return null
      if (t === '*') { all = true; continue }
      plain = true
      p.selected.push(t)
    } else if (isObject(e) && 'query' in e) {
      if (Object.keys(e).some((k) => !QUERY_KEYS.includes(k))) return null
      if (typeof e.name !== 'string' || typeof e.query !== 'string' || (e.target !== undefined && typeof e.target !== 'string')) return null
      p.queries.push({ name: e.name, query: e.query, target: (e.target as string | undefined) ?? '' })
    } else if (isObject(e)) {
      if (Object.keys(e).some((k) => !TABLE_KEYS.includes(k))) return null
      const t = table(e.name)
      if (t === null || t === '*') return null
      const o = emptyOptions()
      if (e.columns !== undefined) {
        if (!isStrings(e.columns)) return null
        o.columns = e.columns.length ? [...e.columns] : null
      }
      if (e.filter !== undefined) { if (typeof e.filter !== 'string') return null; o.filter = e.filter }
      if (e.target !== undefined) { if (typeof e.target !== 'string') return null; o.target = e.target }
      if (e.columnTypes !== undefined) {
        if (!isObject(e.columnTypes) || !Object.values(e.columnTypes).every((v) => typeof v === 'string')) return null
        o.columnTypes = { ...(e.columnTypes as Record<string, string>) }
      }
      p.selected.push(t)
      if (hasOptions(o)) p.options[t] = o
    } else {
      return null
    }
  }
  // With `schema.*`, a plain name besides it is not something the picker shows.
  if (all && plain) return null
  if (all) { p.allTables = true; p.selected = [] }
  return p
}

// The chosen columns in the table's order; names the table does not have (yet) follow in the
// order they had.
export function orderColumns(chosen: Iterable<string>, tableColumns: string[]): string[] {
  const set = new Set(chosen)
  return [...tableColumns.filter((c) => set.has(c)), ...[...set].filter((c) => !tableColumns.includes(c))]
}

// The first keyword of a statement after blanks, comments and opening parentheses, upper case
// (explorer::FirstKeyword on the server).
export function firstKeyword(sql: string): string {
  let i = 0
  const skip = () => {
    for (;;) {
      while (i < sql.length && /\s/.test(sql[i])) i++
      if (sql[i] === '#' || sql.startsWith('--', i)) {
        while (i < sql.length && sql[i] !== '\n') i++
      } else if (sql.startsWith('/*', i)) {
        let depth = 1
        i += 2
        while (i < sql.length && depth > 0) {
          if (sql.startsWith('/*', i)) { depth++; i += 2 } else if (sql.startsWith('*/', i)) { depth--; i += 2 } else i++
        }
      } else return
    }
  }
  skip()
  while (sql[i] === '(') { i++; skip() }
  const m = /^[A-Za-z_]+/.exec(sql.slice(i))
  return m ? m[0].toUpperCase() : ''
}

// A DuckDB type name as the server accepts one in columnTypes (ValidColumnType): words, then
// numbers in parentheses, then [] suffixes: BIGINT, DECIMAL(12,2), DOUBLE PRECISION, VARCHAR[].
export function validColumnType(type: string): boolean {
  return type.length > 0 && type.length <= 64 && /^[A-Za-z_][A-Za-z0-9_]*( [A-Za-z_][A-Za-z0-9_]*)*(\( *\d+ *(, *\d+ *)*\))?(\[\])*$/.test(type)
}

export type OptionField = 'columns' | 'filter' | 'target' | 'columnTypes'

// The browser's checks of one table's options, as the server makes them: field -> message.
// `tableColumns`: the table's columns when the catalog described it (names it does not have are
// refused, as the server refuses them when it plans the run); `files`: a bucket or folder source.
export function optionErrors(o: TableOptions, opts: { files: boolean; tableColumns?: string[] | null; table?: string }): Partial<Record<OptionField, string>> {
  const out: Partial<Record<OptionField, string>> = {}
  const where = opts.table ?? 'the table'
  if (o.columns !== null) {
    const seen = new Set<string>()
    if (!o.columns.length) out.columns = 'pick at least one column, or read all columns'
    for (const c of o.columns) {
      if (!c.trim()) { out.columns = 'a column name is empty'; break }
      if (seen.has(c)) { out.columns = `column '${c}' is listed twice`; break }
      seen.add(c)
      if (opts.tableColumns && !opts.tableColumns.includes(c)) { out.columns = `column '${c}' does not exist in ${where}`; break }
    }
  }
  const types = Object.entries(o.columnTypes)
  if (types.length && !opts.files) out.columnTypes = 'column types apply to bucket and folder sources only'
  else {
    for (const [c, t] of types) {
      if (!c.trim()) { out.columnTypes = 'a column name is empty'; break }
      if (!validColumnType(t)) { out.columnTypes = `${c}: a DuckDB type name such as DECIMAL(12,2), BIGINT or VARCHAR`; break }
    }
  }
  return out
}

export type QueryField = 'name' | 'query' | 'target'

// The browser's checks of a custom query: field -> message. `otherNames`: the entries' other
// names (`schema.table`); the first entry for a table applies, so a second one is refused here.
export function queryErrors(q: CustomQuery, opts: { files: boolean; otherNames?: string[] }): Partial<Record<QueryField, string>> {
  const out: Partial<Record<QueryField, string>> = {}
  const name = q.name.trim()
  if (!name) out.name = 'a name is required (the table the result becomes)'
  else if (hasWildcard(name)) out.name = 'a custom query needs a plain table name, not a pattern'
  else if (opts.otherNames?.includes(name)) out.name = `${name} is already read by another entry`
  if (opts.files) out.query = 'a bucket or folder source reads its files, not custom queries'
  else if (!q.query.trim()) out.query = 'a SELECT statement is required'
  else if (!['SELECT', 'WITH'].includes(firstKeyword(q.query))) out.query = 'only a SELECT or WITH ... SELECT statement'
  return out
}

// Every problem of the picker's state before it is sent: per table and per custom query.
export function pickerErrors(p: Picker, opts: { files: boolean; tableColumns?: Record<string, string[]> }): {
  tables: Record<string, Partial<Record<OptionField, string>>>; queries: Record<number, Partial<Record<QueryField, string>>>; count: number
} {
  const tables: Record<string, Partial<Record<OptionField, string>>> = {}
  const queries: Record<number, Partial<Record<QueryField, string>>> = {}
  let count = 0
  const picked = p.schema ? (p.allTables ? Object.keys(p.options) : p.selected) : []
  for (const t of picked) {
    const o = p.options[t]
    if (!o) continue
    const e = optionErrors(o, { files: opts.files, tableColumns: opts.tableColumns?.[t], table: `${p.schema}.${t}` })
    if (Object.keys(e).length) { tables[t] = e; count++ }
  }
  const names = p.schema && !p.allTables ? p.selected.map((t) => `${p.schema}.${t}`) : []
  p.queries.forEach((q, i) => {
    const others = [...names, ...p.queries.slice(0, i).map((x) => x.name.trim())]
    const e = queryErrors(q, { files: opts.files, otherNames: others })
    if (Object.keys(e).length) { queries[i] = e; count++ }
  })
  return { tables, queries, count }
}

// The entry an API error names, and the error from that name on: a field ("tables[2].columns")
// or a message ("tables[2]: column 'x' does not exist in shop.orders", also inside the plan's
// "the database answered: ...") -> 2; anything else -> null.
export function entryOf(fieldOrMessage: string): { index: number; text: string } | null {
  const m = /(?:^|[\s:])(tables\[(\d+)\](?=[.:\s]|$))/.exec(fieldOrMessage)
  return m ? { index: Number(m[2]), text: fieldOrMessage.slice(m.index + m[0].length - m[1].length) } : null
}
export const entryIndex = (fieldOrMessage: string): number | null => entryOf(fieldOrMessage)?.index ?? null

// A short description of a table's options for the picker's row: "2 of 5 columns · filter · as vip".
export function optionsSummary(o: TableOptions | undefined, columnCount?: number): string {
  if (!hasOptions(o)) return ''
  const parts: string[] = []
  if (o.columns !== null) parts.push(columnCount ? `${o.columns.length} of ${columnCount} columns` : `${o.columns.length} column${o.columns.length === 1 ? '' : 's'}`)
  if (o.filter.trim()) parts.push('filter')
  if (o.target.trim()) parts.push(`as ${o.target.trim()}`)
  const n = Object.keys(o.columnTypes).length
  if (n) parts.push(`${n} column type${n === 1 ? '' : 's'}`)
  return parts.join(' · ')
}
