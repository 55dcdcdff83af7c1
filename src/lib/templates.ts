import { Liquid, LiquidError, TokenKind, type Template } from 'liquidjs';
import type { FieldProblem } from './errors.js';

/**
 * Message texts as Liquid templates (platform.md, "Personalised messages"), the one home of the
 * engine and its limits. A template is parsed once (`compile`) and rendered per recipient
 * (`render`); a text without Liquid markup is sent exactly as written and never goes through the
 * engine.
 *
 * Sandboxed: no tag that reads another template (`include`, `render`, `layout`, `block`), no file
 * system, only the variables a render is given (own properties; no prototype walks), and unknown
 * filters refused when the template is parsed. Each render is bounded in time, in the allocations
 * liquidjs counts, and in the length of what it produces.
 */

/** The longest text a template may be (a campaign email's content) and the longest render it may give. */
export const MAX_TEMPLATE_LENGTH = 1_000_000;
export const MAX_OUTPUT_LENGTH = 1_000_000;
/** Milliseconds a single render may take. */
export const RENDER_LIMIT_MS = 100;
/** Allocations liquidjs counts (string and array growth in filters) per render. */
export const MEMORY_LIMIT = 10_000_000;

const READS_OTHER_TEMPLATES = ['include', 'render', 'layout', 'block'];

const engine = new Liquid({
  strictFilters: true,
  ownPropertyOnly: true,
  parseLimit: MAX_TEMPLATE_LENGTH,
  renderLimit: RENDER_LIMIT_MS,
  memoryLimit: MEMORY_LIMIT,
  cache: false,
  relativeReference: false,
  // No file system: a name that would be read from one is refused (and the tags above are gone).
  fs: {
    exists: async () => false,
    existsSync: () => false,
    readFile: async () => '',
    readFileSync: () => '',
    resolve: (_root: string, file: string) => file,
  },
});
for (const tag of READS_OTHER_TEMPLATES) delete (engine.tags as Record<string, unknown>)[tag];

/** Whether `text` holds any Liquid markup at all. */
export const isTemplate = (text: string): boolean => text.includes('{{') || text.includes('{%');

/** A text ready to render: its parsed form, or the text itself when it holds no markup. */
export interface CompiledTemplate {
  readonly source: string;
  readonly parsed: Template[] | null;
  /** For a text of plain outputs only (`{{ contact.firstName }}`, no filters or tags): the same render without the engine. */
  readonly direct: DirectRender | null;
}

/** A render that answers undefined when a value is not one it prints as liquidjs does (the engine then renders). */
type DirectRender = (variables: Record<string, unknown>) => string | undefined;

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype;

/**
 * The most common personalised text is literal text and plain outputs of variables (`Hi {{
 * contact.firstName }}`); for a campaign that is most of its per-recipient cost. Such a text is
 * rendered by concatenation: text as liquidjs parsed it (whitespace control applied), each output
 * the variable's own property path. A value that is not a string, number, boolean or missing
 * (an array, an object, a property of a string) makes it answer undefined, and the engine renders
 * that recipient as ever. Anything else in the text (a filter, a tag) leaves it to the engine.
 */
function directRender(parsed: Template[]): DirectRender | null {
  const parts: (string | string[])[] = [];
  for (const t of parsed as unknown as { token: { kind: number }; str?: string; value?: { filters: unknown[]; initial: { postfix: { kind: number; props?: { kind: number; content: unknown }[] }[] } } }[]) {
    if (t.token.kind === TokenKind.HTML && typeof t.str === 'string') {
      parts.push(t.str);
      continue;
    }
    const postfix = t.value?.initial.postfix;
    if (t.token.kind !== TokenKind.Output || t.value!.filters.length || postfix?.length !== 1 || postfix[0]!.kind !== TokenKind.PropertyAccess) return null;
    const props = postfix[0]!.props!;
    if (!props.every((p) => (p.kind === TokenKind.Word || p.kind === TokenKind.Quoted) && typeof p.content === 'string')) return null;
    parts.push(props.map((p) => p.content as string));
  }
  return (variables) => {
    let out = '';
    for (const part of parts) {
      if (typeof part === 'string') {
        out += part;
        continue;
      }
      let value: unknown = variables;
      for (const key of part) {
        if (value === undefined || value === null) break;
        if (!isPlainObject(value)) return undefined;
        value = Object.hasOwn(value, key) ? value[key] : undefined;
      }
      if (value === undefined || value === null) continue;
      if (typeof value === 'string') out += value;
      else if (typeof value === 'number' || typeof value === 'boolean') out += String(value);
      else return undefined;
    }
    return out;
  };
}

/** The top-level variables a compiled template reads (`contact`, `unsubscribe_url`, ...); none for plain text. */
export function variablesRead(template: CompiledTemplate): Set<string> {
  return new Set(template.parsed ? engine.globalVariablesSync(template.parsed) : []);
}

/**
 * The variable paths a compiled template reads (`['contact', 'attributes', 'plan']`, ...), each cut
 * where a segment is not written out: `contact.attributes[key]` reads `['contact', 'attributes']`
 * (whichever key the variable holds), and `key` is a path of its own.
 */
export function pathsRead(template: CompiledTemplate): string[][] {
  if (!template.parsed) return [];
  return engine.globalVariableSegmentsSync(template.parsed).map((segments) => {
    const dynamic = segments.findIndex((s) => typeof s !== 'string' && typeof s !== 'number');
    return (dynamic === -1 ? segments : segments.slice(0, dynamic)).map(String);
  });
}

/** Where and why a template does not parse. */
export class TemplateSyntaxError extends Error {
  constructor(
    readonly line: number,
    readonly column: number,
    readonly reason: string,
  ) {
    super(`line ${line}, column ${column}: ${reason}`);
  }
}

/** Why one recipient's render failed (over a limit, a filter's error): that recipient fails with it. */
export class TemplateRenderError extends Error {}

/** Parses `text`; throws `TemplateSyntaxError` naming the line and column of the first problem. */
export function compile(text: string): CompiledTemplate {
  if (!isTemplate(text)) return { source: text, parsed: null, direct: null };
  let parsed: Template[];
  try {
    parsed = engine.parse(text);
  } catch (err) {
    throw syntaxError(err, text);
  }
  return { source: text, parsed, direct: directRender(parsed) };
}

/** The problems of `text` as a template, for an input's `field` (none when it parses). */
export function templateProblems(field: string, text: string | undefined | null): FieldProblem[] {
  if (!text) return [];
  try {
    compile(text);
    return [];
  } catch (err) {
    if (err instanceof TemplateSyntaxError) return [{ field, message: `${field} is not a valid template: ${err.message}` }];
    throw err;
  }
}

/** Renders a compiled template with `variables`; throws `TemplateRenderError` when a render breaks a limit or a filter fails. */
export function render(template: CompiledTemplate, variables: Record<string, unknown>): string {
  if (!template.parsed) return template.source;
  let out = template.direct?.(variables);
  if (out !== undefined) {
    if (out.length > MAX_OUTPUT_LENGTH) throw new TemplateRenderError(`Template could not be rendered: its output exceeds ${MAX_OUTPUT_LENGTH} characters`);
    return out;
  }
  try {
    out = engine.renderSync(template.parsed, variables) as string;
  } catch (err) {
    throw new TemplateRenderError(`Template could not be rendered: ${reasonOf(err)}`);
  }
  if (out.length > MAX_OUTPUT_LENGTH) throw new TemplateRenderError(`Template could not be rendered: its output exceeds ${MAX_OUTPUT_LENGTH} characters`);
  return out;
}

/** The first line of liquidjs's message, without the position and excerpt it appends. */
function reasonOf(err: unknown): string {
  const original = err instanceof LiquidError && err.originalError ? err.originalError : err;
  const message = original instanceof Error ? original.message : String(original);
  return message.split('\n')[0]!.replace(/,?\s*line:\d+, col:\d+$/, '').trim();
}

function syntaxError(err: unknown, text: string): TemplateSyntaxError {
  if (err instanceof LiquidError && err.token) {
    const [line, column] = err.token.getPosition();
    return new TemplateSyntaxError(line!, column!, reasonOf(err));
  }
  // Over the parse limit, or an error without a token: the start of the text.
  return new TemplateSyntaxError(1, 1, reasonOf(err) || `not a template (${text.length} characters)`);
}
