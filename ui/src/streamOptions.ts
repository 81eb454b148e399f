// The stream editor's options that depend on the kind of source, target or mode
// (docs/stream-config.md): CDC settings, what a file source does with rows that do not parse,
// and how a file target writes (set on its connection, shown here). Pure: no API calls, no Vue.
import type { Connection } from './api'

export type Operation = 'insert' | 'update' | 'delete'
export const OPERATIONS: Operation[] = ['insert', 'update', 'delete']

// The form's CDC fields. Empty strings and nulls are "the server's default" and not sent.
export interface CdcForm {
  operations: Operation[]
  slotName: string         // PostgreSQL sources
  publicationName: string  // PostgreSQL sources
  serverId: number | null  // MySQL/MariaDB sources
  startPosition: string
}

export const emptyCdc = (): CdcForm => ({ operations: [...OPERATIONS], slotName: '', publicationName: '', serverId: null, startPosition: '' })

// The config's `cdc` object as form fields; `rest` keeps the keys the form does not edit
// (batchChanges, maxDelayMs, ...) so that saving the form keeps them.
export function cdcToForm(cdc: unknown): { form: CdcForm; rest: Record<string, unknown> } {
  const form = emptyCdc()
  const rest: Record<string, unknown> = {}
  if (!cdc || typeof cdc !== 'object') return { form, rest }
  for (const [k, v] of Object.entries(cdc as Record<string, unknown>)) {
    if (k === 'operations' && Array.isArray(v)) form.operations = OPERATIONS.filter((o) => v.includes(o))
    else if (k === 'slotName' && typeof v === 'string') form.slotName = v
    else if (k === 'publicationName' && typeof v === 'string') form.publicationName = v
    else if (k === 'serverId' && typeof v === 'number') form.serverId = v
    else if (k === 'startPosition' && typeof v === 'string') form.startPosition = v
    else rest[k] = v
  }
  return { form, rest }
}

// The `cdc` object to send (undefined: nothing to send), with `rest` kept.
export function cdcFromForm(form: CdcForm, rest: Record<string, unknown> = {}): Record<string, unknown> | undefined {
  const c: Record<string, unknown> = { ...rest }
  if (form.operations.length !== OPERATIONS.length) c.operations = OPERATIONS.filter((o) => form.operations.includes(o))
  if (form.slotName.trim()) c.slotName = form.slotName.trim()
  if (form.publicationName.trim()) c.publicationName = form.publicationName.trim()
  if (form.serverId != null) c.serverId = form.serverId
  if (form.startPosition.trim()) c.startPosition = form.startPosition.trim()
  return Object.keys(c).length ? c : undefined
}

// The browser's checks of the CDC fields, as the server makes them: field -> message.
export function cdcErrors(form: CdcForm): Record<string, string> {
  const out: Record<string, string> = {}
  if (!form.operations.length) out.operations = 'pick at least one operation'
  for (const k of ['slotName', 'publicationName'] as const) {
    const v = form[k].trim()
    if (v && !/^[a-z0-9_]+$/.test(v)) out[k] = 'use lower-case letters, digits and _ only'
    else if (v.length > 63) out[k] = 'at most 63 characters'
  }
  if (form.serverId != null && (!Number.isInteger(form.serverId) || form.serverId < 0 || form.serverId > 4294967295)) {
    out.serverId = 'a whole number from 0 to 4294967295'
  }
  return out
}

// Buckets and folders: file sources and targets.
export const isFiles = (c?: Pick<Connection, 'engine'>) => c?.engine === 's3' || c?.engine === 'file'

// How a file target writes, from its connection's params (docs/files.md), e.g.
// "Parquet files, zstd compression, at most 1,000,000 rows per file".
export function fileTargetSummary(c: Pick<Connection, 'engine' | 'params'>): string {
  const p = c.params ?? {}
  const format = (p.format ?? 'parquet').toLowerCase()
  const name = format === 'csv' ? 'CSV' : format === 'jsonl' ? 'JSON Lines' : 'Parquet'
  const compression = p.compression ?? (format === 'parquet' ? 'zstd' : 'none')
  const parts = [`${name} files`, compression === 'none' ? 'uncompressed' : `${compression} compression`]
  const rows = Number(p.rowsPerFile)
  if (p.rowsPerFile && Number.isFinite(rows)) parts.push(`at most ${rows.toLocaleString('en-US')} rows per file`)
  if (p.changeFileRows || p.changeFileSeconds) {
    const cr = p.changeFileRows ? `${Number(p.changeFileRows).toLocaleString('en-US')} changes` : ''
    const cs = p.changeFileSeconds ? `${p.changeFileSeconds} s` : ''
    parts.push(`change files every ${[cr, cs].filter(Boolean).join(' or ')}`)
  }
  return parts.join(', ')
}
