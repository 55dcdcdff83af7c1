import { describe, expect, it } from '@jest/globals';
import { parse } from 'csv-parse/sync';
import { csvRecord } from './csv-records.js';

describe('csv records', () => {
  it('quote only the cells that need it, and read back as written', () => {
    const cells = ['plain', 'a,b', 'say "hi"', 'two\nlines', 'cr\r\nlf', '', ' spaced ', 'Zoë 🎉'];
    expect(csvRecord(cells)).toBe('plain,"a,b","say ""hi""","two\nlines","cr\r\nlf",, spaced ,Zoë 🎉\n');
    expect(parse(csvRecord(cells))).toEqual([cells]);
  });

  it('write null as an empty cell, and only the first `width` cells', () => {
    expect(csvRecord(['a', null, undefined, 'd', 'hidden'], 4)).toBe('a,,,d\n');
  });
});
