import { describe, expect, test } from '@jest/globals';
import type { JobSpec, Queue } from './queue.js';
import { sweeper, type SweepDeps } from './sweeper.js';

function deps() {
  const added: JobSpec[] = [];
  const errors: unknown[] = [];
  const queue: Queue = {
    add: async (job) => void added.push(job),
    addMany: async (jobs) => void added.push(...jobs),
    remove: async () => {},
    close: async () => {},
  };
  const d: SweepDeps = { config: { campaignLeaseSeconds: 60 }, queue, log: { error: (obj: unknown) => void errors.push(obj) } as SweepDeps['log'] };
  return { d, added, errors };
}

describe('sweeper', () => {
  test('runs every part and queues the next sweep', async () => {
    const { d, added } = deps();
    const ran: string[] = [];
    const { tasks } = sweeper(d, [async () => void ran.push('a'), async () => void ran.push('b')]);
    await (tasks['campaign-sweep'] as () => Promise<void>)();
    expect(ran).toEqual(['a', 'b']);
    expect(added.map((j) => j.jobKey)).toEqual(['campaign-sweep']);
  });

  test('a part that fails is logged, the others still run, and the next sweep is still queued', async () => {
    const { d, added, errors } = deps();
    const ran: string[] = [];
    const broken = async function sweepBroken() {
      throw new Error('could not run distributed query');
    };
    const { tasks } = sweeper(d, [broken, async () => void ran.push('after')]);
    await (tasks['campaign-sweep'] as () => Promise<void>)();
    expect(ran).toEqual(['after']);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ part: 'sweepBroken' });
    expect(added.map((j) => j.jobKey)).toEqual(['campaign-sweep']);
  });
});
