import { describe, expect, it, vi } from 'vitest'

// api.ts reads sessionStorage when it loads (the browser has it; Node has not).
vi.hoisted(() => {
  const m = new Map<string, string>()
  ;(globalThis as any).sessionStorage = { getItem: (k: string) => m.get(k) ?? null, setItem: (k: string, v: string) => void m.set(k, v), removeItem: (k: string) => void m.delete(k) }
})
import { addHistory, completionSchema, countQuery, defaultAliases, ident, loadHistory, pageQuery, tableRef, toCsv, toJsonLines, validAlias, whereClause } from './explorer'
import { erGraph } from './er'
import { readable } from './api'

describe('SQL building', () => {
  it('quotes identifiers and literals', () => {
    expect(ident('a"b')).toBe('"a""b"')
    expect(tableRef('my1', 'shop', 'or"ders')).toBe('"my1"."shop"."or""ders"')
  })
  it('builds WHERE from filters: numbers stay numbers, text is a literal, LIKE wildcards are escaped', () => {
    expect(whereClause([])).toBe('')
    expect(whereClause([{ column: 'id', op: '>=', value: '10' }, { column: 'name', op: '=', value: "O'Brien" }]))
      .toBe(` WHERE "id" >= 10 AND "name" = 'O''Brien'`)
    expect(whereClause([{ column: 'note', op: 'contains', value: '50%_x' }]))
      .toBe(` WHERE CAST("note" AS VARCHAR) ILIKE '%50\\%\\_x%' ESCAPE '\\'`)
    expect(whereClause([{ column: 'email', op: 'is null', value: 'ignored' }, { column: 'x', op: 'contains', value: '' }])).toBe(' WHERE "email" IS NULL')
  })
  it('pages, sorts and counts', () => {
    const from = tableRef('t', 'shop', 'orders')
    expect(pageQuery(from, { limit: 50, offset: 0 })).toBe('SELECT * FROM "t"."shop"."orders" LIMIT 50')
    expect(pageQuery(from, { sort: { column: 'amount', desc: true }, limit: 25, offset: 50, filters: [{ column: 'id', op: '<', value: '9' }] }))
      .toBe('SELECT * FROM "t"."shop"."orders" WHERE "id" < 9 ORDER BY "amount" DESC NULLS LAST LIMIT 25 OFFSET 50')
    expect(countQuery(from, [])).toBe('SELECT count(*) AS n FROM "t"."shop"."orders"')
  })
  it('names sources pg1, my1, pg2 and checks aliases as the API does', () => {
    expect(defaultAliases([{ id: 'a', engine: 'postgres' }, { id: 'b', engine: 'mysql' }, { id: 'c', engine: 'postgres' }]).map((s) => s.alias)).toEqual(['pg1', 'my1', 'pg2'])
    expect(validAlias('pg1')).toBe(true)
    expect(validAlias('1pg')).toBe(false)
    expect(validAlias('main')).toBe(false)
    expect(validAlias('a-b')).toBe(false)
  })
  it('makes the completion schema alias.schema.table → columns', () => {
    expect(completionSchema([{ alias: 'my1', schema: 'shop', name: 'orders', columns: ['id'] }, { alias: 'pg1', schema: 'public', name: 'u' }]))
      .toEqual({ 'my1.shop.orders': ['id'], 'pg1.public.u': [] })
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
  it('draws foreign keys between tables of the set and keeps the others apart', () => {
    const g = erGraph([
      { schema: 's', name: 'orders', columns: [{ name: 'id', type: 'int64' }, { name: 'customer_id', type: 'int32' }], primaryKey: ['id'],
        foreignKeys: [{ name: 'fk1', columns: ['customer_id'], refTable: 'customers', refColumns: ['id'] }, { name: 'fk2', columns: ['x'], refSchema: 'other', refTable: 'y', refColumns: ['id'] }] },
      { schema: 's', name: 'customers', columns: [{ name: 'id', type: 'int32' }], primaryKey: ['id'], foreignKeys: [] },
    ])
    expect(g.nodes.map((n) => n.id)).toEqual(['s.orders', 's.customers'])
    expect(g.nodes[0].label).toContain('PK id')
    expect(g.nodes[0].label).toContain('FK customer_id')
    expect(g.edges).toEqual([{ id: 's.orders:fk1', source: 's.orders', target: 's.customers', label: 'customer_id', from: ['customer_id'], to: ['id'] }])
    expect(g.external.map((e) => e.target)).toEqual(['other.y'])
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
