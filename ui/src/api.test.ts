import { beforeAll, describe, expect, it, vi } from 'vitest'

const store = new Map<string, string>()
vi.stubGlobal('sessionStorage', {
  getItem: (k: string) => store.get(k) ?? null,
  setItem: (k: string, v: string) => void store.set(k, v),
  removeItem: (k: string) => void store.delete(k),
})
let api: typeof import('./api')
beforeAll(async () => { api = await import('./api') })

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder()
  return new ReadableStream({ start(c) { for (const x of chunks) c.enqueue(enc.encode(x)); c.close() } })
}

describe('sse over fetch', () => {
  it('parses events split across chunks, skips comments, sends the key', async () => {
    api.signIn('dbs_test')
    const fetchMock = vi.fn(async (_url: string, init: RequestInit) => {
      expect((init.headers as Record<string, string>)['X-API-Key']).toBe('dbs_test')
      return new Response(streamOf([': connected\n\nevent: progress\ndata: {"a"', ':1}\n\n', 'event: end\ndata: {"state":"completed"}\n\n']), { status: 200 })
    })
    vi.stubGlobal('fetch', fetchMock)
    const got: [string, string][] = []
    await api.sse('/runs/r_1/progress', (e, d) => got.push([e, d]), new AbortController().signal)
    expect(fetchMock).toHaveBeenCalledWith('/api/v1/runs/r_1/progress', expect.anything())
    expect(got).toEqual([['progress', '{"a":1}'], ['end', '{"state":"completed"}']])
  })
})

describe('errors', () => {
  it('401 is an auth error and signs out', async () => {
    api.signIn('dbs_old')
    const signedOut = vi.fn()
    api.setUnauthorizedHandler(signedOut)
    vi.stubGlobal('fetch', vi.fn(async () => new Response('{"error":{"code":"unauthenticated","message":"no"}}', { status: 401 })))
    await expect(api.get('/streams')).rejects.toMatchObject({ kind: 'auth', status: 401 })
    expect(signedOut).toHaveBeenCalled()
  })
  it('a refused connection is a network error', async () => {
    vi.stubGlobal('fetch', vi.fn(async () => { throw new TypeError('fetch failed') }))
    await expect(api.checkKey('k')).rejects.toMatchObject({ kind: 'network' })
  })
  it('validation errors keep their fields', async () => {
    vi.stubGlobal('fetch', vi.fn(async () => new Response(JSON.stringify({ error: { code: 'invalid_argument', message: 'name is required', fields: [{ field: 'name', message: 'name is required' }] } }), { status: 400 })))
    await expect(api.post('/streams', {})).rejects.toMatchObject({ kind: 'http', status: 400, fields: [{ field: 'name' }] })
  })
})
