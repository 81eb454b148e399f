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
