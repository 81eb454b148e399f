// The REST API client: every call sends the session's API key in X-API-Key.
import { reactive } from 'vue'
import type { S3Objects } from './s3'

const KEY = 'dbstreams.apiKey'
export const BASE = '/api/v1'

export const session = reactive({ key: sessionStorage.getItem(KEY) ?? '' })

export function signIn(key: string) {
  session.key = key
  sessionStorage.setItem(KEY, key)
}
export function signOut() {
  session.key = ''
  sessionStorage.removeItem(KEY)
}

export interface FieldError { field: string; message: string }

// kind: 'network' (server unreachable), 'auth' (401), 'http' (any other error status).
// `message` is for people (readable(): what happened and what to do); `detail` is the server's
// own message, as it sent it.
export class ApiError extends Error {
  public detail: string
  constructor(
    public kind: 'network' | 'auth' | 'http',
    public status: number,
    public code: string,
    message: string,
    public fields: FieldError[] = [],
    detail?: string,
  ) {
    super(message)
    this.detail = detail ?? message
  }
}

export const UNREACHABLE = 'The dbstreams server cannot be reached. Is `dbstreams serve` running?'

// The message shown for an error answer: the server's message (it says what went wrong), with
// what the status means and what to do where the message alone does not say it.
export function readable(status: number, code: string, message: string): string {
  const m = message.replace(/\.$/, '')
  switch (status) {
    case 400: return m
    case 401: return 'The API key is not valid (or was revoked).'
    case 404: return `Not found: ${m}. It may have been deleted meanwhile; reload the page.`
    case 409: return `${m}. (Conflict with the current state: the action is refused until that changes.)`
    case 413: return `${m}. The request is too large for the server.`
    case 415: return `${m}. The server expects JSON.`
    case 429: return 'Too many requests in a short time: wait a few seconds and try again.'
    case 501: return `Not supported: ${m}.`
    case 502: case 504: return UNREACHABLE
    case 503:
      if (code === 'timeout' || /timeout|timed out/i.test(m)) return `${m}. The statement ran longer than its time limit.`
      return `${m}. A service it needs is unavailable: is dbstreams serve (or stream-reader/stream-writer --service, and NATS) running?`
    default:
      if (status >= 500) return `The server failed: ${m}. Its log (Logs screen, or the terminal of dbstreams serve) has the details.`
      return m
  }
}

let onUnauthorized: () => void = () => {}
export function setUnauthorizedHandler(fn: () => void) { onUnauthorized = fn }

async function raw(method: string, path: string, body?: unknown, key = session.key, signal?: AbortSignal): Promise<Response> {
  const headers: Record<string, string> = { 'X-API-Key': key }
  if (body !== undefined) headers['Content-Type'] = 'application/json'
  let res: Response
  try {
    res = await fetch(BASE + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal })
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e
    throw new ApiError('network', 0, 'unreachable', UNREACHABLE)
  }
  if (res.ok) return res
  let code = 'http_' + res.status, message = res.statusText || 'request failed', fields: FieldError[] = []
  try {
    const j = await res.json()
    if (j?.error) {
      code = j.error.code ?? code
      message = j.error.message ?? message
      fields = j.error.fields ?? []
    }
  } catch { /* not JSON: a proxy or a stopped server */ }
  if (res.status === 401) {
    if (key === session.key && session.key) onUnauthorized()
    throw new ApiError('auth', 401, code, readable(401, code, message), [], message)
  }
  const kind = res.status === 502 || res.status === 504 ? 'network' : 'http'
  throw new ApiError(kind, res.status, code, readable(res.status, code, message), fields, message)
}

export async function api<T = any>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const res = await raw(method, path, body, session.key, signal)
  if (res.status === 204) return undefined as T
  const text = await res.text()
  return (text ? JSON.parse(text) : undefined) as T
}
// A POST whose answer is a file (not JSON): its bytes, or the API's error as for api().
export async function postForBlob(path: string, body: unknown, signal?: AbortSignal): Promise<Blob> {
  return (await raw('POST', path, body, session.key, signal)).blob()
}
export const get = <T = any>(p: string) => api<T>('GET', p)
export const post = <T = any>(p: string, b: unknown = {}, signal?: AbortSignal) => api<T>('POST', p, b, signal)
export const put = <T = any>(p: string, b: unknown) => api<T>('PUT', p, b)
export const del = (p: string) => api<void>('DELETE', p)

// Checks a key against the server without keeping it.
export async function checkKey(key: string): Promise<{ version: string }> {
  const res = await raw('GET', '/version', undefined, key)
  return res.json()
}

// Server-sent events over fetch(): EventSource cannot send the X-API-Key header.
// Calls onEvent for each event; resolves when the stream ends; abort() stops it.
export async function sse(path: string, onEvent: (event: string, data: string) => void, signal: AbortSignal): Promise<void> {
  const res = await raw('GET', path, undefined, session.key, signal)
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buf = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    buf += value
    let i: number
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i)
      buf = buf.slice(i + 2)
      let event = 'message'
      const data: string[] = []
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue
        const c = line.indexOf(':')
        const field = c < 0 ? line : line.slice(0, c)
        const val = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '')
        if (field === 'event') event = val
        else if (field === 'data') data.push(val)
      }
      if (data.length) onEvent(event, data.join('\n'))
    }
  }
}

// --- API shapes (docs/openapi.json)
export type Engine = 'mysql' | 'postgres' | 's3' | 'file'
export interface Ssl { mode?: string; ca?: string; cert?: string; key?: string }
// A database has host, port and database; an S3 bucket (engine s3, src/s3.ts) has bucket,
// prefix, endpoint, region and addressing instead, its access key in `user`; a folder of the
// server (engine file, src/folder.ts) has only `path` and its params.
export interface Connection {
  id: string; name: string; engine: Engine; host?: string; port?: number; user: string
  database?: string; ssl: Ssl; params: Record<string, string>; hasPassword: boolean
  bucket?: string; prefix?: string; endpoint?: string; region?: string; addressing?: 'path' | 'virtual'
  sessionToken?: string  // s3: STORED_TOKEN (src/s3.ts) when a session token is stored, never the token
  path?: string
  createdAt?: number; updatedAt?: number
}
// serverVersion for a database; objects (what is at the prefix) for a bucket; objects (the
// number of entries) for a folder.
export interface TestResult { ok: boolean; latencyMs: number; serverVersion?: string; objects?: S3Objects; error?: string }
export type RunState = 'starting' | 'running' | 'paused' | 'stopping' | 'completed' | 'failed' | 'stopped'
export interface Run {
  id: string; streamId: string; stream: string; state: RunState; error: string | null
  rows: number; bytes: number; startedAt: number; endedAt: number | null;  // unix ms
  readerService?: string
}
export interface Verification { ok: boolean; tables: { source: string; target: string; rows: number; match: boolean }[] }
export interface TableProgress { name: string; estimatedRows: number; rowsRead: number; rowsWritten: number; progress: number | null }
// What a run would do (POST /streams/{id}/plan) or did (a run's `report`).
export interface TablePlan { source: string; target: string; action: string; statements: string[]; warnings: string[]; estimatedRows?: number }
export interface ObjectOutcome { kind: string; source: string; migrated: boolean; target?: string; reason?: string; definition?: string }
export interface RunPlan { tables: TablePlan[]; objects: ObjectOutcome[] }
export interface RunStatus extends Run {
  tables: TableProgress[]; rowsPerSecond: number; bytesPerSecond: number; progress: number | null
  cdcLagMs: number | null; cdcChanges?: number; recentLogs?: LogRecord[]
  writerServices?: string[]; verification?: Verification | null; report?: RunPlan | null
}
export interface ApiKey {
  id: string; name: string; prefix: string; createdAt: number; expiresAt: number | null
  revokedAt: number | null; state: 'active' | 'expired' | 'revoked'
}
export interface Health { status: 'ok' | 'degraded'; nats: boolean; readers: number; writers: number }
export interface Service {
  kind: 'reader' | 'writer'; id: string; host?: string; pid?: number; version?: string
  startedAt?: number; ts?: number; runs?: { run: string; stream: string; state: string }[]
  alive: boolean; lastSeenMs: number
}
export interface Stream { id: string; name: string; config: any; createdAt: number; updatedAt: number; lastRun: Run | null }
export interface LogRecord { ts?: string | number; level?: string; msg?: string; service?: string; stream?: string; [k: string]: unknown }

export const ACTIVE: RunState[] = ['starting', 'running', 'paused', 'stopping']
export const isActive = (r: Run | null | undefined) => !!r && ACTIVE.includes(r.state)

// Every item of a paged list route (`limit` at most 500 per page), up to `max` items.
export async function getAll<T>(path: string, max = 5000): Promise<T[]> {
  const out: T[] = []
  const sep = path.includes('?') ? '&' : '?'
  for (;;) {
    const page = await get<{ items: T[]; total: number }>(`${path}${sep}limit=500&offset=${out.length}`)
    out.push(...page.items)
    if (!page.items.length || out.length >= page.total || out.length >= max) return out
  }
}
