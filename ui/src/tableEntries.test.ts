import { describe, expect, it } from 'vitest'
import {
  buildTables, emptyOptions, emptyPicker, entryIndex, entryOf, firstKeyword, hasOptions, optionErrors, optionsSummary, orderColumns,
  parseTables, pickerErrors, queryErrors, tableEntry, validColumnType, type Picker,
} from './tableEntries'

const picker = (p: Partial<Picker>): Picker => ({ ...emptyPicker(), ...p })

describe('tables entries from the picker', () => {
  it('sends plain names for tables without options, objects for tables with options', () => {
    const p = picker({
      schema: 'shop', allTables: false, selected: ['orders', 'customers', 'products'],
      options: { customers: { columns: ['id', 'email'], filter: ' active = 1 ', target: '', columnTypes: {} }, products: emptyOptions() },
    })
    const b = buildTables(p)!
    expect(b.entries).toEqual(['shop.orders', { name: 'shop.customers', columns: ['id', 'email'], filter: 'active = 1' }, 'shop.products'])
    expect(b.owners).toEqual([{ kind: 'table', table: 'orders' }, { kind: 'table', table: 'customers' }, { kind: 'table', table: 'products' }])
  })

  it('sends all tables as schema.*, after the tables that have options (the first entry that matches applies)', () => {
    const p = picker({ schema: 'shop', allTables: true, selected: ['orders'], options: { orders: { ...emptyOptions(), target: 'all_orders' }, products: emptyOptions() } })
    expect(buildTables(p)!.entries).toEqual([{ name: 'shop.orders', target: 'all_orders' }, 'shop.*'])
    expect(buildTables(picker({ schema: 'shop' }))!.entries).toEqual(['shop.*'])
  })

  it('ignores the options of tables that are not picked', () => {
    const p = picker({ schema: 'shop', allTables: false, selected: ['orders'], options: { customers: { ...emptyOptions(), filter: 'id < 3' } } })
    expect(buildTables(p)!.entries).toEqual(['shop.orders'])
  })

  it('sends custom queries last, as {name, query} (and target when set)', () => {
    const p = picker({ schema: 'shop', allTables: false, selected: ['orders'], queries: [{ name: ' shop.big ', query: 'SELECT id FROM shop.orders WHERE amount > 100', target: '' }, { name: 'shop.top', query: 'SELECT 1 AS one', target: 'top_one' }] })
    const b = buildTables(p)!
    expect(b.entries).toEqual(['shop.orders', { name: 'shop.big', query: 'SELECT id FROM shop.orders WHERE amount > 100' }, { name: 'shop.top', query: 'SELECT 1 AS one', target: 'top_one' }])
    expect(b.owners.slice(1)).toEqual([{ kind: 'query', index: 0 }, { kind: 'query', index: 1 }])
  })

  it('sends nothing without a schema or queries', () => {
    expect(buildTables(emptyPicker())).toBeUndefined()
    expect(buildTables(picker({ queries: [{ name: 'shop.q', query: 'SELECT 1', target: '' }] }))!.entries).toEqual([{ name: 'shop.q', query: 'SELECT 1' }])
  })

  it('makes an entry with only the options that are set, and file column types', () => {
    expect(tableEntry('s3', 'sales', { ...emptyOptions(), columnTypes: { price: 'DECIMAL(12,2)' } })).toEqual({ name: 's3.sales', columnTypes: { price: 'DECIMAL(12,2)' } })
    expect(tableEntry('shop', 'orders', { ...emptyOptions(), filter: '  ', target: ' ' })).toBe('shop.orders')
    expect(hasOptions(emptyOptions())).toBe(false)
  })
})

describe('tables entries back into the picker', () => {
  const roundTrip = (tables: unknown[]) => {
    const p = parseTables(tables)
    expect(p).not.toBeNull()
    expect(buildTables(p!)!.entries).toEqual(tables)
    return p!
  }

  it('round-trips plain names, objects and custom queries', () => {
    const p = roundTrip(['shop.orders', { name: 'shop.customers', columns: ['id', 'email'], filter: 'active = 1', target: 'people' }, { name: 'shop.big', query: 'WITH x AS (SELECT 1) SELECT * FROM x', target: 'big' }])
    expect(p.schema).toBe('shop')
    expect(p.allTables).toBe(false)
    expect(p.selected).toEqual(['orders', 'customers'])
    expect(p.options.customers).toEqual({ columns: ['id', 'email'], filter: 'active = 1', target: 'people', columnTypes: {} })
    expect(p.queries).toEqual([{ name: 'shop.big', query: 'WITH x AS (SELECT 1) SELECT * FROM x', target: 'big' }])
  })

  it('round-trips all tables with per-table options before schema.*', () => {
    const p = roundTrip([{ name: 'shop.orders', columns: ['id'] }, 'shop.*', { name: 'shop.q', query: 'SELECT 1' }])
    expect(p.allTables).toBe(true)
    expect(Object.keys(p.options)).toEqual(['orders'])
    roundTrip(['shop.*'])
  })

  it('round-trips file column types', () => {
    const p = roundTrip([{ name: 'public.sales', columnTypes: { price: 'DECIMAL(12,2)', id: 'BIGINT' } }])
    expect(p.options.sales.columnTypes).toEqual({ price: 'DECIMAL(12,2)', id: 'BIGINT' })
  })

  it('keeps the columns in the order the config lists them', () => {
    const p = roundTrip([{ name: 'shop.customers', columns: ['email', 'id'] }])
    expect(p.options.customers.columns).toEqual(['email', 'id'])
  })

  it('reads an object without options, or with empty columns, as the plain table', () => {
    const p = parseTables([{ name: 'shop.orders' }, { name: 'shop.customers', columns: [] }])!
    expect(buildTables(p)!.entries).toEqual(['shop.orders', 'shop.customers'])
  })

  it('starts with all tables and no schema when the config has no tables', () => {
    expect(parseTables(undefined)).toEqual(emptyPicker())
    expect(parseTables([])).toEqual(emptyPicker())
  })

  it('leaves to the JSON tab what the picker cannot show', () => {
    const cannot: unknown[] = [
      'shop.*',                                                  // not an array
      ['shop.ord*'],                                             // another pattern
      ['orders'],                                                // no schema
      ['shop.orders', 'crm.people'],                             // two schemas
      ['shop.orders', 'shop.orders'],                            // a table twice
      ['shop.*', 'shop.orders'],                                 // a name besides schema.*
      ['shop.orders', 'shop.*'],
      ['shop.*', { name: 'shop.orders', filter: 'x' }],          // options after schema.* (never applied)
      ['shop.*', 'shop.*'],
      [{ name: 'shop.orders', where: 'x' }],                     // a key the picker does not know
      [{ name: 'shop.orders', columns: 'id' }],                  // a wrong value type
      [{ name: 'shop.orders', columnTypes: { id: 5 } }],
      [{ name: 'shop.q', query: 'SELECT 1', columns: ['a'] }],  // query keys the picker does not edit
      [{ name: 'shop.q', query: 7 }],
      [42],
    ]
    for (const t of cannot) expect(parseTables(t), JSON.stringify(t)).toBeNull()
  })
})

describe('columns, in the table\'s order', () => {
  it('orders the chosen columns as the table has them, unknown names last', () => {
    expect(orderColumns(['price', 'id', 'gone'], ['id', 'title', 'price'])).toEqual(['id', 'price', 'gone'])
    expect(orderColumns(new Set(['title']), ['id', 'title', 'price'])).toEqual(['title'])
  })

  it('summarises a table\'s options', () => {
    expect(optionsSummary({ columns: ['id', 'email'], filter: 'x', target: 'vip', columnTypes: { a: 'INT' } }, 4)).toBe('2 of 4 columns · filter · as vip · 1 column type')
    expect(optionsSummary(emptyOptions())).toBe('')
    expect(optionsSummary(undefined)).toBe('')
  })
})

describe('checks, as the server makes them', () => {
  it('checks the columns: at least one, each once, each in the table', () => {
    const base = emptyOptions()
    expect(optionErrors(base, { files: false })).toEqual({})
    expect(optionErrors({ ...base, columns: [] }, { files: false }).columns).toMatch(/at least one/)
    expect(optionErrors({ ...base, columns: ['id', 'id'] }, { files: false }).columns).toMatch(/listed twice/)
    expect(optionErrors({ ...base, columns: ['id', ''] }, { files: false }).columns).toMatch(/empty/)
    expect(optionErrors({ ...base, columns: ['id', 'nope'] }, { files: false, tableColumns: ['id'], table: 'shop.t' }).columns).toBe("column 'nope' does not exist in shop.t")
    expect(optionErrors({ ...base, columns: ['id', 'nope'] }, { files: false })).toEqual({})
  })

  it('allows column types for file sources only, and DuckDB type names only', () => {
    const o = { ...emptyOptions(), columnTypes: { price: 'DECIMAL(12,2)' } }
    expect(optionErrors(o, { files: true })).toEqual({})
    expect(optionErrors(o, { files: false }).columnTypes).toMatch(/bucket and folder sources only/)
    expect(optionErrors({ ...o, columnTypes: { price: '' } }, { files: true }).columnTypes).toMatch(/price: a DuckDB type/)
    expect(optionErrors({ ...o, columnTypes: { price: 'DECIMAL(12,2); DROP' } }, { files: true }).columnTypes).toMatch(/DuckDB type/)
  })

  it('knows DuckDB type names as the server does', () => {
    for (const t of ['BIGINT', 'DECIMAL(12,2)', 'DECIMAL( 12 , 2 )', 'DOUBLE PRECISION', 'VARCHAR[]', 'INTEGER[][]', 'TIMESTAMP WITH TIME ZONE']) expect(validColumnType(t), t).toBe(true)
    for (const t of ['', ' BIGINT', 'DECIMAL (12,2)', 'DECIMAL(a)', 'INT)', '1INT', 'X'.repeat(65), 'INT; DROP TABLE x']) expect(validColumnType(t), t).toBe(false)
  })

  it('checks a custom query: a name, not a pattern, a SELECT or WITH, not for file sources', () => {
    const q = { name: 'shop.big', query: 'SELECT 1', target: '' }
    expect(queryErrors(q, { files: false })).toEqual({})
    expect(queryErrors({ ...q, name: ' ' }, { files: false }).name).toMatch(/required/)
    expect(queryErrors({ ...q, name: 'shop.b*' }, { files: false }).name).toMatch(/not a pattern/)
    expect(queryErrors({ ...q, query: '' }, { files: false }).query).toMatch(/required/)
    expect(queryErrors({ ...q, query: 'DELETE FROM shop.orders' }, { files: false }).query).toMatch(/SELECT or WITH/)
    expect(queryErrors({ ...q, query: '/* top */ -- rows\n (select 1)' }, { files: false })).toEqual({})
    expect(queryErrors(q, { files: true }).query).toMatch(/not custom queries/)
    expect(queryErrors(q, { files: false, otherNames: ['shop.big'] }).name).toMatch(/already read/)
  })

  it('finds the first keyword after comments and parentheses', () => {
    expect(firstKeyword('  # mysql\n/* a /* nested */ b */ ((with x as (select 1) select * from x))')).toBe('WITH')
    expect(firstKeyword('-- only a comment')).toBe('')
  })

  it('collects the problems of the whole picker, per table and per query', () => {
    const p = picker({
      schema: 'shop', allTables: false, selected: ['orders', 'customers'],
      options: { orders: { ...emptyOptions(), columns: ['id', 'nope'] }, customers: { ...emptyOptions(), filter: 'id < 10' }, products: { ...emptyOptions(), columns: [] } },
      queries: [{ name: 'shop.orders', query: 'SELECT 1', target: '' }, { name: 'shop.ok', query: 'SELECT 1', target: '' }, { name: 'shop.ok', query: 'UPDATE x SET y = 1', target: '' }],
    })
    const e = pickerErrors(p, { files: false, tableColumns: { orders: ['id', 'amount'] } })
    expect(Object.keys(e.tables)).toEqual(['orders'])
    expect(e.tables.orders.columns).toMatch(/'nope' does not exist in shop.orders/)
    expect(Object.keys(e.queries)).toEqual(['0', '2'])
    expect(e.queries[0].name).toMatch(/already read/)
    expect(e.queries[2]).toEqual({ name: 'shop.ok is already read by another entry', query: 'only a SELECT or WITH ... SELECT statement' })
    expect(e.count).toBe(3)
    expect(pickerErrors(picker({ schema: 'shop', allTables: false, selected: ['t'], options: { t: { ...emptyOptions(), columnTypes: { a: 'INT' } } } }), { files: false }).tables.t.columnTypes).toMatch(/only/)
  })

  it('finds the entry an API error names', () => {
    expect(entryIndex('tables[2].columns')).toBe(2)
    expect(entryIndex("tables[0]: column 'x' does not exist in shop.orders")).toBe(0)
    expect(entryIndex('tableSomething')).toBeNull()
    expect(entryIndex('name')).toBeNull()
    expect(entryIndex('xtables[1]')).toBeNull()
    expect(entryOf("the database answered: Invalid argument: tables[1]: column 'nope' does not exist in shop.customers"))
      .toEqual({ index: 1, text: "tables[1]: column 'nope' does not exist in shop.customers" })
  })
})
