// The Data Explorer's API calls and result handling. One connection: the explorer routes
// (POST /explorer/console in the engine's own SQL, /explorer/table/* for the table browser,
// /explorer/er). Several connections: the federated route (POST /explorer/federated: DuckDB SQL in
// which a source table is alias.schema.table, docs/federated.md).
import { del, post, type Connection } from './api'

export interface FederatedSource { alias: string; connectionId: string }
export interface ResultColumn { name: string; type: string }
export interface QueryResult { columns: ResultColumn[]; rows: unknown[][]; truncated?: boolean; hasMore?: boolean; elapsedMs: number }
export type FilterOp = 'contains' | '=' | '!=' | '<' | '<=' | '>' | '>=' | 'like' | 'ilike' | 'in' | 'not in' | 'is null' | 'is not null'
export const FILTER_OPS: FilterOp[] = ['contains', '=', '!=', '<', '<=', '>', '>=', 'like', 'ilike', 'in', 'not in', 'is null', 'is not null']
export interface Filter { column: string; op: FilterOp; value: string }
export interface Sort { column: string; desc: boolean }

// Filters as the table route takes them (POST /explorer/table/rows and /count: the values are
// statement parameters on the server). A number typed for a comparison is sent as a number; `in`
// takes a comma-separated list; `is null` has no value; an empty `contains` is no filter.
export function toRowFilters(filters: Filter[]): { column: string; op: string; value?: unknown }[] {
  const num = (v: string) => (/^-?\d+(\.\d+)?$/.test(v.trim()) ? Number(v.trim()) : v)
  const out: { column: string; op: string; value?: unknown }[] = []
  for (const f of filters) {
    if (!f.column) continue
    if (f.op === 'is null' || f.op === 'is not null') out.push({ column: f.column, op: f.op })
    else if (f.op === 'in' || f.op === 'not in') out.push({ column: f.column, op: f.op, value: f.value.split(',').map((x) => num(x.trim())).filter((x) => x !== '') })
    else if (f.op === 'contains' || f.op === 'like' || f.op === 'ilike') { if (f.value !== '') out.push({ column: f.column, op: f.op, value: f.value }) }
    else out.push({ column: f.column, op: f.op, value: num(f.value) })
  }
  return out
}

// The next free alias of a connection's kind, as the server defaults them: pg1, pg2, ... for
// PostgreSQL, my1, my2, ... for MySQL/MariaDB, s3, s3_2, ... for S3 buckets and files,
// files_2, ... for folders.
export function nextAlias(engine: string, taken: Set<string>): string {
  const word = engine === 's3' ? 's3' : engine === 'file' ? 'files' : ''
  const prefix = engine === 'postgres' ? 'pg' : engine === 'mysql' ? 'my' : word || String(engine).slice(0, 2)
  for (let n = 1; ; n++) {
    const alias = word ? (n === 1 ? word : `${word}_${n}`) : `${prefix}${n}`
    if (!taken.has(alias.toLowerCase())) return alias
  }
}

// Aliases for connections in a federated query, in the given order (nextAlias).
export function defaultAliases(conns: Pick<Connection, 'id' | 'engine'>[]): FederatedSource[] {
  const taken = new Set<string>()
  return conns.map((c) => {
    const alias = nextAlias(String(c.engine), taken)
    taken.add(alias.toLowerCase())
    return { alias, connectionId: c.id }
  })
}
export const validAlias = (a: string) => /^[A-Za-z][A-Za-z0-9_]{0,62}$/.test(a) && !['main', 'memory', 'system', 'temp'].includes(a.toLowerCase())

// A result value as text for the grid and CSV (null stays distinct: see cellText).
export function cellText(v: unknown): string {
  if (v === null || v === undefined) return ''
  if (typeof v === 'object') return JSON.stringify(v)
  return String(v)
}
// RFC 4180 CSV: a header row, then each row; NULL is an empty field.
export function toCsv(columns: ResultColumn[], rows: unknown[][]): string {
  const q = (s: string) => (/[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s)
  const lines = [columns.map((c) => q(c.name)).join(',')]
  for (const r of rows) lines.push(r.map((v) => q(cellText(v))).join(','))
  return lines.join('\r\n') + '\r\n'
}
// JSON lines, one object per row.
export function toJsonLines(columns: ResultColumn[], rows: unknown[][]): string {
  return rows.map((r) => JSON.stringify(Object.fromEntries(columns.map((c, i) => [c.name, r[i] ?? null])))).join('\n') + (rows.length ? '\n' : '')
}

// CodeMirror's SQL completion schema: "alias.schema.table" (federated) or "schema.table" (one
// connection) → its column names.
export function completionSchema(tables: { alias?: string; schema: string; name: string; columns?: string[] }[]): Record<string, string[]> {
  const out: Record<string, string[]> = {}
  for (const t of tables) out[`${t.alias ? t.alias + '.' : ''}${t.schema}.${t.name}`] = t.columns ?? []
  return out
}

// The console on one saved connection: its own SQL, read-only unless asked; the rest of a large
// result waits in a server-side cursor (hasMore → nextPage); cancelQuery stops it on the server.
export interface ConsoleResult extends QueryResult { queryId: string; hasMore: boolean; rowsAffected: number | null; command: string | null; readOnly: boolean }
export const newQueryId = () => 'ui_' + Math.random().toString(36).slice(2, 12) + Date.now().toString(36)
export function consoleRun(connectionId: string, sql: string, o: { queryId: string; maxRows?: number; timeoutMs?: number; readOnly?: boolean; signal?: AbortSignal }): Promise<ConsoleResult> {
  return post<ConsoleResult>('/explorer/console', { connectionId, sql, queryId: o.queryId, maxRows: o.maxRows ?? 1000, timeoutMs: o.timeoutMs ?? 60000, readOnly: o.readOnly ?? true }, o.signal)
}
// The console over federated sources (several, or one bucket or folder): the same query ids,
// pages, server-side cancel and downloads, always read-only.
export function consoleFederated(sources: FederatedSource[], sql: string, o: { queryId: string; maxRows?: number; timeoutMs?: number; signal?: AbortSignal }): Promise<ConsoleResult> {
  return post<ConsoleResult>('/explorer/console', { sources, sql, queryId: o.queryId, maxRows: o.maxRows ?? 1000, timeoutMs: o.timeoutMs ?? 60000 }, o.signal)
}
export const nextPage = (queryId: string, maxRows = 1000) => post<ConsoleResult>(`/explorer/queries/${encodeURIComponent(queryId)}/next`, { maxRows })
export const cancelQuery = (queryId: string) => del(`/explorer/queries/${encodeURIComponent(queryId)}`)

// The table browser.
export interface TableRows { columns: ResultColumn[]; primaryKey: string[]; rows: unknown[][]; paging: 'keyset' | 'offset'; nextCursor: unknown[] | null; nextOffset: number | null; statement: string; elapsedMs: number }
export interface TableRef { connectionId: string; schema: string; table: string }
export function tableRows(t: TableRef, o: { filters: Filter[]; sort: Sort | null; limit: number; after?: unknown[] | null; offset?: number }): Promise<TableRows> {
  const body: Record<string, unknown> = { ...t, filters: toRowFilters(o.filters), sort: o.sort ? [o.sort] : [], limit: o.limit }
  if (o.after) body.after = o.after
  else if (o.offset) body.offset = o.offset
  return post<TableRows>('/explorer/table/rows', body)
}
export const tableCount = (t: TableRef, filters: Filter[]) => post<{ rows: number; exact: boolean }>('/explorer/table/count', { ...t, filters: toRowFilters(filters) })
export const tableDdl = (t: TableRef) => post<{ ddl: string }>('/explorer/table/ddl', t)

export function download(name: string, text: string, type: string) {
  const url = URL.createObjectURL(new Blob([text], { type }))
  const a = document.createElement('a')
  a.href = url
  a.download = name
  a.click()
  setTimeout(() => URL.revokeObjectURL(url), 1000)
}

// The SQL console's history (this browser, newest first, at most 50, no duplicates).
const HISTORY = 'dbstreams.sqlHistory'
export interface HistoryEntry { sql: string; sources: FederatedSource[]; at: number; ok: boolean; rows?: number; ms?: number }
export function loadHistory(store: Pick<Storage, 'getItem'> = localStorage): HistoryEntry[] {
  try { const h = JSON.parse(store.getItem(HISTORY) ?? '[]'); return Array.isArray(h) ? h : [] } catch { return [] }
}
export function addHistory(e: HistoryEntry, store: Pick<Storage, 'getItem' | 'setItem'> = localStorage): HistoryEntry[] {
  const h = [e, ...loadHistory(store).filter((x) => x.sql !== e.sql)].slice(0, 50)
  store.setItem(HISTORY, JSON.stringify(h))
  return h
}
