import { describe, expect, it, vi } from 'vitest'

// api.ts (through explorer.ts) reads sessionStorage when it loads (the browser has it; Node has not).
vi.hoisted(() => {
  const m = new Map<string, string>()
  ;(globalThis as any).sessionStorage = { getItem: (k: string) => m.get(k) ?? null, setItem: (k: string, v: string) => void m.set(k, v), removeItem: (k: string) => void m.delete(k) }
})
import { defaultAliases } from './explorer'
import { duckIdent, followAliases, isFederated, isFileEngine, starterSql, starterTable } from './sqlConsole'

const lake = { id: 'c_s3', name: 'lake', engine: 's3' as const, bucket: 'dbstreams-test', prefix: 'lake' }
const drop = { id: 'c_dir', name: 'drop', engine: 'file' as const, path: '/srv/drop' }
const pg = { id: 'c_pg', name: 'analytics', engine: 'postgres' as const }
const my = { id: 'c_my', name: 'shop', engine: 'mysql' as const }
const engineOf = (id: string) => [lake, drop, pg, my].find((c) => c.id === id)?.engine

describe('console mode', () => {
  it('runs a single bucket or folder federated, a single database on its own console', () => {
    expect(isFileEngine('s3') && isFileEngine('file') && !isFileEngine('postgres') && !isFileEngine(undefined)).toBe(true)
    expect(isFederated([{ connectionId: 'c_s3' }], engineOf)).toBe(true)
    expect(isFederated([{ connectionId: 'c_dir' }], engineOf)).toBe(true)
    expect(isFederated([{ connectionId: 'c_pg' }], engineOf)).toBe(false)
    expect(isFederated([{ connectionId: 'c_my' }], engineOf)).toBe(false)
    expect(isFederated([{ connectionId: 'c_my' }, { connectionId: 'c_pg' }], engineOf)).toBe(true)
    expect(isFederated([{ connectionId: 'gone' }], engineOf)).toBe(false)
    expect(isFederated([], engineOf)).toBe(false)
  })
  it('gives a bucket the alias s3 and a folder the alias files, as the server does', () => {
    expect(defaultAliases([lake]).map((s) => s.alias)).toEqual(['s3'])
    expect(defaultAliases([drop]).map((s) => s.alias)).toEqual(['files'])
    expect(defaultAliases([lake, drop, lake, pg]).map((s) => s.alias)).toEqual(['s3', 'files', 's3_2', 'pg1'])
  })
})

describe('aliases follow the connection picked', () => {
  it('a default alias takes the new kind\'s default, a typed one stays', () => {
    expect(followAliases([{ alias: 'my1', connectionId: 'c_s3' }], engineOf)).toEqual([{ alias: 's3', connectionId: 'c_s3' }])
    expect(followAliases([{ alias: 's3', connectionId: 'c_dir' }], engineOf)).toEqual([{ alias: 'files', connectionId: 'c_dir' }])
    expect(followAliases([{ alias: 'my1', connectionId: 'c_my' }, { alias: 'my2', connectionId: 'c_pg' }], engineOf))
      .toEqual([{ alias: 'my1', connectionId: 'c_my' }, { alias: 'pg1', connectionId: 'c_pg' }])
    expect(followAliases([{ alias: 'pg1', connectionId: 'c_pg' }, { alias: 'pg2', connectionId: 'c_s3' }, { alias: 's3', connectionId: 'c_my' }], engineOf))
      .toEqual([{ alias: 'pg1', connectionId: 'c_pg' }, { alias: 's3_2', connectionId: 'c_s3' }, { alias: 'my1', connectionId: 'c_my' }])
  })
  it('changes nothing when every alias fits its kind or was typed', () => {
    expect(followAliases([{ alias: 'my1', connectionId: 'c_my' }, { alias: 'pg1', connectionId: 'c_pg' }], engineOf)).toBeNull()
    expect(followAliases([{ alias: 'lake', connectionId: 'c_pg' }, { alias: 's3_2', connectionId: 'c_s3' }], engineOf)).toBeNull()
    expect(followAliases([{ alias: 'pg1', connectionId: 'gone' }], engineOf)).toBeNull()
  })
})

describe('starter statement', () => {
  const tables = [{ schema: 'public', name: 'orders' }, { schema: 'public', name: 'sales' }]
  it('reads the first table of a bucket under its alias', () => {
    expect(starterSql({ conn: lake, aliases: ['s3'], federated: true, tables })).toBe(
      '-- DuckDB SQL on lake (s3://dbstreams-test/lake): each file or folder there is a table of s3.public\nSELECT *\nFROM s3.public.orders\nLIMIT 100')
  })
  it('reads the table picked in the tree, quoted where DuckDB needs it', () => {
    expect(starterSql({ conn: drop, aliases: ['files'], federated: true, schema: 'public', table: '2026-01', tables }).split('\n').slice(1)).toEqual(
      ['SELECT *', 'FROM files.public."2026-01"', 'LIMIT 100'])
    expect(starterSql({ conn: drop, aliases: ['files'], federated: true, tables })).toContain('(file:///srv/drop)')
  })
  it('a bucket whose tables are not known yet, or that has none, starts with a statement that runs', () => {
    for (const t of [null, []]) {
      expect(starterSql({ conn: lake, aliases: ['s3'], federated: true, tables: t })).toBe(
        '-- DuckDB SQL on lake (s3://dbstreams-test/lake): each file or folder there is a table of s3.public\nSELECT 1 AS one')
    }
  })
  it('several sources: DuckDB over their aliases', () => {
    expect(starterSql({ conn: lake, aliases: ['s3', 'pg1'], federated: true, tables })).toBe('-- DuckDB SQL over s3, pg1: a table is alias.schema.table\nSELECT 1 AS one')
  })
  it('a database: its own SQL, the picked table quoted in its dialect', () => {
    expect(starterSql({ conn: my, aliases: ['my1'], federated: false })).toBe('-- MySQL / MariaDB SQL on shop\nSELECT 1 AS one')
    expect(starterSql({ conn: pg, aliases: ['pg1'], federated: false })).toBe('-- PostgreSQL SQL on analytics\nSELECT 1 AS one')
    expect(starterSql({ conn: my, aliases: ['my1'], federated: false, schema: 'shop', table: 'Order Lines' })).toBe('SELECT *\nFROM shop.`Order Lines`\nLIMIT 100')
    expect(starterSql({ conn: pg, aliases: ['pg1'], federated: false, schema: 'public', table: 'users' })).toBe('SELECT *\nFROM public.users\nLIMIT 100')
    expect(starterSql({ aliases: [], federated: false })).toBe('SELECT 1 AS one')
  })
  it('picks the table: the tree\'s, else the first of public, else the first', () => {
    expect(starterTable(null)).toBeNull()
    expect(starterTable([{ schema: 'other', name: 'a' }, { schema: 'public', name: 'b' }])).toEqual({ schema: 'public', name: 'b' })
    expect(starterTable([{ schema: 'other', name: 'a' }])).toEqual({ schema: 'other', name: 'a' })
    expect(starterTable(null, { table: 'events' })).toEqual({ schema: 'public', name: 'events' })
    expect(duckIdent('orders')).toBe('orders')
    expect(duckIdent('Say "hi"')).toBe('"Say ""hi"""')
  })
})
