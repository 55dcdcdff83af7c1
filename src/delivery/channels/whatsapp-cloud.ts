import pMap from 'p-map';
import type { StoredCredentials } from '../credentials.js';
import { createProviderPool, HttpTransportError, postJson, type HttpResponse } from '../http-client.js';
import { bodyOf, type ChannelAdapter, type DeliveryResult, type DeliveryTarget, type OutboundMessage } from '../types.js';

export interface WhatsAppCloudOptions {
  /** `WHATSAPP_API_URL`: the Graph API host with its version path, e.g. `https://graph.facebook.com/v21.0`. */
  baseUrl: string;
  /** Hard limit per API call. */
  timeoutMs: number;
  /** Calls in flight at once for one send (the Cloud API takes one recipient per call). */
  concurrency: number;
}

const NETWORK = 'whatsapp-cloud';

interface GraphError {
  message?: unknown;
  code?: unknown;
  error_subcode?: unknown;
}

/** Codes with a fixed meaning for the caller; anything else keeps the provider's own message. */
const KNOWN_ERRORS: Record<number, { reason: string; retryable: boolean; throttled?: boolean }> = {
  190: { reason: 'invalid or expired access token', retryable: false },
  130429: { reason: 'rate limited by WhatsApp (throughput)', retryable: true, throttled: true },
  131056: { reason: 'rate limited by WhatsApp (too many messages to this recipient)', retryable: true, throttled: true },
  80007: { reason: 'rate limited by WhatsApp (business account)', retryable: true, throttled: true },
  131047: { reason: '24-hour customer service window closed; a template message is required', retryable: false },
  131026: { reason: 'message undeliverable to this number', retryable: false },
};

export function createWhatsAppCloudAdapter(options: WhatsAppCloudOptions): ChannelAdapter {
  const base = options.baseUrl.replace(/\/+$/, '');
  const concurrency = Math.max(1, options.concurrency);
  const pool = createProviderPool();

  async function sendOne(body: string, target: DeliveryTarget, url: string, token: string): Promise<DeliveryResult> {
    const fail = (error: string, retryable: boolean, throttled = false): DeliveryResult => ({
      recipient: target.recipient,
      ok: false,
      error: `WhatsApp: ${error}`,
      retryable,
      throttled,
      network: NETWORK,
    });
    let res: HttpResponse;
    try {
      res = await postJson(
        url,
        {
          messaging_product: 'whatsapp',
          recipient_type: 'individual',
          to: target.recipient.replace(/^\+/, ''),
          type: 'text',
          text: { preview_url: false, body },
          // Comes back in the message's statuses (providers.md): the recipient without a lookup.
          biz_opaque_callback_data: target.clientId,
        },
        { timeoutMs: options.timeoutMs, headers: { authorization: `Bearer ${token}` }, pool },
      );
    } catch (err) {
      if (err instanceof HttpTransportError) {
        return fail(err.kind === 'timeout' ? err.message : `connection failed (${err.code ?? err.message})`, true);
      }
      throw err;
    }

    if (res.status >= 200 && res.status < 300) {
      const id = (res.json as { messages?: { id?: unknown }[] } | undefined)?.messages?.[0]?.id;
      if (typeof id === 'string' && id) return { recipient: target.recipient, ok: true, network: NETWORK, providerMessageId: id };
      return fail(`unreadable answer (HTTP ${res.status})`, false);
    }

    const error = (res.json as { error?: GraphError } | undefined)?.error;
    const code = typeof error?.code === 'number' ? error.code : Number(error?.code);
    const known = KNOWN_ERRORS[code];
    if (known) return fail(`${known.reason} (${code})`, known.retryable, known.throttled);
    const transient = res.status >= 500 || res.status === 429;
    if (error && typeof error.message === 'string') {
      return fail(`${error.message}${Number.isNaN(code) ? '' : ` (${code})`}`, transient, res.status === 429);
    }
    return fail(`HTTP ${res.status}`, transient, res.status === 429);
  }

  return {
    channel: 'whatsapp',
    async send(message: OutboundMessage, targets: DeliveryTarget[], credentials: StoredCredentials): Promise<DeliveryResult[]> {
      const { whatsapp_access_token: token, whatsapp_phone_number_id: phoneNumberId } = credentials;
      if (!token || !phoneNumberId) {
        return targets.map((t) => ({ recipient: t.recipient, ok: false, error: 'WhatsApp: missing credentials', retryable: false, network: NETWORK }));
      }
      const url = `${base}/${encodeURIComponent(phoneNumberId)}/messages`;
      return pMap(targets, (target) => sendOne(bodyOf(message, target), target, url, token), { concurrency });
    },
    close: () => pool.close(),
  };
}
