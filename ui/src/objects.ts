// The Data Explorer's objects browser of an S3 or Local folder connection (docs/explorer.md,
// "Files"): one level of the bucket's prefix or of the folder at a time (POST
// /explorer/files/list {connectionId, path}) and a file's columns and first rows (POST
// /explorer/files/sample {connectionId, path, rows}). Paths are relative to the connection's
// prefix or folder ('' is the prefix or folder itself). Pure: no API calls, no Vue.
import type { Connection } from './api'
import { connectionPlace } from './connections'
import { bytes, num } from './format'
import { folderLocation, normalPath } from './folder'
import { normalPrefix, s3Location } from './s3'

// The connections that have an objects browser: S3 buckets and Local folders.
export type Place = Pick<Connection, 'engine' | 'bucket' | 'prefix' | 'path'>
export const hasObjects = (engine: string | undefined) => engine === 's3' || engine === 'file'

// How the browser names things for a kind of connection: a bucket holds objects, a folder files.
export function objectWords(engine: string | undefined): { place: string; item: string } {
  return engine === 'file' ? { place: 'folder', item: 'file' } : { place: 'bucket', item: 'object' }
}

// One entry of a list (src/explorer/files.h, ListObjects): folders have no size or time.
export interface ObjectEntry { name: string; path: string; kind: 'file' | 'folder'; size: number | null; modifiedMs: number | null }
export interface ObjectList { connectionId: string; path: string; entries: ObjectEntry[]; truncated: boolean }

// The body of files/list and files/sample for an S3 or folder connection.
export const listBody = (connectionId: string, path: string) => ({ connectionId, path: normalPrefix(path) })
export const sampleBody = (connectionId: string, path: string, rows: number) => ({ connectionId, path, rows })

// The levels from the prefix (or folder) down to `path`, each with the path that lists it: the
// first is the connection's place (s3://bucket/prefix or file:///folder), then one per folder.
export function crumbs(c: Place, path: string): { label: string; path: string }[] {
  const out = [{ label: connectionPlace(c), path: '' }]
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

// Where an entry is: s3://bucket/prefix/path for a bucket, file:///folder/path for a folder.
export function objectUrl(c: Place, path: string): string {
  if (c.engine === 'file') {
    const rel = normalPrefix(path)
    return folderLocation(rel ? `${normalPath(c.path ?? '')}/${rel}` : c.path ?? '')
  }
  const p = normalPrefix(c.prefix ?? '')
  return s3Location(c.bucket ?? '', p ? `${p}/${normalPrefix(path)}` : path)
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

// A line under the list: how many folders and objects (or files), their bytes, and whether the
// list stops.
export function listSummary(l: Pick<ObjectList, 'entries' | 'truncated'>, item = 'object'): string {
  const folders = l.entries.filter((e) => e.kind === 'folder').length
  const files = l.entries.filter((e) => e.kind === 'file')
  if (!folders && !files.length) return 'nothing here'
  const total = files.reduce((a, e) => a + (e.size ?? 0), 0)
  const parts: string[] = []
  if (folders) parts.push(`${num(folders)} folder${folders === 1 ? '' : 's'}`)
  if (files.length) parts.push(`${num(files.length)} ${item}${files.length === 1 ? '' : 's'} (${bytes(total)})`)
  return parts.join(', ') + (l.truncated ? `; only the first ${num(l.entries.length)} entries are listed` : '')
}
