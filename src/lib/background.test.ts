import { Background } from './background.js';

const gate = () => {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
};

describe('work a request leaves going', () => {
  test('the caller answers at once until the limit is reached; past it, it gets its task to wait for', async () => {
    const bg = new Background(() => {}, 2);
    const g = gate();
    expect(bg.run(() => g.opened)).toBeUndefined();
    expect(bg.run(() => g.opened)).toBeUndefined();
    const third = bg.run(() => g.opened);
    expect(third).toBeInstanceOf(Promise);
    expect(bg.size).toBe(3);
    g.open();
    await third;
    await bg.settled();
    expect(bg.size).toBe(0);
    expect(bg.run(async () => {})).toBeUndefined();
  });

  test('settled waits for tasks started while it waits; a task that rejects is reported, never thrown', async () => {
    const failures: unknown[] = [];
    const bg = new Background((err) => failures.push(err));
    const first = gate();
    const second = gate();
    const done: string[] = [];
    bg.run(async () => {
      await first.opened;
      done.push('first');
      // Started while `settled` waits for the first.
      bg.run(async () => {
        await second.opened;
        done.push('second');
      });
    });
    bg.run(() => Promise.reject(new Error('reported by the task itself')));
    const settled = bg.settled().then(() => done.push('settled'));
    first.open();
    await new Promise((r) => setImmediate(r));
    expect(done).toEqual(['first']);
    second.open();
    await settled;
    expect(done).toEqual(['first', 'second', 'settled']);
    expect(failures).toEqual([new Error('reported by the task itself')]);
  });
});
