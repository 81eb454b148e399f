// The REST API client: every call sends the session's API key in X-API-Key.
import { reactive } from 'vue'

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
export class ApiError extends Error {
  constructor(
    public kind: 'network' | 'auth' | 'http',
    public status: number,
    public code: string,
    message: string,
    public fields: FieldError[] = [],
  ) {
    super(message)
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
    throw new ApiError('network', 0, 'unreachable', 'The dbstreams server cannot be reached. Is `dbstreams serve` running?')
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
    throw new ApiError('auth', 401, code, 'The API key is not valid (or was revoked).')
  }
  if (res.status === 502 || res.status === 504) {
    throw new ApiError('network', res.status, code, 'The dbstreams server cannot be reached. Is `dbstreams serve` running?')
  }
  throw new ApiError('http', res.status, code, message, fields)
}

export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await raw(method, path, body)
  if (res.status === 204) return undefined as T
  const text = await res.text()
  return (text ? JSON.parse(text) : undefined) as T
}
export const get = <T = any>(p: string) => api<T>('GET', p)
export const post = <T = any>(p: string, b: unknown = {}) => api<T>('POST', p, b)
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
export type Engine = 'mysql' | 'postgres'
export interface Ssl { mode?: string; ca?: string; cert?: string; key?: string }
export interface Connection {
  id: string; name: string; engine: Engine; host: string; port: number; user: string
  database: string; ssl: Ssl; params: Record<string, string>; hasPassword: boolean
  createdAt?: number; updatedAt?: number
}
export interface TestResult { ok: boolean; latencyMs: number; serverVersion?: string; error?: string }
export type RunState = 'starting' | 'running' | 'paused' | 'stopping' | 'completed' | 'failed' | 'stopped'
export interface Run {
  id: string; streamId: string; stream: string; state: RunState; error: string | null
  rows: number; bytes: number; startedAt: number; endedAt: number | null;  // unix ms
  readerService?: string
}
export interface TableProgress { name: string; estimatedRows: number; rowsRead: number; rowsWritten: number; progress: number | null }
export interface RunStatus extends Run {
  tables: TableProgress[]; rowsPerSecond: number; bytesPerSecond: number; progress: number | null
  cdcLagMs: number | null; cdcChanges?: number; recentLogs?: LogRecord[]
}
export interface Stream { id: string; name: string; config: any; createdAt: number; updatedAt: number; lastRun: Run | null }
export interface LogRecord { ts?: string | number; level?: string; msg?: string; service?: string; stream?: string; [k: string]: unknown }

export const ACTIVE: RunState[] = ['starting', 'running', 'paused', 'stopping']
export const isActive = (r: Run | null | undefined) => !!r && ACTIVE.includes(r.state)
