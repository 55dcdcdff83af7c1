/**
 * Where a column of an imported file can go, as the import's mapping writes it (the vocabulary of
 * src/modules/contacts/csv-columns.ts), and the target each header gets before anyone chooses: the
 * one the server would give it unmapped (`defaultTarget` in src/modules/contact-imports/options.ts).
 * The console sends every column's target, so the server imports what the user saw chosen.
 */

/** The choices of a column's select; `attribute` asks for a key beside it. */
export const TARGET_CHOICES = [
  { value: '', label: 'Ignore' },
  { value: 'name', label: 'Name' },
  { value: 'email', label: 'Email' },
  { value: 'phone', label: 'Phone' },
  { value: 'countryCode', label: 'Country code' },
  { value: 'organization', label: 'Organization' },
  { value: 'tags', label: 'Tags (separated by |)' },
  { value: 'subscriptions.email', label: 'Email subscription' },
  { value: 'subscriptions.sms', label: 'SMS subscription' },
  { value: 'subscriptions.whatsapp', label: 'WhatsApp subscription' },
  { value: 'unsubscribed', label: 'Unsubscribed from all' },
  { value: 'attribute', label: 'Attribute…' },
] as const;

export type TargetChoice = (typeof TARGET_CHOICES)[number]['value'];

/** One column's choice: a target, and the attribute's key when the target is `attribute`. */
export interface ColumnChoice {
  header: string;
  target: TargetChoice;
  key: string;
}

const FIELDS = ['name', 'email', 'phone', 'countryCode', 'organization', 'tags'];
const ATTRIBUTE = 'attributes.';

/** Headers compared without case, spaces, dashes or underscores: `E-mail`, `Country Code`. */
const loose = (header: string) => header.toLowerCase().replace(/[\s_-]+/g, '');
const LOOSE_FIELDS = new Map<string, string>([
  ...FIELDS.map((f): [string, string] => [loose(f), f]),
  ['emailaddress', 'email'],
  ['phonenumber', 'phone'],
  ['mobile', 'phone'],
  ['company', 'organization'],
]);

/** A mapping target as written, or null when it names nothing the import knows. */
function known(name: string): string | null {
  if (FIELDS.includes(name) || name === 'unsubscribed' || /^subscriptions\.(email|sms|whatsapp)$/.test(name)) return name;
  if (name.startsWith(ATTRIBUTE) && name.length > ATTRIBUTE.length) return name;
  return null;
}

/** An attribute key made of a header: letters, digits and underscores, as the server takes them. */
export const keyOf = (header: string) =>
  header
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 50);

/** The choice a header starts with: its own name, read loosely for the contact's fields; else ignored. */
export function suggestedChoice(header: string): ColumnChoice {
  const target = known(header.trim()) ?? known(LOOSE_FIELDS.get(loose(header)) ?? '');
  if (!target) return { header, target: '', key: '' };
  if (target.startsWith(ATTRIBUTE)) return { header, target: 'attribute', key: target.slice(ATTRIBUTE.length) };
  return { header, target: target as TargetChoice, key: '' };
}

/** The target a choice sends (`attributes.plan`, `email`, `''` to ignore). */
export const targetOf = (choice: ColumnChoice) => (choice.target === 'attribute' ? `${ATTRIBUTE}${choice.key.trim()}` : choice.target);

/** The import's mapping: every column's target, by header. */
export const mappingOf = (choices: ColumnChoice[]): Record<string, string> => Object.fromEntries(choices.map((c) => [c.header, targetOf(c)]));

/** The match key the server picks when none is given: email when a column goes to it, else phone. */
export function defaultMatchBy(choices: ColumnChoice[]): 'email' | 'phone' {
  const has = (field: string) => choices.some((c) => c.target === field);
  return has('email') || !has('phone') ? 'email' : 'phone';
}
