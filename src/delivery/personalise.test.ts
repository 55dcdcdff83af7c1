import { expect, test } from '@jest/globals';
import fc from 'fast-check';
import { Personaliser } from './personalise.js';

const config = { publicUrl: 'http://localhost', jwtSecret: 'test', costs: { smsSegment: 1, email: 1, whatsapp: 1 } };
const firstName = new Personaliser(config, 'sms', { body: '[{{ contact.firstName }}]' }, { orgId: 'o', organizationName: 'Org', bulk: true });

/** Every character `\s` and `trim()` read as white space, and some that look like it but are not. */
const spaces = ['\t', '\n', '\v', '\f', '\r', ' ', '\u00a0', '\u1680', '\u2000', '\u2005', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff'];
const notSpaces = ['\u200b', '\u180e', '\u0085', '\u0000', '_', 'é', '😀', '\ud83d'];
const name = fc.array(fc.oneof(fc.constantFrom(...spaces, ...notSpaces), fc.string({ maxLength: 4 })), { maxLength: 12 }).map((parts) => parts.join(''));

test("contact.firstName is the name's first word as JavaScript splits it on white space (nothing for a blank name)", () => {
  fc.assert(
    fc.property(name, (n) => {
      const expected = n.trim().split(/\s+/)[0] ?? '';
      expect(firstName.forRecipient('+254700000000', { name: n }).body).toBe(`[${expected}]`);
    }),
  );
  expect(firstName.forRecipient('+254700000000', { name: '\u3000 Ada\u00a0Lovelace' }).body).toBe('[Ada]');
  expect(firstName.forRecipient('+254700000000', { name: ' \t ' }).body).toBe('[]');
});

test('emptyVariables names the contact variables a recipient has no value for, as the texts write them', () => {
  const texts = {
    subject: '{{ contact.name | default: "you" }}',
    body: '{{ contact.firstName }} {{ contact.name.size }} {{ contact.tags.first }} {{ contact.attributes.plan }} {{ contact.attributes[key] }} {{ contact.phone }} {{ organization.name }}',
  };
  const p = new Personaliser(config, 'email', texts, { orgId: 'o', organizationName: 'Org', bulk: true });
  // An address no contact has: only the address is known.
  expect(p.emptyVariables('qa@example.com', null)).toEqual(['contact.name', 'contact.firstName', 'contact.tags', 'contact.attributes.plan', 'contact.attributes', 'contact.phone']);
  const ann = { id: 'c', name: 'Ann Wanjiru', email: 'ann@example.com', phone: null, company: null, tags: ['vip'], attributes: { plan: 'gold' } };
  expect(p.emptyVariables('ann@example.com', ann)).toEqual(['contact.phone']);
  expect(p.emptyVariables('ann@example.com', { ...ann, phone: '+254700000000', attributes: { plan: '' } })).toEqual(['contact.attributes.plan']);
});
