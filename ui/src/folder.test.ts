import { describe, expect, it } from 'vitest'
import {
  CHANGE_FILE_RULE, changeFileRule, describeEntries, emptyFolderForm, fileSizeRule, folderBody, folderFormOf, folderLocation, normalPath,
  pathError, rootsHint, validateFolder, type FolderForm,
} from './folder'
import type { Connection } from './api'

const form = (over: Partial<FolderForm> = {}): FolderForm => ({ ...emptyFolderForm(), name: 'exports', path: '/srv/lake/exports', ...over })

describe('folder paths', () => {
  it('takes absolute folders', () => {
    for (const p of ['/', '/srv/lake', '/srv/lake/', '/data/in 2026/ünï', '/a/./b', '/a..b/c...']) expect(pathError(p), p).toBeNull()
  })
  it('refuses what is empty, relative, has .. or is too long, naming the rule', () => {
    expect(pathError('')).toBe('path is required')
    expect(pathError('   ')).toBe('path is required')
    for (const p of ['srv/lake', './lake', '~/lake', 'C:\\lake', 'file:///srv/lake']) expect(pathError(p), p).toMatch(/^path must be absolute: an absolute folder/)
    for (const p of ['/srv/../etc', '/srv/lake/..', '/..', '/srv/lake/../../x/']) expect(pathError(p), p).toBe("path must not contain '..'")
    expect(pathError('/srv/a\0b')).toMatch(/NUL/)
    expect(pathError('/' + 'x'.repeat(1023))).toBeNull()
    expect(pathError('/' + 'x'.repeat(1024))).toBe('path must be at most 1024 bytes')
    expect(pathError('/' + 'é'.repeat(512))).toBe('path must be at most 1024 bytes')  // bytes, not characters
  })
  it('are sent as the server keeps them', () => {
    expect(normalPath(' /srv//lake/./exports/ ')).toBe('/srv/lake/exports')
    expect(normalPath('/')).toBe('/')
    expect(normalPath('///')).toBe('/')
    expect(normalPath('')).toBe('')
    expect(normalPath('/a/../b')).toBe('/a/../b')  // left for the check to refuse
  })
})

describe('folder form checks', () => {
  it('a filled form passes', () => {
    expect(validateFolder(form({ rowsPerFile: 5000, bytesPerFile: 1, rowGroupSize: 1_000_000, changeFileRows: 1000, changeFileSeconds: 0 }))).toEqual({})
    expect(validateFolder(form({ name: '' }), { withName: false })).toEqual({})
  })
  it('names each field that is wrong', () => {
    const e = validateFolder(form({ name: ' ', path: 'lake', rowsPerFile: 0, changeFileRows: 1.5, changeFileSeconds: -1 }))
    expect(Object.keys(e).sort()).toEqual(['changeFileRows', 'changeFileSeconds', 'name', 'path', 'rowsPerFile'])
    expect(e.name).toBe('name is required')
    expect(e.changeFileSeconds).toBe('seconds must be a whole number, 0 or more')
  })
  it('bytes per file: a positive whole number; rows per row group: 1 to 1,000,000, checked with Parquet only', () => {
    const e = validateFolder(form({ bytesPerFile: 0, rowGroupSize: 1_000_001 }))
    expect(e).toEqual({
      bytesPerFile: 'bytes per file must be a positive whole number',
      rowGroupSize: 'rows per row group must be a whole number from 1 to 1,000,000',
    })
    expect(validateFolder(form({ bytesPerFile: 2.5 })).bytesPerFile).toBe('bytes per file must be a positive whole number')
    expect(validateFolder(form({ rowGroupSize: 0 })).rowGroupSize).toMatch(/from 1 to 1,000,000/)
    expect(validateFolder(form({ format: 'jsonl', rowGroupSize: 0 }))).toEqual({})
  })
})

describe('folder request body', () => {
  it('has engine, name, path and params only (the API refuses the rest for a folder)', () => {
    const b = folderBody(form({
      name: ' exports ', path: '/srv/lake/exports/', format: 'csv', compression: 'gzip', rowsPerFile: 250000,
      bytesPerFile: 128_000_000, changeFileRows: 5000, changeFileSeconds: 30,
    }))
    expect(b).toEqual({
      engine: 'file', name: 'exports', path: '/srv/lake/exports',
      params: { format: 'csv', compression: 'gzip', rowsPerFile: '250000', bytesPerFile: '128000000', changeFileRows: '5000', changeFileSeconds: '30' },
    })
    for (const k of ['host', 'port', 'user', 'password', 'database', 'ssl', 'url']) expect(b).not.toHaveProperty(k)
  })
  it('leaves out the defaults; 0 seconds is sent (every batch at once)', () => {
    expect(folderBody(form(), { withName: false })).toEqual({ engine: 'file', path: '/srv/lake/exports', params: { format: 'parquet' } })
    expect(folderBody(form({ changeFileSeconds: 0 })).params).toEqual({ format: 'parquet', changeFileSeconds: '0' })
  })
  it('sends the rows per row group with Parquet only (the API refuses it for the others)', () => {
    expect(folderBody(form({ rowGroupSize: 20_000 })).params).toEqual({ format: 'parquet', rowGroupSize: '20000' })
    expect(folderBody(form({ format: 'csv', rowGroupSize: 20_000, bytesPerFile: 1000 })).params).toEqual({ format: 'csv', bytesPerFile: '1000' })
  })
  it('keeps a compression only where the format has it', () => {
    expect(folderBody(form({ format: 'jsonl', compression: 'snappy' })).params).toEqual({ format: 'jsonl' })
    expect(folderBody(form({ format: 'parquet', compression: 'snappy' })).params).toEqual({ format: 'parquet', compression: 'snappy' })
  })
})

describe('folder saved connection', () => {
  // What GET /connections/{id} returns for a file connection (src/api/connections.cc).
  const saved: Partial<Connection> = {
    id: 'c_2', name: 'exports', engine: 'file', path: '/srv/lake/exports', ssl: {}, hasPassword: false,
    params: { format: 'csv', compression: 'gzip', rowsPerFile: '250000', bytesPerFile: '128000000', changeFileRows: '5000', changeFileSeconds: '0' },
  }
  it('loads back into the form', () => {
    expect(folderFormOf(saved)).toEqual({
      name: 'exports', path: '/srv/lake/exports', format: 'csv', compression: 'gzip', rowsPerFile: 250000,
      bytesPerFile: 128_000_000, rowGroupSize: null, changeFileRows: 5000, changeFileSeconds: 0,
    })
  })
  it('saved again unchanged, sends what it was created with', () => {
    expect(folderBody(folderFormOf(saved))).toEqual({ engine: 'file', name: 'exports', path: '/srv/lake/exports', params: saved.params })
    const parquet = { ...saved, params: { format: 'parquet', rowsPerFile: '5000', bytesPerFile: '1000000', rowGroupSize: '2048' } }
    expect(folderFormOf(parquet).rowGroupSize).toBe(2048)
    expect(folderBody(folderFormOf(parquet)).params).toEqual(parquet.params)
  })
  it('reads defaults and odd values as the defaults', () => {
    const f = folderFormOf({
      engine: 'file', path: '/x', params: { rowsPerFile: 'many', bytesPerFile: '-1', rowGroupSize: '1.5', changeFileRows: '0', changeFileSeconds: '-5' },
    })
    expect([f.format, f.compression, f.rowsPerFile, f.bytesPerFile, f.rowGroupSize, f.changeFileRows, f.changeFileSeconds])
      .toEqual(['parquet', '', null, null, null, null, null])
    expect(folderFormOf({ engine: 'file', path: '/x', params: { format: 'ndjson' } }).format).toBe('jsonl')
    expect(folderFormOf({ engine: 'file', path: '/x', params: { format: 'csv', compression: 'snappy' } }).compression).toBe('')
    expect(folderFormOf({}).path).toBe('')
  })
})

describe('folder display and hints', () => {
  it('file:///path', () => {
    expect(folderLocation('/srv/lake/exports')).toBe('file:///srv/lake/exports')
    expect(folderLocation('/srv/lake/')).toBe('file:///srv/lake')
  })
  it('says when a change file is published', () => {
    expect(CHANGE_FILE_RULE).toMatch(/published when it holds that many changes or its oldest change is that many seconds old/)
    expect(changeFileRule({ rowsPerFile: null, changeFileRows: null, changeFileSeconds: null }))
      .toBe('Here: at 1,000,000 changes, or when the oldest change is 60 seconds old.')
    // The default number of changes is the rows per file.
    expect(changeFileRule({ rowsPerFile: 5000, changeFileRows: null, changeFileSeconds: 1 })).toBe('Here: at 5,000 changes, or when the oldest change is 1 second old.')
    expect(changeFileRule({ rowsPerFile: 5000, changeFileRows: 1, changeFileSeconds: 30 })).toBe('Here: at 1 change, or when the oldest change is 30 seconds old.')
    expect(changeFileRule({ rowsPerFile: null, changeFileRows: null, changeFileSeconds: 0 })).toBe('Here: every batch of changes at once.')
  })
  it('says how big a part file gets; the row groups with Parquet only', () => {
    expect(fileSizeRule('csv')).toBe('A part file holds at most the rows per file, and is committed once it reaches the bytes per file (often sooner).')
    expect(fileSizeRule('jsonl')).not.toMatch(/row group/)
    expect(fileSizeRule('parquet')).toMatch(/^A part file holds at most the rows per file, .* A Parquet file can pass the bytes by about one row group\./)
    expect(fileSizeRule('parquet')).toMatch(/Rows per row group: at most 1,000,000; by default about 6 MiB of rows, up to 122,880\.$/)
  })
  it('names the roots the server accepts', () => {
    expect(rootsHint(['/srv/lake'])).toMatch(/^Inside the server's file root: \/srv\/lake\./)
    expect(rootsHint(['/srv/lake', '/data/in'])).toMatch(/^Inside one of the server's file roots: \/srv\/lake, \/data\/in\./)
    expect(rootsHint([])).toMatch(/no file roots: start it with DBS_FILE_ROOTS/)
    expect(rootsHint(null)).toMatch(/DBS_FILE_ROOTS/)
  })
  it('what a test found in the folder', () => {
    expect(describeEntries(0)).toBe('the folder is empty')
    expect(describeEntries(1)).toBe('1 entry in the folder')
    expect(describeEntries(1234)).toBe('1,234 entries in the folder')
    expect(describeEntries(['a', 'b'])).toBe('2 entries in the folder')
    expect(describeEntries(undefined)).toBe('')
  })
})
