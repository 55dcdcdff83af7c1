import { CHANNELS, type Channel } from '../../delivery/types.js';

/**
 * The one vocabulary of contacts as CSV, shared by the export (its header row) and the import (the
 * fields a column can be mapped to, and the header names mapped without being told). A file
 * exported by Herald imports again unchanged.
 *
 * - `name`, `email`, `phone`, `countryCode`, `organization`, `timezone`: the contact's fields (the
 *   export writes a zone only when it is the contact's own, not one taken from its phone).
 * - `tags`: several tags in one cell, separated by `|` (a `;` or `,` would collide with the
 *   separators of the files people write by hand).
 * - `attributes.<key>`: one attribute per column; the cell is the value as text (a number or
 *   `true`/`false` is read back as one), an empty cell sets nothing.
 * - `subscriptions.<channel>`: `subscribed` or `unsubscribed`; `unsubscribed` (no channel) leaves
 *   every channel when its cell says so (`unsubscribed`, `true`, `yes`, `1`).
 * - Exported only: `id`, `groups` (the names of the contact's groups, `|`-separated), `createdAt`,
 *   `updatedAt`. An import ignores them unless mapped.
 */
export const CONTACT_FIELDS = ['name', 'email', 'phone', 'countryCode', 'organization', 'tags', 'timezone'] as const;
export type ContactField = (typeof CONTACT_FIELDS)[number];

export const LIST_SEPARATOR = '|';
export const ATTRIBUTE_PREFIX = 'attributes.';
export const SUBSCRIPTION_PREFIX = 'subscriptions.';
export const ALL_CHANNELS_COLUMN = 'unsubscribed';

/** Where one imported column goes. */
export type ColumnTarget =
  | { kind: 'field'; field: ContactField }
  | { kind: 'attribute'; key: string }
  | { kind: 'subscription'; channel: Channel }
  | { kind: 'unsubscribed' };

/** A mapping target as written (`email`, `attributes.plan`, `subscriptions.sms`, `unsubscribed`), or null when it names nothing. */
export function columnTarget(name: string): ColumnTarget | null {
  if ((CONTACT_FIELDS as readonly string[]).includes(name)) return { kind: 'field', field: name as ContactField };
  if (name === ALL_CHANNELS_COLUMN) return { kind: 'unsubscribed' };
  if (name.startsWith(ATTRIBUTE_PREFIX) && name.length > ATTRIBUTE_PREFIX.length) return { kind: 'attribute', key: name.slice(ATTRIBUTE_PREFIX.length) };
  if (name.startsWith(SUBSCRIPTION_PREFIX)) {
    const channel = name.slice(SUBSCRIPTION_PREFIX.length) as Channel;
    if (CHANNELS.includes(channel)) return { kind: 'subscription', channel };
  }
  return null;
}

/** The export's header for a contact field, an attribute, a channel's consent. */
export const attributeColumn = (key: string) => `${ATTRIBUTE_PREFIX}${key}`;
export const subscriptionColumn = (channel: Channel) => `${SUBSCRIPTION_PREFIX}${channel}`;

/** A cell that says "unsubscribed" in a consent column. */
export const isUnsubscribedCell = (cell: string) => /^(unsubscribed|true|yes|y|1)$/i.test(cell.trim());
/** A cell that says "subscribed" in a channel's consent column (anything else, empty included, changes nothing). */
export const isSubscribedCell = (cell: string) => /^(subscribed|false|no|n|0)$/i.test(cell.trim());

/** The columns an export has and an import ignores unless mapped. */
export const ID_COLUMN = 'id';
export const GROUPS_COLUMN = 'groups';
export const CREATED_AT_COLUMN = 'createdAt';
export const UPDATED_AT_COLUMN = 'updatedAt';

/** The channels' consent columns in the order an export writes them (by name). */
export const CONSENT_CHANNELS: readonly Channel[] = [...CHANNELS].sort();

/**
 * An export's header row: the id, the contact's fields, its groups, its consent per channel, one
 * column per attribute key (as given: the export sorts them), then its times.
 */
export const exportHeader = (attributeKeys: readonly string[]): string[] => [
  ID_COLUMN,
  ...CONTACT_FIELDS,
  GROUPS_COLUMN,
  ...CONSENT_CHANNELS.map(subscriptionColumn),
  ...attributeKeys.map(attributeColumn),
  CREATED_AT_COLUMN,
  UPDATED_AT_COLUMN,
];
