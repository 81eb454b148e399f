import { describe, expect, it } from 'vitest'
import {
  awsEndpoint, bucketError, compressionFor, compressionOptions, describeObjects, emptyS3Form, fileOptionErrors, fileParams,
  s3Body, s3FormOf, s3Location, storedSecretsUsed, tokenPlaceholder, tokenState, validateS3, MAX_TOKEN_BYTES, STORED_TOKEN,
  type S3Form,
} from './s3'
import { changeFileRule } from './folder'
import type { Connection } from './api'

const form = (over: Partial<S3Form> = {}): S3Form => ({ ...emptyS3Form(), name: 'lake', bucket: 'lake', ...over })

describe('s3 bucket names', () => {
  it('takes what S3 takes', () => {
    for (const b of ['abc', 'my-bucket', 'logs.2026', 'a1b', 'x'.repeat(63), '0ab']) expect(bucketError(b), b).toBeNull()
  })
  it('refuses the rest, with the rule', () => {
    expect(bucketError('')).toBe('bucket is required')
    expect(bucketError('   ')).toBe('bucket is required')
    for (const b of ['ab', 'x'.repeat(64), 'My-Bucket', 'under_score', 'has space', '-start', 'end-', '.dot', 'dot.', 'a/b', 'ünï']) {
      expect(bucketError(b), b).toMatch(/^bucket must be a bucket name: 3 to 63 lowercase letters, digits, dots and hyphens/)
    }
  })
})

describe('s3 form checks', () => {
  it('a filled form passes', () => {
    expect(validateS3(form({
      endpoint: 'http://127.0.0.1:9000', rowsPerFile: 5000, bytesPerFile: 256 << 20, rowGroupSize: 1_000_000, changeFileRows: 1000,
      changeFileSeconds: 0, sessionToken: 'FwoGZXIvYXdzE', keepToken: true,
    }))).toEqual({})
    expect(validateS3(form({ name: '' }), { withName: false })).toEqual({})
  })
  it('names each field that is wrong', () => {
    const e = validateS3(form({ name: ' ', bucket: 'Bad_Bucket', endpoint: 'minio:9000', region: 'us east', rowsPerFile: 0 }))
    expect(Object.keys(e).sort()).toEqual(['bucket', 'endpoint', 'name', 'region', 'rowsPerFile'])
    expect(e.name).toBe('name is required')
  })
  it('change files (CDC streams into the bucket): whole numbers, changes at least 1, seconds at least 0', () => {
    const e = validateS3(form({ changeFileRows: 1.5, changeFileSeconds: -1 }))
    expect(Object.keys(e).sort()).toEqual(['changeFileRows', 'changeFileSeconds'])
    expect(e.changeFileRows).toBe('changes per file must be a positive whole number')
    expect(e.changeFileSeconds).toBe('seconds must be a whole number, 0 or more')
    expect(validateS3(form({ changeFileRows: 0 })).changeFileRows).toBe('changes per file must be a positive whole number')
    expect(validateS3(form({ changeFileSeconds: 2.5 })).changeFileSeconds).toBe('seconds must be a whole number, 0 or more')
  })
  it('bytes per file: a positive whole number; rows per row group: 1 to 1,000,000, with Parquet only', () => {
    for (const n of [0, -1, 1.5]) expect(validateS3(form({ bytesPerFile: n })).bytesPerFile, String(n)).toBe('bytes per file must be a positive whole number')
    expect(validateS3(form({ bytesPerFile: 1 }))).toEqual({})
    for (const n of [0, 1_000_001, 2.5]) {
      expect(validateS3(form({ rowGroupSize: n })).rowGroupSize, String(n)).toBe('rows per row group must be a whole number from 1 to 1,000,000')
    }
    expect(validateS3(form({ rowGroupSize: 1 }))).toEqual({})
    // Not checked (nor sent) for CSV and JSON Lines: the field is hidden then.
    expect(validateS3(form({ format: 'csv', rowGroupSize: 0 }))).toEqual({})
    expect(fileOptionErrors({ ...form(), rowsPerFile: 0, bytesPerFile: 0, rowGroupSize: 0 })).toEqual({
      rowsPerFile: 'rows per file must be a positive whole number', bytesPerFile: 'bytes per file must be a positive whole number',
      rowGroupSize: 'rows per row group must be a whole number from 1 to 1,000,000',
    })
  })
  it('a session token is at most 8192 bytes', () => {
    expect(validateS3(form({ sessionToken: 'x'.repeat(MAX_TOKEN_BYTES) }))).toEqual({})
    expect(validateS3(form({ sessionToken: 'é'.repeat(MAX_TOKEN_BYTES / 2 + 1) })).sessionToken).toBe('session token must be at most 8192 bytes')
  })
  it("the form's hint says when a change file is published, as for a folder", () => {
    expect(changeFileRule(form({ rowsPerFile: 5000 }))).toBe('Here: at 5,000 changes, or when the oldest change is 60 seconds old.')
    expect(changeFileRule(form({ changeFileRows: 1, changeFileSeconds: 30 }))).toBe('Here: at 1 change, or when the oldest change is 30 seconds old.')
    expect(changeFileRule(form({ changeFileSeconds: 0 }))).toBe('Here: every batch of changes at once.')
  })
  it('an endpoint is an http:// or https:// URL of a server, or empty (AWS)', () => {
    const ep = (endpoint: string) => validateS3(form({ endpoint })).endpoint
    expect(ep('')).toBeUndefined()
    expect(ep('https://minio.internal:9000')).toBeUndefined()
    expect(ep('http://10.0.0.5:9000/')).toBeUndefined()
    expect(ep('ftp://host')).toMatch(/http:\/\/ or https:\/\//)
    expect(ep('https://')).toMatch(/http:\/\/ or https:\/\//)
    expect(ep('HTTPS://host')).toMatch(/http:\/\/ or https:\/\//)  // the API compares the scheme as written
    expect(ep('https://host/?x=1')).toMatch(/without \? or #/)
  })
})

describe('s3 request body', () => {
  it('has the API fields of an S3 connection, and no database fields', () => {
    const b = s3Body(form({
      name: ' lake ', bucket: 'lake', prefix: '/exports/2026/', endpoint: 'https://minio.internal:9000/', region: 'eu-west-1',
      addressing: 'virtual', accessKey: 'AKIA1 ', secretKey: 's3cret', sessionToken: ' FwoGZXIvYXdzE ', format: 'csv', compression: 'gzip',
      rowsPerFile: 250000, bytesPerFile: 64_000_000, changeFileRows: 5000, changeFileSeconds: 30,
    }))
    expect(b).toEqual({
      engine: 's3', name: 'lake', bucket: 'lake', prefix: 'exports/2026', endpoint: 'https://minio.internal:9000',
      region: 'eu-west-1', addressing: 'virtual', user: 'AKIA1', password: 's3cret', sessionToken: 'FwoGZXIvYXdzE', ssl: {},
      params: { format: 'csv', compression: 'gzip', rowsPerFile: '250000', bytesPerFile: '64000000', changeFileRows: '5000', changeFileSeconds: '30' },
    })
    for (const k of ['host', 'port', 'database', 'url']) expect(b).not.toHaveProperty(k)
  })
  it('leaves out what is empty: the endpoint (AWS), the secret (kept on an edit), the defaults', () => {
    const b = s3Body(form({ region: ' ' }), { withName: false })
    expect(b).toEqual({ engine: 's3', bucket: 'lake', region: 'us-east-1', addressing: 'path', ssl: {}, params: { format: 'parquet' } })
  })
  it('sends the rows per row group with Parquet only', () => {
    expect(s3Body(form({ rowGroupSize: 50_000 })).params).toEqual({ format: 'parquet', rowGroupSize: '50000' })
    for (const format of ['csv', 'jsonl'] as const) expect(s3Body(form({ format, rowGroupSize: 50_000 })).params).toEqual({ format })
    // The params in the order docs/files.md lists them.
    expect(Object.keys(fileParams({ ...form(), compression: 'snappy', rowsPerFile: 1, bytesPerFile: 1, rowGroupSize: 1, changeFileRows: 1, changeFileSeconds: 0 })))
      .toEqual(['format', 'compression', 'rowsPerFile', 'bytesPerFile', 'rowGroupSize', 'changeFileRows', 'changeFileSeconds'])
  })
  it('sends the session token typed, else the marker while a stored one is kept, else nothing (a stored one is removed)', () => {
    expect(s3Body(form({ sessionToken: 'new', keepToken: true })).sessionToken).toBe('new')
    expect(s3Body(form({ keepToken: true })).sessionToken).toBe(STORED_TOKEN)
    expect(s3Body(form({ sessionToken: '  ', keepToken: true })).sessionToken).toBe(STORED_TOKEN)
    expect(s3Body(form({ keepToken: false }))).not.toHaveProperty('sessionToken')
    expect(s3Body(form({ sessionToken: ' ' }))).not.toHaveProperty('sessionToken')
  })
  it('sends 0 seconds per file (every batch at once), not as a default', () => {
    expect(s3Body(form({ changeFileSeconds: 0 })).params).toEqual({ format: 'parquet', changeFileSeconds: '0' })
    expect(s3Body(form({ changeFileRows: 1 })).params).toEqual({ format: 'parquet', changeFileRows: '1' })
  })
  it('sends the CA only when the certificate is checked', () => {
    expect(s3Body(form({ ca: '/etc/ssl/minio.pem' })).ssl).toEqual({ ca: '/etc/ssl/minio.pem' })
    expect(s3Body(form({ sslMode: 'require', ca: '/etc/ssl/minio.pem' })).ssl).toEqual({ mode: 'require' })
  })
  it('keeps a compression only where the format has it', () => {
    expect(compressionFor('csv', 'snappy')).toBe('')
    expect(compressionFor('parquet', 'snappy')).toBe('snappy')
    expect(s3Body(form({ format: 'jsonl', compression: 'snappy' })).params).toEqual({ format: 'jsonl' })
    expect(compressionOptions('parquet').map((o) => o.value)).toEqual(['', 'zstd', 'snappy', 'gzip', 'none'])
    expect(compressionOptions('csv')[0].label).toBe('Default (none)')
  })
})

describe('s3 saved connection', () => {
  // What GET /connections/{id} returns for an s3 connection (src/api/connections.cc).
  const saved: Partial<Connection> = {
    id: 'c_1', name: 'lake', engine: 's3', bucket: 'lake', prefix: 'exports/2026', user: 'AKIA1', hasPassword: true,
    endpoint: 'https://minio.internal:9000', region: 'eu-west-1', addressing: 'virtual', sessionToken: STORED_TOKEN,
    ssl: { ca: '/etc/ssl/minio.pem' },
    params: { format: 'csv', compression: 'gzip', rowsPerFile: '250000', bytesPerFile: '64000000', changeFileRows: '5000', changeFileSeconds: '0' },
  }
  it('loads back into the form, the secret and the token blank (the stored token kept)', () => {
    expect(s3FormOf(saved)).toEqual({
      name: 'lake', bucket: 'lake', prefix: 'exports/2026', endpoint: 'https://minio.internal:9000', region: 'eu-west-1',
      addressing: 'virtual', accessKey: 'AKIA1', secretKey: '', sessionToken: '', keepToken: true, sslMode: '', ca: '/etc/ssl/minio.pem',
      format: 'csv', compression: 'gzip', rowsPerFile: 250000, bytesPerFile: 64_000_000, rowGroupSize: null, changeFileRows: 5000,
      changeFileSeconds: 0,
    })
    expect(s3FormOf({ ...saved, sessionToken: undefined }).keepToken).toBe(false)
    expect(s3FormOf({ ...saved, params: { format: 'parquet', rowGroupSize: '50000' } }).rowGroupSize).toBe(50_000)
  })
  it('saved again unchanged, sends what it was created with (no password: the stored one stays; the token marker: kept)', () => {
    const b = s3Body(s3FormOf(saved))
    expect(b).toEqual({
      engine: 's3', name: 'lake', bucket: 'lake', prefix: 'exports/2026', endpoint: 'https://minio.internal:9000',
      region: 'eu-west-1', addressing: 'virtual', user: 'AKIA1', sessionToken: STORED_TOKEN, ssl: { ca: '/etc/ssl/minio.pem' },
      params: saved.params,
    })
    const parquet = { ...saved, sessionToken: undefined, params: { format: 'parquet', rowGroupSize: '50000', bytesPerFile: '1' } }
    expect(s3Body(s3FormOf(parquet)).params).toEqual(parquet.params)
    expect(s3Body(s3FormOf(parquet))).not.toHaveProperty('sessionToken')
  })
  it('shows the AWS endpoint the API filled in as empty, so that it follows the region', () => {
    const f = s3FormOf({ ...saved, endpoint: awsEndpoint('eu-west-1'), params: {} })
    expect(f.endpoint).toBe('')
    expect(f.format).toBe('parquet')
    expect([f.rowsPerFile, f.changeFileRows, f.changeFileSeconds]).toEqual([null, null, null])
    expect(s3FormOf({ ...saved, endpoint: awsEndpoint('us-east-1') }).endpoint).toBe(awsEndpoint('us-east-1'))  // another region's
    expect(s3FormOf({ engine: 's3', bucket: 'b' }).region).toBe('us-east-1')
    expect(s3FormOf({ ...saved, ssl: { mode: 'require' } }).sslMode).toBe('require')
  })
  it('leaves out counts that are not whole numbers in range (the defaults then)', () => {
    const f = s3FormOf({
      engine: 's3', bucket: 'b',
      params: { rowsPerFile: 'many', bytesPerFile: '1e6', rowGroupSize: '0', changeFileRows: '0', changeFileSeconds: '-5' },
    })
    expect([f.rowsPerFile, f.bytesPerFile, f.rowGroupSize, f.changeFileRows, f.changeFileSeconds]).toEqual([null, null, null, null, null])
  })
})

describe('s3 session token', () => {
  const stored = { sessionToken: '', keepToken: true }
  it('is typed, kept, removed or none, each with its placeholder', () => {
    expect(tokenState({ sessionToken: 'new', keepToken: true }, true)).toBe('typed')
    expect(tokenState(stored, true)).toBe('kept')
    expect(tokenState({ sessionToken: ' ', keepToken: false }, true)).toBe('removed')
    expect(tokenState({ sessionToken: '', keepToken: false }, false)).toBe('none')
    expect(tokenPlaceholder('kept')).toBe('stored — leave to keep')
    expect(tokenPlaceholder('removed')).toMatch(/^removed on save/)
    expect(tokenPlaceholder('none')).toMatch(/never shown/)
  })
  it('a test of an edit uses the saved connection while it needs a stored secret', () => {
    expect(storedSecretsUsed({ secretKey: '', ...stored }, true)).toEqual(['secret key', 'session token'])
    expect(storedSecretsUsed({ secretKey: 'typed', ...stored }, true)).toEqual(['session token'])
    expect(storedSecretsUsed({ secretKey: '', sessionToken: 'typed', keepToken: true }, true)).toEqual(['secret key'])
    expect(storedSecretsUsed({ secretKey: '', sessionToken: '', keepToken: false }, false)).toEqual([])
    expect(storedSecretsUsed({ secretKey: 'typed', sessionToken: 'typed', keepToken: true }, true)).toEqual([])
  })
})

describe('s3 display', () => {
  it('s3://bucket/prefix', () => {
    expect(s3Location('lake', 'exports/2026')).toBe('s3://lake/exports/2026')
    expect(s3Location('lake', '/exports/')).toBe('s3://lake/exports')
    expect(s3Location('lake')).toBe('s3://lake/')
  })
  it('what a test found at the prefix: a count or the entries', () => {
    expect(describeObjects(undefined).summary).toBe('')
    expect(describeObjects(0)).toEqual({ summary: 'nothing at the prefix yet', names: [], more: 0 })
    expect(describeObjects(1234)).toEqual({ summary: '1,234 entries at the prefix', names: [], more: 0 })
    expect(describeObjects(['orders/', { name: 'customers.csv' }, { key: 'x.parquet' }])).toEqual(
      { summary: '3 entries at the prefix', names: ['orders/', 'customers.csv', 'x.parquet'], more: 0 })
    const many = describeObjects(Array.from({ length: 25 }, (_, i) => `f${i}.csv`))
    expect([many.names.length, many.more, many.summary]).toEqual([20, 5, '25 entries at the prefix'])
    expect(describeObjects(['only.csv']).summary).toBe('1 entry at the prefix')
  })
})
