// The operator's credits tool: `npm run credits -- show <org>` and `npm run credits -- grant <org> <amount>`,
// where <org> is an organization id or the email of one of its users. Nothing tenants can reach.
import path from 'node:path';
import { loadConfig } from '../config/config.js';
import { createDb, type Db } from '../db/database.js';
import { startEmbeddedPostgres } from '../db/embedded.js';
import { isUuid } from '../lib/ids.js';
import * as credits from '../delivery/credits.js';
import { organizationRows } from '../modules/organizations/queries.js';

const USAGE = 'usage: npm run credits -- show <organization id | user email>\n       npm run credits -- grant <organization id | user email> <amount>';

async function findOrg(db: Db, ref: string): Promise<{ id: string; name: string; credits: number } | undefined> {
  const id = isUuid(ref) ? ref : (await db('users').whereRaw('lower(email) = ?', [String(ref).toLowerCase()]).first('organization_id'))?.organization_id;
  if (!id) return undefined;
  const [org] = await organizationRows(db, [id]);
  return org;
}

export async function creditsCommand(db: Db, args: string[]): Promise<string> {
  const [command, ref, amountText] = args;
  if (!ref || (command !== 'show' && command !== 'grant')) throw new Error(USAGE);
  const org = await findOrg(db, ref);
  if (!org) throw new Error(`No organization found for ${ref}`);
  if (command === 'show') return `${org.id} ${org.name}: ${Number(org.credits)} credits`;
  const amount = Number(amountText);
  if (!amountText || !Number.isFinite(amount) || Math.round(amount * 100) !== amount * 100) {
    throw new Error('amount must be a number with at most two decimals (negative to take credits back)');
  }
  const after = await credits.grant(db, org.id, amount);
  if (after === null) throw new Error(`Cannot take ${-amount} credits: the balance is ${Number(org.credits)}`);
  return `${org.id} ${org.name}: ${Number(org.credits)} -> ${after} credits`;
}

const isMain = process.argv[1] && path.resolve(process.argv[1]).endsWith(path.join('cli', 'credits.ts'));
if (isMain) {
  const config = loadConfig();
  const embedded = config.databaseUrl ? null : await startEmbeddedPostgres(path.join(config.dataDir, 'postgres'));
  const db = createDb(config.databaseUrl ?? embedded!.url, 2);
  try {
    console.log(await creditsCommand(db, process.argv.slice(2)));
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  } finally {
    await db.destroy();
    await embedded?.stop();
  }
}
