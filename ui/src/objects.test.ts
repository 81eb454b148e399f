import { describe, expect, it } from 'vitest'
import { crumbs, hasObjects, listBody, listSummary, modifiedText, objectUrl, objectWords, parentPath, previewable, sampleBody, sizeText, type ObjectEntry } from './objects'

const bucket = (b: string, prefix: string) => ({ engine: 's3' as const, bucket: b, prefix })
const folderConn = (path: string) => ({ engine: 'file' as const, path })

const obj = (name: string, size: number, dir = ''): ObjectEntry => ({ name, path: dir ? `${dir}/${name}` : name, kind: 'file', size, modifiedMs: 1767225600000 })
const folder = (name: string, dir = ''): ObjectEntry => ({ name, path: dir ? `${dir}/${name}` : name, kind: 'folder', size: null, modifiedMs: null })

describe('objects browser requests', () => {
  it('lists a level by its path relative to the prefix', () => {
    expect(listBody('c_1', '')).toEqual({ connectionId: 'c_1', path: '' })
    expect(listBody('c_1', '/orders/2026/')).toEqual({ connectionId: 'c_1', path: 'orders/2026' })
    expect(sampleBody('c_1', 'orders/part-00000.parquet', 100)).toEqual({ connectionId: 'c_1', path: 'orders/part-00000.parquet', rows: 100 })
  })
})

describe('objects browser levels', () => {
  it('from the prefix down, each level with the path that lists it', () => {
    expect(crumbs(bucket('lake', 'exports'), '')).toEqual([{ label: 's3://lake/exports', path: '' }])
    expect(crumbs(bucket('lake', ''), 'orders/2026/')).toEqual([
      { label: 's3://lake/', path: '' }, { label: 'orders', path: 'orders' }, { label: '2026', path: 'orders/2026' },
    ])
  })
  it('a folder connection\'s levels start at file:///the/folder', () => {
    expect(crumbs(folderConn('/srv/lake'), '')).toEqual([{ label: 'file:///srv/lake', path: '' }])
    expect(crumbs(folderConn('/srv/lake/'), '/exports/2026')).toEqual([
      { label: 'file:///srv/lake', path: '' }, { label: 'exports', path: 'exports' }, { label: '2026', path: 'exports/2026' },
    ])
    expect(listBody('c_2', 'exports/')).toEqual({ connectionId: 'c_2', path: 'exports' })
  })
  it('the folder above', () => {
    expect(parentPath('orders/2026')).toBe('orders')
    expect(parentPath('orders/')).toBe('')
    expect(parentPath('')).toBe('')
  })
  it('where an entry is', () => {
    expect(objectUrl(bucket('lake', 'exports'), 'orders/a.csv')).toBe('s3://lake/exports/orders/a.csv')
    expect(objectUrl(bucket('lake', ''), 'a.csv')).toBe('s3://lake/a.csv')
    expect(objectUrl(folderConn('/srv/lake'), 'exports/a.csv')).toBe('file:///srv/lake/exports/a.csv')
    expect(objectUrl(folderConn('/srv/lake'), '')).toBe('file:///srv/lake')
    expect(objectUrl(folderConn('/'), 'a.csv')).toBe('file:///a.csv')
  })
  it('which connections have an objects browser, and its words', () => {
    expect(['s3', 'file', 'postgres', 'mysql', undefined].map(hasObjects)).toEqual([true, true, false, false, false])
    expect(objectWords('s3')).toEqual({ place: 'bucket', item: 'object' })
    expect(objectWords('file')).toEqual({ place: 'folder', item: 'file' })
  })
})

describe('objects browser entries', () => {
  it('previews what the server reads, by name', () => {
    for (const n of ['a.csv', 'A.CSV', 'b.tsv', 'c.txt', 'd.json', 'e.jsonl', 'f.ndjson', 'g.parquet', 'h.csv.gz', 'i.jsonl.gz']) expect(previewable(n), n).toBe(true)
    for (const n of ['_manifest', 'a.csv.zst', 'b.gz', 'c.avro', 'parquet', 'x.parquet.tmp']) expect(previewable(n), n).toBe(false)
  })
  it('sizes and times', () => {
    expect(sizeText(obj('a.csv', 2_400_000))).toBe('2.40 MB')
    expect(sizeText(folder('orders'))).toBe('')
    expect(modifiedText(1767225600000)).toBe('2026-01-01 00:00:00 UTC')
    expect(modifiedText(null)).toBe('')
  })
  it('a summary of the level', () => {
    expect(listSummary({ entries: [], truncated: false })).toBe('nothing here')
    expect(listSummary({ entries: [folder('orders'), obj('a.csv', 1500), obj('b.csv', 500)], truncated: false })).toBe('1 folder, 2 objects (2.00 KB)')
    expect(listSummary({ entries: [folder('a'), folder('b')], truncated: true })).toBe('2 folders; only the first 2 entries are listed')
    expect(listSummary({ entries: [obj('a.csv', 1500)], truncated: false }, 'file')).toBe('1 file (1.50 KB)')
  })
})
