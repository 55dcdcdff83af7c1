import pLimit, { type LimitFunction } from 'p-limit';
import type { StoredCredentials } from '../../modules/organizations/dto.js';
import { HttpTransportError, postJson, type HttpResponse } from '../http-client.js';
import type { ChannelAdapter, DeliveryResult, DeliveryTarget, OutboundMessage } from '../types.js';

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

interface Sms {
  target: DeliveryTarget;
  mobile: string;
}

const toMobile = (e164: string) => e164.replace(/^\+/, '');

export function createSmsGatewayAdapter(options: SmsGatewayOptions): ChannelAdapter {
  const base = options.baseUrl.replace(/\/+$/, '');
  const host = new URL(base).host;
  const callsInFlight = options.callsInFlight ?? 16;
  // One queue per partner account: batches sent side by side keep the account's calls in flight at
  // the bound (a batch's fifth call overlaps the next batch's first four) without ever exceeding it.
  const queues = new Map<string, LimitFunction>();
  const queueFor = (partnerID: string, apikey: string) => {
    const key = `${partnerID}\u0000${apikey}`;
    let queue = queues.get(key);
    if (!queue) {
      if (queues.size >= 10_000) queues.clear();
      queues.set(key, (queue = pLimit(callsInFlight)));
    }
    return queue;
  };

  const failAll = (batch: Sms[], error: string, retryable: boolean): DeliveryResult[] =>
    batch.map(({ target }) => ({ recipient: target.recipient, ok: false, error, retryable, network: host }));

  const urls = new Map<string, URL>();
  async function call(path: string, body: unknown, batch: Sms[]): Promise<DeliveryResult[]> {
    let url = urls.get(path);
    if (!url) urls.set(path, (url = new URL(`${base}${path}`)));
    let res: HttpResponse;
    try {
      res = await postJson(url, body, { timeoutMs: options.timeoutMs });
    } catch (err) {
      if (err instanceof HttpTransportError) {
        const reason = err.kind === 'timeout' ? err.message : `connection failed (${err.code ?? err.message})`;
        return failAll(batch, `SMS gateway: ${reason}`, true);
      }
      throw err;
    }
    if (res.status !== 200) {
      return failAll(batch, `SMS gateway: HTTP ${res.status}${snippet(res.text)}`, res.status >= 500 || res.status === 429);
    }
    const responses = (res.json as { responses?: unknown } | undefined)?.responses;
    if (!Array.isArray(responses) || !responses.every((r) => r && typeof r === 'object')) {
      return failAll(batch, `SMS gateway: unreadable answer${snippet(res.text)}`, false);
    }
    const byClientId = new Map<string, GatewayResponse>();
    for (const r of responses as GatewayResponse[]) if (r.clientsmsid != null) byClientId.set(String(r.clientsmsid), r);
    return batch.map((sms, index) => toResult(sms, pick(responses as GatewayResponse[], byClientId, sms, index)));
  }

  function toResult({ target }: Sms, response: GatewayResponse | undefined): DeliveryResult {
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
      network,
    };
  }

  return {
    channel: 'sms',
    async send(message: OutboundMessage, targets: DeliveryTarget[], credentials: StoredCredentials): Promise<DeliveryResult[]> {
      const batch = targets.map((target) => ({ target, mobile: toMobile(target.recipient) }));
      if (!batch.length) return [];
      const { sms_apiKey: apikey, sms_partnerID: partnerID, sms_shortCode: shortcode } = credentials;
      if (!apikey || !partnerID || !shortcode) return failAll(batch, 'SMS gateway: missing credentials', false);

      const queue = queueFor(partnerID, apikey);
      if (batch.length === 1) {
        const [{ mobile }] = batch;
        return queue(() => call('/api/services/sendsms/', { apikey, partnerID, message: message.body, shortcode, mobile }, batch));
      }
      const chunks: Sms[][] = [];
      for (let i = 0; i < batch.length; i += SMS_BULK_LIMIT) chunks.push(batch.slice(i, i + SMS_BULK_LIMIT));
      const results = await Promise.all(
        chunks.map((chunk) =>
          queue(() =>
            call(
              '/api/services/sendbulk/',
              {
                count: chunk.length,
                smslist: chunk.map(({ target, mobile }) => ({
                  partnerID,
                  apikey,
                  pass_type: 'plain',
                  clientsmsid: target.clientId,
                  mobile,
                  message: message.body,
                  shortcode,
                })),
              },
              chunk,
            ),
          ),
        ),
      );
      return results.flat();
    },
  };
}

/** The gateway echoes clientsmsid in bulk answers, but not every deployment does; fall back to the number, then the order. */
function pick(responses: GatewayResponse[], byClientId: Map<string, GatewayResponse>, { target, mobile }: Sms, index: number): GatewayResponse | undefined {
  return (
    byClientId.get(target.clientId) ??
    responses.find((r) => r.mobile != null && toMobile(String(r.mobile)) === mobile) ??
    (responses[index]?.clientsmsid == null ? responses[index] : undefined)
  );
}

function nonEmpty(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  const text = String(value).trim();
  return text ? text : undefined;
}

function snippet(text: string): string {
  const trimmed = text.trim().slice(0, 200);
  return trimmed ? `: ${trimmed}` : '';
}
