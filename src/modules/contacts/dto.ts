import type { Knex } from 'knex';
import { subscriptionsOf, type Subscriptions, type Unsubscribed } from '../consent/service.js';
import type { Attributes } from './attributes.js';

export interface ContactRow {
  id: string;
  organization_id: string;
  name: string;
  email: string | null;
  phone: string | null;
  country_code: string | null;
  company: string | null;
  tags: string[];
  attributes: Attributes;
  /** The channels the contact left (consent/service.ts keeps it). */
  unsubscribed: Unsubscribed;
  /** Its time zone (IANA): its own, or its phone number's country's; null: the organization's. */
  time_zone: string | null;
  /** Whether `time_zone` was given (through the API or an import) rather than taken from the phone. */
  time_zone_set: boolean;
  groups: string[];
  created_at: Date;
  updated_at: Date;
}

export interface ContactDto {
  _id: string;
  name: string;
  email: string | null;
  phone: string | null;
  countryCode: string | null;
  /** The contact's own company, free-form (not the owning organization). */
  organization: string | null;
  tags: string[];
  /** Free-form key -> value data (`{}` when none). */
  attributes: Attributes;
  groups: string[];
  /** Consent per channel. */
  subscriptions: Subscriptions;
  /** Its time zone (IANA): its own, or its phone number's country's when that has one; null: the organization's. */
  timezone: string | null;
  /** The owning organization's id. */
  ServiceOrganization: string;
  createdAt: string;
  updatedAt: string;
}

export const toContactDto = (row: ContactRow): ContactDto => ({
  _id: row.id,
  name: row.name,
  email: row.email,
  phone: row.phone,
  countryCode: row.country_code,
  organization: row.company,
  tags: row.tags,
  attributes: row.attributes,
  groups: row.groups,
  subscriptions: subscriptionsOf(row.unsubscribed),
  timezone: row.time_zone,
  ServiceOrganization: row.organization_id,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

/** A timestamp as `toISOString` writes it (milliseconds truncated, as node-postgres reads them), in SQL. */
const isoSql = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** One channel's consent as `subscriptionsOf` shows it, in SQL over the `unsubscribed` column `u`. */
const subscriptionSql = (u: string, channel: string) =>
  `CASE WHEN jsonb_typeof(${u} -> '${channel}') = 'object'
        THEN json_build_object('status', 'unsubscribed', 'unsubscribedAt', ${u} -> '${channel}' -> 'at', 'source', ${u} -> '${channel}' -> 'source')
        ELSE json_build_object('status', 'subscribed', 'unsubscribedAt', NULL, 'source', NULL) END`;

/**
 * `toContactDto` in SQL, over a row `r` of `contactColumns`: the same fields in the same order, so
 * that a page of contacts is written as JSON by Postgres in one go (`GET /contacts`). A test holds
 * the two equal for every kind of contact.
 */
export const contactJsonSql = (r: string) => `json_build_object(
  '_id', ${r}.id, 'name', ${r}.name, 'email', ${r}.email, 'phone', ${r}.phone, 'countryCode', ${r}.country_code,
  'organization', ${r}.company, 'tags', ${r}.tags, 'attributes', ${r}.attributes, 'groups', ${r}.groups,
  'subscriptions', CASE WHEN ${r}.unsubscribed = '{}'::jsonb THEN '${JSON.stringify(subscriptionsOf({}))}'::json
                        ELSE json_build_object('email', ${subscriptionSql(`${r}.unsubscribed`, 'email')}, 'sms', ${subscriptionSql(`${r}.unsubscribed`, 'sms')},
                                               'whatsapp', ${subscriptionSql(`${r}.unsubscribed`, 'whatsapp')}) END,
  'timezone', ${r}.time_zone, 'ServiceOrganization', ${r}.organization_id,
  'createdAt', ${isoSql(`${r}.created_at`)}, 'updatedAt', ${isoSql(`${r}.updated_at`)})`;

/**
 * Contact columns with the ids of its groups gathered on the membership primary key. The
 * memberships are filtered by the organization itself, not only by the outer row's: that is what
 * lets Citus see the whole query stays on the organization's shard.
 */
export const contactColumns = (db: Knex | Knex.Transaction, orgId: string) => [
  'contacts.id',
  'contacts.organization_id',
  'contacts.name',
  'contacts.email',
  'contacts.phone',
  'contacts.country_code',
  'contacts.company',
  'contacts.tags',
  'contacts.attributes',
  'contacts.unsubscribed',
  'contacts.time_zone',
  'contacts.created_at',
  'contacts.updated_at',
  db.raw(`ARRAY(
    SELECT cg.group_id::text FROM contact_groups cg
    WHERE cg.organization_id = ? AND cg.contact_id = contacts.id
    ORDER BY cg.group_id
  ) AS groups`, [orgId]),
];
