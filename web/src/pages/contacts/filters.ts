/**
 * The contact list's filters live in the URL (`/contacts?group=<id>&q=ada`), so a filtered list can
 * be linked to (the groups page does) and survives a reload. Names of the search parameters:
 */
import type { Channel, ContactFilter } from '../../gql/graphql';

export const PARAMS = {
  search: 'q',
  tag: 'tag',
  group: 'group',
  unsubscribed: 'unsubscribed',
  attributeKey: 'attribute',
  attributeValue: 'value',
} as const;

/** The text filters, typed and then applied after a pause. */
export const TEXT_PARAMS = [PARAMS.search, PARAMS.tag, PARAMS.attributeKey, PARAMS.attributeValue] as const;

const CHANNELS: readonly string[] = ['email', 'sms', 'whatsapp'];

/** The `contacts` query's filter for the URL's parameters; blank ones are left out. */
export function filterOf(params: URLSearchParams): ContactFilter {
  const filter: ContactFilter = {};
  const text = (name: string) => params.get(name)?.trim() || undefined;
  filter.search = text(PARAMS.search);
  filter.tag = text(PARAMS.tag);
  filter.group = text(PARAMS.group);
  const channel = params.get(PARAMS.unsubscribed);
  if (channel && CHANNELS.includes(channel)) filter.unsubscribed = channel as Channel;
  const key = params.get(PARAMS.attributeKey);
  // A string value matches the stored string, the number it reads as and `true`/`false` (see ContactFilter.attributes).
  if (key) filter.attributes = { [key]: params.get(PARAMS.attributeValue) ?? '' };
  return Object.fromEntries(Object.entries(filter).filter(([, v]) => v !== undefined));
}

export const isFiltered = (filter: ContactFilter) => Object.keys(filter).length > 0;
