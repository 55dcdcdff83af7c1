import type { Channel } from '../../gql/graphql';

/** The channels a contact's consent is kept for, in the order the console shows them. */
export const CHANNELS: { value: Channel; label: string }[] = [
  { value: 'email', label: 'Email' },
  { value: 'sms', label: 'SMS' },
  { value: 'whatsapp', label: 'WhatsApp' },
];

/**
 * The server names a field of a refused input, sometimes deeper than the control that edits it
 * (`tags.2`, `subscriptions.sms`): these find the message for a control and tell whether any
 * message names a field no control of the form shows (then the form shows the error whole).
 */
export function errorFor(errors: Record<string, string>, field: string): string | undefined {
  if (errors[field]) return errors[field];
  const deeper = Object.keys(errors).find((k) => k.startsWith(`${field}.`) || k.startsWith(`${field}[`));
  return deeper ? errors[deeper] : undefined;
}

export function alertNeeded(errors: Record<string, string>, fields: readonly string[]): boolean {
  const keys = Object.keys(errors);
  return keys.length === 0 || keys.some((k) => !fields.some((f) => k === f || k.startsWith(`${f}.`) || k.startsWith(`${f}[`)));
}
