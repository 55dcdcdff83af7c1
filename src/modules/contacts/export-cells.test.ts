import { describe, expect, it } from '@jest/globals';
import { groupsCell, isoTimes } from './export-cells.js';

describe('export cells', () => {
  it('write times exactly as Date#toISOString does, rounded to the millisecond', () => {
    const iso = isoTimes();
    const reference = (s: number) => new Date(Math.round(s * 1000)).toISOString();
    const samples = [0, 0.0004, 0.0005, -0.0005, 86_399.9995, 86_400, -1, -86_400.001, 951_782_400, 1_767_225_600.001, 253_402_300_799.999, 253_402_300_800, -62_198_755_200.5];
    for (let i = 0; i < 5000; i++) samples.push((Math.random() - 0.3) * 4e9, Math.round(Math.random() * 4e12) / 1000);
    for (const s of samples) expect(`${s}: ${iso(s)}`).toBe(`${s}: ${reference(s)}`);
    // Out of Date's range, or not a time at all: as toISOString has it.
    expect(() => iso(8.64e12 + 1)).toThrow(RangeError);
    expect(() => iso(Number.NaN)).toThrow(RangeError);
  });

  it('name a set of group ids by the names of the groups still there, sorted', () => {
    const cell = groupsCell(new Map([['a', 'VIP'], ['b', 'Leads'], ['c', 'Émigrés']]));
    expect(cell('a,b')).toBe('Leads|VIP');
    expect(cell('b,a')).toBe('Leads|VIP');
    expect(cell('c,gone,a')).toBe('VIP|Émigrés');
    expect(cell('gone')).toBe('');
  });
});
