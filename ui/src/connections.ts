// How a connection is shown in lists and pickers, whatever its kind: where it points, and what
// its test said. Pure: no API calls, no Vue.
import type { Connection, TestResult } from './api'
import { folderLocation, describeEntries } from './folder'
import { describeObjects, s3Location } from './s3'

// Where a connection points: s3://bucket/prefix for a bucket, file:///path for a folder of the
// server, user@host:port/database for a database.
export function connectionPlace(c: Partial<Connection>, withUser = false): string {
  if (c.engine === 's3') return s3Location(c.bucket ?? '', c.prefix ?? '')
  if (c.engine === 'file') return folderLocation(c.path ?? '')
  return `${withUser && c.user ? c.user + '@' : ''}${c.host ?? ''}:${c.port ?? ''}${c.database ? '/' + c.database : ''}`
}

// What a successful test or ping found, in one line: the server's version for a database, the
// entries at the prefix for a bucket, the entries in the folder for a folder.
export function testSummary(engine: string | undefined, r: TestResult): string {
  if (engine === 'file') return describeEntries(r.objects)
  if (engine === 's3') return describeObjects(r.objects).summary
  return r.serverVersion ?? ''
}

