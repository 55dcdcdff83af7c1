import DataLoader from 'dataloader';
import type { Db } from './db/database.js';
import type { Page, PageRequest } from './db/pagination.js';
import type { ContactDto } from './modules/contacts/dto.js';
import { contactsOfGroups } from './modules/contacts/queries.js';
import { groupColumns, toGroupDto, type GroupDto, type GroupRow } from './modules/groups/dto.js';
import { toSummary, type OrganizationSummary } from './modules/organizations/dto.js';
import { organizationRows } from './modules/organizations/queries.js';
import { enabledUsers } from './modules/two-factor/store.js';

export interface GroupKey {
  orgId: string;
  id: string;
}

export interface GroupContactsKey extends GroupKey {
  page: PageRequest;
}

/** Groups keys by everything but `id`, so each batch runs one query per organization and page shape. */
function byShape<K extends GroupKey>(keys: readonly K[], shape: (k: K) => string): Map<string, K[]> {
  const out = new Map<string, K[]>();
  for (const key of keys) {
    const s = shape(key);
    const batch = out.get(s);
    if (batch) batch.push(key);
    else out.set(s, [key]);
  }
  return out;
}

/**
 * Per-request batchers for GraphQL's nested fields; created fresh for each request. Keys carry the
 * caller's organization so that every batch query stays inside it.
 */
export function createLoaders(db: Db) {
  return {
    /** Whether each user (by id, of an organization the caller already reached) has two-factor authentication on. */
    twoFactorEnabled: new DataLoader<string, boolean>(async (ids) => {
      const enabled = await enabledUsers(db, ids);
      return ids.map((id) => enabled.has(id));
    }),

    organizationById: new DataLoader<string, OrganizationSummary | null>(async (ids) => {
      const rows = await organizationRows(db, ids);
      const byId = new Map(rows.map((r) => [r.id, toSummary(r)]));
      return ids.map((id) => byId.get(id) ?? null);
    }),

    groupById: new DataLoader<GroupKey, GroupDto | null, string>(
      async (keys) => {
        const found = new Map<string, GroupDto>();
        for (const [orgId, batch] of byShape(keys, (k) => k.orgId)) {
          const rows = (await db('groups')
            .where('groups.organization_id', orgId)
            .whereIn(
              'groups.id',
              batch.map((k) => k.id),
            )
            .select(groupColumns(db, orgId))) as GroupRow[];
          for (const row of rows) found.set(`${orgId}|${row.id}`, toGroupDto(row));
        }
        return keys.map((k) => found.get(`${k.orgId}|${k.id}`) ?? null);
      },
      { cacheKeyFn: (k) => `${k.orgId}|${k.id}` },
    ),

    contactsOfGroup: new DataLoader<GroupContactsKey, Omit<Page<ContactDto>, 'totalCount'>, string>(
      async (keys) => {
        const shape = (k: GroupContactsKey) => `${k.orgId}|${k.page.limit ?? ''}|${k.page.cursor ?? ''}`;
        const results = new Map<string, Omit<Page<ContactDto>, 'totalCount'>>();
        for (const [s, batch] of byShape(keys, shape)) {
          const pages = await contactsOfGroups(db, batch[0]!.orgId, [...new Set(batch.map((k) => k.id))], batch[0]!.page);
          for (const [groupId, page] of pages) results.set(`${s}|${groupId}`, page);
        }
        return keys.map((k) => results.get(`${shape(k)}|${k.id}`)!);
      },
      { cacheKeyFn: (k) => `${k.orgId}|${k.page.limit ?? ''}|${k.page.cursor ?? ''}|${k.id}` },
    ),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
