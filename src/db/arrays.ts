/**
 * A Postgres array literal (`{a,b,"c d",NULL}`) for a text[] parameter. node-postgres builds one
 * too, but quotes and escapes every element with two regular expressions; addresses (E.164 numbers,
 * email addresses) need neither, so only an element that does is quoted. Postgres parses the literal
 * with `array_in`, cheaper than taking a JSON document apart.
 */
export function textArrayLiteral(values: readonly (string | null)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i) out += ',';
    if (v === null || v === undefined) out += 'NULL';
    else if (v !== '' && PLAIN.test(v) && v.toUpperCase() !== 'NULL') out += v;
    else out += `"${v.replace(/[\\"]/g, '\\$&')}"`;
  }
  return `${out}}`;
}

/** What an unquoted element may hold: no quotes, backslashes, braces, commas or white space. */
const PLAIN = /^[^"\\{},\s]+$/;
