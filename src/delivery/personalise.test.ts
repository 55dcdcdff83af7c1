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
