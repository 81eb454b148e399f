import { describe, expect, it, vi } from 'vitest'

// api.ts reads sessionStorage when it loads (the browser has it; Node has not).
vi.hoisted(() => {
  const m = new Map<string, string>()
  ;(globalThis as any).sessionStorage = { getItem: (k: string) => m.get(k) ?? null, setItem: (k: string, v: string) => void m.set(k, v), removeItem: (k: string) => void m.delete(k) }
})
import { addHistory, completionSchema, defaultAliases, loadHistory, nextAlias, toCsv, toJsonLines, toRowFilters, validAlias } from './explorer'
import { erGraph } from './er'
import { readable } from './api'

describe('filters and sources', () => {
  it('turns the filter rows into the table route\'s filters: numbers stay numbers, lists split, empty contains dropped', () => {
    expect(toRowFilters([
      { column: 'id', op: '>=', value: '10' },
      { column: 'name', op: '=', value: "O'Brien" },
      { column: 'note', op: 'contains', value: '50%_x' },
      { column: 'x', op: 'contains', value: '' },
      { column: 'email', op: 'is null', value: 'ignored' },
      { column: 'customer_id', op: 'in', value: '1, 2,three' },
      { column: '', op: '=', value: '1' },
    ])).toEqual([
      { column: 'id', op: '>=', value: 10 },
      { column: 'name', op: '=', value: "O'Brien" },
      { column: 'note', op: 'contains', value: '50%_x' },
      { column: 'email', op: 'is null' },
      { column: 'customer_id', op: 'in', value: [1, 2, 'three'] },
    ])
  })
  it('names sources pg1, my1, pg2 and checks aliases as the API does', () => {
    expect(defaultAliases([{ id: 'a', engine: 'postgres' }, { id: 'b', engine: 'mysql' }, { id: 'c', engine: 'postgres' }]).map((s) => s.alias)).toEqual(['pg1', 'my1', 'pg2'])
    expect(defaultAliases([{ id: 'a', engine: 's3' }, { id: 'b', engine: 'file' }, { id: 'c', engine: 's3' }, { id: 'd', engine: 'mysql' }]).map((s) => s.alias)).toEqual(['s3', 'files', 's3_2', 'my1'])
    expect(nextAlias('postgres', new Set(['pg1', 'pg2']))).toBe('pg3')
    expect(nextAlias('s3', new Set(['s3']))).toBe('s3_2')
    expect(validAlias('pg1')).toBe(true)
    expect(validAlias('1pg')).toBe(false)
    expect(validAlias('main')).toBe(false)
    expect(validAlias('a-b')).toBe(false)
  })
  it('makes the completion schema: alias.schema.table (federated) or schema.table → columns', () => {
    expect(completionSchema([{ alias: 'my1', schema: 'shop', name: 'orders', columns: ['id'] }, { alias: 'pg1', schema: 'public', name: 'u' }]))
      .toEqual({ 'my1.shop.orders': ['id'], 'pg1.public.u': [] })
    expect(completionSchema([{ schema: 'shop', name: 'orders', columns: ['id'] }])).toEqual({ 'shop.orders': ['id'] })
  })
})

describe('export', () => {
  const cols = [{ name: 'id', type: 'INTEGER' }, { name: 'note', type: 'VARCHAR' }]
  it('writes RFC 4180 CSV with NULL as an empty field', () => {
    expect(toCsv(cols, [[1, 'a,"b"\nc'], [2, null]])).toBe('id,note\r\n1,"a,""b""\nc"\r\n2,\r\n')
  })
  it('writes JSON lines', () => {
    expect(toJsonLines(cols, [[1, null]])).toBe('{"id":1,"note":null}\n')
    expect(toJsonLines(cols, [])).toBe('')
  })
})

describe('history', () => {
  it('keeps the newest first, without duplicates, at most 50', () => {
    const m = new Map<string, string>()
    const store = { getItem: (k: string) => m.get(k) ?? null, setItem: (k: string, v: string) => void m.set(k, v) }
    for (let i = 0; i < 60; i++) addHistory({ sql: `SELECT ${i}`, sources: [], at: i, ok: true }, store)
    addHistory({ sql: 'SELECT 5', sources: [], at: 99, ok: false }, store)
    const h = loadHistory(store)
    expect(h.length).toBe(50)
    expect(h[0]).toMatchObject({ sql: 'SELECT 5', ok: false })
    expect(h.filter((x) => x.sql === 'SELECT 5').length).toBe(1)
    expect(loadHistory({ getItem: () => 'not json' })).toEqual([])
  })
})

describe('ER graph', () => {
  it('labels tables with PK/FK marks, draws foreign keys, and marks tables of other schemas', () => {
    const g = erGraph({ schema: 's', nodes: [
      { id: 's.orders', schema: 's', name: 'orders', columns: [{ name: 'id', type: 'BIGINT', nullable: false, primaryKey: true }, { name: 'customer_id', type: 'INT', nullable: false, primaryKey: false }] },
      { id: 's.customers', schema: 's', name: 'customers', columns: [{ name: 'id', type: 'INT', nullable: false, primaryKey: true }] },
      { id: 'other.y', schema: 'other', name: 'y', external: true, columns: [] },
    ], edges: [
      { id: 'e1', name: 'fk1', from: 's.orders', fromColumns: ['customer_id'], to: 's.customers', toColumns: ['id'], onDelete: 'NO ACTION', onUpdate: 'NO ACTION' },
      { id: 'e2', name: 'fk2', from: 's.orders', fromColumns: ['customer_id'], to: 'other.y', toColumns: ['id'], onDelete: '', onUpdate: '' },
      { id: 'e3', name: 'gone', from: 's.orders', fromColumns: ['x'], to: 'nowhere.z', toColumns: ['id'], onDelete: '', onUpdate: '' },
    ] })
    expect(g.tables).toBe(2)
    expect(g.nodes[0].label).toContain('PK id  bigint')
    expect(g.nodes[0].label).toContain('FK customer_id  int')
    expect(g.nodes[2]).toMatchObject({ external: true })
    expect(g.nodes[2].label).toContain('other.y')
    expect(g.edges.map((e) => [e.source, e.target, e.label])).toEqual([['s.orders', 's.customers', 'customer_id'], ['s.orders', 'other.y', 'customer_id']])
  })
})

describe('readable errors', () => {
  it('says what a status means and what to do', () => {
    expect(readable(409, 'failed_precondition', 'connection c_1 is used by stream s_2.')).toMatch(/^connection c_1 is used by stream s_2\. \(Conflict/)
    expect(readable(503, 'unavailable', 'no reader service is alive')).toMatch(/is dbstreams serve/)
    expect(readable(503, 'timeout', 'the statement ran over 5000 ms')).toMatch(/time limit/)
    expect(readable(429, 'too_many_requests', 'slow down')).toMatch(/wait a few seconds/)
    expect(readable(500, 'internal', 'boom')).toMatch(/server failed: boom/)
    expect(readable(502, '', '')).toMatch(/cannot be reached/)
    expect(readable(400, 'invalid_argument', 'port must be an integer')).toBe('port must be an integer')
  })
})
