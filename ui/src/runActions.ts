// Start / pause / resume / stop with readable messages for the API's 409 and 503.
import { post, ApiError, type Run } from './api'

// The API client's messages are already readable (api.ts, readable()); a start refused with 503
// means no reader or writer is alive, which the generic text says less precisely.
export function explain(e: unknown): string {
  const a = e as ApiError
  if (a.status === 503) return `${a.detail}. No reader or writer service is alive: is dbstreams serve (or stream-reader/stream-writer --service) running?`
  if (a.status === 409) return a.detail
  return a.message ?? String(e)
}
export const startStream = (id: string) => post<Run>(`/streams/${id}/start`, {})
export const pauseRun = (id: string) => post<Run>(`/runs/${id}/pause`, {})
export const resumeRun = (id: string) => post<Run>(`/runs/${id}/resume`, {})
export const stopRun = (id: string, force = false) => post<Run>(`/runs/${id}/stop`, force ? { force: true } : {})
