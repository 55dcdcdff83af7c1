// The array literals Herald builds by hand, read back by Postgres itself.
import pg from 'pg';
import { textArrayLiteral } from '../../src/db/arrays.js';

let client: pg.Client;
beforeAll(async () => {
  client = new pg.Client({ connectionString: process.env.HERALD_TEST_DATABASE_URL });
  await client.connect();
});
afterAll(() => client.end());

test.each([
  ['addresses', ['+254712345678', 'a.b+c@example.com', 'x@fail.invalid']],
  ['quotes, backslashes, braces, commas, spaces', ['say "hi"', 'back\\slash', '{braced}', 'a,b', ' lead', 'tab\there', 'line\nbreak']],
  ['the words NULL and null, and the empty string', ['NULL', 'null', '', 'Null']],
  ['missing values', [null, 'Sandbox: delivery to a reserved failing address', null]],
  ['unicode', ['Ünïcødé ✓', '日本語', '🙂']],
  ['one empty string', ['']],
  ['a NULL at either end', ['NULL', '+254712345678', 'null']],
  ['an element with a comma among plain ones', ['+254712345678', 'a,b', '+254712345679']],
  ['message bodies with spaces and commas, one missing', ['Hello Ada, your code is 1234', null, 'Hi {name}, see you', 'NULL and void', '']],
  ['a body with a control character', ['Hello, Ada', 'bell\u0007 here', 'tab\t, there']],
  ['nothing', []],
])('%s come back exactly', async (_name, values) => {
  const { rows } = await client.query('SELECT $1::text[] AS a', [textArrayLiteral(values)]);
  expect(rows[0].a).toEqual(values);
});
