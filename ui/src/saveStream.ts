// "Save as stream" in the SQL console's federated mode: the dialog's checks, the request body of
// POST /explorer/federated/stream and the mapping of its errors onto the dialog's fields
// (docs/federated.md, "Save as stream"). The server names a field by the first word of its
// message ("name is required", "tables[0].name must be ..."), as fields[].field.
import type { Connection, FieldError, Stream } from './api'
import type { FederatedSource, ResultColumn } from './explorer'

export interface SaveForm { name: string; target: string | null; table: string; targetSchema: string }
export type SaveField = 'name' | 'target' | 'table' | 'targetSchema'
export interface FederatedStreamRequest {
  name: string; sources: FederatedSource[]; sql: string; target: string; table?: string; targetSchema?: string
}
export interface SavedStream extends Stream { columns: ResultColumn[] }

export const STREAM_NAME = /^[A-Za-z0-9_-]{1,64}$/
export const DEFAULT_TABLE = 'result'
export const emptySaveForm = (): SaveForm => ({ name: '', target: null, table: DEFAULT_TABLE, targetSchema: '' })

// The dialog's own checks, before anything is sent: field → what is wrong (empty: nothing).
export function validateSave(f: SaveForm): Partial<Record<SaveField, string>> {
  const out: Partial<Record<SaveField, string>> = {}
  const name = f.name.trim()
  if (!name) out.name = 'A stream name is required.'
  else if (name.length > 64) out.name = 'At most 64 characters.'
  else if (!STREAM_NAME.test(name)) out.name = 'Only letters, digits, _ and - (no spaces).'
  if (!f.target) out.target = 'Pick the connection the result is written to.'
  if (f.table.trim().length > 63) out.table = 'At most 63 characters.'
  return out
}

// The request body: the sources with their aliases as the console has them, the statement as
// typed; an empty table is left to the server's default (result), an empty schema omitted.
export function saveBody(f: SaveForm, sources: FederatedSource[], sql: string): FederatedStreamRequest {
  const b: FederatedStreamRequest = {
    name: f.name.trim(), sources: sources.map((s) => ({ alias: s.alias, connectionId: s.connectionId })), sql: sql.trim(), target: f.target ?? '',
  }
  const table = f.table.trim()
  if (table) b.table = table
  const schema = f.targetSchema.trim()
  if (schema) b.targetSchema = schema
  return b
}

// The dialog field a server field belongs to; null: not a field of the dialog (the statement,
// the sources, or a word that is not a field), shown in the dialog's message.
export function dialogField(field: string): SaveField | null {
  const f = field.trim()
  if (f === 'name') return 'name'
  if (f === 'target' || f.startsWith('target.')) return 'target'
  if (f === 'table' || /^tables(\[0\])?(\.name)?$/.test(f)) return 'table'
  if (f === 'targetSchema') return 'targetSchema'
  return null
}

export interface SaveErrorView { fields: Partial<Record<SaveField, string>>; message: string }
// An error answer as the dialog shows it: the fields it names next to them, everything else (a
// statement that does not check, a source, a conflict without a field) as one readable message,
// never blank. 409: the name is taken, shown at the name.
export function saveErrorView(e: { status?: number; message?: string; detail?: string; fields?: FieldError[] }): SaveErrorView {
  const fields: Partial<Record<SaveField, string>> = {}
  const rest: string[] = []
  for (const x of e.fields ?? []) {
    const k = dialogField(x.field)
    const m = (x.message || '').trim() || `${x.field} is not valid`
    if (k && !fields[k]) fields[k] = m
    else if (!k) rest.push(m)
  }
  if (e.status === 409 && !fields.name) {
    fields.name = (e.detail || '').trim() || 'A stream with this name exists already: pick another name.'
  }
  let message = ''
  if (rest.length) message = rest.join(' ')
  else if (!Object.keys(fields).length) message = (e.message || e.detail || '').trim()
  if (!message && !Object.keys(fields).length) message = `The stream could not be saved${e.status ? ` (HTTP ${e.status})` : ''}.`
  return { fields, message }
}

// The connections a result can be written to, for the target select: databases, S3 buckets and
// folders, each labelled with its kind.
const KIND: Record<string, string> = { postgres: 'PostgreSQL', mysql: 'MySQL / MariaDB', s3: 'S3', file: 'folder' }
export function targetOptions(conns: Pick<Connection, 'id' | 'name' | 'engine'>[]): { label: string; value: string }[] {
  return conns.filter((c) => c.engine in KIND).map((c) => ({ label: `${c.name} (${KIND[c.engine]})`, value: c.id }))
}
