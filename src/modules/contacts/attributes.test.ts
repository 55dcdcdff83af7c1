import { attributesChange, attributesFilter, containments, gatherQueryFilters, matchedValues, merge, mergeProblems } from './attributes.js';

const messages = (result: { success: boolean; error?: { issues: { message: string }[] } }) => result.error?.issues.map((i) => i.message) ?? [];

describe('merge', () => {
  test('sets the values given, removes the keys given as null, keeps the others in place', () => {
    expect(merge({ a: 1, b: 'x', c: true }, { b: 'y', c: null, d: false })).toEqual({ a: 1, b: 'y', d: false });
    expect(Object.keys(merge({ a: 1, b: 2 }, { a: 3, z: 0 }))).toEqual(['a', 'b', 'z']);
    expect(merge({}, { gone: null })).toEqual({});
  });

  test('a key named __proto__ is a key like any other', () => {
    const change = JSON.parse('{"__proto__": "x"}');
    const merged = merge({}, change);
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(JSON.stringify(merged)).toBe('{"__proto__":"x"}');
    expect(JSON.stringify(merge(merged, JSON.parse('{"__proto__": null}')))).toBe('{}');
  });
});

describe('attributesChange', () => {
  test('accepts a flat object of valid keys and values, null included', () => {
    expect(attributesChange.safeParse({ plan: 'pro', seats: 3, trial: true, gone: null, A_9: '' }).success).toBe(true);
    expect(attributesChange.safeParse({}).success).toBe(true);
    expect(attributesChange.safeParse({ ['k'.repeat(50)]: 1 }).success).toBe(true);
  });

  test('names bad keys and bad values, each kind once', () => {
    const result = attributesChange.safeParse({ 'a-b': 1, '': 2, ['k'.repeat(51)]: 3, nested: { a: 1 }, list: [1], inf: Infinity });
    expect(messages(result)).toEqual([
      `keys must be 1-50 letters, digits or underscores: "a-b", "", "${'k'.repeat(50)}..."`,
      'values must be strings, numbers or booleans (null removes a key): "nested", "list", "inf"',
    ]);
  });

  test('is a JSON object', () => {
    for (const value of [null, 'x', 1, [], [{ a: 1 }]]) expect(messages(attributesChange.safeParse(value))).toEqual(['must be a JSON object']);
  });

  test('at most 50 keys and 8 KiB of JSON (UTF-8 bytes), nulls not counted', () => {
    const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, i]));
    expect(attributesChange.safeParse({ ...fifty, gone: null }).success).toBe(true);
    expect(messages(attributesChange.safeParse({ ...fifty, k50: 50 }))).toEqual(['must have at most 50 keys (has 51)']);
    // {"k":"..."} is 8 bytes around the value.
    expect(attributesChange.safeParse({ k: 'x'.repeat(8184) }).success).toBe(true);
    expect(messages(attributesChange.safeParse({ k: 'x'.repeat(8185) }))).toEqual(['must be at most 8 KiB of JSON (is 8193 bytes)']);
    expect(messages(attributesChange.safeParse({ k: 'é'.repeat(4093) }))).toEqual(['must be at most 8 KiB of JSON (is 8194 bytes)']);
  });

  test('lists at most five keys in a message', () => {
    const bad = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`bad-${i}`, 1]));
    expect(messages(attributesChange.safeParse(bad))[0]).toMatch(/"bad-4" and 3 more$/);
  });
});

describe('mergeProblems', () => {
  const stored = Object.fromEntries(Array.from({ length: 49 }, (_, i) => [`k${i}`, i]));

  test('judges the merged result', () => {
    expect(mergeProblems(stored, { k0: 'changed', n: 1 })).toEqual([]);
    expect(mergeProblems(stored, { n: 1, m: 2 })).toEqual([
      { field: 'attributes', message: 'attributes must have at most 50 keys once merged with the stored ones (would have 51)' },
    ]);
    expect(mergeProblems(stored, { n: 1, m: 2, k0: null })).toEqual([]);
    expect(mergeProblems({ big: 'x'.repeat(8000) }, { more: 'y'.repeat(200) })[0]!.message).toMatch(/^attributes must be at most 8 KiB of JSON once merged/);
  });
});

describe('filters', () => {
  test('a string matches itself, the number it reads as and the boolean it names', () => {
    expect(matchedValues('pro')).toEqual(['pro']);
    expect(matchedValues('30')).toEqual(['30', 30]);
    expect(matchedValues('-1.5e2')).toEqual(['-1.5e2', -150]);
    expect(matchedValues('true')).toEqual(['true', true]);
    expect(matchedValues('false')).toEqual(['false', false]);
    for (const s of ['030', ' 30', '0x1F', 'Infinity', '1e999', '', 'True']) expect(matchedValues(s)).toEqual([s]);
    expect(matchedValues(30)).toEqual([30]);
    expect(matchedValues(false)).toEqual([false]);
  });

  test('one containment group per key', () => {
    expect(containments({ plan: 'pro', seats: '3', __proto__x: true })).toEqual([['{"plan":"pro"}'], ['{"seats":"3"}', '{"seats":3}'], ['{"__proto__x":true}']]);
    expect(containments(JSON.parse('{"__proto__": "x"}'))).toEqual([['{"__proto__":"x"}']]);
  });

  test('the REST form `attributes.<key>` is gathered into one object', () => {
    expect(gatherQueryFilters({ tag: 'a', 'attributes.plan': 'pro', 'attributes.seats': '3' })).toEqual({ tag: 'a', attributes: { plan: 'pro', seats: '3' } });
    expect(gatherQueryFilters({ tag: 'a' })).toEqual({ tag: 'a' });
    expect(gatherQueryFilters({ attributes: 'x', 'attributes.a': '1' })).toEqual({ attributes: 'x' });
  });

  test('keys follow the key rule; values are one string, number or boolean; at most 50 keys', () => {
    expect(attributesFilter.safeParse({ plan: 'pro', n: 1, b: false }).success).toBe(true);
    expect(messages(attributesFilter.safeParse({ 'bad-key': 'x' }))).toEqual(['keys must be 1-50 letters, digits or underscores: "bad-key"']);
    expect(messages(attributesFilter.safeParse({ plan: ['a', 'b'], n: null }))).toEqual(['values must be strings, numbers or booleans: "plan", "n"']);
    const many = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'x']));
    expect(messages(attributesFilter.safeParse(many))).toEqual(['must have at most 50 keys (has 51)']);
  });
});
