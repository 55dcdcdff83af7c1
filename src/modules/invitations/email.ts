import type { AuthedContext } from '../../context.js';
import { HttpError } from '../../lib/errors.js';
import * as notifications from '../notifications/service.js';
import type { InvitationRow } from './dto.js';

/**
 * The invitation email. It is an ad hoc email of the organization, sent by the admin who invites:
 * the same send as `POST /notifications/send` (its channel, quota, suppression of hard bounces,
 * price, message log, and the sandbox outbox in sandbox mode), so it costs what any email costs.
 *
 * The texts are Liquid templates of that send; nothing a person typed goes into them (a name with
 * Liquid markup would be rendered), the organization's name comes from the template's own variable.
 */

export interface EmailOutcome {
  emailed: boolean;
  /** Why it was not sent (no email credentials in live mode, credits, quota, the provider's refusal). */
  emailError: string | null;
}

const SUBJECT = 'Join {{ organization.name }} on Herald';

function messageOf(row: Pick<InvitationRow, 'role' | 'expires_at'>, link: string): string {
  const role = row.role === 'admin' ? 'an admin' : 'a user';
  return [
    `You are invited to join {{ organization.name }} on Herald as ${role}.`,
    '',
    'Accept the invitation and choose your password:',
    link,
    '',
    `The link works once, until ${row.expires_at.toISOString().replace('T', ' ').slice(0, 16)} UTC. If you did not expect this invitation, ignore this email.`,
  ].join('\n');
}

/**
 * Sends the invitation to its address. The invitation stands whatever happens here: a refusal is
 * answered as `emailed: false` with its reason, so the admin hands the link over another way.
 */
export async function emailInvitation(ctx: AuthedContext, row: Pick<InvitationRow, 'email' | 'role' | 'expires_at'>, link: string): Promise<EmailOutcome> {
  try {
    // Not under the invitation request's Idempotency-Key: that key names the invitation, not this send.
    await notifications.send({ ...ctx, idempotencyKey: undefined }, { type: 'email', to: row.email, subject: SUBJECT, message: messageOf(row, link) }, {});
    return { emailed: true, emailError: null };
  } catch (err) {
    if (err instanceof HttpError && err.statusCode < 500) return { emailed: false, emailError: err.message };
    // A provider's refusal of the one recipient is a 502 of the send; anything else is a failure of Herald.
    if (err instanceof HttpError && err.statusCode === 502) return { emailed: false, emailError: err.message };
    throw err;
  }
}
