import { Liquid } from 'liquidjs';
import { compile, render } from './templates.js';

/** The direct render of plain outputs prints exactly what liquidjs prints, or leaves the recipient to it. */
describe('direct render of plain outputs', () => {
  const liquid = new Liquid({ ownPropertyOnly: true });
  const variables = {
    contact: { name: 'Ann Wanjiru', firstName: 'Ann', email: null, phone: '+254700000001', tags: ['vip', 'b'], attributes: { plan: 'gold', points: 120, ratio: 0.5, active: true, 'two words': 'x' } },
    organization: { name: 'Acme' },
  };
  test.each([
    'Hi {{ contact.firstName }}, your {{ contact.attributes.plan }} plan',
    '{{ contact.attributes.points }} points, {{ contact.attributes.ratio }}, {{ contact.attributes.active }}',
    'Missing: [{{ contact.email }}][{{ contact.attributes.none }}][{{ nothing.at.all }}]',
    'Quoted {{ contact.attributes["two words"] }}',
    'Trimmed   {{- contact.firstName -}}   !',
    'Arrays print as the engine does: {{ contact.tags }}',
    'A property of a string: {{ contact.name.size }}',
    'An object: {{ contact.attributes }}',
  ])('%s', (text) => {
    const compiled = compile(text);
    expect(compiled.direct).not.toBeNull();
    expect(render(compiled, variables)).toBe(liquid.parseAndRenderSync(text, variables));
  });

  test('filters and tags are left to the engine', () => {
    expect(compile('{{ contact.firstName | upcase }}').direct).toBeNull();
    expect(compile('{% if contact %}x{% endif %}').direct).toBeNull();
    expect(compile('{{ "literal" }}').direct).toBeNull();
  });
});
