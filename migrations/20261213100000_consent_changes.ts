import type { Knex } from 'knex';

/**
 * The history of each contact's consent (`src/modules/consent`): every change of a channel's
 * subscription, with its new status, where it came from (`link`, `one-click`, `reply`, `api`,
 * `import`, `console`, `complaint`) and when. `contacts.unsubscribed` keeps the current state; this
 * keeps how it got there, for a person's data and for the proof of consent a regulator asks for.
 * It goes with its contact.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE consent_changes (
      organization_id uuid NOT NULL,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      contact_id uuid NOT NULL,
      channel text NOT NULL CHECK (channel IN ('email', 'sms', 'whatsapp')),
      status text NOT NULL CHECK (status IN ('subscribed', 'unsubscribed')),
      source text NOT NULL,
      at timestamptz NOT NULL,
      PRIMARY KEY (organization_id, id),
      FOREIGN KEY (organization_id, contact_id) REFERENCES contacts (organization_id, id) ON DELETE CASCADE
    )`);
  await knex.raw('CREATE INDEX consent_changes_contact_idx ON consent_changes (organization_id, contact_id, at)');
  // What a contact's current state says, as the first entry of its history.
  await knex.raw(`
    INSERT INTO consent_changes (organization_id, contact_id, channel, status, source, at)
    SELECT c.organization_id, c.id, e.key, 'unsubscribed', coalesce(e.value->>'source', 'api'), coalesce((e.value->>'at')::timestamptz, c.updated_at)
    FROM contacts c CROSS JOIN jsonb_each(c.unsubscribed) AS e
    WHERE e.key IN ('email', 'sms', 'whatsapp') AND jsonb_typeof(e.value) = 'object'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE consent_changes');
}
