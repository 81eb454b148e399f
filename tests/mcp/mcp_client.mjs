// The MCP server checked with the official TypeScript SDK client over both transports:
// Streamable HTTP (/mcp on the API) and stdio (`dbstreams mcp`). Run by
// tests/integration/mcp_test.cc, which starts the server and the databases and passes:
//   MCP_URL, MCP_KEY, DBSTREAMS_BIN, PG_CONN, MY_CONN, RUN_ID, SECRETS (comma-separated strings
//   that must never appear in any answer), PLANTED (a text of the planted log record)
// Prints one line per check and "N passed, M failed"; exits non-zero on a failure.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const env = process.env;
const secrets = env.SECRETS.split(',').filter((s) => s.length > 0);
let passed = 0;
let failed = 0;

async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
  }
}

function noSecrets(value) {
  const text = JSON.stringify(value);
  for (const s of secrets) assert.ok(!text.includes(s), `a secret leaked: ${s}`);
}

async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args });
  noSecrets(r);
  return r;
}
function ok(r) {
  assert.equal(r.isError, false, JSON.stringify(r.content));
  return r.structuredContent;
}
function refused(r, pattern) {
  assert.equal(r.isError, true, `expected a refusal, got ${JSON.stringify(r.structuredContent)}`);
  if (pattern) assert.match(r.content[0].text, pattern);
}

const expectedTools = [
  'describe_table', 'federated_explain', 'federated_run', 'file_sample', 'file_schema',
  'get_run', 'list_connections', 'list_databases', 'list_files', 'list_schemas', 'list_streams',
  'list_tables', 'run_logs', 'run_select', 'sample_rows',
];

async function suite(label, makeTransport) {
  const client = new Client({ name: 'dbstreams-test', version: '1.0.0' });
  await check(`${label}: connect and initialize`, async () => {
    await client.connect(makeTransport());
    assert.equal(client.getServerVersion().name, 'dbstreams');
    assert.ok(client.getServerCapabilities().tools);
  });
  await check(`${label}: tool listing, every tool read-only`, async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), expectedTools);
    for (const t of tools) {
      assert.equal(t.annotations.readOnlyHint, true, t.name);
      assert.equal(t.annotations.destructiveHint, false, t.name);
      assert.equal(t.inputSchema.type, 'object', t.name);
    }
  });
  await check(`${label}: list_connections without DSNs or passwords`, async () => {
    const c = ok(await call(client, 'list_connections', {}));
    const ids = c.connections.map((x) => x.id);
    assert.ok(ids.includes(env.PG_CONN) && ids.includes(env.MY_CONN), JSON.stringify(c));
    for (const x of c.connections) assert.deepEqual(Object.keys(x).sort(), ['id', 'kind', 'name']);
  });
  await check(`${label}: list_databases, list_schemas, list_tables`, async () => {
    const d = ok(await call(client, 'list_databases', { connectionId: env.MY_CONN }));
    assert.ok(d.databases.includes('explorer_db'), JSON.stringify(d));
    const s = ok(await call(client, 'list_schemas', { connectionId: env.PG_CONN }));
    assert.ok(s.schemas.includes('public'), JSON.stringify(s));
    const t = ok(await call(client, 'list_tables', { connectionId: env.PG_CONN, schema: 'public' }));
    assert.ok(t.tables.some((x) => x.name === 'accounts'), JSON.stringify(t));
  });
  await check(`${label}: describe_table with keys and DDL`, async () => {
    const t = ok(await call(client, 'describe_table',
      { connectionId: env.MY_CONN, schema: 'explorer_db', table: 'accounts' }));
    assert.deepEqual(t.primaryKey ?? t.primary_key, ['id'], JSON.stringify(t));
    assert.match(t.ddl, /CREATE TABLE `accounts`/);
  });
  await check(`${label}: sample_rows (100 by default, at most 1000)`, async () => {
    const r = ok(await call(client, 'sample_rows',
      { connectionId: env.MY_CONN, schema: 'explorer_db', table: 'numbers' }));
    assert.equal(r.rows.length, 100);
    assert.equal(r.more, true);
    refused(await call(client, 'sample_rows',
      { connectionId: env.MY_CONN, schema: 'explorer_db', table: 'numbers', limit: 1001 }));
  });
  await check(`${label}: run_select`, async () => {
    const r = ok(await call(client, 'run_select',
      { connectionId: env.PG_CONN, sql: 'SELECT id, owner FROM accounts ORDER BY id' }));
    assert.deepEqual(r.rows, [[1, 'Ada'], [2, 'Grace'], [3, 'Linus']]);
  });
  await check(`${label}: writes are refused`, async () => {
    for (const conn of [env.PG_CONN, env.MY_CONN]) {
      refused(await call(client, 'run_select',
        { connectionId: conn, sql: 'UPDATE accounts SET balance = 0' }), /SELECT/);
      refused(await call(client, 'run_select',
        { connectionId: conn, sql: 'SELECT 1; DELETE FROM accounts' }), /one statement/);
      refused(await call(client, 'run_select',
        { connectionId: conn, sql: 'DROP TABLE accounts' }));
    }
    // A data-modifying WITH passes the statement check; the read-only transaction refuses it.
    refused(await call(client, 'run_select', {
      connectionId: env.PG_CONN,
      sql: 'WITH gone AS (DELETE FROM accounts RETURNING id) SELECT count(*) FROM gone',
    }), /read-only|readOnly/);
    refused(await call(client, 'federated_run', {
      sources: [{ alias: 'pg1', connectionId: env.PG_CONN }],
      sql: 'DELETE FROM pg1.public.accounts',
    }));
    const still = ok(await call(client, 'run_select',
      { connectionId: env.PG_CONN, sql: 'SELECT count(*) FROM accounts' }));
    assert.deepEqual(still.rows, [[3]]);
    const still2 = ok(await call(client, 'run_select',
      { connectionId: env.MY_CONN, sql: 'SELECT count(*) FROM accounts' }));
    assert.deepEqual(still2.rows, [[3]]);
  });
  await check(`${label}: federated_explain and federated_run`, async () => {
    const sources = [{ alias: 'pg1', connectionId: env.PG_CONN }, { alias: 'my1', connectionId: env.MY_CONN }];
    const sql = 'SELECT p.owner, m.balance FROM pg1.public.accounts p JOIN my1.explorer_db.accounts m ' +
      'ON m.id = p.id WHERE p.id = 2';
    const e = ok(await call(client, 'federated_explain', { sources, sql }));
    assert.ok(e.sources.some((s) => s.alias === 'pg1' && /WHERE \("id" = 2\)/.test(s.statement)),
      JSON.stringify(e.sources));
    const r = ok(await call(client, 'federated_run', { sources, sql }));
    assert.deepEqual(r.rows, [['Grace', 200]]);
  });
  await check(`${label}: list_streams and get_run`, async () => {
    const s = ok(await call(client, 'list_streams', {}));
    const st = s.streams.find((x) => x.lastRun && x.lastRun.id === env.RUN_ID);
    assert.ok(st, JSON.stringify(s));
    assert.equal(st.sourceConnectionId, env.PG_CONN);
    const run = ok(await call(client, 'get_run', { runId: env.RUN_ID }));
    assert.equal(run.state, 'failed');
  });
  await check(`${label}: run_logs with secrets redacted`, async () => {
    const l = ok(await call(client, 'run_logs', { runId: env.RUN_ID }));
    const text = JSON.stringify(l.logs);
    assert.ok(text.includes(env.PLANTED), text);
    assert.ok(text.includes('[redacted]'), text);
  });
  await check(`${label}: list_files, file_schema, file_sample`, async () => {
    const roots = ok(await call(client, 'list_files', {}));
    assert.deepEqual(roots.roots, [env.FILE_ROOT]);
    const l = ok(await call(client, 'list_files', { root: env.FILE_ROOT, path: 'data' }));
    assert.ok(l.entries.some((e) => e.name === 'scores.csv'), JSON.stringify(l));
    const s = ok(await call(client, 'file_schema', { root: env.FILE_ROOT, path: 'data/scores.csv' }));
    assert.deepEqual(s.columns, [{ name: 'id', type: 'BIGINT' }, { name: 'score', type: 'DOUBLE' }]);
    const r = ok(await call(client, 'file_sample', { root: env.FILE_ROOT, path: 'data/scores.csv', limit: 1 }));
    assert.deepEqual(r.rows, [[1, 9.5]]);
    refused(await call(client, 'file_sample', { root: env.FILE_ROOT, path: '../../../etc/passwd' }));
  });
  await check(`${label}: unknown tools and arguments`, async () => {
    await assert.rejects(client.callTool({ name: 'drop_everything', arguments: {} }));
    refused(await call(client, 'list_tables', { connectionId: env.PG_CONN, colour: 'red' }));
  });
  await client.close();
}

await suite('http', () => new StreamableHTTPClientTransport(new URL(`${env.MCP_URL}/mcp`), {
  requestInit: { headers: { 'X-API-Key': env.MCP_KEY } },
}));
await suite('stdio', () => new StdioClientTransport({
  command: env.DBSTREAMS_BIN,
  args: ['mcp', '--url', env.MCP_URL],
  env: { ...process.env, DBS_API_KEY: env.MCP_KEY },
  stderr: 'inherit',
}));
await check('http: no API key, no MCP', async () => {
  const client = new Client({ name: 'dbstreams-test', version: '1.0.0' });
  await assert.rejects(client.connect(new StreamableHTTPClientTransport(new URL(`${env.MCP_URL}/mcp`))));
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
