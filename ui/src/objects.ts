// The Data Explorer's objects browser of an S3 connection (docs/explorer.md, "Files"): one level
// of the bucket's prefix at a time (POST /explorer/files/list {connectionId, path}) and an
// object's columns and first rows (POST /explorer/files/sample {connectionId, path, rows}).
// Paths are relative to the connection's prefix ('' is the prefix itself). Pure: no API calls,
// no Vue.
import { bytes, num } from './format'
import { normalPrefix, s3Location } from './s3'

// One entry of a list (src/explorer/files.h, ListObjects): folders have no size or time.
export interface ObjectEntry { name: string; path: string; kind: 'file' | 'folder'; size: number | null; modifiedMs: number | null }
export interface ObjectList { connectionId: string; path: string; entries: ObjectEntry[]; truncated: boolean }

// The body of files/list and files/sample for an S3 connection.
export const listBody = (connectionId: string, path: string) => ({ connectionId, path: normalPrefix(path) })
export const sampleBody = (connectionId: string, path: string, rows: number) => ({ connectionId, path, rows })

// The levels from the prefix down to `path`, each with the path that lists it: the first is the
// connection's place (s3://bucket/prefix), then one per folder.
export function crumbs(bucket: string, prefix: string, path: string): { label: string; path: string }[] {
  const out = [{ label: s3Location(bucket, prefix), path: '' }]
  let at = ''
  for (const part of normalPrefix(path).split('/').filter(Boolean)) {
    at = at ? `${at}/${part}` : part
    out.push({ label: part, path: at })
  }
  return out
}

// The folder holding `path` ('' for what is directly at the prefix).
export function parentPath(path: string): string {
  const p = normalPrefix(path)
  const i = p.lastIndexOf('/')
  return i < 0 ? '' : p.slice(0, i)
}

// s3://bucket/prefix/path, where an entry is.
export function objectUrl(bucket: string, prefix: string, path: string): string {
  const p = normalPrefix(prefix)
  return s3Location(bucket, p ? `${p}/${normalPrefix(path)}` : path)
}

// Whether the server can sample an object, by its name (src/explorer/files.cc, FileReader):
// CSV, TSV, text, JSON, JSON Lines and Parquet, the text formats also gzip-compressed.
export function previewable(name: string): boolean {
  const l = name.toLowerCase().replace(/\.gz$/, '')
  return /\.(csv|tsv|txt|json|jsonl|ndjson|parquet)$/.test(l)
}
export const PREVIEW_KINDS = '.csv, .tsv, .txt, .json, .jsonl, .ndjson or .parquet (text formats also .gz)'

// An entry's modification time as the list shows it (UTC, to the second): '' when unknown.
export function modifiedText(ms: number | null | undefined): string {
  if (!ms || !isFinite(ms)) return ''
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC')
}
export const sizeText = (e: Pick<ObjectEntry, 'kind' | 'size'>) => (e.kind === 'folder' ? '' : bytes(e.size))

// A line under the list: how many folders and objects, their bytes, and whether the list stops.
export function listSummary(l: Pick<ObjectList, 'entries' | 'truncated'>): string {
  const folders = l.entries.filter((e) => e.kind === 'folder').length
  const files = l.entries.filter((e) => e.kind === 'file')
  if (!folders && !files.length) return 'nothing here'
  const total = files.reduce((a, e) => a + (e.size ?? 0), 0)
  const parts: string[] = []
  if (folders) parts.push(`${num(folders)} folder${folders === 1 ? '' : 's'}`)
  if (files.length) parts.push(`${num(files.length)} object${files.length === 1 ? '' : 's'} (${bytes(total)})`)
  return parts.join(', ') + (l.truncated ? `; only the first ${num(l.entries.length)} entries are listed` : '')
}
