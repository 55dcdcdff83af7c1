import { decodeCursor, DEFAULT_LIMIT, encodeCursor, MAX_LIMIT, type Page, type PageRequest } from '../../db/pagination.js';
import type { Db } from '../../db/database.js';
import { badRequest } from '../../lib/errors.js';
import { contactColumns, toContactDto, type ContactDto, type ContactRow } from './dto.js';

/**
 * One page of contacts for each of several groups, in one query (a LATERAL join per group),
 * so GraphQL's `Group.contacts` costs the same for one group or a hundred.
 */
export async function contactsOfGroups(
  db: Db,
  orgId: string,
  groupIds: readonly string[],
  page: PageRequest,
): Promise<Map<string, Omit<Page<ContactDto>, 'totalCount'>>> {
  const limit = page.limit ?? DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw badRequest(`limit must be between 1 and ${MAX_LIMIT}`);
  const inner = db('contacts')
    .join('contact_groups as cg', function () {
      this.on('cg.organization_id', '=', 'contacts.organization_id').andOn('cg.contact_id', '=', 'contacts.id');
    })
    .where('contacts.organization_id', orgId)
    .where('cg.organization_id', orgId)
    .whereRaw('cg.group_id = g.gid')
    .select(contactColumns(db, orgId))
    .orderBy([
      { column: 'contacts.created_at', order: 'desc' },
      { column: 'contacts.id', order: 'desc' },
    ])
    .limit(limit + 1);
  if (page.cursor) {
    const key = decodeCursor(page.cursor);
    inner.whereRaw('(contacts.created_at, contacts.id) < (?::timestamptz, ?::uuid)', [key.createdAt, key.id]);
  }
  const rows = (await db
    .select('g.gid as group_id', 'c.*')
    .from(db.raw('unnest(?::uuid[]) AS g(gid)', [groupIds as string[]]))
    .joinRaw('CROSS JOIN LATERAL ? AS c', [inner as unknown as Record<string, unknown>])) as (ContactRow & { group_id: string })[];

  const byGroup = new Map<string, ContactRow[]>(groupIds.map((id) => [id, []]));
  for (const row of rows) byGroup.get(row.group_id)?.push(row);
  const pages = new Map<string, Omit<Page<ContactDto>, 'totalCount'>>();
  for (const [groupId, list] of byGroup) {
    const more = list.length > limit;
    const items = more ? list.slice(0, limit) : list;
    pages.set(groupId, { items: items.map(toContactDto), nextCursor: more ? encodeCursor(items[items.length - 1]!) : null });
  }
  return pages;
}
