export function bytes(n: number | null | undefined): string {
  if (n == null || !isFinite(n)) return '–'
  const u = ['B', 'KB', 'MB', 'GB', 'TB']
  let i = 0
  while (Math.abs(n) >= 1000 && i < u.length - 1) { n /= 1000; i++ }
  return (i === 0 ? n.toFixed(0) : n.toFixed(n < 10 ? 2 : 1)) + ' ' + u[i]
}
export function num(n: number | null | undefined): string {
  if (n == null || !isFinite(n)) return '–'
  return Math.round(n).toLocaleString('en-US')
}
export function duration(sec: number | null | undefined): string {
  if (sec == null || !isFinite(sec) || sec < 0) return '–'
  sec = Math.round(sec)
  const h = Math.floor(sec / 3600), m = Math.floor((sec % 3600) / 60), s = sec % 60
  if (h) return `${h}h ${m}m`
  if (m) return `${m}m ${s}s`
  return `${s}s`
}
export function when(epochSec: number | null | undefined): string {
  if (!epochSec) return '–'
  const d = new Date(epochSec * 1000)
  return d.toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'medium' })
}
export function ago(epochSec: number | null | undefined): string {
  if (!epochSec) return '–'
  const s = Date.now() / 1000 - epochSec
  if (s < 60) return 'just now'
  if (s < 3600) return `${Math.floor(s / 60)} min ago`
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`
  return `${Math.floor(s / 86400)} d ago`
}

// A log record's fields beyond ts/level/msg as "k=v" text; the nested `fields` object is
// flattened, and empty values are left out.
export function logExtras(r: Record<string, unknown>, skip: string[] = ['ts', 'level', 'msg']): string {
  const out: string[] = []
  const add = (k: string, v: unknown) => {
    if (v === '' || v == null) return
    out.push(`${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
  }
  for (const [k, v] of Object.entries(r)) {
    if (skip.includes(k)) continue
    if (k === 'fields' && v && typeof v === 'object' && !Array.isArray(v)) {
      for (const [fk, fv] of Object.entries(v as Record<string, unknown>)) add(fk, fv)
    } else add(k, v)
  }
  return out.join(' ')
}
