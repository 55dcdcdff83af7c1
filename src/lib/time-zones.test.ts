import { describe, expect, test } from '@jest/globals';
import { countryTimeZone, isTimeZone, phoneTimeZone } from './time-zones.js';

describe('time zones', () => {
  test('IANA names are zones; offsets, abbreviations and unknown names are not', () => {
    for (const zone of ['Africa/Nairobi', 'UTC', 'America/Argentina/Buenos_Aires', 'Etc/GMT+3']) expect({ zone, ok: isTimeZone(zone) }).toEqual({ zone, ok: true });
    for (const zone of ['+03:00', 'EAT', 'Japan', 'Nairobi', 'Mars/Olympus', '', 'UTC+3', 'x'.repeat(65)]) expect({ zone, ok: isTimeZone(zone) }).toEqual({ zone, ok: false });
  });

  test("a country's one zone, by code or English name; none for a country with several", () => {
    expect(countryTimeZone('KE')).toBe('Africa/Nairobi');
    expect(countryTimeZone('kenya')).toBe('Africa/Nairobi');
    expect(countryTimeZone('AE')).toBe('Asia/Dubai');
    expect(countryTimeZone('US')).toBeNull();
    expect(countryTimeZone('Indonesia')).toBeNull();
    expect(countryTimeZone('Atlantis')).toBeNull();
    expect(countryTimeZone(null)).toBeNull();
  });

  test("a phone number's country's one zone, the same whether asked first or again; numbers sharing a calling code told apart", () => {
    for (let i = 0; i < 2; i++) {
      expect(phoneTimeZone('+254712345678')).toBe('Africa/Nairobi');
      expect(phoneTimeZone('+971501234567')).toBe('Asia/Dubai');
      expect(phoneTimeZone('+12025550143')).toBeNull();
      // +1 876 is Jamaica, one zone; +1 202 the United States, several.
      expect(phoneTimeZone('+18765550143')).toBe('America/Jamaica');
      expect(phoneTimeZone('+447400123456')).toBe('Europe/London');
    }
    expect(phoneTimeZone(null)).toBeNull();
  });
});
