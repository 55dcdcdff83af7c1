import { isEmailAddress, normaliseAddress } from './addresses.js';

describe('email addresses', () => {
  test('a domain with a dot, as zod has it', () => {
    for (const ok of ['ada@example.com', 'a.b+tag@mail.example.co.ke']) expect(isEmailAddress(ok)).toBe(true);
    for (const bad of ['ada', 'ada@', '@example.com', 'a..b@example.com', '.a@example.com', 'a b@example.com']) expect(isEmailAddress(bad)).toBe(false);
  });

  test('a domain without a dot only when allowed, with the same rules for the rest', () => {
    for (const local of ['root@localhost', 'ops@mailhub', 'ops@mail-hub-2']) {
      expect(isEmailAddress(local)).toBe(false);
      expect(isEmailAddress(local, { dotlessDomains: true })).toBe(true);
    }
    for (const bad of ['a..b@localhost', 'root@-hub', 'root@hub-', 'root@hub_1', 'root@', 'root@local host']) {
      expect(isEmailAddress(bad, { dotlessDomains: true })).toBe(false);
    }
  });

  test('normaliseAddress lower-cases and trims, and passes the rule on', () => {
    expect(normaliseAddress('  Root@LocalHost ', { kind: 'email' })).toBeNull();
    expect(normaliseAddress('  Root@LocalHost ', { kind: 'email', dotlessDomains: true })).toBe('root@localhost');
    expect(normaliseAddress('Ada@Example.com')).toBe('ada@example.com');
  });
});
