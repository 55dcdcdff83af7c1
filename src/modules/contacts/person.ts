import type { AuthedContext } from '../../context.js';
import { tenant } from '../../db/tenant.js';
import { validationFailed } from '../../lib/errors.js';
import { normaliseRecipient } from '../message-logs/service.js';

/**
 * A person as the privacy operations name them (a person's data, erasure): a contact, by the
 * addresses Herald sends to (its email, lower-case, and its phone number), or one address written
 * as a send takes it. The one home of both readings.
 */

export const invalidAddress = { field: 'address', message: 'address must be a valid email address or phone number' };

/** A contact's addresses; another organization's contact is 403, none 404. */
export async function contactAddresses(ctx: AuthedContext, id: string): Promise<{ contactId: string; addresses: string[] }> {
  const row = await tenant(ctx.db, ctx.caller.orgId).owned<{ id: string; email: string | null; phone: string | null }>('contacts', id, ['contacts.id', 'contacts.email', 'contacts.phone']);
  return { contactId: row.id, addresses: [row.email?.toLowerCase(), row.phone].filter((a): a is string => !!a) };
}

/** The problems of an address as an input field (for an operation's `check`). */
export async function addressProblems(ctx: AuthedContext, raw: string | undefined) {
  return raw !== undefined && !(await normaliseRecipient(ctx, raw)) ? [invalidAddress] : [];
}

/** An address as a send stores it, or a 400 naming `address`. */
export async function personAddress(ctx: AuthedContext, raw: string): Promise<string> {
  const address = await normaliseRecipient(ctx, raw);
  if (!address) throw validationFailed([invalidAddress]);
  return address;
}
