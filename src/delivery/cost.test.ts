import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import type { Config } from '../config/config.js';
import { characterCount, smsShape, unitCost } from './cost.js';

const config = { costs: { smsSegment: 1, email: 0.5, whatsapp: 0.8 } } as Config;

/** Text mixing GSM basic and extension characters, other BMP characters, astral ones and lone surrogates. */
const text = fc
  .array(fc.oneof(fc.constantFrom('a', ' ', '€', '{', 'é', 'Ж', '😀', '\ud83d', '\ude00', '\n'), fc.string({ unit: 'binary' })), { maxLength: 200 })
  .map((parts) => parts.join(''));

describe('what a text costs and counts', () => {
  test('characterCount counts code points, as spreading the string does (lone surrogates count one each)', () => {
    fc.assert(fc.property(text, (s) => characterCount(s) === [...s].length));
    expect(characterCount('Hi 😀')).toBe(4);
  });

  test('an SMS costs its segments, with texts of at most 70 code units one segment without being scanned', () => {
    fc.assert(fc.property(text, (s) => unitCost(config, 'sms', s) === smsShape(s).segments));
    expect(unitCost(config, 'sms', 'Ж'.repeat(70))).toBe(1);
    expect(unitCost(config, 'sms', 'Ж'.repeat(71))).toBe(2);
    expect(unitCost(config, 'sms', '€'.repeat(80))).toBe(1);
    expect(unitCost(config, 'sms', '€'.repeat(81))).toBe(2);
  });
});
