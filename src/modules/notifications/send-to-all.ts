import { randomUUID } from 'node:crypto';
import type { AuthedContext } from '../../context.js';
import type { StreamedWork } from '../../db/idempotency.js';
import { run } from '../../db/statements.js';
import { tenant } from '../../db/tenant.js';
import { unitCost } from '../../delivery/cost.js';
import * as credits from '../../delivery/credits.js';
import { round2 } from '../../delivery/credits.js';
import { MAX_LOG_RECIPIENTS } from '../../delivery/log-recipients.js';
import { priceOf, sendBatches, settledOutcomes, writePendingLogs, writtenBatches, type PricedLog, type RecipientInput, type RecipientOutcome, type SendHeader } from '../../delivery/pipeline.js';
import { touchPendingLogs } from '../../delivery/sql/logs.js';
import type { Channel } from '../../delivery/types.js';
import type { Parts } from '../../lib/download.js';
import { validationFailed } from '../../lib/errors.js';
import { Relay } from '../../lib/relay.js';
import { leftChannel } from '../consent/service.js';
import { erasureKey } from '../erasure/keys.js';
import { erasedToken, TOKEN_PREFIX } from '../erasure/tokens.js';
import { preparerFor, textsOf, type SendTexts } from './messages.js';

/**
 * A send to every contact (`POST /notifications/send-to-all`), in bounded memory whatever the
 * number of contacts: the addresses are read a page of the address index at a time; each page is
 * rendered, priced and written as pending logs, all in one transaction that reserves the whole
 * send's cost at its end (402, nothing written, when the balance is short); then the logs are read
 * back a few at a time, sent and settled by the send engine (`sendBatches`), and each log's outcomes
 * handed on once its settle is written. Between the two, the send keeps its logs' ids and, when
 * each recipient has its own message, each one's price: a few bytes per recipient.
 */

/**
 * Addresses read per query: one range of the channel's address index, written as its logs in one
 * statement. A page is held through its few round trips (read, rendered, written), and what outlives
 * a couple of young-generation collections waits for a full one: larger pages grow the heap, not
 * the pace.
 */
const PAGE = 500;

/** Parts of the answer (a log's outcomes each) produced ahead of the client's reading: past that, sending waits for it. */
const PARTS_AHEAD = 4;

/** What a finished send to every contact stores to answer it again (`Idempotency-Key`): its logs, in order. */
export interface SentLogs {
  logs: string[];
}

/** What the send to every contact keeps of the logs it wrote until it sends them. */
class WrittenLogs {
  readonly ids: string[] = [];
  /** What the logs hold together: what the send reserves. */
  total = 0;
  /** Recipients to send (those that failed before sending not counted). */
  valid = 0;
  /** Each recipient's own price, in hundredths, at `MAX_LOG_RECIPIENTS` × its log's index + its position; only when recipients have their own messages. */
  private cents: Uint32Array;

  constructor(private readonly personal: boolean) {
    this.cents = new Uint32Array(personal ? 64 * MAX_LOG_RECIPIENTS : 0);
  }

  /** A log written, whose recipients all but the last log's are `MAX_LOG_RECIPIENTS`. */
  add(logId: string, log: PricedLog) {
    const index = this.ids.push(logId) - 1;
    this.total = round2(this.total + log.reserved);
    for (const r of log.recipients) if (!r.invalid) this.valid++;
    if (!this.personal) return;
    const from = index * MAX_LOG_RECIPIENTS;
    if (from + MAX_LOG_RECIPIENTS > this.cents.length) {
      const grown = new Uint32Array(this.cents.length * 2);
      grown.set(this.cents);
      this.cents = grown;
    }
    log.recipients.forEach((r, i) => (this.cents[from + i] = r.own ? Math.round(r.own.cost * 100) : 0));
  }

  /** What the recipient at `position` of the `index`th log was priced when its log was written. */
  priced(index: number, position: number): number {
    return this.cents[index * MAX_LOG_RECIPIENTS + position]! / 100;
  }
}

/**
 * Starts the send: its logs are written and paid for before this resolves (a failure until then is
 * the request's error), and sent after, whether or not anyone reads the answer; `finished` resolves
 * once every log is settled. The sending is the process's background work (finished before it
 * stops), so a client that goes away stops only its answer.
 */
export async function sendToEveryContact(ctx: AuthedContext, input: SendTexts): Promise<StreamedWork<Parts<RecipientOutcome>, SentLogs>> {
  const orgId = ctx.caller.orgId;
  const channel = input.type;
  const pages = addressPages(ctx, channel);
  try {
    const first = await pages.next();
    if (first.done) return { answer: inOnePart([]), finished: Promise.resolve({ logs: [] }) };
    const via = await ctx.delivery.channelFor(orgId, channel);
    const texts = await textsOf(ctx, input);
    // The template named was deleted (or moved) since the input was checked.
    if (Array.isArray(texts)) throw validationFailed(texts);
    const preparer = await preparerFor(ctx, channel, texts, { bulk: true });
    const header: SendHeader = {
      orgId,
      fromName: via.fromName,
      senderUserId: ctx.caller.userId,
      senderApiKeyId: ctx.caller.apiKeyId,
      channel,
      body: preparer.shared.body,
      subject: channel === 'email' ? preparer.shared.subject : undefined,
      via,
      lane: 'bulk',
    };
    const unit = unitCost(ctx.config, channel, header.body);
    const written = new WrittenLogs(preparer.personal);

    // The logs are written page by page and the whole send reserved at the end, in one transaction:
    // the balance is short (or the quota spent) and it rolls back, nothing written; the credits row
    // is locked only at the end.
    await ctx.db.transaction(async (trx) => {
      const write = async (recipients: RecipientInput[]) => {
        const logs = priceOf(ctx.config, channel, header.body, recipients).logs.map((l) => ({ logId: randomUUID(), ...l }));
        await writePendingLogs(trx, header, unit, logs);
        for (const l of logs) written.add(l.logId, l);
      };
      // A page's recipients that do not fill a log go into the next page's first log.
      let rest: RecipientInput[] = [];
      for (let page: IteratorResult<string[], void> = first; !page.done; page = await pages.next()) {
        const recipients = rest.concat((await preparer.prepare(page.value.map((recipient) => ({ recipient })))).recipients);
        const whole = recipients.length - (recipients.length % MAX_LOG_RECIPIENTS);
        await write(recipients.slice(0, whole));
        rest = recipients.slice(whole);
      }
      await write(rest);
      await ctx.quotas.sendMessages(orgId, written.valid);
      if (!(await credits.reserve(trx, orgId, written.total))) throw await credits.shortfall(trx, orgId, written.total, 'send');
    });

    const relay = new Relay<RecipientOutcome[]>(PARTS_AHEAD);
    const batches = writtenBatches(ctx.db, orgId, written.ids, preparer.personal ? (read, from) => preparer.again(read, (b, i) => written.priced(from + b, i)) : undefined);
    const finished = (async (): Promise<SentLogs> => {
      // Each log's outcomes come in the order of the logs: those after the `settled`th are still to send.
      let settled = 0;
      const alive = keptAlive(ctx, () => written.ids.slice(settled));
      try {
        for await (const outcomes of sendBatches(ctx, header, unit, batches)) {
          settled++;
          await relay.put(outcomes);
        }
      } catch (err) {
        relay.fail(err);
        throw err;
      } finally {
        clearInterval(alive);
      }
      relay.end();
      return { logs: written.ids };
    })();
    // A failure once the answer has started only cuts the answer short: it is logged from here.
    void ctx.background.run(() => finished.then(() => undefined));
    return { answer: relay, finished };
  } finally {
    await pages.return(undefined);
  }
}

/**
 * Marks the logs `pending` names as alive a few times within each `SEND_ABANDON_SECONDS`, so that
 * the sweeper (`settleAbandoned`) never takes a send that lasts longer, still sending them, for one
 * whose process died. Stopped with `clearInterval`.
 */
function keptAlive(ctx: AuthedContext, pending: () => string[]): NodeJS.Timeout {
  let touching = false;
  const touch = async () => {
    if (touching) return;
    touching = true;
    try {
      await run(ctx.db, touchPendingLogs, { orgId: ctx.caller.orgId, ids: pending() });
    } catch (err) {
      // The next touch tries again, well before the sweeper would act.
      ctx.log.warn({ err }, 'could not mark a send to every contact as alive');
    } finally {
      touching = false;
    }
  };
  const timer = setInterval(() => void touch(), Math.max(100, (ctx.config.sendAbandonSeconds * 1000) / 4));
  timer.unref();
  return timer;
}

/** A send to every contact answered again from what its key stored: its logs (`SentLogs`), or the answer itself, stored whole. */
export function answerAgain(ctx: AuthedContext, stored: SentLogs | RecipientOutcome[]): Parts<RecipientOutcome> {
  return Array.isArray(stored) ? inOnePart(stored) : settledOutcomes(ctx.db, ctx.caller.orgId, stored.logs);
}

async function* inOnePart(items: RecipientOutcome[]): AsyncGenerator<RecipientOutcome[]> {
  yield items;
}

/**
 * The addresses the organization's contacts have for a channel, each once and in the order of the
 * channel's address index, a page at a time (the page after the last one's last address), less
 * every address a contact that left the channel has (whichever other contact shares it) and, for
 * email, every address on the suppression list, as itself or erased (its token). A page's
 * exceptions are read for its own range: the few contacts that left from their partial index, the
 * suppressions from theirs. A page left empty by them is not yielded.
 */
async function* addressPages(ctx: AuthedContext, channel: Channel): AsyncGenerator<string[], void> {
  const t = tenant(ctx.db, ctx.caller.orgId);
  const column = `contacts.${channel === 'email' ? 'email' : 'phone'}`;
  const expr = channel === 'email' ? 'lower(contacts.email)' : 'contacts.phone';
  const address = ctx.db.raw(`${expr} AS address`);
  const erased = channel === 'email' ? await erasedTokens(ctx) : null;
  for (let after = ''; ; ) {
    const rows = (await t.scoped('contacts').whereNotNull(column).whereRaw(`${expr} > ?`, [after]).distinct(address).orderBy('address').limit(PAGE)) as { address: string }[];
    if (!rows.length) return;
    const low = rows[0]!.address;
    const high = rows.at(-1)!.address;
    const left = (await t.scoped('contacts').whereNotNull(column).whereRaw(leftChannel(channel)).whereRaw(`${expr} BETWEEN ? AND ?`, [low, high]).select(address)) as { address: string }[];
    const listed =
      channel === 'email'
        ? ((await t.scoped('suppressions').where('suppressions.channel', 'email').whereBetween('suppressions.address', [low, high]).select('suppressions.address')) as { address: string }[])
        : [];
    const out = new Set([...left, ...listed].map((r) => r.address));
    const page = rows.map((r) => r.address).filter((a) => !out.has(a) && !(erased && erased.tokens.has(erasedToken(erased.key, a))));
    if (page.length) yield page;
    if (rows.length < PAGE) return;
    after = high;
  }
}

/** The organization's erased addresses on the email suppression list (their tokens), with the key that makes them; null when it has none. */
async function erasedTokens(ctx: AuthedContext): Promise<{ key: Buffer; tokens: Set<string> } | null> {
  const key = await erasureKey(ctx.db, ctx.caller.orgId);
  if (!key) return null;
  const rows = (await tenant(ctx.db, ctx.caller.orgId)
    .scoped('suppressions')
    .where('suppressions.channel', 'email')
    .whereLike('suppressions.address', `${TOKEN_PREFIX}%`)
    .select('suppressions.address')) as { address: string }[];
  return rows.length ? { key, tokens: new Set(rows.map((r) => r.address)) } : null;
}
