import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { EventEmitter } from 'node:events';
import type { LookupFunction } from 'node:net';
import type { Readable } from 'node:stream';
import type { Task, TaskList } from 'graphile-worker';
import { Webhook } from 'standardwebhooks';
import { Agent } from 'undici';
import type { Deps } from '../../context.js';
import { lockFor } from '../../db/locks.js';
import { jsonRows, run } from '../../db/statements.js';
import { deliverInProcess, eventDataJson, wake, type HandedJson, type SettledLogColumns } from '../../delivery/outbox.js';
import { decryptJson } from '../../lib/crypto.js';
import { isPrivateAddress } from '../../lib/hosts.js';
import { webhookDeliveriesTotal } from '../../lib/metrics.js';
import { claimDeliveries, nextDue, overdueEndpoints, recordAttempts, releaseDeliveries, scheduleRetry, type ClaimedDelivery, type ClaimRow, type EndpointRow } from './sql.js';

/**
 * Delivery of outbound webhooks (platform.md): a run per endpoint takes its due deliveries a batch
 * at a time and posts each, signed the Standard Webhooks way with the `standardwebhooks` package.
 * A run is queued (`webhooks-deliver`, by `outbox.wake`, one pending per endpoint) and, in a
 * process that runs workers, started at once by the wake itself (`deliverInProcess`): one run per
 * endpoint and process, which a later wake or job extends rather than doubles. A run claims the
 * next batch while earlier ones are being posted (at most `BATCHES_IN_FLIGHT`, each `PER_BATCH`
 * requests at once: an endpoint's slow receiver holds its own run, never another's), and records
 * a batch's attempts in one statement off the path of the next claim. It works for `RUN_MS` at
 * most, then queues the next, for any process to take. A queued run's job only starts the run in
 * its process: no slot of the lane is held while a receiver answers. What a statement of this
 * process handed over (`outbox.HANDED`: a campaign chunk's settle writes its deliveries leased to
 * the process) a run posts before it claims, without a claim and with no job queued; should the
 * process die with it, its lease ends and the sweep wakes its endpoint.
 *
 * Each attempt is kept with its status, duration and the first 1 KiB of the answer. A 2xx answer
 * is a success; anything else (a redirect, which is never followed; a timeout; a refused
 * connection) is retried on the schedule (`WEBHOOK_RETRY_SCHEDULE`), or after the `Retry-After`
 * the receiver asked for, with the same `webhook-id`; a 410 disables the endpoint, and so does
 * failing for 5 days: what the run took and had not yet posted is then given back unsent. With
 * `BLOCK_PRIVATE_HOSTS` the address actually connected to is checked, so a host name that
 * resolves to a private address (at any moment) is refused.
 */

export const DELIVER_TASK = 'webhooks-deliver';
const BATCH = 100;
const PER_BATCH = 16;
const BATCHES_IN_FLIGHT = 3;
const RUN_MS = 20_000;
/** How long after a run that failed (a statement that threw) the endpoint's next run is queued. */
const AFTER_FAILED_RUN_MS = 2_000;
/**
 * At most this many deliveries handed over (`outbox.HANDED`) wait in a process's runs: past it, a
 * statement writes its deliveries for a claim, as an API process does.
 */
const HANDED_WAITING_MAX = BATCH * BATCHES_IN_FLIGHT * 4;
const ANSWER_BYTES = 1024;
const FAILING_DAYS = 5;
/** The longest `Retry-After` honoured. */
const MAX_RETRY_AFTER_S = 24 * 3600;
/** An attempt's outcome as `herald_webhook_deliveries_total` counts it. */
const OUTCOMES = { succeeded: 'success', pending: 'retry', failed: 'failed' } as const;

type WebhookDeps = Pick<Deps, 'db' | 'config' | 'log'>;

interface AttemptResult {
  event_id: string;
  attempt: number;
  succeeded: boolean;
  response_status: number | null;
  duration_ms: number;
  response: string | null;
  error: string | null;
  attempted_at: Date;
  status: 'pending' | 'succeeded' | 'failed';
  next_attempt_at: Date | null;
  gone: boolean;
}

/** A lookup that refuses private addresses: the one the connection is then made to. */
const publicOnly: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 0);
    const list = addresses as LookupAddress[];
    const refused = list.find((a) => isPrivateAddress(a.address));
    if (refused) return callback(Object.assign(new Error(`refused: ${hostname} resolves to the private address ${refused.address}`), { code: 'EPRIVATE' }), '', 0);
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
    callback(null, list[0]!.address, list[0]!.family);
  });
};

/** The secrets that sign now: the current one, and the previous one during its 24 hours. */
export function signingSecrets(key: Buffer, endpoint: Pick<EndpointRow, 'secret' | 'previous_secret' | 'previous_secret_expires_at'>, now: Date): string[] {
  const secrets = [decryptJson<string>(key, endpoint.secret)];
  if (endpoint.previous_secret && endpoint.previous_secret_expires_at && endpoint.previous_secret_expires_at > now) {
    secrets.push(decryptJson<string>(key, endpoint.previous_secret));
  }
  return secrets;
}

/** An event's body as every attempt sends it, with its data as delivered (`eventDataJson`). */
export const bodyOf = (e: Omit<ClaimedDelivery, 'event_id' | 'attempts'>) =>
  `{"type":${JSON.stringify(e.type)},"timestamp":"${e.occurred_at.toISOString()}","data":${eventDataJson(e.type, e.data, e)}}`;

/** Seconds to wait that a `Retry-After` header asks (seconds or an HTTP date), or null. */
export function retryAfterSeconds(value: string | string[] | undefined, now: Date): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return null;
  const seconds = /^\d+$/.test(v.trim()) ? Number(v.trim()) : (Date.parse(v) - now.getTime()) / 1000;
  if (!Number.isFinite(seconds) || seconds < 0) return null;
  return Math.min(Math.ceil(seconds), MAX_RETRY_AFTER_S);
}

/** The first `ANSWER_BYTES` of an answer's body; the rest is not read. */
function answerOf(body: Readable): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => resolve(Buffer.concat(chunks).subarray(0, ANSWER_BYTES).toString('utf8'));
    body.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= ANSWER_BYTES) {
        body.destroy();
        done();
      }
    });
    body.on('end', done);
    body.on('error', done);
  });
}

/** The delivery runs' task, and `drain` for a process that stops: its runs take nothing more and finish what they posted. */
export function webhookTasks(deps: WebhookDeps): { tasks: TaskList; drain: () => Promise<void> } {
  const pool = new Agent({
    connections: PER_BATCH * BATCHES_IN_FLIGHT,
    keepAliveTimeout: 4_000,
    ...(deps.config.blockPrivateHosts && { connect: { lookup: publicOnly } }),
  });

  /** One attempt of one delivery: never throws. */
  async function attempt(url: URL, signers: Webhook[], d: ClaimedDelivery): Promise<AttemptResult> {
    const attemptedAt = new Date();
    const number = d.attempts + 1;
    const body = bodyOf(d);
    const signature = signers.map((w) => w.sign(d.event_id, attemptedAt, body)).join(' ');
    const abort = new EventEmitter();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.emit('abort');
    }, deps.config.webhookTimeoutMs);
    let status: number | null = null;
    let response: string | null = null;
    let error: string | null = null;
    let retryAfter: number | null = null;
    try {
      if (deps.config.blockPrivateHosts && isPrivateAddress(url.hostname.replace(/^\[|\]$/g, ''))) {
        throw new Error(`refused: ${url.hostname} is a private address`);
      }
      const res = await pool.request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Herald-Webhooks/1.0',
          'webhook-id': d.event_id,
          'webhook-timestamp': String(Math.floor(attemptedAt.getTime() / 1000)),
          'webhook-signature': signature,
        },
        body,
        signal: abort,
      });
      status = res.statusCode;
      response = await answerOf(res.body);
      retryAfter = retryAfterSeconds(res.headers['retry-after'], new Date());
      if (status >= 300 && status < 400) error = `redirect to ${String(res.headers.location ?? '(none)')} not followed`;
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
      error = timedOut ? `timeout: no answer within ${deps.config.webhookTimeoutMs} ms` : (e.cause?.message ?? e.message);
    } finally {
      clearTimeout(timer);
    }
    const succeeded = status !== null && status >= 200 && status < 300;
    const gone = status === 410;
    const delay = deps.config.webhookRetrySchedule[number - 1];
    const retry = !succeeded && !gone && delay !== undefined;
    return {
      event_id: d.event_id,
      attempt: number,
      succeeded,
      response_status: status,
      duration_ms: Date.now() - attemptedAt.getTime(),
      response,
      error,
      attempted_at: attemptedAt,
      status: succeeded ? 'succeeded' : retry ? 'pending' : 'failed',
      next_attempt_at: retry ? new Date(Date.now() + (retryAfter ?? delay) * 1000) : null,
      gone,
    };
  }

  /** Keeps a batch's attempts, their deliveries' state and the endpoint's summary (disabling it after a 410 or 5 days of failure). */
  async function keep(orgId: string, endpoint: EndpointRow, results: AttemptResult[]): Promise<string | null> {
    const byTime = [...results].sort((a, b) => a.attempted_at.getTime() - b.attempted_at.getTime());
    const lastSuccess = byTime.filter((r) => r.succeeded).at(-1);
    const failures = byTime.filter((r) => !r.succeeded);
    const failuresAfter = lastSuccess ? failures.filter((r) => r.attempted_at >= lastSuccess.attempted_at).length : failures.length;
    const failingSince = lastSuccess ? null : (endpoint.failing_since ?? failures[0]?.attempted_at ?? null);
    const disable = results.some((r) => r.gone)
      ? 'The endpoint answered 410 Gone'
      : failingSince && failuresAfter && Date.now() - failingSince.getTime() >= FAILING_DAYS * 86_400_000
        ? `The endpoint failed every delivery for ${FAILING_DAYS} days`
        : null;
    await run(deps.db, recordAttempts, {
      orgId,
      endpointId: endpoint.id,
      attempts: jsonRows(results.map(({ gone: _gone, ...r }) => r)),
      lastSuccessAt: lastSuccess?.attempted_at ?? null,
      lastFailureAt: failures.at(-1)?.attempted_at ?? null,
      failuresAfter,
      disable,
    });
    for (const r of results) webhookDeliveriesTotal.inc({ outcome: OUTCOMES[r.status] });
    return disable;
  }

  /**
   * A run of one endpoint in this process: `again` asks it to claim once more before it ends;
   * `stopped` says why it stopped taking more; `handed`, what statements of this process handed it,
   * leased to it, to post before it claims (with the endpoint as each statement read it).
   */
  interface Run {
    orgId: string;
    endpointId: string;
    again: boolean;
    stopped: string | null;
    handed: { endpoint: EndpointRow; deliveries: ClaimedDelivery[]; at: number }[];
    done: Promise<void>;
  }
  const runs = new Map<string, Run>();
  /** Every run of this process until it ends, in the map or past it (posting what it took). */
  const active = new Set<Run>();
  let closing = false;
  /** Deliveries handed over and not yet taken by their run. */
  let handedWaiting = 0;
  const leaseSeconds = Math.ceil((deps.config.webhookTimeoutMs * Math.ceil(BATCH / PER_BATCH)) / 1000) + 30;

  /** Posts one claimed batch `PER_BATCH` at a time and records it; what is left once the run stops is given back unsent. */
  async function deliverBatch(r: Run, endpoint: EndpointRow, claimed: ClaimedDelivery[]): Promise<void> {
    const url = new URL(endpoint.url);
    const signers = signingSecrets(deps.config.credentialsKey, endpoint, new Date()).map((s) => new Webhook(s));
    const results: AttemptResult[] = [];
    const unsent: string[] = [];
    let next = 0;
    const lane = async () => {
      while (next < claimed.length) {
        const d = claimed[next++]!;
        if (r.stopped) unsent.push(d.event_id);
        else {
          const result = await attempt(url, signers, d);
          // A 410 stops the run's other requests now, not once its batch is recorded.
          if (result.gone) r.stopped ??= 'The endpoint answered 410 Gone';
          results.push(result);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(PER_BATCH, claimed.length) }, lane));
    if (results.length) {
      let disabled: string | null;
      try {
        disabled = await keep(r.orgId, endpoint, results);
      } catch (err) {
        // The attempts were made but not kept: their deliveries are given back at once (best
        // effort), so the run queued after this failure posts them again with the same webhook-id,
        // rather than waiting out their lease (half a minute and more).
        await run(deps.db, releaseDeliveries, { orgId: r.orgId, endpointId: r.endpointId, eventIds: claimed.map((d) => d.event_id) }).catch(
          (releaseErr: unknown) => deps.log.warn({ err: releaseErr, orgId: r.orgId, endpointId: r.endpointId }, 'webhooks: could not give back deliveries'),
        );
        throw err;
      }
      if (disabled) {
        r.stopped ??= disabled;
        deps.log.warn({ orgId: r.orgId, endpointId: r.endpointId, reason: disabled }, 'webhooks: endpoint disabled');
      }
    }
    if (unsent.length) await run(deps.db, releaseDeliveries, { orgId: r.orgId, endpointId: r.endpointId, eventIds: unsent });
  }

  /**
   * Claims batch after batch while earlier ones are posted and recorded, until none is due (and no
   * wake came meanwhile), the endpoint is disabled or gone, or `RUN_MS` has passed; then queues the
   * endpoint's next run if one is due.
   */
  async function drain(r: Run): Promise<void> {
    const { orgId, endpointId } = r;
    const until = Date.now() + RUN_MS;
    const inFlight = new Set<Promise<void>>();
    let failure: unknown = null;
    try {
      while (Date.now() < until && !r.stopped && !failure) {
        if (inFlight.size >= BATCHES_IN_FLIGHT) await Promise.race(inFlight);
        if (r.stopped || failure) break;
        let endpoint: EndpointRow;
        let claimed: ClaimedDelivery[];
        const handed = r.handed.shift();
        if (handed) {
          handedWaiting -= handed.deliveries.length;
          // Waited past half its lease (a slow receiver ahead of it): given back rather than posted
          // as the lease ends, when another process may claim it too.
          if (Date.now() - handed.at > (leaseSeconds * 1000) / 2) {
            try {
              await run(deps.db, releaseDeliveries, { orgId, endpointId, eventIds: handed.deliveries.map((d) => d.event_id) });
            } catch (err) {
              failure ??= err;
              break;
            }
            r.again = true;
            continue;
          }
          ({ endpoint, deliveries: claimed } = handed);
        } else {
          r.again = false;
          const rows: ClaimRow[] = await run(deps.db, claimDeliveries, { orgId, endpointId, limit: BATCH, leaseSeconds });
          // Deleted meanwhile (its deliveries went with it), or disabled.
          if (!rows[0]?.enabled) break;
          endpoint = rows[0];
          claimed = rows.filter((row) => row.event_id !== null) as unknown as ClaimedDelivery[];
          if (!claimed.length) {
            if (r.again || r.handed.length) continue;
            break;
          }
        }
        const batch: Promise<void> = deliverBatch(r, endpoint, claimed).then(
          () => void inFlight.delete(batch),
          (err: unknown) => {
            inFlight.delete(batch);
            failure ??= err;
          },
        );
        inFlight.add(batch);
      }
    } finally {
      // From here on a wake starts another run: this one takes nothing more.
      runs.delete(`${orgId}:${endpointId}`);
      // What was handed over and not taken is given back, due as any other (its next run is queued below).
      const left = r.handed.splice(0).flatMap((h) => h.deliveries.map((d) => d.event_id));
      handedWaiting -= left.length;
      await Promise.all(inFlight);
      if (left.length) {
        await run(deps.db, releaseDeliveries, { orgId, endpointId, eventIds: left }).catch((err: unknown) => {
          deps.log.warn({ err, orgId, endpointId }, 'webhooks: could not give back handed deliveries; their lease ends');
          failure ??= err;
        });
      }
    }
    if (failure) {
      // What the run took and could not finish was given back (`deliverBatch`): the endpoint's next
      // run is queued a moment later (a queued run, never one started here at once, so an error
      // that lasts cannot spin), rather than left to a lease or the sweep. Best effort: the sweep
      // still wakes what is overdue when the database is what failed.
      await queueRetry(orgId, endpointId, new Date(Date.now() + AFTER_FAILED_RUN_MS)).catch((err: unknown) =>
        deps.log.warn({ err, orgId, endpointId }, 'webhooks: could not queue the run after a failed one; the sweep takes over'),
      );
      throw failure;
    }
    // A disabled endpoint has nothing due; a stopping process queues what it gave back, for another.
    if (r.stopped && !closing) return;
    const [{ next } = { next: null }] = await run(deps.db, nextDue, { orgId, endpointId });
    if (!next) return;
    if (next.getTime() <= Date.now()) await wake(deps.db, orgId, [endpointId]);
    else await queueRetry(orgId, endpointId, next);
  }

  /**
   * Queues the endpoint's run for `runAt` unless one is queued sooner (`scheduleRetry`), one at a
   * time per endpoint: the statement's look at the run queued reads what was committed when it
   * began, so of two at once (a run ending after a failure, asking for 2 s, and one started
   * meanwhile that saw the failed run's deliveries still leased, asking for their lease's end), the
   * later could replace the sooner, and a delivery waited out its lease. Under the lock, the second
   * reads the first's.
   */
  async function queueRetry(orgId: string, endpointId: string, runAt: Date): Promise<void> {
    await deps.db.transaction(async (trx) => {
      await lockFor(trx, `webhooks-retry:${endpointId}`);
      await run(trx, scheduleRetry, { orgId, endpointId, runAt });
    });
  }

  /** The endpoint's run in this process: the one going, told to claim again, or a new one; `handed` joins its deliveries to post. */
  function deliverNow(orgId: string, endpointId: string, handed?: Run['handed'][number]): Promise<void> {
    // A stopping process starts nothing: what is due is another process's (its queued run, the sweep).
    if (closing) return Promise.resolve();
    const key = `${orgId}:${endpointId}`;
    const going = runs.get(key);
    if (handed) handedWaiting += handed.deliveries.length;
    if (going) {
      if (handed) going.handed.push(handed);
      going.again = true;
      return going.done;
    }
    const r: Run = { orgId, endpointId, again: false, stopped: null, handed: handed ? [handed] : [], done: Promise.resolve() };
    runs.set(key, r);
    active.add(r);
    r.done = drain(r).finally(() => active.delete(r));
    return r.done;
  }

  /**
   * Each endpoint's share of what a statement handed over, to its run, with the settled logs its
   * message events carry; or, when this process takes none of it, given back and queued.
   */
  async function handOver(orgId: string, handed: HandedJson, logs: ReadonlyMap<string, SettledLogColumns>): Promise<void> {
    // A message event's recipients come from its log, as the writer settled it: none missing.
    if (closing || handed.deliveries.some((d) => d.settled_log_id !== null && !logs.has(d.settled_log_id))) {
      const endpointIds = handed.endpoints.map((e) => e.id);
      for (const endpointId of endpointIds) {
        const eventIds = handed.deliveries.filter((d) => d.endpoint_id === endpointId).map((d) => d.event_id);
        await run(deps.db, releaseDeliveries, { orgId, endpointId, eventIds });
      }
      return wake(deps.db, orgId, endpointIds);
    }
    const at = Date.now();
    for (const e of handed.endpoints) {
      const endpoint: EndpointRow = {
        id: e.id,
        url: e.url,
        enabled: true,
        secret: Buffer.from(e.secret, 'base64'),
        previous_secret: e.previous_secret === null ? null : Buffer.from(e.previous_secret, 'base64'),
        previous_secret_expires_at: e.previous_secret_expires_at === null ? null : new Date(e.previous_secret_expires_at),
        failing_since: e.failing_since === null ? null : new Date(e.failing_since),
      };
      const deliveries: ClaimedDelivery[] = handed.deliveries
        .filter((d) => d.endpoint_id === e.id)
        .map((d) => {
          const log = d.settled_log_id === null ? undefined : logs.get(d.settled_log_id);
          return {
            event_id: d.event_id,
            attempts: 0,
            type: d.type,
            occurred_at: new Date(d.occurred_at),
            data: d.data,
            settled_recipients: log?.settled_recipients ?? null,
            settled_provider_ids: log?.settled_provider_ids ?? null,
          };
        });
      deliverNow(orgId, e.id, { endpoint, deliveries, at }).catch((err: unknown) =>
        deps.log.warn({ err, orgId, endpointId: e.id }, 'webhooks: delivery run failed; its next run is queued'),
      );
    }
  }

  if (deps.config.workers) {
    deliverInProcess(deps.db, {
      deliverNow(orgId, endpointIds) {
        for (const endpointId of endpointIds) {
          // Not awaited: whatever fails is left to the queued run, which the wake adds all the same.
          deliverNow(orgId, endpointId).catch((err: unknown) => deps.log.warn({ err, orgId, endpointId }, 'webhooks: delivery run failed; the queued run takes over'));
        }
      },
      handOver,
      handOverLease: () => (closing || handedWaiting >= HANDED_WAITING_MAX ? 0 : leaseSeconds),
    });
  }

  // A queued run starts (or extends) the endpoint's run in this process and ends: it never holds a
  // slot of the lane while a receiver takes its time (each wake of a slow receiver's endpoint held
  // a slot, and every other endpoint's queued run waited for its answers). The run
  // keeps its state in the deliveries (their leases, the retry it queues), not in the job.
  const deliver: Task = async (payload) => {
    const { orgId, endpointId } = payload as { orgId: string; endpointId: string };
    deliverNow(orgId, endpointId).catch((err: unknown) => deps.log.warn({ err, orgId, endpointId }, 'webhooks: delivery run failed; its next run is queued'));
  };

  return {
    tasks: { [DELIVER_TASK]: deliver },
    async drain() {
      closing = true;
      for (const r of active) r.stopped ??= 'The process is stopping';
      await Promise.allSettled([...active].map((r) => r.done));
    },
  };
}

/** The sweep's part: endpoints whose due deliveries nobody took (a wake lost with its process, a worker that died) are woken. */
export async function sweepWebhooks(deps: Pick<Deps, 'db'>): Promise<void> {
  const overdue = await run(deps.db, overdueEndpoints, { graceSeconds: 10, limit: 1000 });
  for (const { organization_id: orgId, endpoint_id: endpointId } of overdue) await wake(deps.db, orgId, [endpointId]);
}
