import type { Db } from '../../db/database.js';
import type { Channel, ChannelAdapter, DeliveryResult, DeliveryTarget, OutboundMessage } from '../types.js';

export const SANDBOX_FAILURE = 'Sandbox: delivery to a reserved failing address';

/** Addresses reserved for trying failure paths: any address at `fail.invalid`, any number ending in 0000. */
export const isReservedFailure = (channel: Channel, recipient: string): boolean =>
  channel === 'email' ? recipient.toLowerCase().endsWith('@fail.invalid') : recipient.endsWith('0000');

/**
 * Records every message in the organization's sandbox outbox instead of calling a provider, in one
 * INSERT per call, and reports success (or the fixed failure for reserved addresses).
 */
export function createSandboxAdapter(db: Db, channel: Channel, latencyMs = 0): ChannelAdapter {
  return {
    channel,
    async send(message: OutboundMessage, targets: DeliveryTarget[]): Promise<DeliveryResult[]> {
      const results = targets.map(({ recipient }): DeliveryResult => {
        const failed = isReservedFailure(channel, recipient);
        return { recipient, ok: !failed, network: 'sandbox', ...(failed ? { error: SANDBOX_FAILURE, retryable: false } : {}) };
      });
      if (!targets.length) return results;
      if (latencyMs) await new Promise((r) => setTimeout(r, latencyMs));
      const attachments = (message.attachments ?? []).map((a) => ({
        filename: a.filename,
        contentType: a.contentType,
        size: Buffer.from(a.content, 'base64').length,
      }));
      // The message once and the recipients as arrays: a 1,000-recipient call is a few parameters,
      // not 8,000, and the body travels once.
      await db.raw(
        `INSERT INTO sandbox_outbox (organization_id, channel, recipient, subject, body, attachments, status, error)
         SELECT ?, ?, t.recipient, ?, ?, ?::jsonb, t.status, t.error FROM unnest(?::text[], ?::text[], ?::text[]) AS t(recipient, status, error)`,
        [
          message.orgId, channel, message.subject ?? null, message.body, JSON.stringify(attachments),
          results.map((r) => r.recipient), results.map((r) => (r.ok ? 'success' : 'failed')), results.map((r) => r.error ?? null) as string[],
        ],
      );
      return results;
    },
  };
}
