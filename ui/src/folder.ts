// Local folder connections (engine "file", docs/files.md "Connections"): a folder of the server,
// inside one of the roots it was started with (DBS_FILE_ROOTS). The connection form's state, its
// checks, the body it sends to POST/PUT /connections and /connections/test, and how a saved
// connection is named in lists (file:///path). Pure: no API calls, no Vue.
//
// The server resolves the path (links followed) and refuses one outside its roots with a 400 on
// the field `path`; the form checks only what it can see: absolute, no '..', not too long.
import type { Connection } from './api'
import {
  emptyFileOptions, fileOptionErrors, fileOptionsOf, fileParams, hasRowGroups, DEFAULT_MAX_ROW_GROUP, MAX_ROW_GROUP_SIZE,
  type FileOptions, type S3Format,
} from './s3'

export type FileFormat = S3Format

// The path, and the options of the files written into the folder (src/s3.ts, FileOptions: the
// same as a bucket's).
export interface FolderForm extends FileOptions {
  name: string
  path: string
}

// The server's defaults (src/sources/files/file_common.cc).
export const DEFAULT_CHANGE_FILE_SECONDS = 60
export const MAX_PATH_BYTES = 1024  // the API's limit on `path` (docs/openapi.json)

export function emptyFolderForm(): FolderForm {
  return { name: '', path: '', ...emptyFileOptions() }
}

// A path as the server keeps it: single slashes, no '.' parts, no trailing '/' (the folder "/"
// stays "/"). '..' parts are kept, so that the check below sees them. A relative path stays
// relative.
export function normalPath(path: string): string {
  const p = path.trim()
  if (!p) return ''
  const parts = p.split('/').filter((x) => x !== '' && x !== '.')
  return (p.startsWith('/') ? '/' : '') + parts.join('/')
}

// The path rule the API applies before the roots (src/api/connections.cc); null when it holds.
export const PATH_RULE = 'an absolute folder of the server, such as /srv/lake/exports'
export function pathError(path: string): string | null {
  const p = path.trim()
  if (!p) return 'path is required'
  if (!p.startsWith('/')) return `path must be absolute: ${PATH_RULE}`
  if (p.split('/').includes('..')) return "path must not contain '..'"
  if (p.includes('\0')) return 'path must not contain a NUL character'
  if (new TextEncoder().encode(normalPath(p)).length > MAX_PATH_BYTES) return `path must be at most ${MAX_PATH_BYTES} bytes`
  return null
}

// The form's own checks before anything is sent, by field (the API's field names). Empty when
// the form can be sent; the API checks again, and checks the roots.
export function validateFolder(f: FolderForm, opts: { withName?: boolean } = {}): Record<string, string> {
  const errs: Record<string, string> = {}
  if ((opts.withName ?? true) && !f.name.trim()) errs.name = 'name is required'
  const p = pathError(f.path)
  if (p) errs.path = p
  return { ...errs, ...fileOptionErrors(f) }
}

// The body of POST /connections, PUT /connections/{id} and (withName false) POST
// /connections/test: engine, name, path and params only (the API refuses host, port, user,
// password, database, ssl and url for a folder). Defaults are left out.
export function folderBody(f: FolderForm, opts: { withName?: boolean } = {}): Record<string, unknown> {
  const b: Record<string, unknown> = { engine: 'file' }
  if (opts.withName ?? true) b.name = f.name.trim()
  b.path = normalPath(f.path)
  b.params = fileParams(f)
  return b
}

// The form of a saved connection (GET /connections/{id}: {engine: "file", path, params}).
export function folderFormOf(c: Partial<Connection>): FolderForm {
  return { name: c.name ?? '', path: c.path ?? '', ...fileOptionsOf(c.params ?? {}) }
}

// file:///path, as lists show a folder connection.
export const folderLocation = (path: string) => `file://${normalPath(path)}`

// When a change file is published with the form's values (the defaults where it has none), in
// words, for the form's hint.
export const CHANGE_FILE_RULE = 'a table\'s change file is published when it holds that many changes or its oldest change is that many seconds old (0: every batch at once), and when the stream stops'
export function changeFileRule(f: Pick<FolderForm, 'rowsPerFile' | 'changeFileRows' | 'changeFileSeconds'>): string {
  const rows = f.changeFileRows ?? f.rowsPerFile ?? 1_000_000
  const secs = f.changeFileSeconds ?? DEFAULT_CHANGE_FILE_SECONDS
  const n = (x: number) => x.toLocaleString('en-US')
  if (secs === 0) return 'Here: every batch of changes at once.'
  return `Here: at ${n(rows)} change${rows === 1 ? '' : 's'}, or when the oldest change is ${n(secs)} second${secs === 1 ? '' : 's'} old.`
}

// How big a part file gets (docs/files.md, "Exactly once"), in words, for the form's hint under
// the size fields (a bucket's too); the row groups with Parquet only.
export function fileSizeRule(format: FileFormat): string {
  const n = (x: number) => x.toLocaleString('en-US')
  const parts = 'A part file holds at most the rows per file, and is committed once it reaches the bytes per file (often sooner).'
  if (!hasRowGroups(format)) return parts
  return `${parts} A Parquet file can pass the bytes by about one row group. Rows per row group: at most ${n(MAX_ROW_GROUP_SIZE)};` +
    ` by default about 6 MiB of rows, up to ${n(DEFAULT_MAX_ROW_GROUP)}.`
}

// The roots the server accepts folders in (GET /explorer/files/roots), for the path's hint.
export function rootsHint(roots: string[] | null): string {
  if (roots === null) return 'A folder inside one of the server\'s file roots (DBS_FILE_ROOTS).'
  if (!roots.length) return 'The server has no file roots: start it with DBS_FILE_ROOTS=/folder[:/other] to allow folders.'
  return `Inside ${roots.length === 1 ? 'the server\'s file root' : 'one of the server\'s file roots'}: ${roots.join(', ')}. A stream into a folder that does not exist yet creates it.`
}

// A folder's answer to a test (POST /connections/test, /ping): `objects` is the number of entries
// in the folder (the targets' .dbs bookkeeping is not counted).
export function describeEntries(objects: unknown): string {
  if (typeof objects !== 'number') return Array.isArray(objects) ? describeEntries(objects.length) : ''
  if (objects === 0) return 'the folder is empty'
  return `${objects.toLocaleString('en-US')} ${objects === 1 ? 'entry' : 'entries'} in the folder`
}
