import type { Knex } from 'knex';
import type { Db } from '../../db/database.js';
import { nowMs } from '../../db/database.js';
import { decryptJson, encryptJson } from '../../lib/crypto.js';
import { hashRecoveryCode, isTotpShaped, matchTotp, newRecoveryCodes, normaliseRecoveryCode } from './codes.js';

/** A user's two-factor row (`user_two_factor`); the secret stays sealed until a code is checked. */
export interface TwoFactorRow {
  user_id: string;
  secret: Buffer;
  confirmed_at: Date | null;
  last_used_step: string | number | null;
  created_at: Date;
  updated_at: Date;
}

type Conn = Db | Knex.Transaction;

/** The TOTP secret sealed as channel credentials are (AES-256-GCM under CREDENTIALS_KEY). */
export const sealSecret = (key: Buffer, secret: string): Buffer => encryptJson(key, { secret });
const openSecret = (key: Buffer, sealed: Buffer): string => decryptJson<{ secret: string }>(key, sealed).secret;

export const twoFactorRow = (db: Conn, userId: string) => db('user_two_factor').where({ user_id: userId }).first() as Promise<TwoFactorRow | undefined>;

/** Whether each of these users has confirmed two-factor authentication. */
export async function enabledUsers(db: Conn, userIds: readonly string[]): Promise<Set<string>> {
  const rows = (await db('user_two_factor').whereIn('user_id', userIds as string[]).whereNotNull('confirmed_at').select('user_id')) as { user_id: string }[];
  return new Set(rows.map((r) => r.user_id));
}

/** What a login needs to know: whether the user enrolled, and whether their organization requires it. */
export async function loginState(db: Conn, userId: string, orgId: string): Promise<{ enabled: boolean; required: boolean }> {
  const row = (await db('organizations')
    .leftJoin('user_two_factor', (j) => j.on('user_two_factor.user_id', db.raw('?', [userId])).andOnNotNull('user_two_factor.confirmed_at'))
    .where('organizations.id', orgId)
    .first('organizations.require_two_factor as required', db.raw('user_two_factor.user_id IS NOT NULL AS enabled'))) as { required: boolean; enabled: boolean } | undefined;
  return { enabled: Boolean(row?.enabled), required: Boolean(row?.required) };
}

/**
 * Starts (or starts again) an enrolment with a new sealed secret; answers false when the user's
 * two-factor authentication is already confirmed, which a new enrolment may not replace.
 */
export async function startPending(db: Conn, userId: string, sealed: Buffer): Promise<boolean> {
  const { rows } = await db.raw(
    `INSERT INTO user_two_factor (user_id, secret) VALUES (?, ?)
     ON CONFLICT (user_id) DO UPDATE SET secret = EXCLUDED.secret, last_used_step = NULL, updated_at = EXCLUDED.updated_at
       WHERE user_two_factor.confirmed_at IS NULL
     RETURNING user_id`,
    [userId, sealed],
  );
  return rows.length > 0;
}

/**
 * Confirms the pending enrolment whose sealed secret is `sealed` (not one started again meanwhile)
 * with the step of its first code, and gives the user a first set of recovery codes; null when it
 * is no longer the pending one.
 */
export async function confirmPending(trx: Knex.Transaction, userId: string, sealed: Buffer, step: number): Promise<string[] | null> {
  const updated = await trx('user_two_factor')
    .where({ user_id: userId, secret: sealed })
    .whereNull('confirmed_at')
    .update({ confirmed_at: nowMs(trx), last_used_step: step, updated_at: nowMs(trx) })
    .returning('user_id');
  if (!updated.length) return null;
  return replaceRecoveryCodes(trx, userId);
}

/** A new set of ten recovery codes, the previous set gone; answers the codes as the user sees them once. */
export async function replaceRecoveryCodes(trx: Knex.Transaction, userId: string): Promise<string[]> {
  const codes = newRecoveryCodes();
  await trx('user_recovery_codes').where({ user_id: userId }).delete();
  await trx('user_recovery_codes').insert(codes.map((code) => ({ user_id: userId, code_hash: hashRecoveryCode(normaliseRecoveryCode(code)!) })));
  return codes;
}

export async function recoveryCodesLeft(db: Conn, userId: string): Promise<number> {
  const [row] = (await db('user_recovery_codes').where({ user_id: userId }).whereNull('used_at').count('* as count')) as { count: string }[];
  return Number(row?.count ?? 0);
}

/** Turns two-factor authentication off: the secret and every recovery code go. */
export async function removeTwoFactor(trx: Knex.Transaction, userId: string): Promise<void> {
  await trx('user_recovery_codes').where({ user_id: userId }).delete();
  await trx('user_two_factor').where({ user_id: userId }).delete();
}

/**
 * Checks `code` against the user's confirmed two-factor authentication and spends it: a TOTP code
 * (six digits) within one step of `now` and later than the last one accepted, or one of the unused
 * recovery codes. Each is accepted once: the statement that spends it is the one that checks it
 * was not spent, so the same code sent twice at once is accepted once. Answers what matched.
 */
export async function spendCode(db: Conn, key: Buffer, userId: string, code: string, now: Date): Promise<'totp' | 'recovery' | null> {
  const row = await twoFactorRow(db, userId);
  if (!row?.confirmed_at) return null;
  const typed = code.replace(/\s/g, '');
  if (isTotpShaped(typed)) {
    const last = row.last_used_step === null ? null : Number(row.last_used_step);
    const step = await matchTotp(openSecret(key, row.secret), typed, now, last);
    if (step === null) return null;
    const spent = await db('user_two_factor')
      .where({ user_id: userId })
      .whereNotNull('confirmed_at')
      .where((q) => q.whereNull('last_used_step').orWhere('last_used_step', '<', step))
      .update({ last_used_step: step })
      .returning('user_id');
    return spent.length ? 'totp' : null;
  }
  const normalised = normaliseRecoveryCode(typed);
  if (!normalised) return null;
  const spent = await db('user_recovery_codes')
    .where({ user_id: userId, code_hash: hashRecoveryCode(normalised) })
    .whereNull('used_at')
    .update({ used_at: nowMs(db as Db) })
    .returning('user_id');
  return spent.length ? 'recovery' : null;
}

/** The step of a first code for a pending enrolment (no step used yet, no recovery codes yet). */
export async function matchFirstCode(key: Buffer, row: TwoFactorRow, code: string, now: Date): Promise<number | null> {
  return matchTotp(openSecret(key, row.secret), code.replace(/\s/g, ''), now, null);
}
