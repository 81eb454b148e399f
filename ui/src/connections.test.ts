import { describe, expect, it } from 'vitest'
import { connectionPlace, testSummary } from './connections'

describe('where a connection points', () => {
  it('a bucket, a folder of the server or a database server', () => {
    expect(connectionPlace({ engine: 's3', bucket: 'lake', prefix: 'in', user: 'AKIA1' }, true)).toBe('s3://lake/in')
    expect(connectionPlace({ engine: 'file', path: '/srv/lake/exports' }, true)).toBe('file:///srv/lake/exports')
    expect(connectionPlace({ engine: 'file', path: '/srv/lake/' })).toBe('file:///srv/lake')
    expect(connectionPlace({ engine: 'mysql', host: 'db', port: 3306, user: 'root', database: '' }, true)).toBe('root@db:3306')
    expect(connectionPlace({ engine: 'postgres', host: 'pg', port: 5432, user: 'app', database: 'shop' })).toBe('pg:5432/shop')
  })
})

describe('what a test found', () => {
  it('by kind: the version, the entries at the prefix, the entries in the folder', () => {
    expect(testSummary('postgres', { ok: true, latencyMs: 3, serverVersion: 'PostgreSQL 17.2' })).toBe('PostgreSQL 17.2')
    expect(testSummary('mysql', { ok: true, latencyMs: 3 })).toBe('')
    expect(testSummary('s3', { ok: true, latencyMs: 3, objects: 4 })).toBe('4 entries at the prefix')
    expect(testSummary('file', { ok: true, latencyMs: 1, objects: 4 })).toBe('4 entries in the folder')
    expect(testSummary('file', { ok: true, latencyMs: 1, objects: 0 })).toBe('the folder is empty')
  })
})
