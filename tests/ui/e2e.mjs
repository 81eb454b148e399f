// End-to-end test of the web UI in a real browser (Debian's Chromium driven by playwright-core)
// against a real `dbstreams serve` with real MariaDB, PostgreSQL and S3 (s3rver), all started by
// dbstreams-testenv.
//
//   node tests/ui/e2e.mjs --dbstreams build/release/apps/dbstreams \
//     --testenv build/release/tests/dbstreams-testenv [--ui-dir ui/dist] [--out DIR]
//
// Signs in (a wrong key first), creates and tests a MariaDB and a PostgreSQL connection,
// uploads TLS files into a connection form (the key kept as a secret by the API), fills an S3
// bucket connection (no S3 server: the API's answer is a failure to connect), creates a Local
// folder connection inside the server's file root (tested, listed, opened again, refused outside
// the root next to its path, deleted), creates a
// MariaDB -> PostgreSQL load stream in the guided editor (and sees a validation error next to
// its field, and the plan before saving), starts it, a second one with per-table options (columns,
// a filter, a new name) and a custom query, checked in the target and loaded back into the editor, watches the monitoring page reach 100%, `completed` and the
// verification result, opens the run history, usage and live logs, the System and API keys
// screens (a key created, used, revoked), the Data Explorer (tree, table data with sorting,
// paging and a filter, structure, ER diagram exported as SVG and PNG, the SQL console with
// completion, a query, an error, a slow query cancelled on the server, a federated join saved
// as a stream and run), the Objects tab of an S3 bucket (s3rver, started by dbstreams-testenv
// --s3) and of a Local folder (folders opened, level links, previews), the SQL console on the
// bucket alone (federated, alias s3), a load+cdc stream whose CDC numbers move, the 409 of deleting a connection in use, a narrow
// window and the dark theme; checks every main screen with axe-core; checks the static serving
// (content types, cache headers, SPA fallback, no traversal, API still behind the key); and
// finally stops the server and sees the "unreachable" messages. Screenshots go to --out.
import { spawn, execFile, execFileSync } from 'node:child_process'
import { createRequire } from 'node:module'
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import readline from 'node:readline'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, '../..')
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]])
  return acc
}, []))
const bin = path.resolve(args.dbstreams ?? `${root}/build/release/apps/dbstreams`)
const testenv = path.resolve(args.testenv ?? `${root}/build/release/tests/dbstreams-testenv`)
const uiDir = path.resolve(args['ui-dir'] ?? `${root}/ui/dist`)
const out = path.resolve(args.out ?? `${root}/ui/test-output`)
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium'
const { chromium } = createRequire(`${root}/ui/package.json`)('playwright-core')

const t0 = Date.now()
const log = (...a) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s]`, ...a)
function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what)
  log('ok:', what)
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dbstreams-ui-e2e-'))
const children = []
let browser = null
async function cleanup() {
  if (browser) await browser.close().catch(() => {})
  for (const c of children.reverse()) {
    if (c.exitCode === null) c.kill('SIGTERM')
  }
  await new Promise((r) => setTimeout(r, 300))
  fs.rmSync(tmp, { recursive: true, force: true })
}
const watchdog = setTimeout(async () => {
  console.error('e2e: timed out after 330 s')
  await cleanup()
  process.exit(1)
}, 330_000)

function startTestenv() {
  const envFile = path.join(tmp, 'env')
  // stdin is a pipe: the servers stop when this process goes away, even if killed.
  const p = spawn(testenv, ['--mariadb', '--postgres', '--s3', '--env-file', envFile], { stdio: ['pipe', 'ignore', 'inherit'] })
  children.push(p)
  return new Promise((resolve, reject) => {
    p.on('exit', (code) => reject(new Error(`dbstreams-testenv exited with ${code}`)))
    const poll = setInterval(() => {
      if (!fs.existsSync(envFile)) return
      clearInterval(poll)
      const env = Object.fromEntries(fs.readFileSync(envFile, 'utf8').trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]))
      resolve(env)
    }, 100)
  })
}

// A folder the explorer may read (DBS_FILE_ROOTS), with a CSV and a JSON Lines file.
function makeFiles() {
  const root = path.join(tmp, 'files')
  fs.mkdirSync(path.join(root, 'exports'), { recursive: true })
  const lines = ['id,city,amount']
  for (let i = 1; i <= 250; i++) lines.push(`${i},${['Lisbon', 'Oslo', 'Quito'][i % 3]},${(i * 1.25).toFixed(2)}`)
  fs.writeFileSync(path.join(root, 'exports', 'sales.csv'), lines.join('\n') + '\n')
  fs.writeFileSync(path.join(root, 'exports', 'events.jsonl'), '{"kind":"start","at":"2026-01-01T00:00:00Z"}\n{"kind":"stop","at":"2026-01-01T00:05:00Z"}\n')
  return root
}

function startServer() {
  // The root as the server keeps it (links resolved): file connections inside it are stored so.
  const filesRoot = fs.realpathSync(makeFiles())
  const p = spawn(bin, ['serve', '--data-dir', path.join(tmp, 'data'), '--port', '0', '--nats-port', '0', '--ui-dir', uiDir, '--log-level', 'info'],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DBS_FILE_ROOTS: filesRoot } })
  children.push(p)
  const serverLog = fs.createWriteStream(path.join(out, 'server.log'))
  p.stderr.pipe(serverLog)
  return new Promise((resolve, reject) => {
    let key = '', ui = ''
    p.on('exit', (code) => reject(new Error(`dbstreams serve exited with ${code}; see ${out}/server.log`)))
    readline.createInterface({ input: p.stdout }).on('line', (line) => {
      serverLog.write(line + '\n')
      const k = line.match(/first API key.*: (\S+)/)
      if (k) key = k[1]
      const u = line.match(/^web UI: (\S+)/)
      if (u) ui = u[1]
      if (u) resolve({ proc: p, key, ui, filesRoot })
    })
  })
}

function seedMariaDb(env) {
  const sql = `
    CREATE DATABASE shop;
    USE shop;
    CREATE TABLE shop.customers (id INT PRIMARY KEY, name VARCHAR(80) NOT NULL, email VARCHAR(120), created DATETIME);
    CREATE TABLE shop.products (id INT PRIMARY KEY, title VARCHAR(120), price DECIMAL(10,2));
    CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, customer_id INT NOT NULL, product_id INT, amount DECIMAL(12,2), note TEXT, placed DATETIME,
      KEY (customer_id), CONSTRAINT orders_customer FOREIGN KEY (customer_id) REFERENCES shop.customers (id),
      CONSTRAINT orders_product FOREIGN KEY (product_id) REFERENCES shop.products (id));
    INSERT INTO shop.customers SELECT seq, CONCAT('customer ', seq), CONCAT('c', seq, '@example.com'), NOW() - INTERVAL seq MINUTE FROM seq_1_to_2000;
    INSERT INTO shop.products SELECT seq, CONCAT('product ', seq), seq * 1.25 FROM seq_1_to_50;
    INSERT INTO shop.orders SELECT seq, 1 + seq % 2000, 1 + seq % 50, (seq % 997) * 1.5, CONCAT('order note ', seq, ' ', REPEAT('x', seq % 40)), NOW() - INTERVAL seq SECOND FROM seq_1_to_400000;`
  execFileSync('mariadb', ['--protocol=tcp', '-h', env.MYSQL_HOST, '-P', env.MYSQL_PORT, '-u', env.MYSQL_USER, '-e', sql],
    { env: { ...process.env, MYSQL_PWD: env.MYSQL_PASSWORD } })
}

async function shot(page, name) {
  await page.waitForTimeout(250)  // transitions
  await page.screenshot({ path: path.join(out, `${name}.png`) })
  log('screenshot', `${name}.png`)
}

// Accessibility: axe-core (pinned in ui/package.json) on the page as it is now. Serious and
// critical violations are collected with the screen's name; the run fails on any at the end,
// after every screen was checked, so that one run lists them all.
const axeSource = fs.readFileSync(createRequire(`${root}/ui/package.json`).resolve('axe-core/axe.min.js'), 'utf8')
const axeProblems = []
const axeScreens = []
async function axe(page, screen) {
  if (!(await page.evaluate(() => !!window.axe))) await page.addScriptTag({ content: axeSource })
  // Let finite animations end first (a toast fading in is not what the user reads).
  await page.evaluate(() => Promise.all(document.getAnimations()
    .filter((a) => a.effect?.getTiming().iterations !== Infinity).map((a) => a.finished.catch(() => {}))))
  // Toasts (n-message) are left out: they fade in and out for 3 s, and axe reads a half-faded
  // toast as low-contrast text; their text is the theme's regular text when shown.
  const result = await page.evaluate(() => window.axe.run({ exclude: [['.n-message-container']] }, { resultTypes: ['violations'] }))
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
  for (const v of bad) {
    axeProblems.push(`${screen}: ${v.id} (${v.impact}) ${v.help}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}` +
      ` — ${v.nodes[0]?.failureSummary?.split('\n').slice(1, 2).join('').trim() ?? ''}`)
  }
  axeScreens.push(screen)
  log(`axe: ${screen}: ${bad.length} serious or critical, ${result.violations.length - bad.length} minor or moderate`)
  for (const v of result.violations) {
    log(`  axe ${v.impact}: ${v.id}: ${v.help} — ${v.nodes.slice(0, 4).map((n) => n.target.join(' ') + ' [' + (n.failureSummary ?? '').replace(/\s+/g, ' ').slice(0, 160) + ']').join(' | ')}`)
  }
}

async function pickOption(page, selectSel, text) {
  await page.click(selectSel)
  await page.locator('.n-base-select-option', { hasText: text }).first().click()
}

async function createConnection(page, c) {
  await page.click('[data-test=new-connection]')
  const dlg = page.locator('.n-card[role=dialog]')
  await dlg.waitFor()
  await dlg.locator('input[aria-label="Name"]').fill(c.name)
  await dlg.locator(`[data-test=engine-${c.engine}]`).click()
  await dlg.locator('input[aria-label="Host"]').fill(c.host)
  await dlg.locator('input[aria-label="Port"]').fill(String(c.port))
  await dlg.locator('input[aria-label="User"]').fill(c.user)
  await dlg.locator('input[aria-label="Password"]').fill(c.password)
  if (c.database) await dlg.locator('input[aria-label="Database"]').fill(c.database)
  await dlg.locator('[data-test=test]').click()
  const ok = dlg.locator('[data-test=test-ok]')
  await ok.waitFor({ timeout: 15000 })
  const text = await ok.innerText()
  check(/MariaDB|PostgreSQL/.test(text) && /ms/.test(text), `connection test of ${c.name} shows the server version and latency (${text.split('\n').join(' ').slice(0, 80)})`)
  await shot(page, `03-connection-form-${c.engine}`)
  await axe(page, `connection form (${c.engine})`)
  await dlg.locator('[data-test=save]').click()
  await dlg.waitFor({ state: 'hidden' })
  await page.locator('td', { hasText: c.name }).first().waitFor()
}

// TLS files uploaded from this computer (a CA certificate and a client key as PEM text): the
// form shows the file, never its text; a file that is not PEM is refused next to its field; the
// API keeps the key as a secret and returns a marker, which the form shows when it is opened
// again and keeps when it is saved again. The connection is deleted at the end (it is never
// used: its TLS files are made up).
async function tlsUpload(page, base, key, env) {
  const caPem = '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUe2eTlsCa\n-----END CERTIFICATE-----\n'
  const keyPem = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANe2eUploadedKeyBody\n-----END PRIVATE KEY-----\n'
  const api = async (method, p) => (await fetch(base + '/api/v1' + p, { method, headers: { 'X-API-Key': key } }))
  const saved = async () => (await (await api('GET', '/connections?search=tls-pg')).json()).items[0]
  const pemText = () => page.evaluate(() => [...document.querySelectorAll('input, textarea')].some((i) => i.value.includes('-----BEGIN')))
  await page.click('[data-test=new-connection]')
  const dlg = page.locator('.n-card[role=dialog]')
  await dlg.waitFor()
  await dlg.locator('input[aria-label="Name"]').fill('tls-pg')
  await dlg.locator('[data-test=engine-postgres]').click()
  await dlg.locator('input[aria-label="Host"]').fill(env.PGHOST)
  await dlg.locator('input[aria-label="Port"]').fill(String(env.PGPORT))
  await dlg.locator('input[aria-label="User"]').fill(env.PGUSER)
  await pickOption(page, '[data-test=ssl-mode]', 'verify-full')
  await dlg.locator('[data-test=file-ca]').setInputFiles({ name: 'ca.pem', mimeType: 'application/x-pem-file', buffer: Buffer.from(caPem) })
  await dlg.locator('[data-test=file-key]').setInputFiles({ name: 'client.key', mimeType: 'application/octet-stream', buffer: Buffer.from(keyPem) })
  await dlg.locator('[data-test=file-cert]').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('not a certificate') })
  await dlg.locator('[data-test=pem-key]').waitFor()
  const caShown = await dlg.locator('[data-test=pem-ca] input').inputValue()
  const keyShown = await dlg.locator('[data-test=pem-key] input').inputValue()
  check(caShown === `uploaded: ca.pem, ${Buffer.byteLength(caPem)} bytes` && keyShown === `uploaded: client.key, ${Buffer.byteLength(keyPem)} bytes` && !(await pemText()),
    `uploaded TLS files are shown by name and size, not as PEM text (${caShown}; ${keyShown})`)
  await dlg.locator('.n-form-item-feedback', { hasText: 'notes.txt is not a PEM file' }).waitFor()
  check(true, 'a file that is not PEM is refused next to its field')
  await shot(page, '03b-connection-form-tls-upload')
  await axe(page, 'connection form, TLS files uploaded')
  await dlg.locator('[data-test=save]').click()
  await dlg.waitFor({ state: 'hidden' })
  await page.locator('td', { hasText: 'tls-pg' }).first().waitFor()
  let c = await saved()
  const listed = await (await api('GET', '/connections')).text()
  check(c.ssl.key === '<stored key>' && c.ssl.ca === caPem && !listed.includes('e2eUploadedKeyBody') &&
    !(await (await api('GET', `/connections/${c.id}`)).text()).includes('e2eUploadedKeyBody'),
    'the API keeps the uploaded key as a secret: GET /connections and /connections/{id} return a marker, the CA as it was uploaded')
  // Opened again: the stored key and the inline CA are described; saved again, the key stays.
  await page.locator('a.name', { hasText: 'tls-pg' }).click()
  await dlg.waitFor()
  await dlg.locator('[data-test=pem-key]').waitFor()
  const keyAgain = await dlg.locator('[data-test=pem-key] input').inputValue()
  const caAgain = await dlg.locator('[data-test=pem-ca] input').inputValue()
  check(/^stored key/.test(keyAgain) && caAgain === `inline PEM, ${Buffer.byteLength(caPem)} bytes` && !(await pemText()),
    `the edit form says a key is stored and describes the inline CA (${keyAgain}; ${caAgain})`)
  await dlg.locator('[data-test=save]').click()
  await dlg.waitFor({ state: 'hidden' })
  c = await saved()
  check(c.ssl.key === '<stored key>' && c.ssl.ca === caPem, 'saved again without a new key, the connection keeps its stored key')
  check((await api('DELETE', `/connections/${c.id}`)).status === 204, 'the TLS connection is deleted')
}

// A port nothing listens on (taken from the system, then let go).
function closedPort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer().once('error', reject)
    srv.listen(0, '127.0.0.1', () => { const { port } = srv.address(); srv.close(() => resolve(port)) })
  })
}

// An S3 bucket in the connection form, with no S3 server: the S3 kind shows the bucket fields
// instead of host and port; a bucket name S3 refuses is refused next to its field and nothing is
// sent; Test sends the body the API documents for engine s3 (read from the request) and the API
// accepts it: its answer is the failure to reach an endpoint where nothing listens, with the
// latency. Saved, the list shows s3://bucket/prefix, and the edit form loads the fields back
// (the secret key blank: stored). The connection is deleted at the end.
async function s3Connection(page, base, key) {
  const api = async (method, p) => (await fetch(base + '/api/v1' + p, { method, headers: { 'X-API-Key': key } }))
  const endpoint = `http://127.0.0.1:${await closedPort()}`
  const testUrl = (r) => r.method() === 'POST' && new URL(r.url()).pathname === '/api/v1/connections/test'
  await page.click('[data-test=new-connection]')
  const dlg = page.locator('.n-card[role=dialog]')
  await dlg.waitFor()
  await dlg.locator('input[aria-label="Name"]').fill('e2e-lake')
  await dlg.locator('[data-test=engine-s3]').click()
  await dlg.locator('[data-test=s3-fields]').waitFor()
  check(await dlg.locator('input[aria-label="Host"]').count() === 0 && await dlg.locator('input[aria-label="Port"]').count() === 0,
    'the S3 bucket kind shows bucket fields instead of host and port')
  const bucket = dlg.locator('input[aria-label="Bucket"]')
  await bucket.fill('Bad_Bucket')
  await bucket.press('Tab')
  const bucketErr = dlg.locator('.n-form-item-feedback', { hasText: 'bucket must be a bucket name' })
  await bucketErr.waitFor()
  let sent = 0
  const onRequest = (r) => { if (testUrl(r)) sent++ }
  page.on('request', onRequest)
  await dlg.locator('[data-test=test]').click()
  await page.waitForTimeout(300)
  page.off('request', onRequest)
  check(sent === 0 && await bucketErr.isVisible(), 'an invalid bucket name is refused next to its field, and Test sends nothing')
  await bucket.fill('e2e-lake')
  await bucketErr.waitFor({ state: 'detached' })
  await dlg.locator('input[aria-label="Prefix"]').fill('/exports/2026/')
  await dlg.locator('input[aria-label="Endpoint"]').fill(endpoint)
  await dlg.locator('input[aria-label="Access key"]').fill('e2eAccessKey')
  await dlg.locator('input[aria-label="Secret key"]').fill('e2eSecretKey')
  await pickOption(page, '[data-test=s3-format]', 'CSV')
  const where = await dlg.locator('[data-test=s3-location]').innerText()
  check(where === 's3://e2e-lake/exports/2026', `the form shows the bucket's location (${where})`)
  const request = page.waitForRequest(testUrl)
  await dlg.locator('[data-test=test]').click()
  const body = (await request).postDataJSON()
  check(body.engine === 's3' && body.bucket === 'e2e-lake' && body.prefix === 'exports/2026' && body.endpoint === endpoint &&
    body.region === 'us-east-1' && body.addressing === 'path' && body.user === 'e2eAccessKey' && body.password === 'e2eSecretKey' &&
    body.params?.format === 'csv' && !('host' in body) && !('port' in body) && !('database' in body),
    `Test sends the S3 body (${JSON.stringify({ ...body, password: '…' })})`)
  const failed = dlg.locator('[data-test=test-error]')
  await failed.waitFor({ timeout: 15000 })
  const text = (await failed.innerText()).split('\n').join(' ')
  check(/\d+ ms\)/.test(text) && await dlg.locator('[data-test=form-error]').count() === 0 &&
    await dlg.locator('.n-form-item-feedback').filter({ hasText: /\S/ }).count() === 0,
    `the API accepts the body and reports that the endpoint does not answer, with the latency (${text.slice(0, 120)})`)
  await shot(page, '03c-connection-form-s3')
  await axe(page, 'connection form (S3 bucket)')
  await dlg.locator('[data-test=save]').click()
  await dlg.waitFor({ state: 'hidden' })
  const row = page.locator('tr', { hasText: 'e2e-lake' })
  await row.locator('td', { hasText: 's3://e2e-lake/exports/2026' }).waitFor()
  check(await row.locator('[role=img][aria-label="S3 bucket"]').count() === 1, 'the list shows the bucket badge and s3://e2e-lake/exports/2026')
  // Opened again: the fields come back; the secret key is stored, never shown.
  await page.locator('a.name', { hasText: 'e2e-lake' }).click()
  await dlg.waitFor()
  const value = (label) => dlg.locator(`input[aria-label="${label}"]`).inputValue()
  const secret = dlg.locator('input[aria-label="Secret key"]')
  const loaded = [await value('Bucket'), await value('Prefix'), await value('Endpoint'), await value('Access key'), await secret.inputValue(),
    await secret.getAttribute('placeholder'), (await dlg.locator('[data-test=s3-format]').innerText()).trim()]
  check(JSON.stringify(loaded) === JSON.stringify(['e2e-lake', 'exports/2026', endpoint, 'e2eAccessKey', '', 'unchanged (stored)', 'CSV']),
    `the edit form loads the S3 fields back, the secret key blank (${loaded.join(', ')})`)
  await dlg.locator('button', { hasText: 'Cancel' }).click()
  await dlg.waitFor({ state: 'hidden' })
  const c = (await (await api('GET', '/connections?search=e2e-lake')).json()).items[0]
  check(c.engine === 's3' && c.hasPassword && !JSON.stringify(c).includes('e2eSecretKey'), 'the API keeps the secret key as a secret')
  check((await api('DELETE', `/connections/${c.id}`)).status === 204, 'the S3 connection is deleted')
}

// A folder of the server as a connection (engine file), inside the file root the server was
// started with (DBS_FILE_ROOTS, startServer): the Local folder kind shows a path instead of host,
// port, credentials and TLS, and names the root; a relative path and one with '..' are refused
// next to the field with nothing sent; Test of a folder that does not exist yet says that a
// stream creates it; Test of exports/ (two files) sends the body the API documents for engine
// file and shows the latency and the two entries. Saved, the list shows the folder badge and
// file://<path>, and its ping works; opened again, every field comes back; a path outside the
// root is refused by the server (400 on `path`), its message next to the path field. The
// connection is deleted from the list at the end.
async function folderConnection(page, base, key, filesRoot) {
  const api = async (method, p) => (await fetch(base + '/api/v1' + p, { method, headers: { 'X-API-Key': key } }))
  const testUrl = (r) => r.method() === 'POST' && new URL(r.url()).pathname === '/api/v1/connections/test'
  const exportsDir = path.join(filesRoot, 'exports')  // sales.csv and events.jsonl (makeFiles)
  const newDir = path.join(filesRoot, 'e2e-out')  // not there yet
  await page.click('[data-test=new-connection]')
  const dlg = page.locator('.n-card[role=dialog]')
  await dlg.waitFor()
  await dlg.locator('input[aria-label="Name"]').fill('e2e-folder')
  await dlg.locator('[data-test=engine-file]').click()
  await dlg.locator('[data-test=folder-fields]').waitFor()
  const absent = async (sel) => (await dlg.locator(sel).count()) === 0
  check(await absent('input[aria-label="Host"]') && await absent('input[aria-label="Port"]') && await absent('input[aria-label="User"]') &&
    await absent('input[aria-label="Password"]') && await absent('[data-test=ssl-mode]'),
  'the Local folder kind shows a path instead of host, port, credentials and TLS')
  await page.waitForFunction((root) => document.querySelector('[data-test=folder-roots]')?.textContent?.includes(root), filesRoot, { timeout: 5000 })
  check(true, `the form names the server's file root (${filesRoot})`)
  const pathInput = dlg.locator('input[aria-label="Path"]')
  const feedback = (text) => dlg.locator('.n-form-item-feedback', { hasText: text })
  await pathInput.fill('exports')
  await pathInput.press('Tab')
  await feedback('path must be absolute').waitFor()
  let sent = 0
  const onRequest = (r) => { if (testUrl(r)) sent++ }
  page.on('request', onRequest)
  await dlg.locator('[data-test=test]').click()
  await page.waitForTimeout(300)
  await pathInput.fill(filesRoot + '/../elsewhere')
  await feedback("path must not contain '..'").waitFor()
  await dlg.locator('[data-test=test]').click()
  await page.waitForTimeout(300)
  page.off('request', onRequest)
  check(sent === 0, "a relative path and a path with '..' are refused next to the field, and Test sends nothing")
  // A folder that does not exist yet: it cannot be listed, and a stream into it would create it.
  await pathInput.fill(newDir)
  await feedback("path must not contain '..'").waitFor({ state: 'detached' })
  const first = page.waitForRequest(testUrl)
  await dlg.locator('[data-test=test]').click()
  const body1 = (await first).postDataJSON()
  check(body1.engine === 'file' && body1.path === newDir && body1.params?.format === 'parquet' &&
    ['host', 'port', 'user', 'password', 'database', 'ssl', 'url'].every((k) => !(k in body1)),
  `Test sends the folder body: engine, path and params only (${JSON.stringify(body1)})`)
  const missing = dlg.locator('[data-test=test-error]')
  await missing.waitFor({ timeout: 15000 })
  const missingText = (await missing.innerText()).split('\n').join(' ')
  check(/a stream into it creates it/.test(missingText) && /\d+ ms\)/.test(missingText),
    `a folder that does not exist yet: the test says a stream into it creates it (${missingText.slice(0, 140)})`)
  // The folder with the two files, written as gzip-compressed CSV, change files every 1,000
  // changes or 30 seconds.
  await pathInput.fill(exportsDir + '/')
  await pickOption(page, '[data-test=folder-format]', 'CSV')
  await pickOption(page, '[data-test=folder-compression]', 'gzip')
  await dlg.locator('input[aria-label="Rows per file"]').fill('5000')
  await dlg.locator('input[aria-label="Changes per file"]').fill('1000')
  await dlg.locator('input[aria-label="Seconds per file"]').fill('30')
  await dlg.locator('input[aria-label="Seconds per file"]').press('Tab')  // a whole-number field takes its value when left
  const hint = (await dlg.locator('[data-test=change-file-hint]').innerText()).split('\n').join(' ')
  check(/published when it holds that many changes or its oldest change is that many seconds old/.test(hint) &&
    /at 1,000 changes, or when the oldest change is 30 seconds old/.test(hint), `the form says when a change file is published (${hint.slice(0, 160)})`)
  const where = await dlg.locator('[data-test=folder-location]').innerText()
  check(where === `file://${exportsDir}`, `the form shows the folder's location (${where})`)
  const second = page.waitForRequest(testUrl)
  await dlg.locator('[data-test=test]').click()
  const body2 = (await second).postDataJSON()
  check(body2.path === exportsDir && JSON.stringify(body2.params) === JSON.stringify({ format: 'csv', compression: 'gzip', rowsPerFile: '5000', changeFileRows: '1000', changeFileSeconds: '30' }),
    `Test sends the path as the server keeps it and the file options (${JSON.stringify(body2)})`)
  const ok = dlg.locator('[data-test=test-ok]')
  await ok.waitFor({ timeout: 15000 })
  const okText = (await ok.innerText()).split('\n').join(' ')
  check(/2 entries in the folder/.test(okText) && /\d+ ms/.test(okText), `the test of exports/ shows the latency and its 2 entries (${okText.slice(0, 140)})`)
  await shot(page, '03d-connection-form-folder')
  await axe(page, 'connection form (Local folder)')
  await dlg.locator('[data-test=save]').click()
  await dlg.waitFor({ state: 'hidden' })
  const row = page.locator('tr', { hasText: 'e2e-folder' })
  await row.locator('td', { hasText: `file://${exportsDir}` }).waitFor()
  check(await row.locator('[role=img][aria-label="Local folder"]').count() === 1, `the list shows the folder badge and file://${exportsDir}`)
  await row.locator('[data-test=ping]').click()
  await row.locator('.n-tag', { hasText: 'OK ·' }).waitFor({ timeout: 15000 })
  check(true, 'Test in the list: the folder answers')
  await shot(page, '03e-connections-folder')
  await axe(page, 'connections with a folder')
  // Opened again: the fields come back.
  await page.locator('a.name', { hasText: 'e2e-folder' }).click()
  await dlg.waitFor()
  await dlg.locator('[data-test=folder-fields]').waitFor()
  const value = (label) => dlg.locator(`input[aria-label="${label}"]`).inputValue()
  const shown = async (sel) => (await dlg.locator(sel).innerText()).trim()
  const loaded = [await value('Path'), await shown('[data-test=folder-format]'), await shown('[data-test=folder-compression]'),
    await value('Rows per file'), await value('Changes per file'), await value('Seconds per file')]
  check(JSON.stringify(loaded) === JSON.stringify([exportsDir, 'CSV', 'gzip', '5000', '1000', '30']),
    `the edit form loads the folder fields back (${loaded.join(', ')})`)
  // Outside the root: the server refuses it, and says so next to the path.
  const outside = path.dirname(filesRoot)
  await pathInput.fill(outside)
  const put = page.waitForResponse((r) => r.request().method() === 'PUT' && /\/api\/v1\/connections\/[^/]+$/.test(new URL(r.url()).pathname))
  await dlg.locator('[data-test=save]').click()
  const refused = await put
  const refusedBody = await refused.json()
  check(refused.status() === 400 && refusedBody.error?.fields?.[0]?.field === 'path',
    `the API refuses a folder outside the root (400 on path: ${refusedBody.error?.fields?.[0]?.message})`)
  await feedback('inside a configured file root').waitFor()
  check(await dlg.isVisible() && await dlg.locator('[data-test=form-error]').count() === 0,
    "the server's message is shown next to the path field, and the form stays open")
  await shot(page, '03f-connection-form-folder-outside')
  await axe(page, 'connection form (Local folder), path outside the root')
  await dlg.locator('button', { hasText: 'Cancel' }).click()
  await dlg.waitFor({ state: 'hidden' })
  const c = (await (await api('GET', '/connections?search=e2e-folder')).json()).items[0]
  check(c.engine === 'file' && c.path === exportsDir && c.params?.format === 'csv', 'the refused edit changed nothing: the API still has the folder')
  await row.locator('button[aria-label="Delete e2e-folder"]').click()
  await page.locator('.n-dialog__action button', { hasText: 'Delete' }).click()
  await row.waitFor({ state: 'detached' })
  check((await api('GET', `/connections/${c.id}`)).status === 404, 'the folder connection is deleted from the list')
}

// Per-table options in the editor's table picker: customers read with two of its columns, only
// the rows of a filter, under another name; products whole; a custom query (a DELETE refused in
// the browser first). The JSON tab and the saved body hold the object entries; the run writes
// only those columns and rows, and verifies. Opened again, the picker shows the options and
// saving sends the same entries. A stream whose entry names a column the table does not have
// (saved through the API) gets the plan's error next to that table.
async function tableOptions(page, base, key) {
  const call = async (method, p, body) => (await fetch(base + '/api/v1' + p, { method, headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
    body: body && JSON.stringify(body) })).json()
  const conns = (await call('GET', '/connections')).items
  const id = (n) => conns.find((c) => c.name === n).id
  const sql = async (statement) => {
    const r = await call('POST', '/explorer/console', { connectionId: id('analytics-pg'), sql: statement })
    if (!r.rows) throw new Error(`console: ${JSON.stringify(r)}`)
    return r.rows.map((row) => row.map(String))
  }
  await page.click('a[href="/streams"]')
  await page.click('[data-test=new-stream]')
  await page.waitForURL(/\/streams\/new$/)
  await page.locator('input[aria-label="Stream name"]').fill('shop-picked')
  await pickOption(page, '[data-test=source-select]', 'shop-mariadb')
  await page.click('[data-test=next]')
  await pickOption(page, '[data-test=schema-select]', 'shop')
  const picker = page.locator('[data-test=table-picker]')
  await picker.locator('td', { hasText: 'customers' }).waitFor()
  await page.click('[data-test=all-tables]')
  for (const t of ['customers', 'products']) await picker.locator('tr', { hasText: t }).locator('.n-checkbox').click()
  await page.locator('[data-test=table-summary]', { hasText: '2 tables of shop' }).waitFor()
  // Options of customers: columns id and email (the table's order), a filter, a new name.
  await page.click('button[aria-label="Options of customers"]')
  const dlg = page.locator('[data-test=table-options]')
  await dlg.locator('[data-test=table-columns] [data-column=created]').waitFor({ timeout: 15000 })
  const listed = await dlg.locator('[data-test=table-columns] [data-column]').evaluateAll((els) => els.map((e) => e.dataset.column))
  check(listed.join(',') === 'id,name,email,created', `the options list the table's columns from the catalog (${listed.join(', ')})`)
  await dlg.locator('[data-test=all-columns]').click()
  for (const c of ['email', 'id', 'name', 'created']) await dlg.locator(`[data-column=${c}]`).click()
  await dlg.locator('.n-form-item-feedback', { hasText: 'pick at least one column' }).waitFor()
  await dlg.locator('[data-test=apply-table-options]').click()
  await page.waitForTimeout(200)
  check(await dlg.isVisible(), 'no column picked: the browser says so next to the columns, and Apply keeps the dialog open')
  for (const c of ['email', 'id']) await dlg.locator(`[data-column=${c}]`).click()
  await dlg.locator('textarea[aria-label="Filter"]').fill('id <= 100')
  await dlg.locator('input[aria-label="Target table"]').fill('customers_100')
  await shot(page, '04b-editor-table-options')
  await axe(page, 'stream editor, per-table options')
  await dlg.locator('[data-test=apply-table-options]').click()
  await dlg.waitFor({ state: 'hidden' })
  const summary = (await picker.locator('tr', { hasText: 'customers' }).locator('[data-test=table-options-summary]').innerText()).trim()
  check(summary === '2 of 4 columns · filter · as customers_100', `the picker's row sums up the table's options (${summary})`)
  // A custom query: the browser refuses what is not a SELECT.
  await page.click('[data-test=add-query]')
  await page.locator('input[aria-label="Name of custom query 1"]').fill('shop.big_orders')
  const select = page.locator('textarea[aria-label="SELECT of custom query 1"]')
  await select.fill('DELETE FROM shop.orders')
  await page.locator('[data-test=custom-query] .n-form-item-feedback', { hasText: 'only a SELECT or WITH' }).waitFor()
  check(true, 'a custom query that is not a SELECT is refused next to it')
  await select.fill('SELECT id, amount FROM shop.orders WHERE id <= 10')
  await page.locator('[data-test=table-summary]', { hasText: '2 tables of shop, 1 with options, 1 custom query' }).waitFor()
  await shot(page, '04c-editor-custom-query')
  await axe(page, 'stream editor, table picker with options and a custom query')
  await page.click('[data-test=next]')
  await pickOption(page, '[data-test=target-select]', 'analytics-pg')
  await page.locator('input[aria-label="Target schema"]').fill('picked')
  const expected = [{ name: 'shop.customers', columns: ['id', 'email'], filter: 'id <= 100', target: 'customers_100' }, 'shop.products',
    { name: 'shop.big_orders', query: 'SELECT id, amount FROM shop.orders WHERE id <= 10' }]
  await page.click('text=JSON')
  await page.locator('.cm-content', { hasText: '"customers_100"' }).first().waitFor()
  const json = await page.locator('.cm-content').first().innerText()
  check(/"name": "shop\.customers",\s*"columns": \[\s*"id",\s*"email"\s*\],\s*"filter": "id <= 100",\s*"target": "customers_100"/.test(json) &&
    json.includes('"shop.products"') && json.includes('"query": "SELECT id, amount FROM shop.orders WHERE id <= 10"'),
  'the JSON tab shows customers as an object entry (columns, filter, target), products as a name and the custom query')
  await page.click('text=Guided')
  const streamsPost = (method) => (r) => r.method() === method && /\/api\/v1\/streams(\/s_[^/]+)?$/.test(new URL(r.url()).pathname)
  const [created] = await Promise.all([page.waitForRequest(streamsPost('POST')), page.click('[data-test=save-stream]')])
  check(JSON.stringify(created.postDataJSON().tables) === JSON.stringify(expected), `the saved config has those entries (${JSON.stringify(created.postDataJSON().tables)})`)
  await page.waitForURL(/\/streams\/s_[^/]+$/)
  const streamId = page.url().split('/').pop()
  await page.click('[data-test=start]')
  await page.waitForURL(/\/runs\/[^/]+$/)
  await page.locator('.n-tag[data-state=completed]').waitFor({ timeout: 60000 })
  await page.locator('[data-test=verification]', { hasText: 'Verified: source and target match' }).waitFor({ timeout: 20000 })
  check(!(await page.locator('[data-test=run-error]').count()), 'the stream with per-table options runs to completed and verified')
  const cols = await sql("SELECT column_name FROM information_schema.columns WHERE table_schema = 'picked' AND table_name = 'customers_100' ORDER BY ordinal_position")
  const counts = await sql('SELECT (SELECT count(*) FROM picked.customers_100), (SELECT min(id) FROM picked.customers_100), (SELECT max(id) FROM picked.customers_100), ' +
    "(SELECT count(*) FROM picked.products), (SELECT count(*) FROM picked.big_orders), (SELECT count(*) FROM information_schema.tables WHERE table_schema = 'picked')")
  check(cols.flat().join(',') === 'id,email', `the target table customers_100 has only the columns picked (${cols.flat().join(', ')})`)
  check(counts[0].join(',') === '100,1,100,50,10,3', `and only the filtered rows (100, ids 1 to 100); products whole (50); the custom query's 10 rows; 3 tables (${counts[0].join(', ')})`)
  // Opened again: the picker shows the options (no JSON fallback), and saving sends the same entries.
  await page.goto(`${base}/streams/${streamId}/edit`)
  await page.waitForFunction(() => document.querySelector('input[aria-label="Stream name"]')?.value === 'shop-picked')
  await page.click('[data-test=next]')
  await page.locator('[data-test=table-summary]', { hasText: '2 tables of shop, 1 with options, 1 custom query' }).waitFor()
  check(await page.locator('[data-test=raw-tables]').count() === 0 && await page.locator('input[aria-label="Name of custom query 1"]').inputValue() === 'shop.big_orders' &&
    (await picker.locator('tr', { hasText: 'customers' }).locator('[data-test=table-options-summary]').innerText()).includes('filter'),
  'the editor loads the object entries and the custom query back into the picker')
  const [updated] = await Promise.all([page.waitForRequest(streamsPost('PUT')), page.click('[data-test=save-stream]')])
  check(JSON.stringify(updated.postDataJSON().tables) === JSON.stringify(expected), 'saved again unchanged, the entries are the same')
  await page.waitForURL(/\/streams\/s_[^/]+$/)
  // The server's error on an entry, next to its table: a column the table does not have.
  const bad = await call('POST', '/streams', { name: 'shop-bad-column', mode: 'load', source: { connection: id('shop-mariadb') }, target: { connection: id('analytics-pg') },
    targetSchema: 'picked_bad', tables: ['shop.products', { name: 'shop.customers', columns: ['id', 'nope'] }] })
  await page.goto(`${base}/streams/${bad.id}/edit`)
  await page.waitForFunction(() => document.querySelector('input[aria-label="Stream name"]')?.value === 'shop-bad-column')
  for (let i = 0; i < 4; i++) await page.click('[data-test=next]')
  await page.click('[data-test=editor-preview-plan]')
  const problem = picker.locator('tr', { hasText: 'customers' }).locator('[data-test=table-problem]')
  await problem.waitFor({ timeout: 30000 })
  const problemText = await problem.innerText()
  check(/tables\[1\]: column 'nope' does not exist/.test(problemText) && await picker.locator('tr', { hasText: 'products' }).locator('[data-test=table-problem]').count() === 0,
    `the plan's error on tables[1] is shown next to customers, on the Tables step (${problemText})`)
  await shot(page, '04d-editor-table-error')
  await axe(page, 'stream editor, an error on a table')
  await call('DELETE', `/streams/${bad.id}`).catch(() => {})
  await page.click('a[href="/streams"]')
}

// Column types of a folder source in the editor: a folder with one CSV (prices), all its tables
// picked, the options of prices set price to DECIMAL(12,2) (a type the server would refuse is
// refused in the browser first); no custom queries for a folder. The run writes price into
// PostgreSQL as numeric(12,2). The stream, the connection and the folder are removed after.
async function fileColumnTypes(page, base, key, filesRoot) {
  const call = async (method, p, body) => {
    const r = await fetch(base + '/api/v1' + p, { method, headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: body && JSON.stringify(body) })
    return r.status === 204 ? {} : r.json()
  }
  const dir = path.join(filesRoot, 'prices')
  fs.mkdirSync(dir)
  fs.writeFileSync(path.join(dir, 'prices.csv'), 'id,item,price\n1,apple,1.25\n2,pear,2.5\n3,plum,0.75\n4,fig,3.1\n5,kiwi,12.05\n')
  const folder = await call('POST', '/connections', { name: 'e2e-prices', engine: 'file', path: dir })
  const pg = (await call('GET', '/connections')).items.find((c) => c.name === 'analytics-pg')
  await page.click('a[href="/streams"]')
  await page.click('[data-test=new-stream]')
  await page.waitForURL(/\/streams\/new$/)
  await page.locator('input[aria-label="Stream name"]').fill('prices-typed')
  await pickOption(page, '[data-test=source-select]', 'e2e-prices')
  await page.click('[data-test=next]')
  await pickOption(page, '[data-test=schema-select]', 'public')
  await page.locator('[data-test=table-picker] td', { hasText: 'prices' }).waitFor({ timeout: 20000 })
  check(await page.locator('[data-test=add-query]').count() === 0, 'a folder source offers no custom queries')
  await page.click('button[aria-label="Options of prices"]')
  const dlg = page.locator('[data-test=table-options]')
  const price = dlg.locator('input[aria-label="DuckDB type of price"]')
  await price.waitFor({ timeout: 20000 })
  await price.fill('DECIMAL (12,2)')
  await dlg.locator('.n-form-item-feedback', { hasText: 'price: a DuckDB type name' }).waitFor()
  check(true, 'a column type the server would refuse is refused next to the columns')
  await price.fill('DECIMAL(12,2)')
  await shot(page, '04e-editor-file-column-types')
  await axe(page, 'stream editor, column types of a folder source')
  await dlg.locator('[data-test=apply-table-options]').click()
  await dlg.waitFor({ state: 'hidden' })
  await page.click('[data-test=next]')
  await pickOption(page, '[data-test=target-select]', 'analytics-pg')
  await page.locator('input[aria-label="Target schema"]').fill('picked_files')
  const [created] = await Promise.all([
    page.waitForRequest((r) => r.method() === 'POST' && new URL(r.url()).pathname === '/api/v1/streams'),
    page.click('[data-test=save-stream]'),
  ])
  const tables = created.postDataJSON().tables
  check(JSON.stringify(tables) === JSON.stringify([{ name: 'public.prices', columnTypes: { price: 'DECIMAL(12,2)' } }, 'public.*']),
    `all tables with options on one: its entry first, then public.* (${JSON.stringify(tables)})`)
  await page.waitForURL(/\/streams\/s_[^/]+$/)
  const streamId = page.url().split('/').pop()
  await page.click('[data-test=start]')
  await page.waitForURL(/\/runs\/[^/]+$/)
  await page.locator('.n-tag[data-state=completed]').waitFor({ timeout: 60000 })
  check(!(await page.locator('[data-test=run-error]').count()), 'the folder stream runs to completed')
  const r = await call('POST', '/explorer/console', { connectionId: pg.id, sql: "SELECT data_type, numeric_precision, numeric_scale, (SELECT count(*) FROM picked_files.prices) " +
    "FROM information_schema.columns WHERE table_schema = 'picked_files' AND table_name = 'prices' AND column_name = 'price'" })
  const got = (r.rows?.[0] ?? []).map(String).join(',')
  check(got === 'numeric,12,2,5', `price is written as numeric(12,2), the 5 rows with it (${got})`)
  await call('DELETE', `/streams/${streamId}`)
  check((await call('DELETE', `/connections/${folder.id}`)).error === undefined, 'the folder stream and connection are removed')
  fs.rmSync(dir, { recursive: true, force: true })
  await page.click('a[href="/streams"]')
}

// System (services with heartbeats and versions) and API keys (create with an expiry, shown
// once, sign in with it, revoke it: refused at once).
async function systemAndKeys(page, base) {
  await page.click('a[href="/system"]')
  await page.locator('[data-test=services] [data-alive=true]').first().waitFor()
  const services = await page.locator('[data-test=services]').innerText()
  const version = (await page.locator('[data-test=api-version]').innerText()).trim()
  check(/reader/.test(services) && /writer/.test(services) && services.includes(version) && /ms ago|s ago/.test(services),
    `the System screen lists the reader and the writer, alive, with version ${version} and their last heartbeat`)
  check((await page.locator('[data-test=nats]').innerText()).includes('connected'), 'the System screen shows NATS connected')
  await shot(page, '19-system')
  await axe(page, 'system')

  await page.click('a[href="/apikeys"]')
  await page.locator('[data-test=keys] .n-data-table-tbody tr').first().waitFor()
  check((await page.locator('[data-test=keys]').innerText()).includes('this session'), 'the API keys list marks the key of this session')
  await page.click('[data-test=new-key]')
  await page.locator('input[aria-label="Key name"]').fill('e2e-ci')
  await page.locator('input[aria-label="Days until it expires"]').fill('30')
  await axe(page, 'new API key form')
  await page.click('[data-test=create-key]')
  const shown = page.locator('[data-test=new-key-value]')
  await shown.waitFor()
  const newKey = (await shown.innerText()).trim()
  check(/^dbs_\S{20,}$/.test(newKey), 'a new API key is shown once after it is created')
  await shot(page, '20-apikey-created')
  await axe(page, 'API key created')
  await page.click('[data-test=done]')
  const row = page.locator('[data-test=keys] tr', { hasText: 'e2e-ci' })
  await row.locator('[data-key-state=active]').waitFor()
  const rowText = await row.innerText()
  check(!rowText.includes(newKey) && new RegExp(String(new Date(Date.now() + 30 * 86400e3).getFullYear())).test(rowText),
    'the list shows the new key as active with its expiry, and never the key itself')
  const version2 = await fetch(base + '/api/v1/version', { headers: { 'X-API-Key': newKey } })
  check(version2.status === 200, 'the new key works')
  await shot(page, '21-apikeys')
  await axe(page, 'API keys')
  await row.locator('[data-test=revoke]').click()
  await page.locator('.n-dialog__action button', { hasText: 'Revoke' }).click()
  await row.locator('[data-key-state=revoked]').waitFor()
  const refused = await fetch(base + '/api/v1/version', { headers: { 'X-API-Key': newKey } })
  check(refused.status === 401, 'a revoked key is refused at once (401)')
}

// Data Explorer: the tree, a table's data (paging, sorting, filter), its structure, the ER
// diagram with SVG and PNG export, the SQL console (completion, a query, an error, a slow query
// cancelled on the server, a federated join over MariaDB and PostgreSQL with alias badges, CSV
// export, history, and "Save as stream": the join saved into PostgreSQL, opened, started, run).
async function explorer(page, api) {
  await page.click('a[href="/explorer"]')
  const tree = page.locator('[data-test=explorer-tree]')
  await tree.locator('.n-tree-node', { hasText: 'shop-mariadb' }).click()
  await tree.locator('.n-tree-node', { hasText: /^shop$/ }).click()
  await page.locator('[data-test=er-diagram] canvas').first().waitFor()
  await page.locator('[data-test=er-summary]', { hasText: '3 tables, 2 foreign keys' }).waitFor({ timeout: 20000 })
  check(true, 'the ER diagram of shop shows 3 tables and 2 foreign keys')
  await page.waitForTimeout(500)  // the layout settles
  await shot(page, '22-er-diagram')
  await axe(page, 'explorer, ER diagram')
  const [svgDl] = await Promise.all([page.waitForEvent('download'), page.click('[data-test=export-svg]')])
  const svgText = fs.readFileSync(await svgDl.path(), 'utf8')
  check(/<svg[\s>]/.test(svgText) && svgText.includes('orders') && svgText.includes('customers'), `the ER diagram exports as SVG (${svgDl.suggestedFilename()}, ${svgText.length} bytes)`)
  const [pngDl] = await Promise.all([page.waitForEvent('download'), page.click('[data-test=export-png]')])
  const png = fs.readFileSync(await pngDl.path())
  check(png.subarray(1, 4).toString() === 'PNG' && png.length > 5000, `the ER diagram exports as PNG (${pngDl.suggestedFilename()}, ${png.length} bytes)`)

  // The file browser: the server's folder, a CSV previewed with its columns and first rows.
  // Folders open with their switcher (the arrow); each level is loaded when it opens. A click
  // that lands while the tree re-renders after a load can be lost: try again until the child shows.
  const open = async (name, child) => {
    const node = tree.locator('.n-tree-node', { hasText: name }).first()
    await node.waitFor()
    for (let i = 0; i < 4; i++) {
      if (await tree.locator('.n-tree-node', { hasText: child }).count()) return
      if (!(await node.locator('.n-tree-node-switcher--expanded').count())) await node.locator('.n-tree-node-switcher').click()
      await tree.locator('.n-tree-node', { hasText: child }).first().waitFor({ timeout: 4000 }).catch(() => {})
    }
    await tree.locator('.n-tree-node', { hasText: child }).first().waitFor({ timeout: 10000 })
  }
  // A table by name, as a user finds it in a long tree: the tree is virtualised, so a node
  // scrolled out of view (below the open Files folders) is not in the page until filtered to.
  const pick = async (name) => {
    const filter = page.getByLabel('Filter the tree')
    await filter.fill(name)
    await tree.locator('.n-tree-node', { hasText: new RegExp(`^${name}$`) }).first().click()
    await filter.fill('')
  }
  await open(/^Files$/, /files$/)
  await open(/files$/, /^exports$/)
  await open(/^exports$/, /sales\.csv/)
  await tree.locator('.n-tree-node', { hasText: /sales\.csv/ }).click()
  const preview = page.locator('[data-test=file-preview]')
  await preview.locator('.n-data-table-tbody tr').first().waitFor({ timeout: 20000 })
  const header = await preview.locator('thead').innerText()
  check(/city/.test(header) && /amount/.test(header) && (await page.locator('[data-test=file-columns]').innerText()).includes('3 columns') &&
    (await preview.innerText()).includes('Oslo') && (await page.locator('[data-test=result-summary]').innerText()).includes('100 rows'),
    'the file browser previews a CSV of the server\'s folder (3 columns, the first 100 rows)')
  await shot(page, '22b-file-preview')
  await axe(page, 'explorer, file preview')
  // Sorting (on customers: the server sorts the whole table): id descending puts 2000 first.
  await pick('customers')
  const grid = page.locator('[data-test=table-data]')
  await page.locator('[data-test=row-count]', { hasText: '2,000 rows' }).waitFor({ timeout: 20000 })
  const idHeader = grid.locator('th', { hasText: /^id/ }).first()
  const firstCell = () => page.evaluate(() => document.querySelector('[data-test=table-data] .n-data-table-tbody tr td')?.textContent?.trim())
  // A header click cycles ascending → descending → none; each sort is a new server query.
  for (let i = 0; i < 4 && (await firstCell()) !== '2000'; i++) {
    await idHeader.click()
    await page.waitForFunction(() => !document.querySelector('[data-test=table-data] .n-data-table--loading, [data-test=table-data] .n-base-loading'))
    await page.waitForTimeout(300)
  }
  await page.waitForFunction(() => document.querySelector('[data-test=table-data] .n-data-table-tbody tr td')?.textContent?.trim() === '2000', null, { timeout: 20000 })
  check(true, 'sorting customers by id (descending) puts id 2000 first')
  // Paging: the next 50 rows (keyset paging on the primary key) start at id 1950.
  await page.click('[data-test=next-page]')
  await page.waitForFunction(() => document.querySelector('[data-test=table-data] .n-data-table-tbody tr td')?.textContent?.trim() === '1950', null, { timeout: 20000 })
  check((await page.locator('[data-test=page-no]').innerText()).includes('page 2 of 40'), 'the next page shows the next 50 rows (from id 1950), page 2 of 40')
  // A filter on orders (pushed to MariaDB, which has an index on customer_id).
  await pick('orders')
  await grid.locator('.n-data-table-tbody tr').first().waitFor({ timeout: 20000 })
  await page.locator('[data-test=row-count]', { hasText: '400,000 rows' }).waitFor({ timeout: 20000 })
  check(true, 'the orders table shows its rows and the exact count (400,000)')
  await page.click('[data-test=add-filter]')
  await pickOption(page, '[data-test=filters] .filter >> nth=0 >> .n-select >> nth=0', 'customer_id')
  await pickOption(page, '[data-test=filters] .filter >> nth=0 >> .n-select >> nth=1', '=')
  await page.locator('input[aria-label="Filter value"]').fill('7')
  await page.click('[data-test=apply-filters]')
  await page.locator('[data-test=row-count]', { hasText: '200 rows match' }).waitFor({ timeout: 20000 })
  check(true, 'a filter (customer_id = 7) narrows the rows to the 200 that match')
  await shot(page, '23-explorer-data')
  await axe(page, 'explorer, table data')
  await page.click('.n-tabs-tab:has-text("Structure")')
  await page.locator('[data-test=structure] td', { hasText: 'customer_id' }).first().waitFor()
  check((await page.locator('.st').innerText()).includes('customers(id)'), 'the structure shows the columns and the foreign key to customers(id)')
  await axe(page, 'explorer, structure')
  // The column profile of orders (first 10,000 rows).
  await page.click('[data-test=run-profile]')
  const prof = page.locator('[data-test=profile]')
  await prof.locator('td', { hasText: 'customer_id' }).first().waitFor({ timeout: 30000 })
  check(/10,000 rows \(a sample\)/.test(await page.locator('[data-test=profile-summary]').innerText()) && /0\.0 %/.test(await prof.innerText()),
    'the column profile of orders shows each column (min, max, nulls, distinct) over a 10,000-row sample')
  await axe(page, 'explorer, column profile')

  // SQL console.
  await page.click('.n-tabs-tab:has-text("SQL console")')
  const editor = page.locator('[data-test=sql-editor] .cm-content')
  await editor.waitFor()
  const setSql = async (sql) => {
    await editor.click()
    await page.keyboard.press('Control+A')
    await page.keyboard.press('Delete')
    await page.keyboard.insertText(sql)
    await page.keyboard.press('Escape')  // typed text opens the completion list: close it
  }
  // Completion of table and column names (one connection: its own SQL, schema.table).
  await page.locator('[data-test=sql-editor][data-completion]').waitFor({ timeout: 20000 })
  await setSql('SELECT * FROM shop')
  await page.keyboard.type('.c', { delay: 50 })
  await page.locator('.cm-tooltip-autocomplete li', { hasText: 'customers' }).first().waitFor({ timeout: 10000 })
  check(true, 'the SQL editor completes table names (shop. → customers, orders, products)')
  await page.keyboard.press('Escape')
  await setSql('SELECT * FROM shop.orders o WHERE o')
  await page.keyboard.type('.custo', { delay: 50 })
  await page.locator('.cm-tooltip-autocomplete li', { hasText: 'customer_id' }).first().waitFor({ timeout: 10000 })
  check(true, 'the SQL editor completes column names through a table alias (o.custo → customer_id)')
  await page.keyboard.press('Escape')
  await setSql('SELECT c.id, c.name, count(o.id) AS orders, sum(o.amount) AS total\nFROM shop.customers c JOIN shop.orders o ON o.customer_id = c.id\nWHERE c.id <= 5\nGROUP BY c.id, c.name ORDER BY c.id')
  await page.click('[data-test=run-sql]')
  await page.locator('[data-test=sql-result] [data-test=result-summary]', { hasText: '5 rows' }).waitFor({ timeout: 30000 })
  check((await page.locator('[data-test=sql-result]').innerText()).includes('customer '), 'a query in the SQL console (MariaDB SQL) shows its rows (5 rows)')
  await shot(page, '24-sql-console')
  await axe(page, 'SQL console')
  // The whole result from the server (the statement again, read-only, streamed from a cursor).
  const [whole] = await Promise.all([page.waitForEvent('download'), page.click('[data-test=download-csv]')])
  const wholeCsv = fs.readFileSync(await whole.path(), 'utf8').trim().split(/\r?\n/)
  check(wholeCsv.length === 6 && /^"?id"?,"?name"?,"?orders"?,"?total"?$/.test(wholeCsv[0]) && /^"?1"?,/.test(wholeCsv[1]),
    `the whole result downloads from the server as CSV (${whole.suggestedFilename()}: a header and 5 rows)`)
  const [pq] = await Promise.all([page.waitForEvent('download'), page.click('[data-test=download-parquet]')])
  const pqBytes = fs.readFileSync(await pq.path())
  check(pqBytes.subarray(0, 4).toString() === 'PAR1' && pqBytes.subarray(-4).toString() === 'PAR1', `and as Parquet (${pq.suggestedFilename()}, ${pqBytes.length} bytes)`)
  // An error, readable.
  await setSql('SELECT * FROM shop.nope')
  await page.click('[data-test=run-sql]')
  await page.locator('[data-test=sql-error]').waitFor({ timeout: 20000 })
  check(/nope/.test(await page.locator('[data-test=sql-error]').innerText()), `a query on a missing table gives a readable error naming it (${(await page.locator('[data-test=sql-error]').innerText()).slice(0, 80)})`)
  // A slow statement, cancelled on the server.
  await setSql('SELECT SLEEP(30) AS slept')
  await page.click('[data-test=run-sql]')
  await page.locator('[data-test=cancel-sql]').waitFor()
  await page.locator('[data-test=sql-running]', { hasText: /[1-9]\.\d s/ }).waitFor({ timeout: 10000 })
  const running = await api('GET', '/explorer/queries')
  check(running.items.some((q) => q.state === 'running' && /SLEEP/.test(q.sql)), 'the slow statement is running on the server (GET /explorer/queries)')
  await shot(page, '25-sql-running')
  await page.click('[data-test=cancel-sql]')
  await page.locator('[data-test=sql-cancelled]', { hasText: 'Cancelled on the server' }).waitFor({ timeout: 15000 })
  const after = await api('GET', '/explorer/queries')
  check(!after.items.some((q) => /SLEEP/.test(q.sql)) && await page.locator('[data-test=run-sql]').isVisible(),
    'a slow query is cancelled from the console: cancelled on the server, no longer running, Run is back')
  // Federated: MariaDB and the PostgreSQL copy joined, each source under its alias.
  await page.click('[data-test=add-source]')
  await pickOption(page, '[data-test=sources] .source >> nth=1 >> .n-select', 'analytics-pg')
  await page.locator('input[aria-label="Alias of source 2"]').fill('pg1')
  const badges = await page.locator('[data-test=alias-badge]').allInnerTexts()
  check(badges.join(',') === 'my1,pg1', `federated mode shows the alias badges (${badges.join(', ')})`)
  await page.locator('[data-test=sql-editor][data-completion]').waitFor({ timeout: 20000 })
  await setSql('SELECT count(*) AS same FROM my1.shop.customers m JOIN pg1.shop.customers p ON p.id = m.id AND p.name = m.name')
  await page.click('[data-test=run-sql]')
  await page.locator('[data-test=sql-result] [data-test=result-summary]', { hasText: '1 row' }).waitFor({ timeout: 30000 })
  check((await page.locator('[data-test=sql-result] .n-data-table-tbody').innerText()).includes('2000'),
    'a federated join of MariaDB and PostgreSQL finds the 2,000 customers on both sides')
  await shot(page, '26-sql-federated')
  await axe(page, 'SQL console, federated')
  const [csv] = await Promise.all([page.waitForEvent('download'), page.click('[data-test=export-csv]')])
  check(fs.readFileSync(await csv.path(), 'utf8') === 'same\r\n2000\r\n', 'the result exports as CSV')
  await page.locator('.n-collapse-item__header', { hasText: 'History' }).click()
  const hist = await page.locator('[data-test=sql-history]').innerText()
  check(hist.includes('pg1.shop.customers') && hist.includes('SLEEP(30)') && hist.includes('shop.nope'), 'the SQL history lists the statements run (console and federated)')
  await shot(page, '26b-sql-history')
  await axe(page, 'SQL console, history')

  // Save as stream: the federated SELECT becomes a load stream into the PostgreSQL connection;
  // a taken name is refused at its field (409), then the stream is saved, opened and run.
  await page.click('[data-test=save-as-stream]')
  const saveDlg = page.locator('[data-test=save-stream-dialog]')
  await saveDlg.waitFor()
  check(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')) === 'Stream name', 'Save as stream opens a dialog with the focus on the stream name')
  await saveDlg.locator('input[aria-label="Stream name"]').fill('bad name')
  await saveDlg.locator('[data-test=save-stream-submit]').click()
  await saveDlg.locator('.n-form-item-feedback', { hasText: 'letters, digits' }).waitFor()
  check(true, 'a stream name with a space is refused next to its field')
  await saveDlg.locator('input[aria-label="Stream name"]').fill('shop-to-pg')
  await pickOption(page, '[data-test=save-stream-target]', 'analytics-pg (PostgreSQL)')
  await saveDlg.locator('input[aria-label="Target table"]').fill('fed_same')
  await saveDlg.locator('input[aria-label="Target schema"]').fill('public')
  await saveDlg.locator('[data-test=save-stream-submit]').click()
  await saveDlg.locator('.n-form-item-feedback', { hasText: 'already exists' }).waitFor({ timeout: 20000 })
  check(true, 'a taken stream name (409) is shown next to the name')
  await axe(page, 'save as stream, an error')
  await saveDlg.locator('input[aria-label="Stream name"]').fill('fed-same')
  const [saveRes] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith('/api/v1/explorer/federated/stream') && r.request().method() === 'POST'),
    saveDlg.locator('[data-test=save-stream-submit]').click(),
  ])
  check(saveRes.status() === 201, `the federated SELECT is saved as a stream (${saveRes.status()})`)
  await saveDlg.locator('[data-test=saved-stream]', { hasText: 'fed-same' }).waitFor()
  check((await saveDlg.locator('[data-test=saved-columns]').innerText()).includes('same'), 'the dialog shows the new stream and its result column (same)')
  await shot(page, '26c-save-as-stream')
  await axe(page, 'save as stream, saved')
  await saveDlg.locator('[data-test=open-saved-stream]').click()
  await page.waitForURL(/\/streams\/s_[^/]+$/)
  await page.locator('h1', { hasText: 'fed-same' }).waitFor()
  await page.click('[data-test=start]')
  await page.waitForURL(/\/runs\/[^/]+$/)
  await page.locator('.n-tag[data-state=completed]').waitFor({ timeout: 90000 })
  check(!(await page.locator('[data-test=run-error]').count()), 'the saved federated stream runs to completed, without an error')
  const fedVerification = page.locator('[data-test=verification]')
  await fedVerification.waitFor()
  check(/Verified: source and target match/.test(await fedVerification.innerText()), 'its run is verified (the SELECT run again matches public.fed_same)')
  await page.click('a[href="/streams"]')
  await page.locator('tr', { hasText: 'fed-same' }).locator('[data-test=last-run] [data-state=completed]').waitFor()
  check(true, 'the streams list shows fed-same with its completed run')
  // Leave the streams list: the next step opens it afresh to see a stream made through the API.
  await page.click('a[href="/connections"]')
}

// Objects for the explorer's S3 objects browser, put into s3rver's bucket (dbstreams-testenv
// --s3: S3_ENDPOINT, S3_BUCKET) under the prefix lake/: a CSV object (sales, 250 rows, amounts
// summing to 39,218.75), a JSON Lines object (events, 2 rows) and a nested folder (orders, a
// Hive-style partition folder year=2026 holding a 3-row CSV, and an empty _SUCCESS marker as
// Spark writes one: the file source ignores names starting with _, and s3rver lists a folder
// only when an object lies directly in it). s3rver takes unsigned PUTs.
async function putObjects(env) {
  const lines = ['id,city,amount']
  for (let i = 1; i <= 250; i++) lines.push(`${i},${['Lisbon', 'Oslo', 'Quito'][i % 3]},${(i * 1.25).toFixed(2)}`)
  const objects = {
    'lake/sales.csv': lines.join('\n') + '\n',
    'lake/events.jsonl': '{"kind":"start","at":"2026-01-01T00:00:00Z"}\n{"kind":"stop","at":"2026-01-01T00:05:00Z"}\n',
    'lake/orders/year=2026/orders.csv': 'id,customer,total\n1,Ana,10.50\n2,Bruno,20.25\n3,Chioma,7.00\n',
    'lake/orders/_SUCCESS': '',
  }
  for (const [key, body] of Object.entries(objects)) {
    const r = await fetch(`${env.S3_ENDPOINT}/${env.S3_BUCKET}/${key}`, { method: 'PUT', body, headers: { 'Content-Type': 'text/plain' } })
    if (!r.ok) throw new Error(`PUT ${key} into s3rver: ${r.status} ${await r.text()}`)
  }
  log(`put ${Object.keys(objects).length} objects into s3://${env.S3_BUCKET}/lake (s3rver at ${env.S3_ENDPOINT})`)
}

// The explorer's Objects tab on an S3 connection (s3rver's bucket, prefix lake) and on a Local
// folder connection (the server's file root), and the SQL console on the bucket alone (federated,
// alias s3). Both connections are made through the API.
async function objectsAndFileConsole(page, api, env, filesRoot) {
  const bucket = await api('POST', '/connections', { name: 'e2e-bucket', engine: 's3', bucket: env.S3_BUCKET, prefix: 'lake', endpoint: env.S3_ENDPOINT,
    region: env.S3_REGION, addressing: 'path', user: env.S3_ACCESS_KEY, password: env.S3_SECRET_KEY })
  const folder = await api('POST', '/connections', { name: 'e2e-files', engine: 'file', path: filesRoot })
  check(bucket.id && folder.id, 'an S3 connection to s3rver\'s bucket and a Local folder connection are created through the API')
  await page.click('a[href="/explorer"]')
  const tree = page.locator('[data-test=explorer-tree]')
  const crumbs = page.locator('[data-test=objects-crumbs]')
  const rowOf = (test, name) => page.locator(`[data-test=objects-list] [data-test=${test}]`, { hasText: name })
  const flat = async (loc) => (await loc.innerText()).replace(/\s+/g, ' ').trim()

  // The bucket: its prefix, a folder opened from its row, a level up through the links.
  await tree.locator('.n-tree-node', { hasText: 'e2e-bucket' }).click()
  await rowOf('object-folder', 'orders/').waitFor({ timeout: 20000 })
  const top = `s3://${env.S3_BUCKET}/lake`
  check(await flat(crumbs) === top && await rowOf('object-file', 'sales.csv').count() === 1 && await rowOf('object-file', 'events.jsonl').count() === 1 &&
    /1 folder, 2 objects/.test(await page.locator('[data-test=objects-summary]').innerText()) && /tab=objects/.test(page.url()),
  `the Objects tab opens first on a bucket and lists its prefix (${top}: orders/, events.jsonl, sales.csv)`)
  await shot(page, '30-objects-s3')
  await axe(page, 'explorer, S3 objects')
  await rowOf('object-folder', 'orders/').click()
  await rowOf('object-folder', 'year=2026/').waitFor({ timeout: 20000 })
  const marker = page.locator('[data-test=objects-list] .entry.plain', { hasText: '_SUCCESS' })
  check(await marker.count() === 1 && /no preview/.test(await marker.innerText()), 'an object the server cannot read (_SUCCESS) is listed with "no preview"')
  await rowOf('object-folder', 'year=2026/').click()
  await rowOf('object-file', 'orders.csv').waitFor({ timeout: 20000 })
  const deep = await flat(crumbs)
  check(deep === `${top} / orders / year=2026` && new URL(page.url()).searchParams.get('op') === 'orders/year=2026',
    `folders open from their rows, the levels above are shown as links (${deep})`)
  await rowOf('object-file', 'orders.csv').click()
  const preview = page.locator('[data-test=object-preview] [data-test=file-preview]')
  await preview.locator('.n-data-table-tbody tr').first().waitFor({ timeout: 30000 })
  const pText = await preview.innerText()
  const pHead = await preview.locator('thead').innerText()
  check(/customer/.test(pHead) && /total/.test(pHead) && pText.includes('Chioma') && pText.includes('20.25') &&
    /3 rows/.test(await preview.locator('[data-test=result-summary]').innerText()),
  'an object of the bucket is previewed: its columns (id, customer, total) and its 3 rows (Chioma, 20.25)')
  await shot(page, '31-object-preview-s3')
  await axe(page, 'explorer, S3 object preview')
  await crumbs.locator('button', { hasText: 'orders' }).click()
  await rowOf('object-folder', 'year=2026/').waitFor({ timeout: 20000 })
  check(await flat(crumbs) === `${top} / orders` && await page.locator('[data-test=object-preview]').count() === 0,
    'a level link goes back up (orders), closing the preview')
  await crumbs.locator('button', { hasText: top }).click()
  await rowOf('object-file', 'sales.csv').waitFor({ timeout: 20000 })
  check(await flat(crumbs) === top && !/[?&]op=/.test(page.url()), `the first level link goes back to the prefix (${top})`)

  // The SQL console on the bucket alone: federated (DuckDB SQL), the alias s3, a starter
  // statement that reads one of its tables, then a count and a sum over sales.csv.
  await page.click('.n-tabs-tab:has-text("SQL console")')
  const editor = page.locator('[data-test=sql-editor] .cm-content')
  await editor.waitFor()
  const sources = await flat(page.locator('[data-test=sources]'))
  const badges = await page.locator('[data-test=alias-badge]').allInnerTexts()
  check(/Federated query \(DuckDB SQL\)/.test(sources) && badges.join(',') === 's3' && await page.locator('[data-test=allow-writes]').count() === 0,
    `the console on a bucket runs federated DuckDB SQL under the alias s3 (${badges.join(', ')})`)
  await page.waitForFunction(() => /FROM s3\.public\.\w+/.test(document.querySelector('[data-test=sql-editor] .cm-content')?.textContent ?? ''), null, { timeout: 30000 })
  const starter = (await editor.innerText()).match(/FROM s3\.public\.(\w+)/)[1]
  const expected = { events: '2 rows', orders: '3 rows', sales: '100 rows' }[starter]
  check(!!expected, `the console starts with a statement that reads one of the bucket's tables (s3.public.${starter})`)
  const [fedReq] = await Promise.all([
    page.waitForRequest((r) => r.method() === 'POST' && new URL(r.url()).pathname === '/api/v1/explorer/console' && !!r.postDataJSON()?.sources),
    page.click('[data-test=run-sql]'),
  ])
  const fedBody = fedReq.postDataJSON()
  await page.locator('[data-test=sql-result] [data-test=result-summary]', { hasText: expected }).waitFor({ timeout: 30000 })
  check(JSON.stringify(fedBody.sources) === JSON.stringify([{ alias: 's3', connectionId: bucket.id }]),
    `the starter statement runs through POST /explorer/console with the source s3 and shows its ${expected}`)
  await editor.click()
  await page.keyboard.press('Control+A')
  await page.keyboard.press('Delete')
  await page.keyboard.insertText('SELECT count(*) AS n, sum(amount) AS total FROM s3.public.sales')
  await page.keyboard.press('Escape')
  await page.click('[data-test=run-sql]')
  await page.locator('[data-test=sql-result] [data-test=result-summary]', { hasText: /^1 row/ }).waitFor({ timeout: 30000 })
  const sum = await flat(page.locator('[data-test=sql-result] .n-data-table-tbody'))
  check(/\b250\b/.test(sum) && /39,?218\.75/.test(sum), `a query over the bucket's sales.csv counts 250 rows summing to 39,218.75 (${sum})`)
  await shot(page, '32-sql-bucket')
  await axe(page, 'SQL console on a bucket')
  // A slow federated statement is cancelled on the server too (DuckDB interrupted).
  await editor.click()
  await page.keyboard.press('Control+A')
  await page.keyboard.press('Delete')
  await page.keyboard.insertText('SELECT count(*) AS n FROM s3.public.sales, range(40000000000) r WHERE r.range % 7 = 3')
  await page.keyboard.press('Escape')
  await page.click('[data-test=run-sql]')
  await page.locator('[data-test=sql-running]', { hasText: /[1-9]\.\d s/ }).waitFor({ timeout: 20000 })
  const fedRunning = await api('GET', '/explorer/queries')
  check(fedRunning.items.some((q) => q.state === 'running' && /range\(40000000000\)/.test(q.sql)), 'the slow federated statement runs on the server (GET /explorer/queries)')
  await page.click('[data-test=cancel-sql]')
  await page.locator('[data-test=sql-cancelled]', { hasText: 'Cancelled on the server' }).waitFor({ timeout: 15000 })
  const fedAfter = await api('GET', '/explorer/queries')
  check(!fedAfter.items.some((q) => /range\(40000000000\)/.test(q.sql)), 'Cancel stops the federated statement on the server: it is no longer listed')

  // The folder: its files one level at a time, the levels starting at file:///the/folder.
  await tree.locator('.n-tree-node', { hasText: 'e2e-files' }).click()
  await rowOf('object-folder', 'exports/').waitFor({ timeout: 20000 })
  const ftop = `file://${filesRoot}`
  check(await flat(crumbs) === ftop && /1 folder/.test(await page.locator('[data-test=objects-summary]').innerText()),
    `the Objects tab of a Local folder connection lists the folder (${ftop}: exports/)`)
  await rowOf('object-folder', 'exports/').click()
  await rowOf('object-file', 'events.jsonl').waitFor({ timeout: 20000 })
  check(await flat(crumbs) === `${ftop} / exports` && /2 files/.test(await page.locator('[data-test=objects-summary]').innerText()),
    `a sub-folder opens from its row (${ftop} / exports: 2 files)`)
  await rowOf('object-file', 'events.jsonl').click()
  const fPreview = page.locator('[data-test=object-preview] [data-test=file-preview]')
  await fPreview.locator('.n-data-table-tbody tr').first().waitFor({ timeout: 30000 })
  const fText = await fPreview.innerText()
  check(/kind/.test(await fPreview.locator('thead').innerText()) && fText.includes('stop') && /2 rows/.test(await fPreview.locator('[data-test=result-summary]').innerText()),
    'a file of the folder is previewed: events.jsonl, its kind column and 2 rows (start, stop)')
  check((await page.locator('[data-test=object-preview] [data-test=file-name]').innerText()).trim() === `${ftop}/exports/events.jsonl`, 'the preview names the file as file:///…/exports/events.jsonl')
  await shot(page, '33-objects-folder')
  await axe(page, 'explorer, folder files and preview')
  await crumbs.locator('button', { hasText: ftop }).click()
  await rowOf('object-folder', 'exports/').waitFor({ timeout: 20000 })
  check(await flat(crumbs) === ftop && await page.locator('[data-test=object-preview]').count() === 0, 'the first level link goes back to the folder')
  await page.click('a[href="/connections"]')
}

// A GET with the path sent exactly as given.
function rawGet(base, rawPath) {
  const u = new URL(base)
  return new Promise((resolve, reject) => {
    http.get({ host: u.hostname, port: u.port, path: rawPath }, (res) => {
      let body = ''
      res.on('data', (d) => (body += d))
      res.on('end', () => resolve({ status: res.statusCode, body }))
    }).on('error', reject)
  })
}

async function staticChecks(base, key) {
  const index = await fetch(base + '/')
  check(index.status === 200 && index.headers.get('content-type').startsWith('text/html'), '/ serves index.html without a key')
  check(index.headers.get('cache-control') === 'no-cache', 'index.html is revalidated (no-cache)')
  const html = await index.text()
  const asset = html.match(/\/assets\/[^"]+\.js/)[0]
  const a = await fetch(base + asset, { headers: { 'Accept-Encoding': 'gzip, deflate, br' } })
  check(a.status === 200 && a.headers.get('content-type').startsWith('application/javascript'), `${asset} is application/javascript`)
  check(a.headers.get('content-encoding') === 'br', `${asset} is sent brotli-compressed from the build (${a.headers.get('content-encoding')})`)
  check(/immutable/.test(a.headers.get('cache-control')), 'hashed assets are cached as immutable')
  const deep = await fetch(base + '/streams/s_123/edit')
  check(deep.status === 200 && (await deep.text()) === html, 'a client route gets index.html (SPA fallback)')
  const miss = await fetch(base + '/assets/missing-file.js')
  check(miss.status === 404, 'a missing asset is 404, not index.html')
  for (const p of ['/../../etc/passwd', '/..%2f..%2fetc/passwd', '/%2e%2e/%2e%2e/etc/passwd', '/assets/..%2f..%2f..%2fCMakeLists.txt', '/assets/%2e%2e/%2e%2e/%2e%2e/CMakeLists.txt']) {
    const r = await rawGet(base, p)  // fetch() would normalize the dots away
    const body = r.body
    check((r.status === 400 || r.status === 404) && !body.includes('root:') && !body.includes('cmake_minimum_required'), `no traversal with ${p} (status ${r.status})`)
  }
  const api = await fetch(base + '/api/v1/streams')
  check(api.status === 401, '/api/v1 still needs the key')
  const unknown = await fetch(base + '/api/v1/nope', { headers: { 'X-API-Key': key } })
  check(unknown.status === 404 && (await unknown.json()).error.code === 'not_found', 'an unknown API route is a JSON 404, never the UI')
  const metrics = await fetch(base + '/metrics')
  check(metrics.status === 401, '/metrics still needs the key')
}

async function main() {
  fs.mkdirSync(out, { recursive: true })
  for (const f of fs.readdirSync(out)) if (f.endsWith('.png')) fs.rmSync(path.join(out, f))
  check(fs.existsSync(path.join(uiDir, 'index.html')), `the UI is built (${path.relative(root, uiDir)})`)
  log('starting MariaDB and PostgreSQL')
  const env = await startTestenv()
  seedMariaDb(env)
  log('seeded shop (customers 2,000, products 50, orders 400,000 rows)')
  await putObjects(env)
  const server = await startServer()
  const base = server.ui.replace(/\/$/, '')
  log('dbstreams serve at', base)
  await staticChecks(base, server.key)

  browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] })
  const page = await browser.newPage({ viewport: { width: 1280, height: 720 } })
  const consoleErrors = []
  page.on('pageerror', (e) => consoleErrors.push(String(e)))

  // Sign-in: a wrong key, then the right one.
  const tLoad = Date.now()
  await page.goto(base + '/')
  await page.locator('input[aria-label="API key"]').waitFor()
  log(`sign-in screen loaded in ${Date.now() - tLoad} ms`)
  check(page.url().endsWith('/signin'), 'an unsigned visit lands on the sign-in page')
  await shot(page, '01-signin')
  // First-screen time with a warm browser and an empty cache (a new context), from the
  // browser's Performance API: reported, not asserted (speed belongs in benchmarks).
  const ctx2 = await browser.newContext()
  const p2 = await ctx2.newPage()
  const tFirst = Date.now()
  await p2.goto(base + '/')
  await p2.locator('input[aria-label="API key"]').waitFor()
  const firstMs = Date.now() - tFirst
  const perf = await p2.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0]
    const res = performance.getEntriesByType('resource')
    const scripts = res.filter((r) => r.name.endsWith('.js'))
    const paint = performance.getEntriesByName('first-contentful-paint')[0]
    return { dcl: Math.round(nav.domContentLoadedEventEnd), load: Math.round(nav.loadEventEnd), fcp: paint ? Math.round(paint.startTime) : null,
      scripts: scripts.length, wire: Math.round(scripts.reduce((a, r) => a + r.transferSize, 0) / 1024), body: Math.round(scripts.reduce((a, r) => a + r.decodedBodySize, 0) / 1024) }
  })
  await ctx2.close()
  log(`measure: first screen (sign-in form visible) ${firstMs} ms, first contentful paint ${perf.fcp} ms, DOMContentLoaded ${perf.dcl} ms, load ${perf.load} ms; ` +
    `${perf.scripts} scripts, ${perf.wire} KB over the wire (${perf.body} KB uncompressed); cold cache, warm browser`)
  const dist = fs.readdirSync(path.join(uiDir, 'assets')).filter((f) => f.endsWith('.js'))
  const size = (ext) => Math.round(dist.reduce((a, f) => a + (fs.existsSync(path.join(uiDir, 'assets', f + ext)) ? fs.statSync(path.join(uiDir, 'assets', f + ext)).size : 0), 0) / 1024)
  log(`measure: bundle ${dist.length} scripts, ${size('')} KB, ${size('.br')} KB with brotli`)
  await axe(page, 'sign-in')
  await page.locator('input[aria-label="API key"]').fill('dbs_wrong')
  await page.click('button:has-text("Sign in")')
  await page.locator('[data-test=signin-error]', { hasText: 'Wrong API key' }).waitFor()
  check(true, 'a wrong key says "Wrong API key"')
  await shot(page, '01-signin-wrong-key')
  await axe(page, 'sign-in with the wrong-key message')
  await page.locator('input[aria-label="API key"]').fill(server.key)
  await page.click('button:has-text("Sign in")')
  await page.waitForURL(/\/streams$/)
  check(true, 'the right key opens the streams page')
  await page.locator('[data-test=health]', { hasText: '1 reader, 1 writer' }).waitFor()
  check(true, 'the menu shows the live services (1 reader, 1 writer)')

  // Connections.
  await page.click('a[href="/connections"]')
  await page.waitForURL(/\/connections$/)
  await createConnection(page, { name: 'shop-mariadb', engine: 'mysql', host: env.MYSQL_HOST, port: env.MYSQL_PORT, user: env.MYSQL_USER, password: env.MYSQL_PASSWORD })
  await createConnection(page, { name: 'analytics-pg', engine: 'postgres', host: env.PGHOST, port: env.PGPORT, user: env.PGUSER, password: env.PGPASSWORD, database: env.PGDATABASE })
  await page.locator('input[aria-label="Search connections"]').fill('maria')
  await page.waitForFunction(() => document.querySelectorAll('.n-data-table-tbody tr').length === 1)
  check(true, 'search filters the connection list')
  await page.locator('input[aria-label="Search connections"]').fill('')
  await page.waitForFunction(() => document.querySelectorAll('.n-data-table-tbody tr').length === 2)
  await page.locator('[data-test=ping]').first().click()
  await page.locator('.n-tag', { hasText: 'OK ·' }).first().waitFor()
  await shot(page, '02-connections')
  await axe(page, 'connections')
  await tlsUpload(page, base, server.key, env)
  await s3Connection(page, base, server.key)
  await folderConnection(page, base, server.key, server.filesRoot)

  // Stream editor: a bad name first (validation next to the field), then a good one.
  await page.click('a[href="/streams"]')
  await page.click('[data-test=new-stream]')
  await page.waitForURL(/\/streams\/new$/)
  await page.locator('input[aria-label="Stream name"]').fill('shop to pg!')
  await pickOption(page, '[data-test=source-select]', 'shop-mariadb')
  await page.click('[data-test=next]')
  await pickOption(page, '[data-test=schema-select]', 'shop')
  await page.locator('[data-test=table-picker] td', { hasText: 'orders' }).waitFor()
  await shot(page, '04-editor-tables')
  await axe(page, 'stream editor, table picker')
  await page.click('[data-test=next]')
  await pickOption(page, '[data-test=target-select]', 'analytics-pg')
  await page.click('[data-test=next]')
  // Load + CDC shows the CDC options of the source's engine; the browser checks them.
  await page.click('[data-test=mode-load-cdc]')
  await page.locator('[data-test=cdc-options]').waitFor()
  check(await page.locator('input[aria-label="Replica server id"]').count() === 1 && await page.locator('input[aria-label="Replication slot"]').count() === 0,
    'Load + CDC shows the CDC options of a MariaDB source (a replica server id, no slot)')
  await axe(page, 'stream editor, CDC options')
  await page.click('[data-test=mode-load]')
  check(await page.locator('[data-test=cdc-options]').count() === 0, 'mode Load hides the CDC options')
  await page.locator('input[aria-label="Bundle size"]').fill('2000')
  await page.click('[data-test=next]')
  await page.click('[data-test=save-stream]')
  const nameErr = page.locator('.n-form-item-feedback', { hasText: 'name is required' })
  await nameErr.waitFor()
  check(true, 'the API\'s validation error is shown next to the name field')
  await shot(page, '05-editor-validation')
  await axe(page, 'stream editor, review with a validation error')
  // The plan before the stream is saved (POST /streams/plan): the same validation next to the
  // field first, then the plan of the fixed config, with nothing saved or written.
  const toReview = async () => { for (let i = 0; i < 4; i++) await page.click('[data-test=next]') }
  await toReview()
  await page.click('[data-test=editor-preview-plan]')
  await nameErr.waitFor()
  check(page.url().endsWith('/streams/new'), 'Preview plan in the editor shows the API\'s validation error next to the name field')
  await page.locator('input[aria-label="Stream name"]').fill('shop-to-pg')
  await toReview()
  await page.click('[data-test=editor-preview-plan]')
  const editorPlan = page.locator('[data-test=editor-plan] [data-test=plan]')
  await editorPlan.locator('[data-test=plan-table]').first().waitFor({ timeout: 30000 })
  const editorPlanText = await editorPlan.innerText()
  check((await editorPlan.locator('[data-test=plan-table]').count()) === 3 && /shop\.orders/.test(editorPlanText) &&
    /\bcreate\b/.test(editorPlanText) && /Plan \(not saved, nothing written\)/.test(editorPlanText),
    'Preview plan in the editor shows the three tables to create before the stream is saved')
  const savedYet = await (await fetch(base + '/api/v1/streams', { headers: { 'X-API-Key': server.key } })).json()
  check(page.url().endsWith('/streams/new') && savedYet.total === 0, 'previewing the plan saved nothing')
  await shot(page, '05b-editor-plan')
  await axe(page, 'stream editor, plan before saving')
  await page.click('text=JSON')
  await page.locator('.cm-content').first().waitFor()
  check((await page.locator('.cm-content').first().innerText()).includes('"shop.*"'), 'the JSON view shows the config (tables shop.*)')
  await shot(page, '06-editor-json')
  await page.click('text=Guided')
  await page.click('[data-test=save-stream]')
  await page.waitForURL(/\/streams\/s_[^/]+$/)
  check(true, 'the stream is saved')

  // Start it and watch it complete on the monitoring page.
  await page.click('[data-test=start]')
  await page.waitForURL(/\/runs\/[^/]+$/)
  const runUrl = page.url()
  await page.locator('[data-test=overall-progress]').waitFor()
  await page.waitForFunction(() => {
    const rows = document.querySelectorAll('[data-test=tables] .n-data-table-tbody tr')
    return rows.length >= 3 || document.querySelector('[data-state=completed]')
  }, null, { timeout: 30000 })
  await shot(page, '07-run-live')
  await axe(page, 'run monitor, live')
  await page.locator('.n-tag[data-state=completed]').waitFor({ timeout: 90000 })
  await page.waitForFunction(() => document.querySelector('[data-test=overall-progress]')?.textContent?.includes('100'))
  check(true, `the run completed and shows 100% (${runUrl.split('/').pop()})`)
  const tablesText = await page.locator('[data-test=tables]').innerText()
  check(tablesText.includes('400,000') || tablesText.includes('orders'), 'per-table progress lists the orders table')
  check(!(await page.locator('[data-test=run-error]').count()), 'no run error')
  const verification = page.locator('[data-test=verification]')
  await verification.waitFor()
  const vText = await verification.innerText()
  check(/Verified: source and target match/.test(vText) && /shop\.orders/.test(vText) && /400,000/.test(vText) && !/differs/.test(vText),
    'the monitor shows the verification result: every table matches (shop.orders, 400,000 rows)')
  // The same report ends every run: the tables and the schema objects of this one.
  const report = page.locator('[data-test=run-report]')
  await report.waitFor({ timeout: 20000 })
  check(/3 tables/.test(await report.locator('[data-test=plan-summary]').innerText()) && /shop\.orders/.test(await report.innerText()),
    'the monitor shows the run report (3 tables, shop.orders)')
  await shot(page, '08-run-completed')
  await axe(page, 'run monitor, completed and verified')

  // History, list, usage, logs.
  await page.click('.crumb')
  await page.waitForURL(/\/streams\/s_[^/]+$/)
  await page.locator('[data-test=run-history] .n-tag[data-state=completed]').waitFor()
  check(true, 'the run history shows the completed run')
  await page.locator('[data-test=run-history] [data-test=verified]', { hasText: 'verified · 3 tables' }).waitFor()
  check(true, 'the run history shows the run as verified (3 tables)')
  await shot(page, '09-stream-history')
  await axe(page, 'stream detail and run history')
  // The plan: what another run would do, without writing (the target tables exist now).
  await page.click('[data-test=preview-plan]')
  const plan = page.locator('[data-test=plan]').first()
  await plan.locator('[data-test=plan-table]').first().waitFor({ timeout: 30000 })
  const planText = await plan.innerText()
  check((await plan.locator('[data-test=plan-table]').count()) === 3 && /shop\.orders/.test(planText) && /Plan \(nothing written yet\)/.test(planText),
    'Preview plan shows the three tables with their actions, without running')
  check(/into the existing table/.test(planText), 'the plan says the tables now exist and what the run would write into them')
  await shot(page, '09b-plan')
  await axe(page, 'stream plan')
  // Edit: the editor loads the saved stream; a changed bundle size is saved.
  await page.click('button:has-text("Edit")')
  await page.waitForURL(/\/edit$/)
  await page.waitForFunction(() => document.querySelector('input[aria-label="Stream name"]')?.value === 'shop-to-pg')
  for (let i = 0; i < 3; i++) await page.click('[data-test=next]')
  check(await page.locator('input[aria-label="Bundle size"]').inputValue() === '2000', 'the editor shows the saved bundle size')
  await page.locator('input[aria-label="Bundle size"]').fill('3000')
  await page.click('[data-test=save-stream]')
  await page.waitForURL(/\/streams\/s_[^/]+$/)
  await page.locator('.cm-content', { hasText: '"dataBundleSize": 3000' }).waitFor()
  check(true, 'an edited stream is saved (dataBundleSize 3000)')
  await page.click('a[href="/streams"]')
  await page.locator('[data-test=last-run] [data-state=completed]').waitFor()
  await shot(page, '10-streams')
  await axe(page, 'streams')
  await page.click('a[href="/usage"]')
  await page.locator('canvas').first().waitFor()
  await shot(page, '11-usage')
  await axe(page, 'usage')
  await page.click('a[href="/logs"]')
  await page.locator('.n-tag', { hasText: 'live' }).waitFor()
  // Produce a log record: a connection created through the API is logged.
  await fetch(base + '/api/v1/connections/test', { method: 'POST', headers: { 'X-API-Key': server.key, 'Content-Type': 'application/json' }, body: '{}' })
  await fetch(base + '/api/v1/connections', { method: 'POST', headers: { 'X-API-Key': server.key, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'log-probe', engine: 'postgres', host: '127.0.0.1', port: 1 }) })
  await page.locator('[data-test=logs] .line', { hasText: 'connection created' }).first().waitFor({ timeout: 15000 })
  check(true, 'live logs show a new record')
  await shot(page, '12-logs')
  await axe(page, 'logs')

  await tableOptions(page, base, server.key)
  await fileColumnTypes(page, base, server.key, server.filesRoot)
  await systemAndKeys(page, base)
  const api = (method, p, body) => fetch(base + '/api/v1' + p, { method, headers: { 'X-API-Key': server.key, 'Content-Type': 'application/json' },
    body: body && JSON.stringify(body) }).then((r) => r.json())
  await explorer(page, api)
  await objectsAndFileConsole(page, api, env, server.filesRoot)

  // A load+cdc stream: changes at the source move the CDC numbers and charts; pause, resume, stop.
  const conns = (await api('GET', '/connections')).items
  const id = (n) => conns.find((c) => c.name === n).id
  await api('POST', '/streams', { name: 'shop-cdc', mode: 'load+cdc', source: { connection: id('shop-mariadb') },
    target: { connection: id('analytics-pg') }, tables: ['shop.products'], targetSchema: 'shop_cdc', dataBundleSize: 500 })
  await page.click('a[href="/streams"]')
  await page.locator('tr', { hasText: 'shop-cdc' }).locator('[data-test=start]').click()
  await page.waitForURL(/\/runs\/[^/]+$/)
  await page.locator('.n-card', { hasText: 'Change data capture' }).first().waitFor()
  await page.locator('.n-tag[data-state=running]').waitFor({ timeout: 30000 })
  let stopChanges = false
  const changer = (async () => {
    for (let i = 0; !stopChanges && i < 60; i++) {
      const lo = 1000 + i * 50
      await new Promise((resolve) => execFile('mariadb', ['--protocol=tcp', '-h', env.MYSQL_HOST, '-P', env.MYSQL_PORT, '-u', env.MYSQL_USER, '-D', 'shop', '-e',
        `INSERT INTO shop.products SELECT seq, CONCAT('new ', seq), seq FROM seq_${lo}_to_${lo + 49}; UPDATE shop.products SET price = price + 1 WHERE id <= 50;`],
        { env: { ...process.env, MYSQL_PWD: env.MYSQL_PASSWORD } }, (err) => { if (err) log('source change failed:', err.message); resolve() }))
      await new Promise((r) => setTimeout(r, 400))
    }
  })()
  const changes = page.locator('.n-statistic', { hasText: 'Changes applied' }).locator('.n-statistic-value')
  await page.waitForFunction((el) => Number(el.textContent.replace(/[^0-9]/g, '')) >= 500, await changes.elementHandle(), { timeout: 40000 })
  await page.waitForTimeout(1500)  // let the charts draw a few points
  check(true, `CDC changes applied move on the monitor (${(await changes.innerText()).trim()})`)
  const lag = (await page.locator('.n-statistic', { hasText: 'CDC lag' }).locator('.n-statistic-value').innerText()).trim()
  check(/ms/.test(lag), `the CDC lag is shown (${lag})`)
  await shot(page, '16-cdc-live')
  await axe(page, 'run monitor, load+cdc')
  await page.click('[data-test=pause]')
  await page.locator('.n-tag[data-state=paused]').waitFor({ timeout: 20000 })
  check(true, 'pause: the run is paused')
  await page.click('[data-test=resume]')
  await page.locator('.n-tag[data-state=running]').waitFor({ timeout: 20000 })
  check(true, 'resume: the run is running again')
  stopChanges = true
  await changer
  await page.click('[data-test=stop]')
  await page.locator('.n-tag[data-state=stopped], .n-tag[data-state=completed]').first().waitFor({ timeout: 40000 })
  check(true, 'stop: the run ends')
  await shot(page, '17-cdc-stopped')

  // Deleting a connection in use: the 409 explained.
  await page.click('a[href="/connections"]')
  const row = page.locator('tr', { hasText: 'shop-mariadb' })
  await row.locator('button[aria-label="Delete shop-mariadb"]').click()
  await page.locator('.n-dialog__action button', { hasText: 'Delete' }).click()
  await page.locator('.n-dialog', { hasText: 'Connection in use' }).waitFor()
  check((await page.locator('.n-dialog', { hasText: 'Connection in use' }).innerText()).includes('shop-to-pg'), 'the 409 names the stream using the connection')
  await shot(page, '13-connection-in-use')
  await axe(page, 'connection in use (409)')
  await page.locator('.n-dialog__action button', { hasText: 'OK' }).click()

  // A narrow window: the menu collapses to icons, the run monitor stacks its charts.
  await page.setViewportSize({ width: 820, height: 1000 })
  await page.goto(runUrl)
  await page.locator('.n-tag[data-state=completed]').waitFor()
  await shot(page, '18-narrow-run')
  await axe(page, 'run monitor, narrow window')
  await page.goto(base + '/explorer?c=' + id('shop-mariadb') + '&s=shop&t=orders&tab=data')
  await page.locator('[data-test=table-data] .n-data-table-tbody tr').first().waitFor()
  await shot(page, '27-narrow-explorer')
  await axe(page, 'explorer, narrow window')
  await page.setViewportSize({ width: 1280, height: 720 })
  await page.goto(base + '/streams')

  // Dark theme, then a stopped server: a readable message, never a blank screen.
  await page.click('button:has-text("Dark theme")')
  await page.click('a[href="/streams"]')
  await page.locator('[data-test=last-run]').first().waitFor()
  await shot(page, '14-streams-dark')
  await axe(page, 'streams, dark theme')
  await page.click('a[href="/explorer"]')
  await page.click('.n-tabs-tab:has-text("SQL console")')
  await page.locator('[data-test=sql-editor] .cm-content').waitFor()
  await shot(page, '28-sql-dark')
  await axe(page, 'SQL console, dark theme')
  await page.click('button:has-text("Light theme")')
  check(consoleErrors.length === 0, 'no uncaught errors in the page' + (consoleErrors.length ? ': ' + consoleErrors.join('; ') : ''))
  // The server stops while the user is signed in: the next screen says so (no blank page).
  server.proc.removeAllListeners('exit')
  server.proc.kill('SIGTERM')
  await new Promise((r) => server.proc.once('exit', r))
  await page.click('a[href="/system"]')
  await page.locator('[data-test=system-error]', { hasText: 'cannot be reached' }).waitFor()
  check(true, 'with the server stopped, a signed-in screen says "The dbstreams server cannot be reached"')
  await page.locator('[data-test=health]', { hasText: 'server unreachable' }).waitFor({ timeout: 15000 })
  check(true, 'the menu shows "server unreachable"')
  await shot(page, '29-server-stopped-signed-in')
  await page.click('[data-test=signout]')
  await page.waitForURL(/\/signin/)
  await page.locator('input[aria-label="API key"]').fill(server.key)
  await page.click('button:has-text("Sign in")')
  await page.locator('[data-test=signin-error]', { hasText: 'Server unreachable' }).waitFor()
  check(true, 'a stopped server gives "Server unreachable"')
  await shot(page, '15-server-stopped')
  await axe(page, 'sign-in, server unreachable')
  check(axeProblems.length === 0, `axe-core: no serious or critical accessibility violation on ${axeScreens.length} screens` +
    (axeProblems.length ? ':\n  ' + axeProblems.join('\n  ') : ''))
}

main().then(async () => {
  clearTimeout(watchdog)
  await cleanup()
  log('e2e: all checks passed; screenshots in', out)
  process.exit(0)
}).catch(async (e) => {
  clearTimeout(watchdog)
  console.error('e2e FAILED:', e?.stack ?? e)
  try {
    const pages = browser ? browser.contexts().flatMap((c) => c.pages()) : []
    if (pages[0]) await pages[0].screenshot({ path: path.join(out, 'failure.png') })
  } catch { /* best effort */ }
  await cleanup()
  process.exit(1)
})
