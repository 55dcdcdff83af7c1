import { describe, expect, test } from '@jest/globals';
import { compile, isTemplate, MAX_OUTPUT_LENGTH, render, TemplateRenderError, TemplateSyntaxError, templateProblems } from './templates.js';

const contact = { name: 'Ada Lovelace', firstName: 'Ada', email: 'ada@example.com', phone: '+254712345678', organization: null, tags: ['vip'], attributes: { plan: 'pro', seats: 3 } };

describe('templates', () => {
  test('a text without markup is sent exactly as written, without the engine', () => {
    const text = 'Hello {world} 50% off } {{ not closed';
    expect(isTemplate('plain text, {single} braces')).toBe(false);
    const plain = 'plain text, {single} braces';
    expect(compile(plain).parsed).toBeNull();
    expect(render(compile(plain), {})).toBe(plain);
    expect(() => compile(text)).toThrow(TemplateSyntaxError);
  });

  test('renders the contact, its attributes, the organization, with filters', () => {
    const t = compile('Hi {{ contact.firstName }} ({{ contact.attributes.plan | upcase }}, {{ contact.attributes.seats }} seats) from {{ organization.name }}');
    expect(render(t, { contact, organization: { name: 'Acme' } })).toBe('Hi Ada (PRO, 3 seats) from Acme');
  });

  test('a variable that is not there renders empty', () => {
    expect(render(compile('Hi {{ contact.firstName }}!{{ contact.attributes.missing }}'), { contact: { phone: '+254712345678' } })).toBe('Hi !');
  });

  test('a syntax error names its line and column', () => {
    try {
      compile('Hello\n  {{ contact.name\n');
      throw new Error('parsed');
    } catch (err) {
      expect(err).toBeInstanceOf(TemplateSyntaxError);
      expect({ line: (err as TemplateSyntaxError).line, column: (err as TemplateSyntaxError).column }).toEqual({ line: 2, column: 3 });
    }
    expect(templateProblems('messages.sms.content', 'ok {% if x %}no end')).toEqual([
      { field: 'messages.sms.content', message: expect.stringMatching(/^messages\.sms\.content is not a valid template: line 1, column 4: .+/) },
    ]);
  });

  test('an unknown filter or tag is refused when parsed', () => {
    expect(templateProblems('c', '{{ contact.name | shout }}')[0]!.message).toMatch(/line 1, column 1: .*shout/);
    expect(templateProblems('c', '{% frobnicate %}')[0]!.message).toMatch(/line 1, column 1: .*frobnicate/);
  });

  test('no tag that reads other templates: include, render, layout are unknown tags', () => {
    for (const tag of ['{% include "x" %}', '{% render "x" %}', '{% layout "x" %}']) {
      expect(templateProblems('c', `a\n${tag}`)).toEqual([{ field: 'c', message: expect.stringMatching(/line 2, column 1/) }]);
    }
  });

  test('a render over its time or output limit fails with a clear error', () => {
    expect(() => render(compile('{% for i in (1..100000000) %}{{ i }}{% endfor %}'), {})).toThrow(TemplateRenderError);
    // Doubling a string 17 times: 1,310,720 characters, quickly.
    const long = compile('{% assign s = "0123456789" %}{% for i in (1..17) %}{% assign s = s | append: s %}{% endfor %}{{ s }}');
    expect(() => render(long, {})).toThrow(new RegExp(`exceeds ${MAX_OUTPUT_LENGTH} characters|memory limit`));
  });

  test('only own properties are read: no prototype walks', () => {
    expect(render(compile('{{ contact.constructor }}{{ contact.__proto__ }}|{{ contact.name.size }}'), { contact })).toBe('|12');
  });
});
