import { describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import type { CampaignDto, CampaignStatus } from './dto.js';
import { ProgressFeed } from './progress.js';
import { sleep } from '../../../tests/helpers/time.js';

const INTERVAL = 60;

/** A campaign read that answers `states` in turn (the last one again once they run out), counting the reads and noting when each began. */
function reader(...states: [CampaignStatus, number][]) {
  let reads = 0;
  const at: number[] = [];
  const read = async () => {
    at.push(Date.now());
    const [status, sent] = states[Math.min(reads++, states.length - 1)]!;
    return { _id: 'c', status, analytics: { sent, delivered: 0, failed: 0, opened: 0, clicked: 0, suppressed: 0 }, updatedAt: `t${sent}` } as CampaignDto;
  };
  return { read, reads: () => reads, at };
}

async function openFeed(read: () => Promise<CampaignDto>) {
  const feed = new ProgressFeed(read, pino({ level: 'silent' }), INTERVAL);
  let ended = 0;
  feed.onEnd(() => ended++);
  await feed.start();
  return { feed, ended: () => ended };
}

const sent = (result: IteratorResult<CampaignDto>) => (result.done ? 'done' : `${result.value.status} ${result.value.analytics.sent}`);

describe('a campaign progress feed', () => {
  it('reads once per interval however many changes are announced, and sends only what changed', async () => {
    const { read, reads, at } = reader(['active', 0], ['active', 10], ['active', 10], ['active', 20]);
    const { feed } = await openFeed(read);
    expect(sent(await feed.next())).toBe('active 0');
    for (let i = 0; i < 20; i++) feed.changed();
    expect(sent(await feed.next())).toBe('active 10');
    expect(reads()).toBe(2);
    // The second read waited for the interval since the first (timers fire at most a millisecond early).
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(INTERVAL - 2);
    // A read that finds what was already sent sends nothing.
    feed.changed();
    await sleep(INTERVAL * 2);
    expect(reads()).toBe(3);
    feed.changed();
    expect(sent(await feed.next())).toBe('active 20');
    await feed.return();
  });

  it('gives a slow subscriber the newest state, not a backlog', async () => {
    const { read } = reader(['active', 0], ['active', 10], ['active', 20]);
    const { feed } = await openFeed(read);
    await feed.next();
    feed.changed();
    await sleep(INTERVAL * 1.5);
    feed.changed();
    await sleep(INTERVAL * 1.5);
    expect(sent(await feed.next())).toBe('active 20');
    await feed.return();
  });

  it('ends after the final status: that event, then done; nothing more is read', async () => {
    const { read, reads } = reader(['active', 0], ['completed', 30]);
    const { feed, ended } = await openFeed(read);
    await feed.next();
    feed.changed();
    expect(sent(await feed.next())).toBe('completed 30');
    expect(ended()).toBe(1);
    feed.changed();
    expect(sent(await feed.next())).toBe('done');
    await sleep(INTERVAL * 2);
    expect(reads()).toBe(2);
  });

  it('a campaign already final: one event, then done', async () => {
    const { feed, ended } = await openFeed(reader(['canceled', 0]).read);
    expect([sent(await feed.next()), sent(await feed.next())]).toEqual(['canceled 0', 'done']);
    expect(ended()).toBe(1);
  });

  it('a subscriber that leaves ends a waiting next() and the subscription to announcements', async () => {
    const { feed, ended } = await openFeed(reader(['active', 0]).read);
    await feed.next();
    const waiting = feed.next();
    await feed.return();
    expect(sent(await waiting)).toBe('done');
    expect(ended()).toBe(1);
  });

  it('a failed first read rejects and ends the feed; a failed later read is tried again', async () => {
    const refused = new ProgressFeed(() => Promise.reject(new Error('403')), pino({ level: 'silent' }), INTERVAL);
    let ended = 0;
    refused.onEnd(() => ended++);
    await expect(refused.start()).rejects.toThrow('403');
    expect(ended).toBe(1);

    const { read } = reader(['active', 0], ['active', 5]);
    let fail = false;
    const { feed } = await openFeed(() => (fail ? ((fail = false), Promise.reject(new Error('away'))) : read()));
    await feed.next();
    fail = true;
    feed.changed();
    expect(sent(await feed.next())).toBe('active 5');
    await feed.return();
  });
});
