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
      await db('sandbox_outbox').insert(
        results.map((r) => ({
          organization_id: message.orgId,
          channel,
          recipient: r.recipient,
          subject: message.subject ?? null,
          body: message.body,
          attachments: JSON.stringify(attachments),
          status: r.ok ? 'success' : 'failed',
          error: r.error ?? null,
        })),
      );
      return results;
    },
  };
}
