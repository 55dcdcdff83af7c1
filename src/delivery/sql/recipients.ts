import { statement } from '../../db/statements.js';

/**
 * The contact behind each address a message goes to, read for a whole chunk of recipients at once
 * (never a query per recipient), through the organization's address indexes. When several contacts
 * share an address, the oldest speaks for it.
 */

export interface RecipientContactRow {
  address: string;
  id: string;
  name: string;
  email: string | null;
  phone: string | null;
  company: string | null;
  tags: string[];
  attributes: Record<string, string | number | boolean>;
}

const COLUMNS = 'c.id, c.name, c.email, c.phone, c.company, c.tags, c.attributes';

export const contactsByPhone = statement<{ orgId: string; addresses: string[] }, RecipientContactRow>(
  'herald_recipient_contacts_by_phone',
  `SELECT DISTINCT ON (c.phone) c.phone AS address, ${COLUMNS}
   FROM contacts c
   WHERE c.organization_id = :orgId AND c.phone = ANY(:addresses::text[])
   ORDER BY c.phone, c.created_at, c.id`,
);

export const contactsByEmail = statement<{ orgId: string; addresses: string[] }, RecipientContactRow>(
  'herald_recipient_contacts_by_email',
  `SELECT DISTINCT ON (lower(c.email)) lower(c.email) AS address, ${COLUMNS}
   FROM contacts c
   WHERE c.organization_id = :orgId AND lower(c.email) = ANY(:addresses::text[])
   ORDER BY lower(c.email), c.created_at, c.id`,
);
