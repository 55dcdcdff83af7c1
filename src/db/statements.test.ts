import { describe, expect, test } from '@jest/globals';
import { jsonRows, statement } from './statements.js';

describe('named statements', () => {
  test('named parameters become positions in order of first use; casts and repeats are kept', () => {
    const st = statement<{ orgId: string; amount: number }>('t', 'UPDATE o SET c = c - :amount::numeric WHERE id = :orgId AND c >= :amount::numeric');
    expect(st.text).toBe('UPDATE o SET c = c - $1::numeric WHERE id = $2 AND c >= $1::numeric');
    expect(st.order).toEqual(['amount', 'orgId']);
  });

  test('casts, JSON operators and words with colons are not parameters', () => {
    const st = statement('t', "SELECT r->>'status', x::text[], '{a:b}' FROM t WHERE a = :a");
    expect(st.text).toBe("SELECT r->>'status', x::text[], '{a:b}' FROM t WHERE a = $1");
  });

  test('jsonRows splices a field that is already JSON text, and stays valid JSON', () => {
    const rows = [
      { id: 'a', recipients: '["x",{"recipient":"y","status":"failed"}]', n: 1 },
      { id: 'b"q', recipients: null, n: 2 },
    ];
    expect(JSON.parse(jsonRows(rows, 'recipients'))).toEqual([
      { id: 'a', n: 1, recipients: ['x', { recipient: 'y', status: 'failed' }] },
      { id: 'b"q', n: 2, recipients: null },
    ]);
    expect(JSON.parse(jsonRows([{ recipients: '[]' }], 'recipients'))).toEqual([{ recipients: [] }]);
    expect(JSON.parse(jsonRows([{ a: 1 }]))).toEqual([{ a: 1 }]);
  });
});
