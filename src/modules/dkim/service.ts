import { promises as dns } from 'node:dns';
import type { Config } from '../../config/config.js';
import { z } from 'zod';
import type { AuthedContext } from '../../context.js';
import { tenant } from '../../db/tenant.js';
import { DKIM_ALGORITHMS, dkimName, newDkimKey, parseDkimRecord, type DkimAlgorithm } from '../../delivery/dkim.js';
import { encryptJson } from '../../lib/crypto.js';
import { conflict } from '../../lib/errors.js';
import { operation } from '../../operation.js';
import { record } from '../audit/record.js';

/**
 * DKIM keys (admins): Herald generates a sending domain's key pairs (RSA or Ed25519), keeps the
 * private keys encrypted, shows the DNS record to publish, signs every email from the domain with
 * each of its keys, and checks whether the record published in DNS matches.
 */

const ADMIN = { role: 'admin', apiKeys: false } as const;
const TABLE = 'dkim_keys';
const COLUMNS = ['id', 'organization_id', 'domain', 'selector', 'algorithm', 'record', 'checked_at', 'published', 'created_at'];

interface DkimRow {
  id: string;
  organization_id: string;
  domain: string;
  selector: string;
  algorithm: DkimAlgorithm;
  record: string;
  checked_at: Date | null;
  published: boolean | null;
  created_at: Date;
}

const toDto = (row: DkimRow) => ({
  _id: row.id,
  domain: row.domain,
  selector: row.selector,
  algorithm: row.algorithm,
  dnsName: dkimName(row.selector, row.domain),
  dnsType: 'TXT',
  record: row.record,
  published: row.published,
  checkedAt: row.checked_at?.toISOString() ?? null,
  organization: row.organization_id,
  createdAt: row.created_at.toISOString(),
});

const domain = z
  .string()
  .trim()
  .toLowerCase()
  .max(253)
  .regex(/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/, 'must be a domain name such as example.com');
const selector = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, 'must be letters, digits and hyphens');

export const list = operation({
  access: ADMIN,
  async run(ctx) {
    const rows = (await tenant(ctx.db, ctx.caller.orgId).scoped(TABLE).orderBy([{ column: 'domain' }, { column: 'created_at' }]).select(COLUMNS)) as DkimRow[];
    return rows.map(toDto);
  },
});

export const get = operation({
  access: ADMIN,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    return toDto(await tenant(ctx.db, ctx.caller.orgId).owned<DkimRow>(TABLE, id, COLUMNS));
  },
});

/**
 * A new key for a domain, RSA unless `algorithm` says `ed25519` (`selector` defaults to `herald`, the
 * date and, for Ed25519, `ed`, so a second key can be published beside the first).
 */
export const create = operation({
  access: ADMIN,
  input: z.strictObject({ domain, selector: selector.optional(), algorithm: z.enum(DKIM_ALGORITHMS).default('rsa') }),
  async run(ctx: AuthedContext, input) {
    const chosen = input.selector ?? `herald${new Date().toISOString().slice(0, 10).replaceAll('-', '')}${input.algorithm === 'ed25519' ? 'ed' : ''}`;
    const { privateKey, record: txt } = newDkimKey(input.algorithm);
    const row = await ctx.db.transaction(async (trx) => {
      const taken = await tenant(trx, ctx.caller.orgId).scoped(TABLE).where({ domain: input.domain, selector: chosen }).first('id');
      if (taken) throw conflict(`${dkimName(chosen, input.domain)} already has a key`);
      const [created] = (await trx(TABLE)
        .insert({ organization_id: ctx.caller.orgId, domain: input.domain, selector: chosen, algorithm: input.algorithm, private_key: encryptJson(ctx.config.credentialsKey, privateKey), record: txt })
        .returning(COLUMNS)) as DkimRow[];
      await record(trx, ctx, { action: 'dkim.created', resourceType: 'dkim_key', resourceId: created!.id, details: { domain: input.domain, selector: chosen, algorithm: input.algorithm } });
      return created!;
    });
    return toDto(row);
  },
});

export const remove = operation({
  access: ADMIN,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    await ctx.db.transaction(async (trx) => {
      const t = tenant(trx, ctx.caller.orgId);
      const row = await t.owned<DkimRow>(TABLE, id, COLUMNS, { forUpdate: true });
      await t.scoped(TABLE).where(`${TABLE}.id`, id).delete();
      await record(trx, ctx, { action: 'dkim.deleted', resourceType: 'dkim_key', resourceId: id, details: { domain: row.domain, selector: row.selector } });
    });
    return { message: 'DKIM key deleted successfully' };
  },
});

/** Why a published DKIM record is not `row`'s, or null when one of them is. */
function mismatch(published: string[], row: DkimRow, name: string): string | null {
  const mine = parseDkimRecord(row.record);
  const key = Buffer.from(mine.publicKey, 'base64');
  const keys = published.map(parseDkimRecord).filter((r) => r.keyType === mine.keyType).map((r) => Buffer.from(r.publicKey, 'base64'));
  if (keys.some((k) => k.equals(key))) return null;
  // The SPKI form ends with the raw key: the likeliest mistake of an Ed25519 record, one that verifiers following RFC 8463 refuse.
  if (row.algorithm === 'ed25519' && keys.some((k) => k.length > key.length && k.subarray(-key.length).equals(key))) {
    return `The record at ${name} has this key in SPKI form; an Ed25519 record carries the raw 32-byte key, as shown`;
  }
  return `The record at ${name} is another key's`;
}

/** Looks the key's record up in DNS: whether one is published, and whether it is this key's. */
export const check = operation({
  access: ADMIN,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    const row = await tenant(ctx.db, ctx.caller.orgId).owned<DkimRow>(TABLE, id, COLUMNS);
    const name = dkimName(row.selector, row.domain);
    let found: string[] = [];
    let error: string | null = null;
    try {
      found = (await resolverFor(ctx.config).resolveTxt(name)).map((chunks) => chunks.join(''));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      error = code === 'ENOTFOUND' || code === 'ENODATA' ? `No TXT record at ${name}` : `DNS lookup failed (${code ?? (err as Error).message})`;
    }
    const dkim = found.filter((f) => /v=dkim1/i.test(f) || /p=/i.test(f));
    const wrong = dkim.length ? mismatch(dkim, row, name) : `No DKIM record at ${name}`;
    const matches = wrong === null;
    const [updated] = (await tenant(ctx.db, ctx.caller.orgId)
      .scoped(TABLE)
      .where(`${TABLE}.id`, id)
      .update({ published: matches, checked_at: ctx.db.fn.now() })
      .returning(COLUMNS)) as DkimRow[];
    return {
      key: toDto(updated!),
      published: dkim.length > 0,
      matches,
      found: dkim,
      problem: matches ? null : (error ?? wrong),
    };
  },
});

/** The resolver of DKIM checks: the system's, or `DNS_SERVERS`' when set. */
function resolverFor(config: Pick<Config, 'dnsServers'>): dns.Resolver {
  const resolver = new dns.Resolver({ timeout: 3_000, tries: 2 });
  if (config.dnsServers.length) resolver.setServers(config.dnsServers);
  return resolver;
}
