import { tenant } from '../../db/tenant.js';
import { operation } from '../../operation.js';
import { READ } from './service.js';

/** How many of the newest contacts `attributeKeys` reads. */
export const KEYS_SAMPLE = 1000;

/**
 * `GET /contacts/attribute-keys`: the attribute keys of the organization's newest `KEYS_SAMPLE`
 * contacts, sorted, for the variables a message can name (`contact.attributes.<key>`). One range of
 * the list's index, however many contacts there are: contacts of an organization mostly share their
 * keys, so a form's menu gets them in milliseconds, where every contact's (the export's columns)
 * would read them all.
 */
export const attributeKeys = operation({
  access: READ,
  async run(ctx): Promise<string[]> {
    const t = tenant(ctx.db, ctx.caller.orgId);
    const newest = t
      .scoped('contacts')
      .select('contacts.attributes')
      .orderBy([
        { column: 'contacts.created_at', order: 'desc' },
        { column: 'contacts.id', order: 'desc' },
      ])
      .limit(KEYS_SAMPLE);
    const rows = (await ctx.db.select(ctx.db.raw('DISTINCT jsonb_object_keys(newest.attributes) AS key')).from(newest.as('newest')).orderBy('key')) as { key: string }[];
    return rows.map((r) => r.key);
  },
});
