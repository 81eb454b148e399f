// S3 bucket connections (engine "s3", docs/files.md): the connection form's state, its checks,
// the body it sends to POST/PUT /connections and /connections/test, and how a saved connection
// is named in lists (s3://bucket/prefix). Pure: no API calls, no Vue.
import type { Connection } from './api'

export type S3Format = 'parquet' | 'csv' | 'jsonl'
export type S3Addressing = 'path' | 'virtual'
// TLS of an S3 endpoint: '' checks the certificate (against `ca` when one is given); 'require'
// encrypts without checking it (src/sources/files/remote.h). Other SSL modes mean nothing here.
export type S3SslMode = '' | 'require'

// The options of the files a bucket or a folder target writes (docs/files.md, "Connections"):
// the same for both, kept in the connection's params. null = the server's default.
export interface FileOptions {
  format: S3Format
  compression: string  // '' = the format's default
  rowsPerFile: number | null  // null = the default (1,000,000)
  bytesPerFile: number | null  // null = no size limit; a part file is committed at this size
  rowGroupSize: number | null  // Parquet only; null = the writer's choice (up to 122,880 rows)
  // CDC streams into the bucket or folder (docs/files.md, "Changes into files"): a change file
  // is published when it holds changeFileRows changes or its oldest change is changeFileSeconds
  // old.
  changeFileRows: number | null  // null = the default: rowsPerFile
  changeFileSeconds: number | null  // null = the default (60); 0 publishes every batch at once
}

export interface S3Form extends FileOptions {
  name: string
  bucket: string
  prefix: string
  endpoint: string  // '' = AWS (https://s3.<region>.amazonaws.com)
  region: string
  addressing: S3Addressing
  accessKey: string  // the API's `user`
  secretKey: string  // the API's `password`; on an edit '' keeps the stored one
  // Temporary credentials: the session token typed, '' = none typed. The API never returns a
  // stored token, only STORED_TOKEN in its place: keepToken says that one is stored and is kept
  // (STORED_TOKEN sent back) unless a token is typed or the token is removed.
  sessionToken: string
  keepToken: boolean
  sslMode: S3SslMode
  ca: string  // a path on the server or PEM text
}

// The server's defaults (src/sources/files/remote.h).
export const DEFAULT_REGION = 'us-east-1'
export const awsEndpoint = (region: string) => `https://s3.${region || DEFAULT_REGION}.amazonaws.com`
export const DEFAULT_ROWS_PER_FILE = 1_000_000
// Row groups of Parquet files (src/sources/files/file_common.h, src/sinks/files/part_stream.cc):
// by default the writer aims at about 6 MiB of row data a group, at most DEFAULT_MAX_ROW_GROUP
// rows; a connection's rowGroupSize takes at most MAX_ROW_GROUP_SIZE.
export const DEFAULT_MAX_ROW_GROUP = 122_880
export const MAX_ROW_GROUP_SIZE = 1_000_000
// What the API returns for (and accepts back as "keep") a session token it has stored
// (src/api/connections.h, kStoredSessionToken), and its limit on one (kMaxSessionToken).
export const STORED_TOKEN = '<stored token>'
export const MAX_TOKEN_BYTES = 8192

export const FORMATS: { label: string; value: S3Format }[] = [
  { label: 'Parquet', value: 'parquet' },
  { label: 'CSV', value: 'csv' },
  { label: 'JSON Lines', value: 'jsonl' },
]
// What the server takes per format (src/sources/files/file_common.cc, FileOptionsOf); the first
// is the default.
const COMPRESSIONS: Record<S3Format, string[]> = {
  parquet: ['zstd', 'snappy', 'gzip', 'none'],
  csv: ['none', 'gzip', 'zstd'],
  jsonl: ['none', 'gzip', 'zstd'],
}
export function compressionOptions(format: S3Format): { label: string; value: string }[] {
  const all = COMPRESSIONS[format]
  return [{ label: `Default (${all[0]})`, value: '' }, ...all.map((c) => ({ label: c, value: c }))]
}
// The compression kept when the format changes: '' (the default) when the new format has no such
// compression.
export const compressionFor = (format: S3Format, compression: string) =>
  compression && COMPRESSIONS[format].includes(compression) ? compression : ''

export function emptyFileOptions(): FileOptions {
  return {
    format: 'parquet', compression: '', rowsPerFile: null, bytesPerFile: null, rowGroupSize: null,
    changeFileRows: null, changeFileSeconds: null,
  }
}

export function emptyS3Form(): S3Form {
  return {
    name: '', bucket: '', prefix: '', endpoint: '', region: DEFAULT_REGION, addressing: 'path',
    accessKey: '', secretKey: '', sessionToken: '', keepToken: false, sslMode: '', ca: '', ...emptyFileOptions(),
  }
}

// A whole number from min to max, or null (the default); for the form's checks.
export const wholeNumber = (n: number | null, min: number, max = Infinity) => n === null || (Number.isInteger(n) && n >= min && n <= max)
// A count param as the API returns it (a string of digits); null when absent or not one.
export function countParam(v: string | undefined, min: number): number | null {
  if (v === undefined || !/^\d+$/.test(v)) return null
  const n = Number(v)
  return Number.isSafeInteger(n) && n >= min ? n : null
}

// The file options of a saved connection's params (GET /connections/{id}); a value that is not
// one the form can show is read as the default.
export function fileOptionsOf(p: Record<string, string>): FileOptions {
  const o = emptyFileOptions()
  o.format = FORMATS.some((x) => x.value === p.format) ? (p.format as S3Format) : p.format === 'ndjson' || p.format === 'json' ? 'jsonl' : 'parquet'
  o.compression = compressionFor(o.format, p.compression ?? '')
  o.rowsPerFile = countParam(p.rowsPerFile, 1)
  o.bytesPerFile = countParam(p.bytesPerFile, 1)
  o.rowGroupSize = countParam(p.rowGroupSize, 1)
  o.changeFileRows = countParam(p.changeFileRows, 1)
  o.changeFileSeconds = countParam(p.changeFileSeconds, 0)
  return o
}

// Whether the format has row groups (rowGroupSize is refused for the others).
export const hasRowGroups = (format: S3Format) => format === 'parquet'

// The form's checks of the file options, by param. The row group size counts for Parquet only.
export function fileOptionErrors(o: FileOptions): Record<string, string> {
  const errs: Record<string, string> = {}
  if (!wholeNumber(o.rowsPerFile, 1)) errs.rowsPerFile = 'rows per file must be a positive whole number'
  if (!wholeNumber(o.bytesPerFile, 1)) errs.bytesPerFile = 'bytes per file must be a positive whole number'
  if (hasRowGroups(o.format) && !wholeNumber(o.rowGroupSize, 1, MAX_ROW_GROUP_SIZE)) {
    errs.rowGroupSize = `rows per row group must be a whole number from 1 to ${MAX_ROW_GROUP_SIZE.toLocaleString('en-US')}`
  }
  if (!wholeNumber(o.changeFileRows, 1)) errs.changeFileRows = 'changes per file must be a positive whole number'
  if (!wholeNumber(o.changeFileSeconds, 0)) errs.changeFileSeconds = 'seconds must be a whole number, 0 or more'
  return errs
}

// The params the file options are sent as: the format, then what is not the default. The row
// group size only with Parquet.
export function fileParams(o: FileOptions): Record<string, string> {
  const params: Record<string, string> = { format: o.format }
  const compression = compressionFor(o.format, o.compression)
  if (compression) params.compression = compression
  if (o.rowsPerFile !== null) params.rowsPerFile = String(o.rowsPerFile)
  if (o.bytesPerFile !== null) params.bytesPerFile = String(o.bytesPerFile)
  if (o.rowGroupSize !== null && hasRowGroups(o.format)) params.rowGroupSize = String(o.rowGroupSize)
  if (o.changeFileRows !== null) params.changeFileRows = String(o.changeFileRows)
  if (o.changeFileSeconds !== null) params.changeFileSeconds = String(o.changeFileSeconds)
  return params
}

// A prefix as the server keeps it: no leading or trailing '/' (src/config/connection.cc).
export const normalPrefix = (prefix: string) => prefix.trim().replace(/^\/+|\/+$/g, '')

// The form of a saved connection (GET /connections/{id}). The API fills in the AWS endpoint of
// the region when none was given: that one is shown as empty (AWS), so that a change of region
// moves the endpoint with it. The secret key is never returned (blank: keep it), nor is the
// session token (STORED_TOKEN when one is stored: kept unless replaced or removed).
export function s3FormOf(c: Partial<Connection>): S3Form {
  const f: S3Form = { ...emptyS3Form(), ...fileOptionsOf(c.params ?? {}) }
  f.name = c.name ?? ''
  f.bucket = c.bucket ?? ''
  f.prefix = c.prefix ?? ''
  f.region = c.region || DEFAULT_REGION
  f.endpoint = c.endpoint && c.endpoint !== awsEndpoint(f.region) ? c.endpoint : ''
  f.addressing = c.addressing === 'virtual' ? 'virtual' : 'path'
  f.accessKey = c.user ?? ''
  f.keepToken = c.sessionToken === STORED_TOKEN
  f.sslMode = c.ssl?.mode === 'require' ? 'require' : ''
  f.ca = c.ssl?.ca ?? ''
  return f
}

// The session token as the form stands: 'typed' (a new token replaces any stored one), 'kept'
// (the stored one), 'removed' (a stored one the save deletes) or 'none'. `stored`: the saved
// connection has one.
export type TokenState = 'typed' | 'kept' | 'removed' | 'none'
export function tokenState(f: Pick<S3Form, 'sessionToken' | 'keepToken'>, stored: boolean): TokenState {
  if (f.sessionToken.trim()) return 'typed'
  if (f.keepToken) return 'kept'
  return stored ? 'removed' : 'none'
}
const TOKEN_PLACEHOLDERS: Record<TokenState, string> = {
  typed: '',
  kept: 'stored — leave to keep',
  removed: 'removed on save — or type a new one',
  none: 'temporary credentials only (stored encrypted, never shown)',
}
export const tokenPlaceholder = (state: TokenState) => TOKEN_PLACEHOLDERS[state]

// What a test of an edited bucket takes from the saved connection, by name: the stored secret
// key when none is typed, the stored session token while it is kept. POST /connections/test
// cannot use stored secrets, so the form is then tested as saved (POST /connections/{id}/ping).
// Empty: the form can be tested as it stands.
export function storedSecretsUsed(f: Pick<S3Form, 'secretKey' | 'sessionToken' | 'keepToken'>, hasPassword: boolean): string[] {
  const used: string[] = []
  if (!f.secretKey && hasPassword) used.push('secret key')
  if (tokenState(f, true) === 'kept') used.push('session token')
  return used
}

// The bucket name rule the API applies (src/api/connections.cc); null when the name is valid.
export const BUCKET_RULE = '3 to 63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit'
export function bucketError(bucket: string): string | null {
  const b = bucket.trim()
  if (!b) return 'bucket is required'
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(b)) return `bucket must be a bucket name: ${BUCKET_RULE}`
  return null
}
export function endpointError(endpoint: string): string | null {
  const e = endpoint.trim()
  if (!e) return null
  let u: URL
  try { u = new URL(e) } catch { return 'endpoint must be an http:// or https:// URL' }
  if (!/^https?:\/\//.test(e) || !u.hostname) {
    return 'endpoint must be an http:// or https:// URL'
  }
  if (u.search || u.hash) return 'endpoint must be a server URL, without ? or #'
  return null
}

// The form's own checks before anything is sent, by field (the names of the API's fields where
// there is one). Empty when the form can be sent; the API checks again.
export function validateS3(f: S3Form, opts: { withName?: boolean } = {}): Record<string, string> {
  const errs: Record<string, string> = {}
  if ((opts.withName ?? true) && !f.name.trim()) errs.name = 'name is required'
  const b = bucketError(f.bucket)
  if (b) errs.bucket = b
  const e = endpointError(f.endpoint)
  if (e) errs.endpoint = e
  if (new TextEncoder().encode(normalPrefix(f.prefix)).length > 1024) errs.prefix = 'prefix must be at most 1024 bytes'
  if (f.region.trim() && !/^[A-Za-z0-9._-]{1,64}$/.test(f.region.trim())) errs.region = 'region must be a region name such as us-east-1'
  if (new TextEncoder().encode(f.sessionToken.trim()).length > MAX_TOKEN_BYTES) errs.sessionToken = `session token must be at most ${MAX_TOKEN_BYTES} bytes`
  return { ...errs, ...fileOptionErrors(f) }
}

// The body of POST /connections, PUT /connections/{id} and (withName false) POST
// /connections/test. An empty endpoint is left out (the API then uses AWS's), so is an empty
// secret key (an edit keeps the stored one); the session token is the one typed, else
// STORED_TOKEN while a stored one is kept, else left out (a stored one is then deleted); the CA
// only counts when the certificate is checked.
export function s3Body(f: S3Form, opts: { withName?: boolean } = {}): Record<string, unknown> {
  const b: Record<string, unknown> = { engine: 's3', bucket: f.bucket.trim() }
  if (opts.withName ?? true) b.name = f.name.trim()
  const prefix = normalPrefix(f.prefix)
  if (prefix) b.prefix = prefix
  const endpoint = f.endpoint.trim().replace(/\/+$/, '')
  if (endpoint) b.endpoint = endpoint
  b.region = f.region.trim() || DEFAULT_REGION
  b.addressing = f.addressing
  if (f.accessKey.trim()) b.user = f.accessKey.trim()
  if (f.secretKey) b.password = f.secretKey
  const token = f.sessionToken.trim()
  if (token) b.sessionToken = token
  else if (f.keepToken) b.sessionToken = STORED_TOKEN
  const ssl: Record<string, string> = {}
  if (f.sslMode) ssl.mode = f.sslMode
  else if (f.ca) ssl.ca = f.ca
  b.ssl = ssl
  b.params = fileParams(f)
  return b
}

// s3://bucket/prefix, as lists show an S3 connection (s3://bucket/ without a prefix).
export const s3Location = (bucket: string, prefix = '') => `s3://${bucket}/${normalPrefix(prefix)}`

// Where any connection points, as lists and pickers show it: connectionPlace (src/connections.ts).

// A bucket's answer to a test (POST /connections/test, /ping): `objects` is what the store
// listed at the prefix, a count or the entries themselves. The entries shown (at most `max`),
// and a summary line.
export type S3Objects = number | (string | { name?: string; key?: string; path?: string })[]
export function describeObjects(objects: S3Objects | undefined, max = 20): { summary: string; names: string[]; more: number } {
  if (objects === undefined || objects === null) return { summary: '', names: [], more: 0 }
  const count = typeof objects === 'number' ? objects : objects.length
  const names = typeof objects === 'number' ? [] : objects.map((o) => (typeof o === 'string' ? o : o.name ?? o.key ?? o.path ?? JSON.stringify(o)))
  const summary = count === 0 ? 'nothing at the prefix yet' : `${count.toLocaleString('en-US')} ${count === 1 ? 'entry' : 'entries'} at the prefix`
  return { summary, names: names.slice(0, max), more: Math.max(0, names.length - max) }
}
