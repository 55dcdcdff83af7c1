import type { Knex } from 'knex';
import type { Db } from '../db/database.js';
import { run, statement } from '../db/statements.js';
import { paymentRequired, type HttpError } from '../lib/errors.js';

/**
 * Credits move only here, in `organization_credits` (one row per organization, keyed like the
 * tenant tables: on Citus it sits on the organization's worker, beside the logs it pays for). A send or a campaign batch reserves what it may cost before any provider
 * is called (`reserve`: one conditional update, so concurrent sends queue on the organization's row
 * and can never overdraw it); when it settles, what it did not spend is released (`release`), and
 * so is what canceled or interrupted work held. The operator grants (`grant`). Every function takes
 * the caller's transaction when the movement must commit with other writes (the logs it pays for).
 */

type Queryable = Db | Knex.Transaction;

/** Amounts are credits with at most two decimals. */
export const round2 = (n: number) => Math.round(n * 100) / 100;

const reserveCredits = statement<{ orgId: string; amount: number }, { id: string }>(
  'herald_credits_reserve',
  `UPDATE organization_credits SET credits = credits - :amount::numeric
   WHERE organization_id = :orgId AND credits >= :amount::numeric RETURNING organization_id AS id`,
);

const releaseCredits = statement<{ orgId: string; amount: number }>(
  'herald_credits_release',
  'UPDATE organization_credits SET credits = credits + :amount::numeric WHERE organization_id = :orgId',
);

const grantCredits = statement<{ orgId: string; amount: number }, { credits: number }>(
  'herald_credits_grant',
  `UPDATE organization_credits SET credits = credits + :amount::numeric
   WHERE organization_id = :orgId AND credits + :amount::numeric >= 0 RETURNING credits`,
);

const creditsOf = statement<{ orgId: string }, { credits: number }>(
  'herald_credits_balance',
  'SELECT credits FROM organization_credits WHERE organization_id = :orgId',
);

const openAccount = statement<{ orgId: string; amount: number }>(
  'herald_credits_open',
  'INSERT INTO organization_credits (organization_id, credits) VALUES (:orgId, :amount::numeric)',
);

/** A new organization's balance, starting at `amount` (the signup credits). */
export async function open(db: Queryable, orgId: string, amount: number): Promise<void> {
  await run(db, openAccount, { orgId, amount: round2(amount) });
}

/** Takes `amount` from the balance if it covers it; false (nothing taken) when it does not. */
export async function reserve(db: Queryable, orgId: string, amount: number): Promise<boolean> {
  if (amount <= 0) return true;
  return (await run(db, reserveCredits, { orgId, amount: round2(amount) })).length > 0;
}

/** Gives back held credits: what a settled send did not spend, or what canceled work held. */
export async function release(db: Queryable, orgId: string, amount: number): Promise<void> {
  if (amount > 0) await run(db, releaseCredits, { orgId, amount: round2(amount) });
}

/** The operator's grant (negative takes credits back, never below zero): the new balance, or null when it would go negative. */
export async function grant(db: Queryable, orgId: string, amount: number): Promise<number | null> {
  const [row] = await run(db, grantCredits, { orgId, amount: round2(amount) });
  return row ? Number(row.credits) : null;
}

export async function balance(db: Queryable, orgId: string): Promise<number> {
  const [row] = await run(db, creditsOf, { orgId });
  return Number(row?.credits ?? 0);
}

/** The 402 for a `what` (a send, a campaign) that needs more than the balance. */
export async function shortfall(db: Queryable, orgId: string, needed: number, what: string): Promise<HttpError> {
  return paymentRequired(`Insufficient credits: this ${what} needs ${round2(needed)} credits and the balance is ${await balance(db, orgId)}`);
}
