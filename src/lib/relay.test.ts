import { collect, jsonArray } from './download.js';
import { Relay } from './relay.js';

/** Whether `p` has settled after the microtasks queued now have run. */
const settled = async (p: Promise<unknown>) => {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
};

describe('parts handed from work to a reader', () => {
  test('the work waits once `capacity` parts wait for the reader, and goes on as the reader takes them', async () => {
    const relay = new Relay<number>(2);
    expect(await settled(relay.put(1))).toBe(true);
    const second = relay.put(2);
    expect(await settled(second)).toBe(false);
    const reader = relay[Symbol.asyncIterator]();
    expect(await reader.next()).toEqual({ done: false, value: 1 });
    expect(await settled(second)).toBe(true);
    relay.end();
    expect(await reader.next()).toEqual({ done: false, value: 2 });
    expect(await reader.next()).toEqual({ done: true, value: undefined });
  });

  test('a reader that stops frees the work: nothing waits for it again, its parts are dropped', async () => {
    const relay = new Relay<number>(1);
    const reader = relay[Symbol.asyncIterator]();
    const blocked = relay.put(1);
    expect(await reader.next()).toEqual({ done: false, value: 1 });
    await blocked;
    const full = relay.put(2);
    expect(await settled(full)).toBe(false);
    await reader.return(undefined);
    expect(await settled(full)).toBe(true);
    for (let i = 3; i < 10; i++) expect(await settled(relay.put(i))).toBe(true);
  });

  test('a failure reaches the reader after the parts before it', async () => {
    const relay = new Relay<string>(4);
    await relay.put('a');
    relay.fail(new Error('lost'));
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const part of relay) seen.push(part);
      })(),
    ).rejects.toThrow('lost');
    expect(seen).toEqual(['a']);
  });
});

describe('a JSON array written from its parts', () => {
  async function* parts() {
    yield [{ recipient: 'a', status: 'success' }];
    yield [];
    yield [{ recipient: 'b"q', status: 'failed', error: 'No' }, { recipient: 'c', status: 'success', error: undefined }];
  }

  test('the text is the whole array’s, a chunk per part that has items', async () => {
    const chunks: string[] = [];
    for await (const chunk of jsonArray(parts()).stream) chunks.push(String(chunk));
    const whole = [...(await collect(parts()))];
    expect(chunks.join('')).toBe(JSON.stringify(whole));
    expect(chunks).toHaveLength(3);
    const none: string[] = [];
    for await (const chunk of jsonArray((async function* () {})()).stream) none.push(String(chunk));
    expect(none.join('')).toBe('[]');
  });
});
