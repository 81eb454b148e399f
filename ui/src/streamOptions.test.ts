import { describe, expect, it } from 'vitest'
import { cdcErrors, cdcFromForm, cdcToForm, emptyCdc, fileTargetSummary, isFiles } from './streamOptions'

describe('CDC options', () => {
  it('sends nothing for the defaults', () => {
    expect(cdcFromForm(emptyCdc())).toBeUndefined()
  })

  it('round-trips the fields it edits and keeps the others', () => {
    const cdc = { operations: ['insert', 'delete'], slotName: 'shop_slot', publicationName: 'shop_pub', serverId: 4242, startPosition: '0/16B3748', batchChanges: 500, maxDelayMs: 20 }
    const { form, rest } = cdcToForm(cdc)
    expect(form).toEqual({ operations: ['insert', 'delete'], slotName: 'shop_slot', publicationName: 'shop_pub', serverId: 4242, startPosition: '0/16B3748' })
    expect(rest).toEqual({ batchChanges: 500, maxDelayMs: 20 })
    expect(cdcFromForm(form, rest)).toEqual(cdc)
  })

  it('sends operations only when some are left out, in a fixed order, and trims names', () => {
    const f = emptyCdc()
    f.operations = ['delete', 'insert']
    f.slotName = ' s1 '
    expect(cdcFromForm(f)).toEqual({ operations: ['insert', 'delete'], slotName: 's1' })
    expect(cdcToForm({ operations: ['update', 'bogus'] }).form.operations).toEqual(['update'])
    expect(cdcToForm(null).form).toEqual(emptyCdc())
  })

  it('checks the fields as the server does', () => {
    const f = emptyCdc()
    expect(cdcErrors(f)).toEqual({})
    f.operations = []
    f.slotName = 'Shop-Slot'
    f.publicationName = 'p'.repeat(64)
    f.serverId = -1
    expect(Object.keys(cdcErrors(f)).sort()).toEqual(['operations', 'publicationName', 'serverId', 'slotName'])
    expect(cdcErrors(f).slotName).toMatch(/lower-case/)
  })
})

describe('file sources and targets', () => {
  it('knows buckets and folders', () => {
    expect(isFiles({ engine: 's3' }) && isFiles({ engine: 'file' })).toBe(true)
    expect(isFiles({ engine: 'postgres' }) || isFiles(undefined)).toBe(false)
  })

  it('says how a file target writes, from its connection', () => {
    expect(fileTargetSummary({ engine: 's3', params: {} })).toBe('Parquet files, zstd compression')
    expect(fileTargetSummary({ engine: 's3', params: { format: 'csv', compression: 'gzip', rowsPerFile: '500000' } }))
      .toBe('CSV files, gzip compression, at most 500,000 rows per file')
    expect(fileTargetSummary({ engine: 'file', params: { format: 'jsonl', changeFileRows: '10000', changeFileSeconds: '30' } }))
      .toBe('JSON Lines files, uncompressed, change files every 10,000 changes or 30 s')
    expect(fileTargetSummary({ engine: 'file', params: { format: 'parquet', compression: 'none' } })).toBe('Parquet files, uncompressed')
    expect(fileTargetSummary({ engine: 's3', params: { format: 'jsonl', changeFileSeconds: '60' } }))
      .toBe('JSON Lines files, uncompressed, change files every 60 s')
  })
})
