// The Data Explorer's SQL building and result handling. Every query runs through the federated
// SQL route (POST /explorer/federated, docs/federated.md): DuckDB SQL in which a source table is
// alias.schema.table. Pure functions here; the screens call them.
import { ApiError, BASE, readable, session, type Connection } from './api'

export interface FederatedSource { alias: string; connectionId: string }
export interface ResultColumn { name: string; type: string }
export interface QueryResult { columns: ResultColumn[]; rows: unknown[][]; truncated: boolean; elapsedMs: number }
export type FilterOp = 'contains' | '=' | '!=' | '<' | '<=' | '>' | '>=' | 'is null' | 'is not null'
export interface Filter { column: string; op: FilterOp; value: string }
export interface Sort { column: string; desc: boolean }

// DuckDB identifiers: "name" with " doubled.
export const ident = (s: string) => '"' + s.replace(/"/g, '""') + '"'
// A DuckDB string literal: 'text' with ' doubled.
export const literal = (s: string) => "'" + s.replace(/'/g, "''") + "'"
export const tableRef = (alias: string, schema: string, table: string) => `${ident(alias)}.${ident(schema)}.${ident(table)}`

// A value typed in a filter box: a number stays a number (so the source can use an index),
// anything else is a string literal.
function value(v: string): string {
  return /^-?\d+(\.\d+)?$/.test(v.trim()) ? v.trim() : literal(v)
}

export function whereClause(filters: Filter[]): string {
  const parts: string[] = []
  for (const f of filters) {
    if (!f.column) continue
    const c = ident(f.column)
    if (f.op === 'is null') parts.push(`${c} IS NULL`)
    else if (f.op === 'is not null') parts.push(`${c} IS NOT NULL`)
    else if (f.op === 'contains') {
      if (f.value === '') continue
      // LIKE escapes: the typed text is matched literally.
      const pat = '%' + f.value.replace(/[\\%_]/g, (m) => '\\' + m) + '%'
      parts.push(`CAST(${c} AS VARCHAR) ILIKE ${literal(pat)} ESCAPE '\\'`)
    } else parts.push(`${c} ${f.op} ${value(f.value)}`)
  }
  return parts.length ? ' WHERE ' + parts.join(' AND ') : ''
}

// One page of a table: its rows under the filters, in the sort order, `limit` from `offset`.
export function pageQuery(from: string, o: { filters?: Filter[]; sort?: Sort | null; limit: number; offset: number }): string {
  let sql = `SELECT * FROM ${from}${whereClause(o.filters ?? [])}`
  if (o.sort) sql += ` ORDER BY ${ident(o.sort.column)} ${o.sort.desc ? 'DESC' : 'ASC'} NULLS LAST`
  sql += ` LIMIT ${Math.max(1, Math.floor(o.limit))}`
  if (o.offset > 0) sql += ` OFFSET ${Math.floor(o.offset)}`
  return sql
}
export const countQuery = (from: string, filters: Filter[]) => `SELECT count(*) AS n FROM ${from}${whereClause(filters)}`

// Aliases for connections in a federated query: pg1, pg2, my1, ... in the given order.
export function defaultAliases(conns: Pick<Connection, 'id' | 'engine'>[]): FederatedSource[] {
  const n: Record<string, number> = {}
  return conns.map((c) => {
    const p = c.engine === 'postgres' ? 'pg' : c.engine === 'mysql' ? 'my' : String(c.engine).slice(0, 2)
    n[p] = (n[p] ?? 0) + 1
    return { alias: `${p}${n[p]}`, connectionId: c.id }
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

// CodeMirror's SQL completion schema: "alias.schema.table" → its column names.
export function completionSchema(tables: { alias: string; schema: string; name: string; columns?: string[] }[]): Record<string, string[]> {
  const out: Record<string, string[]> = {}
  for (const t of tables) out[`${t.alias}.${t.schema}.${t.name}`] = t.columns ?? []
  return out
}

// Runs a federated statement; abort() on the signal cancels it in the browser (the server stops
// the statement at its timeout: docs/federated.md, known limits).
export async function federated(sources: FederatedSource[], sql: string, opt: { maxRows?: number; timeoutMs?: number; signal?: AbortSignal } = {}): Promise<QueryResult> {
  const body = JSON.stringify({ sources, sql, maxRows: opt.maxRows ?? 1000, timeoutMs: opt.timeoutMs ?? 60000 })
  let res: Response
  try {
    res = await fetch(BASE + '/explorer/federated', { method: 'POST', headers: { 'X-API-Key': session.key, 'Content-Type': 'application/json' }, body, signal: opt.signal })
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e
    throw new ApiError('network', 0, 'unreachable', readable(502, 'unreachable', ''))
  }
  const text = await res.text()
  let j: any = null
  try { j = text ? JSON.parse(text) : null } catch { /* not JSON */ }
  if (!res.ok) {
    const code = j?.error?.code ?? 'http_' + res.status
    const msg = j?.error?.message ?? (res.statusText || 'request failed')
    throw new ApiError(res.status === 401 ? 'auth' : 'http', res.status, code, readable(res.status, code, msg), j?.error?.fields ?? [], msg)
  }
  return j as QueryResult
}

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
