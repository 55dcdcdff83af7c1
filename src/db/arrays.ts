/**
 * A Postgres array literal (`{a,b,"c d",NULL}`) for a text[] parameter. node-postgres builds one
 * too, but quotes and escapes every element with two regular expressions; addresses (E.164 numbers,
 * email addresses) need neither, so only an element that does is quoted. Postgres parses the literal
 * with `array_in`, cheaper than taking a JSON document apart.
 */
export function textArrayLiteral(values: readonly (string | null)[]): string {
  // The common case in one pass over one string: no element is null, empty or NULL, none holds a
  // character that needs quoting, and (the commas are exactly the separators) none holds a comma.
  if (values.length && !values.includes(null)) {
    const joined = values.join(',');
    let commas = 0;
    for (let i = joined.indexOf(','); i !== -1; i = joined.indexOf(',', i + 1)) commas++;
    if (commas === values.length - 1 && !UNSAFE.test(joined) && !EMPTY_OR_NULL.test(joined)) return `{${joined}}`;
  }
  // Elements with spaces or commas (message bodies): JSON's array is the literal's, quoted elements
  // and bare nulls, as long as JSON escaped nothing (a control character would
  // be written as an escape array_in reads otherwise; quotes and backslashes it escapes alike, but
  // they are rare enough to take the slow way). Nothing escaped when the lengths add up.
  if (values.length) {
    const json = JSON.stringify(values);
    let plain = values.length + 1; // the brackets and the commas
    for (const v of values) plain += v === null || v === undefined ? 4 : v.length + 2;
    if (json.length === plain) return `{${json.slice(1, -1)}}`;
  }
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i) out += ',';
    if (v === null || v === undefined) out += 'NULL';
    else if (v !== '' && PLAIN.test(v) && v.toUpperCase() !== 'NULL') out += v;
    else if (v.indexOf('"') === -1 && v.indexOf('\\') === -1) out += `"${v}"`;
    else out += `"${v.replace(/[\\"]/g, '\\$&')}"`;
  }
  return `${out}}`;
}

/** What an unquoted element may hold: no quotes, backslashes, braces, commas or white space. */
const PLAIN = /^[^"\\{},\s]+$/;
const UNSAFE = /["\\{}\s]/;
/** An empty element, or one spelling NULL, in a comma-joined list. */
const EMPTY_OR_NULL = /(?:^|,)(?:null)?(?:,|$)/i;
