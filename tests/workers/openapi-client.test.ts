import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import type { Herald } from '../../src/server.js';
import { startTestHerald, uniqueEmail } from '../helpers/herald.js';

/**
 * platform.md, "API description and operations": a client generated from `/openapi.json` by tools
 * nobody on this project wrote (`openapi-typescript` for the types, `openapi-fetch` for the calls)
 * type-checks and runs the README's sandbox session (`tests/workers/openapi-client/session.ts`).
 */

const execute = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let herald: Herald;
let dir: string;

beforeAll(async () => {
  herald = await startTestHerald({ DELIVERY_MODE: 'sandbox', WORKERS: 'true' });
  // Inside the checkout, so that the session finds `openapi-fetch` in its node_modules.
  dir = path.join(ROOT, 'node_modules', '.cache', `herald-openapi-client-${process.pid}`);
  mkdirSync(dir, { recursive: true });
});
afterAll(async () => {
  await herald?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('a client generated from the document type-checks and runs the sandbox session of the README', async () => {
  const document = (await (await fetch(`${herald.url}/openapi.json`)).json()) as Parameters<typeof openapiTS>[0];
  writeFileSync(path.join(dir, 'schema.ts'), astToString(await openapiTS(document)));
  // `.mts`: an ES module wherever it is put (its top-level awaits need one).
  copyFileSync(path.join(ROOT, 'tests', 'workers', 'openapi-client', 'session.ts'), path.join(dir, 'session.mts'));
  writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2023', 'DOM'], types: ['node'], strict: true, noEmit: true, skipLibCheck: true },
      files: ['session.mts', 'schema.ts'],
    }),
  );
  const env = { ...process.env, NODE_OPTIONS: '' };
  // The session uses the generated types as they are: a wrong path, body or answer does not compile.
  await execute(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { env }).catch((e: { stdout: string }) => {
    throw new Error(`the session does not type-check against the generated client:\n${e.stdout}`);
  });
  const { stdout } = await execute(process.execPath, ['--import', 'tsx', path.join(dir, 'session.mts'), herald.url, uniqueEmail('ada')], { env, cwd: ROOT, timeout: 60_000 });
  const result = JSON.parse(stdout.trim().split('\n').pop()!);
  expect(result).toMatchObject({ outbox: 3, logs: 1, launched: 'completed', sent: 1, runs: [['completed', 1]] });
  expect(result.steps.signup).toMatchObject({ status: 201, data: { user: { role: 'admin' } } });
  expect(result.steps.contact).toMatchObject({ status: 201, data: { phone: '+254712345678' } });
  expect(result.steps.sms).toMatchObject({ status: 200, data: { recipient: '+254712345678', status: 'success' } });
}, 120_000);
