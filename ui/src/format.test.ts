import { describe, expect, it } from 'vitest'
import { bytes, duration, logExtras, num } from './format'

describe('format', () => {
  it('bytes', () => {
    expect(bytes(0)).toBe('0 B')
    expect(bytes(999)).toBe('999 B')
    expect(bytes(9_550_000)).toBe('9.55 MB')
    expect(bytes(123_400_000_000)).toBe('123.4 GB')
    expect(bytes(null)).toBe('–')
  })
  it('num and duration', () => {
    expect(num(402050)).toBe('402,050')
    expect(num(undefined)).toBe('–')
    expect(duration(3)).toBe('3s')
    expect(duration(125)).toBe('2m 5s')
    expect(duration(7300)).toBe('2h 1m')
    expect(duration(-1)).toBe('–')
  })
  it('logExtras flattens fields and drops empty values', () => {
    expect(logExtras({ ts: 't', level: 'info', msg: 'm', component: 'api', fields: { run: 'r_1', error: '' } }))
      .toBe('component=api run=r_1')
  })
})
