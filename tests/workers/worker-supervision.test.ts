import { EventEmitter } from 'node:events';
import { jest } from '@jest/globals';
import { pino } from 'pino';
import { KILL_JOBS_AFTER_MS, supervise, type RunnerLike } from '../../src/jobs/worker.js';

// graphile-worker rejects its runner's promise when it gives up (it could not record a job's
// outcome while Postgres was away). Herald logs that and starts a new runner.
function fakeRunner() {
  let fail!: (err: Error) => void;
  let end!: () => void;
  const promise = new Promise<void>((resolve, reject) => ((fail = reject), (end = resolve)));
  const runner: RunnerLike & { fail: (err: Error) => void; end: () => void; stopped: boolean; killed: boolean } = {
    promise,
    stopped: false,
    killed: false,
    fail,
    end,
    stop: async () => {
      runner.stopped = true;
    },
    kill: async () => {
      runner.killed = true;
    },
  };
  return runner;
}

test('a runner that fails is replaced, after a pause, and stop() stops the current one', async () => {
  jest.useFakeTimers();
  try {
    const runners: ReturnType<typeof fakeRunner>[] = [];
    let attempts = 0;
    const start = async () => {
      attempts++;
      // The second start fails (database still away); the third succeeds.
      if (attempts === 2) throw new Error('connect ECONNREFUSED');
      const r = fakeRunner();
      runners.push(r);
      return r;
    };
    const onStart = jest.fn(async () => {});
    const workers = await supervise(start, pino({ level: 'silent' }), onStart);
    expect(runners).toHaveLength(1);
    expect(onStart).toHaveBeenCalledTimes(1);

    runners[0]!.fail(new Error('Could not failJobs; queue is in an inconsistent state; aborting.'));
    await jest.advanceTimersByTimeAsync(1000); // first restart: refused
    expect(attempts).toBe(2);
    expect(runners).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(2000); // second restart, after a longer pause
    expect(attempts).toBe(3);
    expect(runners).toHaveLength(2);
    expect(onStart).toHaveBeenCalledTimes(2);

    // A runner that stops itself (graphile-worker resolves its promise when its pool failed) is
    // replaced too.
    runners[1]!.end();
    await jest.advanceTimersByTimeAsync(1000);
    expect(attempts).toBe(4);
    expect(runners).toHaveLength(3);

    await workers.stop();
    expect(runners[2]!.stopped).toBe(true);
    // A failure after stop() is not followed by another start.
    runners[2]!.fail(new Error('late'));
    await jest.advanceTimersByTimeAsync(60_000);
    expect(attempts).toBe(4);
  } finally {
    jest.useRealTimers();
  }
});

test('a stop waits for running jobs, but not forever: one still running is handed back and named', async () => {
  jest.useFakeTimers();
  try {
    // graphile-worker's stop waits for the running job, which does not end (it ignores its abortSignal).
    const events = new EventEmitter();
    const runner = Object.assign(fakeRunner(), { events: events as unknown as RunnerLike['events'], stop: () => new Promise<void>(() => {}) });
    const warnings: unknown[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line)) });
    const workers = await supervise(async () => runner, log);
    events.emit('job:start', { job: { id: '1', task_identifier: 'contact-import' } });
    events.emit('job:start', { job: { id: '2', task_identifier: 'campaign-chunk' } });
    events.emit('job:complete', { job: { id: '2', task_identifier: 'campaign-chunk' } });

    let stopped = false;
    void workers.stop().then(() => (stopped = true));
    await jest.advanceTimersByTimeAsync(KILL_JOBS_AFTER_MS - 1);
    expect(stopped).toBe(false);
    expect(runner.killed).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    expect(runner.killed).toBe(true);
    expect(stopped).toBe(true);
    expect(warnings).toEqual([expect.objectContaining({ jobs: ['contact-import'], msg: expect.stringMatching(/handed back to the queue/) })]);
  } finally {
    jest.useRealTimers();
  }
});

test('a stop whose jobs end in time does not kill them', async () => {
  jest.useFakeTimers();
  try {
    const runner = fakeRunner();
    const workers = await supervise(async () => runner, pino({ level: 'silent' }));
    await workers.stop();
    await jest.advanceTimersByTimeAsync(KILL_JOBS_AFTER_MS * 2);
    expect(runner.stopped).toBe(true);
    expect(runner.killed).toBe(false);
  } finally {
    jest.useRealTimers();
  }
});
