import type { Knex } from 'knex';

/**
 * An attempt no longer has a foreign key to its delivery. The statement that records a batch's
 * attempts (`herald_webhooks_record`) updates their deliveries and inserts the attempts of the
 * deliveries it updated, so an attempt's delivery exists by construction; the key checked it again
 * per attempt, on a row the same statement had just changed, which was a fifth of a 100,000-recipient
 * campaign's webhook time (bench/webhooks: 1,080 ms to 850-900 ms without it). Deleting an endpoint
 * deletes its attempts in the same transaction (`webhooks/service.ts`); an organization's still go
 * with it (their key to `organizations` stays).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_organization_id_event_id_endpoint_id_fkey');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DELETE FROM webhook_attempts a WHERE NOT EXISTS (
    SELECT 1 FROM webhook_deliveries d WHERE d.organization_id = a.organization_id AND d.event_id = a.event_id AND d.endpoint_id = a.endpoint_id)`);
  await knex.raw(`ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_organization_id_event_id_endpoint_id_fkey
    FOREIGN KEY (organization_id, event_id, endpoint_id) REFERENCES webhook_deliveries (organization_id, event_id, endpoint_id) ON DELETE CASCADE`);
}
