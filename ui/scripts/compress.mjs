// Writes .br and .gz next to every built JavaScript file over 1 KB, once, at build time: the
// server sends them as they are (src/api/static_ui.cc) instead of compressing per request.
import fs from 'node:fs'
import path from 'node:path'
import zlib from 'node:zlib'

const dir = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '../dist/assets')
let raw = 0, br = 0
for (const f of fs.readdirSync(dir)) {
  if (!f.endsWith('.js')) continue
  const p = path.join(dir, f)
  const data = fs.readFileSync(p)
  if (data.length < 1024) continue
  const b = zlib.brotliCompressSync(data, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: data.length } })
  fs.writeFileSync(p + '.br', b)
  fs.writeFileSync(p + '.gz', zlib.gzipSync(data, { level: 9 }))
  raw += data.length
  br += b.length
}
console.log(`compress: JavaScript ${(raw / 1024).toFixed(0)} KB, ${(br / 1024).toFixed(0)} KB with brotli`)
