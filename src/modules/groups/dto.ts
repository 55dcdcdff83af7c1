import type { Knex } from 'knex';

export interface GroupRow {
  id: string;
  organization_id: string;
  name: string;
  description: string | null;
  color: string;
  contact_count: number;
  created_at: Date;
  updated_at: Date;
}

export interface GroupDto {
  _id: string;
  name: string;
  description: string | null;
  color: string;
  organization: string;
  contactCount: number;
  createdAt: string;
  updatedAt: string;
}

export const toGroupDto = (row: GroupRow): GroupDto => ({
  _id: row.id,
  name: row.name,
  description: row.description,
  color: row.color,
  organization: row.organization_id,
  contactCount: Number(row.contact_count),
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

/**
 * The group columns plus how many contacts each holds, counted on the membership index (filtered by
 * the organization itself, so that on Citus the query stays on the organization's shard).
 */
export const groupColumns = (db: Knex | Knex.Transaction, orgId: string) => [
  'groups.id',
  'groups.organization_id',
  'groups.name',
  'groups.description',
  'groups.color',
  'groups.created_at',
  'groups.updated_at',
  db.raw(
    '(SELECT count(*) FROM contact_groups cg WHERE cg.organization_id = ? AND cg.group_id = groups.id)::int AS contact_count',
    [orgId],
  ),
];
