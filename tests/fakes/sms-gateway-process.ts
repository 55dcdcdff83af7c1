import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSmsGatewayFake, type SmsAnswered, type SmsBehaviour, type SmsCall, type SmsGatewayFakeOptions } from './sms-gateway-fake.js';

/**
 * The SMS gateway fake in a process of its own, for a test that measures when messages arrive: in
 * the test's process the fake reads a request only when that process's event loop gets to it (the
 * Herald under test runs there too), so two messages sent 50 ms apart can be stamped a millisecond
 * apart. Here its `at` is when the request reached a process that does nothing else.
 *
 *   const gateway = await startSmsGatewayFakeProcess();   // gateway.url -> SMS_API_URL
 *   await gateway.setBehaviour({ kind: 'delay', ms: 50 });
 *   const calls = await gateway.calls();                   // every request, in arrival order
 *   await gateway.stop();
 *
 * Run as a script (by `startSmsGatewayFakeProcess`), it starts the fake and answers the parent's
 * requests over IPC.
 */
export interface SmsGatewayFakeProcess {
  url: string;
  calls(): Promise<SmsCall[]>;
  answered(): Promise<SmsAnswered[]>;
  setBehaviour(behaviour: SmsBehaviour, mobile?: string): Promise<void>;
  reset(): Promise<void>;
  stop(): Promise<void>;
}

type Request = { id: number; op: 'calls' | 'answered' | 'setBehaviour' | 'reset'; args?: unknown[] };
type Reply = { id: number; result?: unknown; error?: string } | { ready: string };

const self = fileURLToPath(import.meta.url);

export async function startSmsGatewayFakeProcess(options: SmsGatewayFakeOptions = {}): Promise<SmsGatewayFakeProcess> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', self], {
    cwd: path.resolve(path.dirname(self), '../..'),
    env: { ...process.env, NODE_OPTIONS: '', HERALD_SMS_FAKE_OPTIONS: JSON.stringify(options) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  let next = 1;
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the SMS gateway fake's process exited (${code}) before it listened`)));
    child.on('message', (m: Reply) => {
      if ('ready' in m) return resolve(m.ready);
      const waiter = pending.get(m.id);
      pending.delete(m.id);
      if (m.error) waiter?.reject(new Error(m.error));
      else waiter?.resolve(m.result);
    });
  });
  const ask = <T>(op: Request['op'], ...args: unknown[]) =>
    new Promise<T>((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      child.send({ id, op, args });
    });
  return {
    url,
    calls: () => ask<SmsCall[]>('calls'),
    answered: () => ask<SmsAnswered[]>('answered'),
    setBehaviour: (behaviour, mobile) => ask<void>('setBehaviour', behaviour, mobile),
    reset: () => ask<void>('reset'),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** As a script: the fake, driven by the parent. */
async function serve() {
  const fake = await startSmsGatewayFake(JSON.parse(process.env.HERALD_SMS_FAKE_OPTIONS ?? '{}'));
  process.on('message', (m: Request) => {
    try {
      let result: unknown;
      if (m.op === 'calls') result = fake.calls.map(({ path: p, body, at }) => ({ path: p, body, at, headers: {} }));
      else if (m.op === 'answered') result = fake.answered;
      else if (m.op === 'setBehaviour') fake.setBehaviour(m.args![0] as SmsBehaviour, (m.args![1] as string | null) ?? undefined);
      else if (m.op === 'reset') fake.reset();
      process.send!({ id: m.id, result });
    } catch (err) {
      process.send!({ id: m.id, error: (err as Error).message });
    }
  });
  process.once('SIGTERM', () => void fake.stop().then(() => process.exit(0)));
  // The parent gone, nothing is left to drive the fake.
  process.once('disconnect', () => void fake.stop().then(() => process.exit(0)));
  process.send!({ ready: fake.url });
}

if (process.argv[1] && path.resolve(process.argv[1]) === self) void serve();
