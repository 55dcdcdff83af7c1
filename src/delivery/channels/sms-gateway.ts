import type { StoredCredentials } from '../credentials.js';
import { createProviderPool, HttpTransportError, nonEmpty, postJsonText, snippet, type HttpResponse } from '../http-client.js';
import { accountLimits } from '../lane-limit.js';
import { bodyOf, type ChannelAdapter, type DeliveryResult, type DeliveryTarget, type OutboundMessage, type SendOptions } from '../types.js';

export interface SmsGatewayOptions {
  /** The gateway's base URL (`SMS_API_URL`), without the `/api/services/...` path. */
  baseUrl: string;
  /** Hard limit per gateway call. */
  timeoutMs: number;
  /**
   * Gateway calls in flight at once per partner account and process, shared by every send and
   * campaign batch of that account: the gateway throttles partners that flood it.
   */
  callsInFlight?: number;
}

/** The gateway refuses bulk calls of more than 20 messages. */
export const SMS_BULK_LIMIT = 20;
/** Codes the gateway documents as transient; every other code is final. */
const RETRYABLE_CODES = new Set([1005, 1007, 4090]);
/** The gateway's "try again later": it is throttling the account. */
const THROTTLING_CODES = new Set([4090]);

interface GatewayResponse {
  'response-code'?: unknown;
  /** Some gateways of this family spell it this way in their answers. */
  'respose-code'?: unknown;
  'response-description'?: unknown;
  mobile?: unknown;
  messageid?: unknown;
  networkid?: unknown;
  clientsmsid?: unknown;
}

/** The gateway's form of a number: E.164 without the plus. */
const toMobile = (e164: string) => (e164.startsWith('+') ? e164.slice(1) : e164);

export function createSmsGatewayAdapter(options: SmsGatewayOptions): ChannelAdapter {
  const base = options.baseUrl.replace(/\/+$/, '');
  const host = new URL(base).host;
  const callsInFlight = options.callsInFlight ?? 16;
  // One queue per partner account: batches sent side by side keep the account's calls in flight at
  // the bound (a batch's fifth call overlaps the next batch's first four) without ever exceeding it,
  // a quarter of them kept for transactional sends.
  const queueFor = accountLimits(callsInFlight);

  const failAll = (batch: DeliveryTarget[], error: string, retryable: boolean, throttled = false): DeliveryResult[] =>
    batch.map((target) => ({ recipient: target.recipient, ok: false, error, retryable, throttled, network: host }));

  const pool = createProviderPool();
  const urls = new Map<string, URL>();
  /** One gateway call; `clientIds` are the bulk messages' ids, in the order of `batch`. */
  async function call(path: string, json: string, batch: DeliveryTarget[], clientIds: string[] | null): Promise<DeliveryResult[]> {
    let url = urls.get(path);
    if (!url) urls.set(path, (url = new URL(`${base}${path}`)));
    let res: HttpResponse;
    try {
      res = await postJsonText(url, json, { timeoutMs: options.timeoutMs, pool });
    } catch (err) {
      if (err instanceof HttpTransportError) {
        const reason = err.kind === 'timeout' ? err.message : `connection failed (${err.code ?? err.message})`;
        return failAll(batch, `SMS gateway: ${reason}`, true);
      }
      throw err;
    }
    if (res.status !== 200) {
      return failAll(batch, `SMS gateway: HTTP ${res.status}${snippet(res.text)}`, res.status >= 500 || res.status === 429, res.status === 429);
    }
    const responses = (res.json as { responses?: unknown } | undefined)?.responses;
    if (!Array.isArray(responses) || !responses.every((r) => r && typeof r === 'object')) {
      return failAll(batch, `SMS gateway: unreadable answer${snippet(res.text)}`, false);
    }
    const answers = responses as GatewayResponse[];
    // Gateways answer in the order sent, echoing clientsmsid: the answer at a message's own position
    // is checked first, and a map is built only for an answer that arrives out of order.
    let byClientId: Map<string, GatewayResponse> | null = null;
    return batch.map((target, index) => {
      const clientId = clientIds?.[index];
      const same = answers[index];
      if (clientId !== undefined && same?.clientsmsid === clientId) return toResult(target, same);
      byClientId ??= new Map(answers.filter((r) => r.clientsmsid != null).map((r) => [String(r.clientsmsid), r]));
      return toResult(target, pick(answers, byClientId, target, clientId, index));
    });
  }

  function toResult(target: DeliveryTarget, response: GatewayResponse | undefined): DeliveryResult {
    // An unaccounted message may or may not have gone out; retrying it could send it twice.
    if (!response) return { recipient: target.recipient, ok: false, error: 'SMS gateway: no answer for this message', retryable: false, network: host };
    const network = nonEmpty(response.networkid) ?? host;
    const code = Number(response['response-code'] ?? response['respose-code']);
    if (code === 200) {
      return { recipient: target.recipient, ok: true, network, providerMessageId: nonEmpty(response.messageid) };
    }
    const description = nonEmpty(response['response-description']) ?? 'Unknown error';
    return {
      recipient: target.recipient,
      ok: false,
      error: `SMS gateway: ${description} (${Number.isNaN(code) ? 'no code' : code})`,
      retryable: RETRYABLE_CODES.has(code),
      throttled: THROTTLING_CODES.has(code),
      network,
    };
  }

  return {
    channel: 'sms',
    async send(message: OutboundMessage, targets: DeliveryTarget[], credentials: StoredCredentials, options?: SendOptions): Promise<DeliveryResult[]> {
      if (!targets.length) return [];
      const { sms_apiKey: apikey, sms_partnerID: partnerID, sms_shortCode: shortcode } = credentials;
      if (!apikey || !partnerID || !shortcode) return failAll(targets, 'SMS gateway: missing credentials', false);

      const queue = queueFor(partnerID, apikey);
      if (targets.length === 1) {
        const body = JSON.stringify({ apikey, partnerID, message: bodyOf(message, targets[0]!), shortcode, mobile: toMobile(targets[0]!.recipient) });
        return queue.run(options, () => call('/api/services/sendsms/', body, targets, null));
      }
      // Every message of a send shares all fields but its id and number (and, personalised, its
      // text): they are serialised once, and each message's JSON is its own fields followed by the
      // shared ones.
      const personal = targets.some((t) => t.content?.body !== undefined);
      const shared = JSON.stringify({ partnerID, apikey, pass_type: 'plain', ...(personal ? {} : { message: message.body }), shortcode }).slice(1);
      const calls: Promise<DeliveryResult[]>[] = [];
      for (let i = 0; i < targets.length; i += SMS_BULK_LIMIT) {
        const chunk = targets.slice(i, i + SMS_BULK_LIMIT);
        const clientIds = chunk.map((t) => t.clientId);
        const own = (t: DeliveryTarget) => (personal ? `"message":${JSON.stringify(bodyOf(message, t))},` : '');
        const smslist = chunk.map((t, j) => `{"clientsmsid":${JSON.stringify(clientIds[j])},"mobile":${JSON.stringify(toMobile(t.recipient))},${own(t)}${shared}`);
        const body = `{"count":${chunk.length},"smslist":[${smslist.join(',')}]}`;
        calls.push(queue.run(options, () => call('/api/services/sendbulk/', body, chunk, clientIds)));
      }
      return (await Promise.all(calls)).flat();
    },
    close: () => pool.close(),
  };
}

/** The gateway echoes clientsmsid in bulk answers, but not every deployment does; fall back to the number, then the order. */
function pick(
  responses: GatewayResponse[],
  byClientId: Map<string, GatewayResponse>,
  target: DeliveryTarget,
  clientId: string | undefined,
  index: number,
): GatewayResponse | undefined {
  const mobile = toMobile(target.recipient);
  return (
    (clientId === undefined ? undefined : byClientId.get(clientId)) ??
    responses.find((r) => r.mobile != null && toMobile(String(r.mobile)) === mobile) ??
    (responses[index]?.clientsmsid == null ? responses[index] : undefined)
  );
}
