// S3 bucket connections (engine "s3", docs/files.md): the connection form's state, its checks,
// the body it sends to POST/PUT /connections and /connections/test, and how a saved connection
// is named in lists (s3://bucket/prefix). Pure: no API calls, no Vue.
import type { Connection } from './api'

export type S3Format = 'parquet' | 'csv' | 'jsonl'
export type S3Addressing = 'path' | 'virtual'
// TLS of an S3 endpoint: '' checks the certificate (against `ca` when one is given); 'require'
// encrypts without checking it (src/sources/files/remote.h). Other SSL modes mean nothing here.
export type S3SslMode = '' | 'require'

export interface S3Form {
  name: string
  bucket: string
  prefix: string
  endpoint: string  // '' = AWS (https://s3.<region>.amazonaws.com)
  region: string
  addressing: S3Addressing
  accessKey: string  // the API's `user`
  secretKey: string  // the API's `password`; on an edit '' keeps the stored one
  sslMode: S3SslMode
  ca: string  // a path on the server or PEM text
  format: S3Format
  compression: string  // '' = the format's default
  rowsPerFile: number | null  // null = the default (1,000,000)
  // CDC streams into the bucket (docs/files.md, "Changes into files"), as for a folder
  // (src/folder.ts): a change file is published when it holds changeFileRows changes or its
  // oldest change is changeFileSeconds old.
  changeFileRows: number | null  // null = the default: rowsPerFile
  changeFileSeconds: number | null  // null = the default (60); 0 publishes every batch at once
}

// The server's defaults (src/sources/files/remote.h).
export const DEFAULT_REGION = 'us-east-1'
export const awsEndpoint = (region: string) => `https://s3.${region || DEFAULT_REGION}.amazonaws.com`
export const DEFAULT_ROWS_PER_FILE = 1_000_000

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

export function emptyS3Form(): S3Form {
  return {
    name: '', bucket: '', prefix: '', endpoint: '', region: DEFAULT_REGION, addressing: 'path',
    accessKey: '', secretKey: '', sslMode: '', ca: '', format: 'parquet', compression: '', rowsPerFile: null,
    changeFileRows: null, changeFileSeconds: null,
  }
}

// A whole number of at least min, or null (the default); for the form's checks, here and in
// src/folder.ts.
export const wholeNumber = (n: number | null, min: number) => n === null || (Number.isInteger(n) && n >= min)
// A count param as the API returns it (a string of digits); null when absent or not one.
export function countParam(v: string | undefined, min: number): number | null {
  if (v === undefined || !/^\d+$/.test(v)) return null
  const n = Number(v)
  return Number.isSafeInteger(n) && n >= min ? n : null
}

// A prefix as the server keeps it: no leading or trailing '/' (src/config/connection.cc).
export const normalPrefix = (prefix: string) => prefix.trim().replace(/^\/+|\/+$/g, '')

// The form of a saved connection (GET /connections/{id}). The API fills in the AWS endpoint of
// the region when none was given: that one is shown as empty (AWS), so that a change of region
// moves the endpoint with it. The secret key is never returned (blank: keep it).
export function s3FormOf(c: Partial<Connection>): S3Form {
  const f = emptyS3Form()
  const p = c.params ?? {}
  f.name = c.name ?? ''
  f.bucket = c.bucket ?? ''
  f.prefix = c.prefix ?? ''
  f.region = c.region || DEFAULT_REGION
  f.endpoint = c.endpoint && c.endpoint !== awsEndpoint(f.region) ? c.endpoint : ''
  f.addressing = c.addressing === 'virtual' ? 'virtual' : 'path'
  f.accessKey = c.user ?? ''
  f.sslMode = c.ssl?.mode === 'require' ? 'require' : ''
  f.ca = c.ssl?.ca ?? ''
  f.format = FORMATS.some((x) => x.value === p.format) ? (p.format as S3Format) : p.format === 'ndjson' || p.format === 'json' ? 'jsonl' : 'parquet'
  f.compression = compressionFor(f.format, p.compression ?? '')
  f.rowsPerFile = countParam(p.rowsPerFile, 1)
  f.changeFileRows = countParam(p.changeFileRows, 1)
  f.changeFileSeconds = countParam(p.changeFileSeconds, 0)
  return f
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
  if (!wholeNumber(f.rowsPerFile, 1)) errs.rowsPerFile = 'rows per file must be a positive whole number'
  if (!wholeNumber(f.changeFileRows, 1)) errs.changeFileRows = 'changes per file must be a positive whole number'
  if (!wholeNumber(f.changeFileSeconds, 0)) errs.changeFileSeconds = 'seconds must be a whole number, 0 or more'
  return errs
}

// The body of POST /connections, PUT /connections/{id} and (withName false) POST
// /connections/test. An empty endpoint is left out (the API then uses AWS's), so is an empty
// secret key (an edit keeps the stored one); the CA only counts when the certificate is checked.
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
  const ssl: Record<string, string> = {}
  if (f.sslMode) ssl.mode = f.sslMode
  else if (f.ca) ssl.ca = f.ca
  b.ssl = ssl
  const params: Record<string, string> = { format: f.format }
  const compression = compressionFor(f.format, f.compression)
  if (compression) params.compression = compression
  if (f.rowsPerFile !== null) params.rowsPerFile = String(f.rowsPerFile)
  if (f.changeFileRows !== null) params.changeFileRows = String(f.changeFileRows)
  if (f.changeFileSeconds !== null) params.changeFileSeconds = String(f.changeFileSeconds)
  b.params = params
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
