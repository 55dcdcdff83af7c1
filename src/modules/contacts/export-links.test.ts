import { describe, expect, it } from '@jest/globals';
import { exportToken, MAX_TOKEN_LENGTH, readExportToken, type ExportLink } from './export-links.js';

const SECRET = 'a server secret of enough length for tests';
const LINK: ExportLink = {
  orgId: '0b7f7f9e-6d1a-4c84-9b55-0d0d3f2a1c11',
  asker: { kind: 'apiKey', id: 'c0ffee00-1234-4abc-8def-0123456789ab' },
  filter: { tag: 'vip', attributes: { plan: 'pro', seats: 3, trial: true } },
  expiresAt: new Date('2026-01-05T09:30:00.123Z'),
};

describe('export links', () => {
  it('name the organization, who asked, the filter and the expiry', () => {
    expect(readExportToken(SECRET, exportToken(SECRET, LINK)!)).toEqual(LINK);
    const user = { ...LINK, asker: { kind: 'user' as const, id: LINK.asker.id }, filter: {} };
    expect(readExportToken(SECRET, exportToken(SECRET, user)!)).toEqual(user);
  });

  it('refuse a token altered anywhere, signed with another secret or truncated', () => {
    const token = exportToken(SECRET, LINK)!;
    for (let i = 0; i < token.length; i++) {
      const altered = token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
      const read = readExportToken(SECRET, altered);
      // A change in the last character's unused low bits decodes to the same bytes: still the same token.
      if (read) expect(read).toEqual(LINK);
    }
    expect(readExportToken('another secret', token)).toBeNull();
    expect(readExportToken(SECRET, token.slice(0, -2))).toBeNull();
    expect(readExportToken(SECRET, '')).toBeNull();
    expect(readExportToken(SECRET, 'x'.repeat(MAX_TOKEN_LENGTH + 1))).toBeNull();
  });

  it('are not made for a filter too long for a URL', () => {
    expect(exportToken(SECRET, { ...LINK, filter: { search: 'x'.repeat(MAX_TOKEN_LENGTH) } })).toBeNull();
  });
});
