import type { Knex } from 'knex';

/**
 * A webhook delivery no longer has a foreign key of its own to `organizations`: its key to its event
 * (`organization_id`, `event_id`) already says the organization exists (the event's own key to it),
 * and deleting an organization still deletes its deliveries, with its events and its endpoints. The
 * key was checked again for every delivery a campaign chunk's settle writes, after the statement's
 * last step, while the settle holds the campaign's row (about 1 ms of a chunk's settle of 63 events,
 * in the plans `auto_explain` logged of bench/webhooks).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_organization_id_fkey');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    'ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations (id) ON DELETE CASCADE',
  );
}
