import type { Knex } from 'knex';
import { z } from 'zod';
import { nowMs } from '../../db/database.js';
import { isUniqueViolation } from '../../db/errors.js';
import { paginateAs, type PageRequest } from '../../db/pagination.js';
import { tenant } from '../../db/tenant.js';
import { conflict } from '../../lib/errors.js';
import * as v from '../../lib/validation.js';
import { operation } from '../../operation.js';
import { record } from '../audit/record.js';
import { emailInvitation } from './email.js';
import { INVITATION_COLUMNS, invitationDetails, toInvitationDto, type InvitationRow } from './dto.js';
import { invitationUrl } from './tokens.js';

/**
 * Invitations to join an organization (admins, JWT only, as the rest of user management): an admin
 * names the address and the role, Herald answers a link (and emails it when the organization can
 * send email), and the person sets their own password on the console's page of the link
 * (`./accept.ts`).
 */

// As user management: admins signed in as people, never an API key.
const ADMIN = { role: 'admin', apiKeys: false } as const;

const DEFAULT_LIFETIME_DAYS = 7;
const TAKEN = 'A user with this email already exists';
const PENDING = 'An invitation to this email is already pending: revoke it to invite again';

type Params = { id: string };

/** Invitations neither accepted nor revoked. */
const open = (q: Knex.QueryBuilder) => q.whereNull('invitations.accepted_at').whereNull('invitations.revoked_at');

/** The pending invitations, newest first: those that can still be accepted. */
export const list = operation({
  access: ADMIN,
  run: (ctx, _input: undefined, page: PageRequest) =>
    paginateAs(
      open(tenant(ctx.db, ctx.caller.orgId).scoped('invitations'))
        .where('invitations.expires_at', '>', ctx.db.fn.now())
        .select(INVITATION_COLUMNS.map((c) => `invitations.${c}`)),
      'invitations',
      page,
      toInvitationDto,
    ),
});

export const invite = operation({
  access: ADMIN,
  input: z.strictObject({
    email: v.email(),
    role: v.role().default('user'),
    firstName: v.name().optional(),
    lastName: v.name().optional(),
    expiresInDays: z.number().int().min(1).max(30).default(DEFAULT_LIFETIME_DAYS),
  }),
  async run(ctx, input) {
    const orgId = ctx.caller.orgId;
    const row = await ctx.db.transaction(async (trx) => {
      // Emails are unique across Herald: an address that is a user's, here or elsewhere, could never accept.
      if (await trx('users').whereRaw('lower(email) = ?', [input.email]).first('id')) throw conflict(TAKEN);
      const t = tenant(trx, orgId);
      // An expired invitation still holds its address in the unique index: the new one closes it.
      await open(t.scoped('invitations'))
        .whereRaw('lower(invitations.email) = ?', [input.email])
        .where('invitations.expires_at', '<=', trx.fn.now())
        .update({ revoked_at: nowMs(trx) });
      const inviter = (await t.scoped('users').where('users.id', ctx.caller.userId).first('email')) as { email: string };
      let created: InvitationRow;
      try {
        [created] = (await trx('invitations')
          .insert({
            organization_id: orgId,
            email: input.email,
            role: input.role,
            first_name: input.firstName ?? null,
            last_name: input.lastName ?? null,
            invited_by: ctx.caller.userId,
            invited_by_email: inviter.email,
            expires_at: trx.raw("date_trunc('milliseconds', now()) + make_interval(days => ?)", [input.expiresInDays]),
          })
          .returning(INVITATION_COLUMNS)) as InvitationRow[];
      } catch (err) {
        if (isUniqueViolation(err, 'organization_id, lower(email)')) throw conflict(PENDING);
        throw err;
      }
      await record(trx, ctx, {
        action: 'invitation.created',
        resourceType: 'invitation',
        resourceId: created!.id,
        details: { ...invitationDetails(created!), expiresAt: created!.expires_at.toISOString() },
      });
      return created!;
    });
    const link = invitationUrl(ctx.config.publicUrl, ctx.config.jwtSecret, { orgId, invitationId: row.id });
    // After the commit: the invitation stands whether or not the email goes out.
    const email = await emailInvitation(ctx, row, link);
    return { invitation: toInvitationDto(row), link, ...email, sandbox: ctx.delivery.mode === 'sandbox' };
  },
});

/**
 * Withdraws a pending invitation: its link stops working at once. Revoking a revoked one changes
 * nothing (200, as for API keys); an accepted one is a member now (409: deactivate them instead).
 */
export const revoke = operation({
  access: ADMIN,
  async run(ctx, _input: undefined, { id }: Params) {
    await ctx.db.transaction(async (trx) => {
      const t = tenant(trx, ctx.caller.orgId);
      const row = await t.owned<InvitationRow>('invitations', id, [...INVITATION_COLUMNS], { forUpdate: true });
      if (row.accepted_at) throw conflict('This invitation was already accepted: deactivate the user instead');
      if (row.revoked_at) return;
      await t.scoped('invitations').where('invitations.id', row.id).update({ revoked_at: nowMs(trx) });
      await record(trx, ctx, { action: 'invitation.revoked', resourceType: 'invitation', resourceId: row.id, details: invitationDetails(row) });
    });
    return { message: 'Invitation revoked' };
  },
});
