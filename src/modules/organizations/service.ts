import { z } from 'zod';
import type { Config } from '../../config/config.js';
import { nowMs } from '../../db/database.js';
import { badRequest, notFound } from '../../lib/errors.js';
import { isPrivateHost } from '../../lib/hosts.js';
import { operation } from '../../operation.js';
import { readCredentials, sealCredentials } from '../../delivery/credentials.js';
import { showCredentials } from './credentials.js';
import { toSummary, type OrganizationDto, type OrganizationRow } from './dto.js';

function toOrganizationDto(config: Config, row: OrganizationRow): OrganizationDto {
  return {
    ...toSummary(row),
    emailFromName: row.email_from_name,
    credentials: showCredentials(config, readCredentials(config, row)),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export const current = operation({
  access: { role: 'any', apiKeys: false },
  async run(ctx) {
    const row = (await ctx.db('organizations').where({ id: ctx.caller.orgId }).first()) as OrganizationRow | undefined;
    if (!row) throw notFound();
    return toOrganizationDto(ctx.config, row);
  },
});

const text = (max: number) => z.string().trim().min(1).max(max);

export const updateCredentials = operation({
  access: { role: 'admin', apiKeys: false },
  input: z.strictObject({
    sms_apiKey: text(500).optional(),
    sms_partnerID: text(100).optional(),
    sms_shortCode: text(100).optional(),
    email_host: z.string().trim().min(1).max(253).regex(/^[A-Za-z0-9.:\-\[\]]+$/, 'must be a host name or address').optional(),
    email_port: z.string().trim().regex(/^\d{1,5}$/, 'must be a port number').refine((p) => Number(p) >= 1 && Number(p) <= 65535, 'must be between 1 and 65535').optional(),
    email_user: text(254).optional(),
    email_pass: text(500).optional(),
    email_from: z.string().trim().max(254).pipe(z.email({ error: 'must be a valid email' })).optional(),
    whatsapp_access_token: text(2000).optional(),
    whatsapp_phone_number_id: z.string().trim().regex(/^\d{1,30}$/, 'must be digits').optional(),
  }),
  async run(ctx, input) {
    if (ctx.config.blockPrivateHosts && input.email_host && (await isPrivateHost(input.email_host.replace(/^\[|\]$/g, '')))) {
      throw badRequest('email_host must not be a loopback, private or link-local address');
    }
    const row = await ctx.db.transaction(async (trx) => {
      const current = (await trx('organizations').where({ id: ctx.caller.orgId }).forUpdate().first()) as OrganizationRow;
      const merged = { ...readCredentials(ctx.config, current), ...input };
      const [updated] = await trx('organizations')
        .where({ id: ctx.caller.orgId })
        .update({ credentials: sealCredentials(ctx.config, merged), updated_at: nowMs(ctx.db) })
        .returning('*');
      return updated as OrganizationRow;
    });
    return toOrganizationDto(ctx.config, row);
  },
});
