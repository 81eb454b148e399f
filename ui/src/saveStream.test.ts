import { describe, expect, it } from 'vitest'
import { dialogField, emptySaveForm, saveBody, saveErrorView, targetOptions, validateSave } from './saveStream'

const sources = [{ alias: 'my1', connectionId: 'c_a' }, { alias: 'pg1', connectionId: 'c_b' }]

describe('validateSave', () => {
  it('needs a name and a target', () => {
    const e = validateSave(emptySaveForm())
    expect(e.name).toMatch(/required/)
    expect(e.target).toMatch(/connection/)
    expect(e.table).toBeUndefined()
  })
  it('accepts 1 to 64 letters, digits, _ and -', () => {
    const ok = { ...emptySaveForm(), target: 'c_b' }
    expect(validateSave({ ...ok, name: 'customer-totals_2' })).toEqual({})
    expect(validateSave({ ...ok, name: 'x'.repeat(64) })).toEqual({})
    expect(validateSave({ ...ok, name: 'x'.repeat(65) }).name).toMatch(/64/)
    expect(validateSave({ ...ok, name: 'two words' }).name).toMatch(/letters, digits/)
    expect(validateSave({ ...ok, name: 'café' }).name).toMatch(/letters, digits/)
    expect(validateSave({ ...ok, name: '  trimmed  ' })).toEqual({})
  })
  it('limits the table to 63 characters', () => {
    expect(validateSave({ name: 'a', target: 'c', table: 't'.repeat(64), targetSchema: '' }).table).toMatch(/63/)
    expect(validateSave({ name: 'a', target: 'c', table: '', targetSchema: '' })).toEqual({})
  })
})

describe('saveBody', () => {
  it('sends the sources with their aliases, the SQL and the target', () => {
    const b = saveBody({ name: ' totals ', target: 'c_b', table: 'result', targetSchema: '' }, sources, ' SELECT 1 \n')
    expect(b).toEqual({ name: 'totals', sources, sql: 'SELECT 1', target: 'c_b', table: 'result' })
    expect(b.sources).not.toBe(sources)
  })
  it('leaves an empty table to the server and omits an empty schema', () => {
    expect(saveBody({ name: 'n', target: 't', table: ' ', targetSchema: '' }, sources, 'SELECT 1')).not.toHaveProperty('table')
    expect(saveBody({ name: 'n', target: 't', table: 'x', targetSchema: ' fed ' }, sources, 'SELECT 1').targetSchema).toBe('fed')
    expect(saveBody({ name: 'n', target: 't', table: 'x', targetSchema: '' }, sources, 'SELECT 1')).not.toHaveProperty('targetSchema')
  })
})

describe('saveErrorView', () => {
  it('maps the server fields onto the dialog', () => {
    expect(dialogField('name')).toBe('name')
    expect(dialogField('target.connection')).toBe('target')
    expect(dialogField('tables[0].name')).toBe('table')
    expect(dialogField('targetSchema')).toBe('targetSchema')
    expect(dialogField('sql')).toBeNull()
    expect(dialogField('sources[1].alias')).toBeNull()
    const v = saveErrorView({ status: 400, message: 'table must be a table name of 1 to 63 characters', fields: [{ field: 'table', message: 'table must be a table name of 1 to 63 characters' }] })
    expect(v).toEqual({ fields: { table: 'table must be a table name of 1 to 63 characters' }, message: '' })
  })
  it('shows a statement error in the dialog', () => {
    const v = saveErrorView({ status: 400, message: 'Catalog Error: Table with name nope does not exist!', fields: [{ field: 'Catalog', message: 'Catalog Error: Table with name nope does not exist!' }] })
    expect(v.fields).toEqual({})
    expect(v.message).toMatch(/nope/)
    expect(saveErrorView({ status: 400, message: 'sql must be one SELECT' }).message).toBe('sql must be one SELECT')
  })
  it('shows a taken name at the name (409)', () => {
    const v = saveErrorView({ status: 409, message: "a stream named 'x' already exists. (Conflict…)", detail: "a stream named 'x' already exists" })
    expect(v.fields.name).toBe("a stream named 'x' already exists")
    expect(v.message).toBe('')
  })
  it('is never blank', () => {
    expect(saveErrorView({ status: 500 }).message).toBe('The stream could not be saved (HTTP 500).')
    expect(saveErrorView({}).message).toBe('The stream could not be saved.')
    expect(saveErrorView({ status: 400, fields: [{ field: 'name', message: '' }] }).fields.name).toBe('name is not valid')
  })
})

describe('targetOptions', () => {
  it('lists databases, buckets and folders with their kind', () => {
    const o = targetOptions([{ id: '1', name: 'pg', engine: 'postgres' }, { id: '2', name: 'lake', engine: 's3' }, { id: '3', name: 'exports', engine: 'file' }, { id: '4', name: 'shop', engine: 'mysql' }])
    expect(o.map((x) => x.label)).toEqual(['pg (PostgreSQL)', 'lake (S3)', 'exports (folder)', 'shop (MySQL / MariaDB)'])
    expect(o[0].value).toBe('1')
  })
})
