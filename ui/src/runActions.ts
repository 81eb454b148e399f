// Start / pause / resume / stop with readable messages for the API's 409 and 503.
import { post, ApiError, type Run } from './api'

export function explain(e: unknown): string {
  const a = e as ApiError
  if (a.status === 503) return `${a.message}. No reader or writer service is alive: is dbstreams serve (or stream-reader/stream-writer --service) running?`
  if (a.status === 409) return a.message
  if (a.status === 501) return `Not supported by the run's services: ${a.message}`
  return a.message ?? String(e)
}
export const startStream = (id: string) => post<Run>(`/streams/${id}/start`, {})
export const pauseRun = (id: string) => post<Run>(`/runs/${id}/pause`, {})
export const resumeRun = (id: string) => post<Run>(`/runs/${id}/resume`, {})
export const stopRun = (id: string, force = false) => post<Run>(`/runs/${id}/stop`, force ? { force: true } : {})
