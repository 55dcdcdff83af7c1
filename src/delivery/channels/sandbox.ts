import { textArrayLiteral } from '../../db/arrays.js';
import type { Db } from '../../db/database.js';
import { bodyOf, subjectOf, type Channel, type ChannelAdapter, type DeliveryResult, type DeliveryTarget, type OutboundMessage } from '../types.js';

export const SANDBOX_FAILURE = 'Sandbox: delivery to a reserved failing address';

/** Addresses reserved for trying failure paths: any address at `fail.invalid`, any number ending in 0000. */
export const isReservedFailure = (channel: Channel, recipient: string): boolean =>
  channel === 'email' ? recipient.toLowerCase().endsWith('@fail.invalid') : recipient.endsWith('0000');

/**
 * Records every message in the organization's sandbox outbox instead of calling a provider, and
 * reports success (or the fixed failure for reserved addresses). A call is one row: the message once
 * and its recipients as an array (the outbox reads it back per message).
 */
export function createSandboxAdapter(db: Db, channel: Channel, latencyMs = 0): ChannelAdapter {
  return {
    channel,
    async send(message: OutboundMessage, targets: DeliveryTarget[]): Promise<DeliveryResult[]> {
      const n = targets.length;
      const results: DeliveryResult[] = new Array(n);
      const recipients: string[] = new Array(n);
      let failures = 0;
      let personal = false;
      for (let i = 0; i < n; i++) {
        const recipient = targets[i]!.recipient;
        recipients[i] = recipient;
        if (targets[i]!.content) personal = true;
        if (!isReservedFailure(channel, recipient)) results[i] = { recipient, ok: true, network: 'sandbox' };
        else {
          failures++;
          results[i] = { recipient, ok: false, network: 'sandbox', error: SANDBOX_FAILURE, retryable: false };
        }
      }
      if (!targets.length) return results;
      if (latencyMs) await new Promise((r) => setTimeout(r, latencyMs));
      const attachments = (message.attachments ?? []).map((a) => ({
        filename: a.filename,
        contentType: a.contentType,
        size: Buffer.from(a.content, 'base64').length,
      }));
      await db.raw(
        `INSERT INTO sandbox_sends (organization_id, channel, subject, body, attachments, recipients, errors, bodies, subjects, headers)
         VALUES (?, ?, ?, ?, ?::jsonb, ?::text[], ?::text[], ?::text[], ?::text[], ?::jsonb)`,
        [
          message.orgId, channel, message.subject ?? null, message.body, JSON.stringify(attachments),
          textArrayLiteral(recipients), textArrayLiteral(failures ? results.map((r) => r.error ?? null) : []),
          // A recipient's own text and headers only when some recipient has them.
          textArrayLiteral(personal ? targets.map((t) => bodyOf(message, t)) : []),
          textArrayLiteral(personal && message.subject !== undefined ? targets.map((t) => subjectOf(message, t) ?? null) : []),
          JSON.stringify(personal ? targets.map((t) => t.content?.headers ?? {}) : []),
        ],
      );
      return results;
    },
  };
}
