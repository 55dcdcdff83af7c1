import { createProviderPool, HttpTransportError, nonEmpty, postForm, snippet, type HttpResponse } from '../http-client.js';
import { accountLimits } from '../lane-limit.js';
import {
  bodyOf,
  type DeliveryResult,
  type DeliveryTarget,
  type OutboundMessage,
  type ProviderAccount,
  type ProviderAdapter,
  type ProviderField,
  type ProviderReport,
  type SendOptions,
} from '../types.js';

export const AFRICASTALKING_FIELDS: readonly ProviderField[] = [
  { name: 'username', required: true, description: "The Africa's Talking app username (sandbox for their sandbox)." },
  { name: 'apiUrl', description: "Africa's Talking's API host for this app (https://api.sandbox.africastalking.com for a sandbox app); default: the platform's (AFRICASTALKING_API_URL)." },
  { name: 'from', description: "The sender id or short code messages come from; none, and Africa's Talking uses the account's default." },
  { name: 'apiKey', secret: true, required: true, description: "The app's API key: it authenticates every call." },
];

export interface AfricasTalkingOptions {
  /** Africa's Talking's API host (`AFRICASTALKING_API_URL`), without the `/version1` path. */
  baseUrl: string;
  /** Hard limit per API call. */
  timeoutMs: number;
  /** API calls in flight at once per app and process, shared by every send of that app. */
  callsInFlight?: number;
}

/**
 * Recipients per call. Africa's Talking publishes no bound on `to`; a hundred keeps one call's
 * answer small and one failed call's loss bounded, and is what its own tooling sends at once.
 */
export const AFRICASTALKING_RECIPIENT_LIMIT = 100;

const NETWORK = 'africastalking';
const PREFIX = "Africa's Talking";

/** Processed, Sent, Queued: Africa's Talking took the message. */
const SENT_CODES = new Set([100, 101, 102]);
/** RiskHold, InvalidSenderId, InsufficientBalance, CouldNotRoute: the app's problem, which another provider may not have. */
const ACCOUNT_CODES = new Set([401, 402, 405, 407]);
/** InternalServerError, GatewayError, RejectedByGateway: trying again later may succeed. */
const RETRYABLE_CODES = new Set([500, 501, 502]);
// InvalidPhoneNumber (403), UnsupportedNumberType (404), UserInBlacklist (406) and
// DoNotDisturbRejection (409) are about the recipient, as is any code not listed: final.

/**
 * A call refused as a whole answers no recipients and names the reason in `Message` (an invalid
 * sender id, an empty balance): these are the app's problems.
 */
const ACCOUNT_MESSAGES = new Set(['RiskHold', 'InvalidSenderId', 'InsufficientBalance', 'CouldNotRoute']);

interface Recipient {
  statusCode?: unknown;
  number?: unknown;
  status?: unknown;
  cost?: unknown;
  messageId?: unknown;
}

interface SmsMessageData {
  Message?: unknown;
  Recipients?: unknown;
}

type Failure = { retryable?: boolean; throttled?: boolean; providerFault?: boolean };

export function createAfricasTalkingAdapter(options: AfricasTalkingOptions): ProviderAdapter {
  // The account's own API host (its sandbox app's, say) where it has one, else the platform's.
  const urls = new Map<string, URL>();
  const urlOf = (apiUrl: string | undefined) => {
    const base = (apiUrl ?? options.baseUrl).replace(/\/+$/, '');
    let url = urls.get(base);
    if (!url) {
      if (urls.size >= 1_000) urls.clear();
      urls.set(base, (url = new URL(`${base}/version1/messaging`)));
    }
    return url;
  };
  const callsInFlight = options.callsInFlight ?? 16;
  // One queue per app (and key: a wrong key does not share a real app's queue), a quarter of it
  // kept for transactional sends.
  const queueFor = accountLimits(callsInFlight);
  const pool = createProviderPool();

  /** One call for `batch`, whose numbers are distinct and share `text`. */
  async function call(url: URL, batch: DeliveryTarget[], text: string, username: string, apiKey: string, from: string | undefined): Promise<DeliveryResult[]> {
    const failAll = (error: string, failure: Failure) => batch.map((t) => fail(t, error, failure));
    const form: Record<string, string> = { username, to: batch.map((t) => t.recipient).join(','), message: text, ...(from ? { from } : {}) };
    let res: HttpResponse;
    try {
      // Without `Accept: application/json` Africa's Talking answers XML.
      res = await postForm(url, form, { timeoutMs: options.timeoutMs, headers: { apikey: apiKey, accept: 'application/json' }, pool });
    } catch (err) {
      if (err instanceof HttpTransportError) {
        return failAll(err.kind === 'timeout' ? err.message : `connection failed (${err.code ?? err.message})`, { retryable: true });
      }
      throw err;
    }

    const reason = `HTTP ${res.status}${snippet(res.text)}`;
    // A refused key or app is the account's problem, which another provider of the channel may not have.
    if (res.status === 401 || res.status === 403) return failAll(reason, { providerFault: true });
    if (res.status === 429) return failAll(reason, { retryable: true, throttled: true });
    if (res.status >= 500) return failAll(reason, { retryable: true });
    if (res.status < 200 || res.status >= 300) return failAll(reason, {});

    const data = (res.json as { SMSMessageData?: SmsMessageData } | undefined)?.SMSMessageData;
    const recipients = data && typeof data === 'object' ? data.Recipients : undefined;
    // Africa's Talking may have sent some of them: sending them again could deliver twice.
    if (!Array.isArray(recipients)) return failAll(`unreadable answer (HTTP ${res.status})${snippet(res.text)}`, {});
    if (!recipients.length) {
      const message = nonEmpty(data!.Message) ?? 'no recipients in the answer';
      return failAll(message, { providerFault: ACCOUNT_MESSAGES.has(message) });
    }
    // The answer names each recipient's number, in no promised order.
    const byNumber = new Map<string, Recipient>();
    for (const r of recipients as Recipient[]) if (r && typeof r === 'object' && r.number != null) byNumber.set(digits(String(r.number)), r);
    return batch.map((target) => toResult(target, byNumber.get(digits(target.recipient))));
  }

  function toResult(target: DeliveryTarget, answer: Recipient | undefined): DeliveryResult {
    // Unaccounted for, it may or may not have gone out; retrying it could send it twice.
    if (!answer) return fail(target, 'no answer for this number', {});
    const code = Number(answer.statusCode);
    if (SENT_CODES.has(code)) {
      const id = nonEmpty(answer.messageId);
      return { recipient: target.recipient, ok: true, network: NETWORK, ...(id && id !== 'None' ? { providerMessageId: id } : {}) };
    }
    const error = `${nonEmpty(answer.status) ?? 'Unknown error'} (${Number.isNaN(code) ? 'no code' : code})`;
    if (ACCOUNT_CODES.has(code)) return fail(target, error, { providerFault: true });
    return fail(target, error, { retryable: RETRYABLE_CODES.has(code) });
  }

  return {
    channel: 'sms',
    async send(message: OutboundMessage, targets: DeliveryTarget[], account: ProviderAccount, sendOptions?: SendOptions): Promise<DeliveryResult[]> {
      if (!targets.length) return [];
      const username = nonEmpty(account.settings.username);
      const apiKey = account.secrets.apiKey;
      if (!username || !apiKey) return targets.map((t) => fail(t, 'missing username or apiKey', { providerFault: true }));
      const from = nonEmpty(account.settings.from);
      const url = urlOf(nonEmpty(account.settings.apiUrl));
      const queue = queueFor(username, apiKey);

      // Targets sharing a text go in the same calls; personalised ones, each with its own text, alone.
      const byText = new Map<string, number[]>();
      targets.forEach((target, index) => {
        const text = bodyOf(message, target);
        const same = byText.get(text);
        if (same) same.push(index);
        else byText.set(text, [index]);
      });
      const results = new Array<DeliveryResult>(targets.length);
      const calls: Promise<void>[] = [];
      for (const [text, indices] of byText) {
        for (const batch of batchesOf(indices, targets)) {
          const batchTargets = batch.map((i) => targets[i]!);
          calls.push(
            queue
              .run(sendOptions, () => call(url, batchTargets, text, username, apiKey, from))
              .then((answers) => answers.forEach((answer, j) => (results[batch[j]!] = answer))),
          );
        }
      }
      await Promise.all(calls);
      return results;
    },
    close: () => pool.close(),
  };
}

/**
 * Calls of at most `AFRICASTALKING_RECIPIENT_LIMIT` targets, none holding a number twice: answers
 * are told apart by number, so a number sent to twice goes in a later call.
 */
function batchesOf(indices: number[], targets: DeliveryTarget[]): number[][] {
  const rounds: number[][] = [];
  const seen = new Map<string, number>();
  for (const index of indices) {
    const number = digits(targets[index]!.recipient);
    const round = seen.get(number) ?? 0;
    seen.set(number, round + 1);
    (rounds[round] ??= []).push(index);
  }
  const batches: number[][] = [];
  for (const round of rounds) {
    for (let i = 0; i < round.length; i += AFRICASTALKING_RECIPIENT_LIMIT) batches.push(round.slice(i, i + AFRICASTALKING_RECIPIENT_LIMIT));
  }
  return batches;
}

function fail(target: DeliveryTarget, error: string, failure: Failure): DeliveryResult {
  return {
    recipient: target.recipient,
    ok: false,
    error: `${PREFIX}: ${error}`,
    retryable: failure.retryable ?? false,
    throttled: failure.throttled ?? false,
    ...(failure.providerFault ? { providerFault: true } : {}),
    network: NETWORK,
  };
}

/** Delivered to the handset. */
const DELIVERED = 'success';
/** Final states short of the handset; Sent, Submitted and Buffered are on the way and record nothing. */
const UNDELIVERED = new Set(['rejected', 'failed', 'absentsubscriber', 'expired']);

/**
 * A delivery report as a receipt: `Success` is delivered; `Rejected`, `Failed`, `AbsentSubscriber`
 * and `Expired` are not, for the `failureReason` Africa's Talking gives with them (where the
 * network gave one); any other status is on the way, or unknown, and null. Reports carry no time,
 * so it happened now. They are not signed: the callback URL's own token is what vouches for them.
 */
export function parseAfricasTalkingReport(form: URLSearchParams): ProviderReport | null {
  const id = form.get('id')?.trim();
  const status = form.get('status')?.trim();
  if (!id || !status) return null;
  const word = status.toLowerCase();
  if (word === DELIVERED) return { providerMessageId: id, delivered: true, at: new Date(), status };
  if (!UNDELIVERED.has(word)) return null;
  const reason = form.get('failureReason')?.trim();
  return { providerMessageId: id, delivered: false, at: new Date(), error: `${PREFIX}: ${reason || status}`, status };
}

/** A number's key for matching answers: its digits (Africa's Talking answers E.164, `+` included). */
const digits = (phone: string) => phone.replace(/\D/g, '');
