import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { getCountryCallingCode } from 'libphonenumber-js';
import { z } from 'zod';
import type { Context } from '../../context.js';
import type { Db } from '../../db/database.js';
import { nowMs } from '../../db/database.js';
import { isUniqueViolation } from '../../db/errors.js';
import { tenant } from '../../db/tenant.js';
import { conflict, HttpError, notFound, validationFailed, type FieldProblem } from '../../lib/errors.js';
import { regionOf } from '../../lib/phone.js';
import * as v from '../../lib/validation.js';
import { operation } from '../../operation.js';
import { record } from '../audit/record.js';
import { hashPassword } from '../auth/passwords.js';
import { loginState } from '../two-factor/store.js';
import { loginUser, toUserDto, USER_COLUMNS, type UserRow } from '../users/dto.js';
import { INVITATION_COLUMNS, invitationDetails, type InvitationRow } from './dto.js';
import { readInvitationToken, type InvitationRef } from './tokens.js';

/**
 * The public side of an invitation: what its link shows, and accepting it. No credential: the
 * token is the proof. A token Herald did not sign (forged, altered, or naming an invitation that is
 * not its organization's) is 404; a real one that can no longer be used (accepted, expired,
 * revoked) is 410 saying which, so the person knows to log in or ask for a new one.
 */

const PUBLIC = { public: true } as const;
const NOT_FOUND = 'Invitation not found: check the link, or ask an admin for a new invitation';

type Params = { token: string };
type Conn = Db | Knex.Transaction;

const gone = (message: string) => new HttpError(410, message);

/** Why an invitation can not be accepted, or null when it can. Used first: a used link says so even after it expired. */
function refusalOf(row: InvitationRow & { expired: boolean }): HttpError | null {
  if (row.accepted_at) return gone('This invitation was already accepted: log in instead');
  if (row.expired) return gone('This invitation has expired: ask an admin for a new one');
  if (row.revoked_at) return gone('This invitation was revoked');
  return null;
}

/** The invitation a token names, in the organization the token names; 404 or 410 when it can not be accepted. */
async function usable(db: Conn, ref: InvitationRef | null): Promise<InvitationRow> {
  if (!ref) throw notFound(NOT_FOUND);
  const row = (await tenant(db, ref.orgId)
    .scoped('invitations')
    .where('invitations.id', ref.invitationId)
    .first([...INVITATION_COLUMNS, db.raw('expires_at <= now() AS expired')])) as (InvitationRow & { expired: boolean }) | undefined;
  if (!row) throw notFound(NOT_FOUND);
  const refusal = refusalOf(row);
  if (refusal) throw refusal;
  return row;
}

const refOf = (ctx: Context, token: string) => readInvitationToken(ctx.config.jwtSecret, token);

/** What the link's page shows before the person sets a password. */
export const preview = operation({
  access: PUBLIC,
  async run(ctx, _input: undefined, { token }: Params) {
    const row = await usable(ctx.db, refOf(ctx, token));
    const org = (await ctx.loaders.organizationById.load(row.organization_id))!;
    return {
      organization: { _id: org._id, name: org.name },
      email: row.email,
      role: row.role,
      firstName: row.first_name,
      lastName: row.last_name,
      expiresAt: row.expires_at.toISOString(),
    };
  },
});

/**
 * An invited user's phone starts empty, under the organization's calling code, so that an admin
 * can add the number later (a user's country code never changes).
 */
function callingCodeOf(country: string): string {
  const region = regionOf(country);
  return region ? `+${getCountryCallingCode(region)}` : '';
}

/**
 * Creates the invited user with the invited role and their own password, and signs them in as a
 * login would. The invitation is consumed in the same transaction as the user is created: of two
 * accepts at once, one creates the user and the other is 410; a failure leaves the link usable.
 */
export const accept = operation({
  access: PUBLIC,
  input: z.strictObject({
    password: v.password(),
    firstName: v.name().optional(),
    lastName: v.name().optional(),
  }),
  async run(ctx, input, { token }: Params) {
    const ref = refOf(ctx, token);
    const invitation = await usable(ctx.db, ref);
    const firstName = input.firstName ?? invitation.first_name;
    const lastName = input.lastName ?? invitation.last_name;
    const missing: FieldProblem[] = [];
    if (!firstName) missing.push({ field: 'firstName', message: 'firstName is required: the invitation does not name you' });
    if (!lastName) missing.push({ field: 'lastName', message: 'lastName is required: the invitation does not name you' });
    if (missing.length) throw validationFailed(missing);

    const { orgId, invitationId } = ref!;
    const passwordHash = await hashPassword(input.password, ctx.config.bcryptRounds);
    const org = (await ctx.loaders.organizationById.load(orgId))!;
    const userId = randomUUID();
    const user = await ctx.db.transaction(async (trx) => {
      const [claimed] = (await tenant(trx, orgId)
        .scoped('invitations')
        .where('invitations.id', invitationId)
        .whereNull('invitations.accepted_at')
        .whereNull('invitations.revoked_at')
        .where('invitations.expires_at', '>', trx.fn.now())
        .update({ accepted_at: nowMs(trx), accepted_user_id: userId })
        .returning(INVITATION_COLUMNS)) as InvitationRow[];
      // Used, revoked or expired since it was read: the same refusal a fresh read gives.
      if (!claimed) throw await usable(trx, ref).then(() => gone('This invitation can no longer be accepted'), (err: unknown) => err);
      let row: UserRow;
      try {
        [row] = (await trx('users')
          .insert({
            id: userId,
            organization_id: orgId,
            first_name: firstName,
            last_name: lastName,
            email: claimed.email,
            country_code: callingCodeOf(org.country),
            phone_number: '',
            role: claimed.role,
            password_hash: passwordHash,
          })
          .returning([...USER_COLUMNS, 'tokens_valid_after'])) as UserRow[];
      } catch (err) {
        if (isUniqueViolation(err, 'lower(email)')) throw conflict('A user with this email already exists: log in instead');
        throw err;
      }
      // The new user is the actor: they accepted, with the link the admin gave them.
      const origin = { caller: { orgId, role: row!.role, via: 'jwt' as const, userId, apiKeyId: null }, clientIp: ctx.clientIp, requestId: ctx.requestId };
      await record(trx, origin, { action: 'invitation.accepted', resourceType: 'invitation', resourceId: claimed.id, details: { ...invitationDetails(claimed), userId } });
      return row!;
    });
    const twoFactor = await loginState(ctx.db, user.id, orgId);
    const session = ctx.tokens.sign({ userId: user.id, orgId, role: user.role }, Number(user.tokens_valid_after));
    return { token: session, user: toUserDto(user), twoFactorSetupRequired: twoFactor.required };
  },
});

/** An accept's answer as REST shows it: login's `{ token, user }`, and `twoFactorSetupRequired` when the organization requires it. */
export const sessionView = (result: Awaited<ReturnType<typeof accept>>) => ({
  token: result.token,
  user: loginUser(result.user),
  ...(result.twoFactorSetupRequired ? { twoFactorSetupRequired: true as const } : {}),
});
