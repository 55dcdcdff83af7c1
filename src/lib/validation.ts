import { z } from 'zod';
import { validationFailed, type FieldProblem } from './errors.js';
import { isUuid } from './ids.js';
import { isEmailAddress } from './addresses.js';
import { toE164 } from './phone.js';

/** What a zod issue says about its field, worded to follow the field name ("email must be ..."). */
function phrase(issue: z.core.$ZodIssue): string {
  // `input` is present because parsing runs with `reportInput`; undefined means the field was left out.
  const missing = (issue as { input?: unknown }).input === undefined;
  switch (issue.code) {
    case 'invalid_type':
      if (missing) return 'is required';
      if (issue.expected === 'object' && issue.path.length === 0) return 'must be a JSON object';
      return `must be ${article(issue.expected)}`;
    case 'too_small':
      if (issue.origin === 'string') return `must be at least ${issue.minimum} characters`;
      if (issue.origin === 'array') return `must have at least ${issue.minimum} items`;
      return `must be at least ${issue.minimum}`;
    case 'too_big':
      if (issue.origin === 'string') return `must be at most ${issue.maximum} characters`;
      if (issue.origin === 'array') return `must have at most ${issue.maximum} items`;
      return `must be at most ${issue.maximum}`;
    case 'invalid_format':
      if (issue.format === 'email') return 'must be a valid email';
      if (issue.format === 'uuid') return 'must be a valid id';
      if (issue.format === 'datetime') return 'must be an ISO 8601 date-time';
      return issue.message && !issue.message.startsWith('Invalid') ? issue.message : `must be a valid ${issue.format}`;
    case 'invalid_union':
      if (missing) return 'is required';
      return issue.message && !issue.message.startsWith('Invalid') ? issue.message : 'is not valid';
    case 'invalid_value':
      if (missing) return 'is required';
      return `must be one of ${issue.values.map((v) => String(v)).join(', ')}`;
    default:
      return issue.message;
  }
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

type Path = PropertyKey[];
const fieldOf = (path: Path) => path.map(String).join('.');

interface Found {
  path: Path;
  problem: FieldProblem;
  /** A field the schema does not list. */
  unknown?: true;
}

function problems(error: z.ZodError): Found[] {
  const out: Found[] = [];
  for (const issue of error.issues) {
    const base = fieldOf(issue.path);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const field = base ? `${base}.${key}` : key;
        out.push({ path: [...issue.path, key], problem: { field, message: `${field} is not allowed` }, unknown: true });
      }
      continue;
    }
    const field = base || 'body';
    out.push({ path: issue.path, problem: { field, message: `${field} ${phrase(issue)}` } });
  }
  return out;
}

/** A NUL (Postgres text can not hold one) or a surrogate outside a pair (UTF-8 has no form for it). */
const UNSTORABLE = /[\0\p{Cs}]/u;

/**
 * Deeper than any input of the API goes: strings below this are in places no schema accepts (zod
 * refuses their container), and a hostile nesting depth costs the walk nothing more.
 */
const MAX_DEPTH = 32;

interface Frame {
  node: object;
  depth: number;
  key?: PropertyKey;
  up?: Frame;
}

const pathTo = (frame: Frame, key: PropertyKey): Path => {
  const path = [key];
  for (let f: Frame | undefined = frame; f?.up; f = f.up) path.unshift(f.key!);
  return path;
};

/**
 * The paths of every string in `input` that Postgres can not store. The walk keeps its own stack, so
 * nesting can not overflow the call stack; a bare string body is left to the schema.
 */
function unstorableStrings(input: unknown): Path[] {
  const found: Path[] = [];
  if (typeof input !== 'object' || input === null) return found;
  const stack: Frame[] = [{ node: input, depth: 0 }];
  while (stack.length) {
    const frame = stack.pop()!;
    const entries: [PropertyKey, unknown][] = Array.isArray(frame.node) ? frame.node.map((v, i) => [i, v]) : Object.entries(frame.node);
    for (const [key, value] of entries) {
      if (typeof value === 'string') {
        if (UNSTORABLE.test(value)) found.push(pathTo(frame, key));
      } else if (typeof value === 'object' && value !== null && frame.depth < MAX_DEPTH) {
        stack.push({ node: value, depth: frame.depth + 1, key, up: frame });
      }
    }
  }
  return found.sort((a, b) => fieldOf(a).localeCompare(fieldOf(b)));
}

const within = (path: Path, prefix: Path) => prefix.length <= path.length && prefix.every((k, i) => String(k) === String(path[i]));

/** A schema's object shape, through `optional`, `nullable` and `default`; undefined for anything else. */
function shapeOf(schema: z.ZodType): Record<string, z.ZodType> | undefined {
  const def = schema._zod.def as { type: string; shape?: Record<string, z.ZodType>; innerType?: z.ZodType };
  if (def.type === 'object') return def.shape;
  if ((def.type === 'optional' || def.type === 'nullable' || def.type === 'default') && def.innerType) return shapeOf(def.innerType);
  return undefined;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The fields of an object input that passed their own rules while others failed, parsed as the whole
 * would parse them; a nested object is taken field by field too. Only the failing path pays for this.
 */
function passedFields(schema: z.ZodType, raw: unknown, failedPaths: Path[]): Record<string, unknown> | undefined {
  const shape = shapeOf(schema);
  if (!shape || !isRecord(raw)) return undefined;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(shape)) {
    const below = failedPaths.filter((p) => p.length && String(p[0]) === key).map((p) => p.slice(1));
    if (!below.length) {
      const result = field.safeParse(raw[key]);
      if (result.success && result.data !== undefined) out[key] = result.data;
    } else if (below.every((p) => p.length > 0)) {
      const inner = passedFields(field, raw[key], below);
      if (inner) out[key] = inner;
    }
  }
  return out;
}

/** What passed of an input: objects field by field (a field that failed is absent), anything else whole. */
export type Passed<T> = T extends readonly unknown[] ? T : T extends object ? { [K in keyof T]?: Passed<T[K]> } : T;

export interface Validated<T> {
  /** The parsed input, when nothing failed. */
  value?: T;
  /** The fields that passed (all of `value` when nothing failed); undefined when the input is not an object. */
  passed?: Passed<T>;
  /** Every failing field, once. */
  problems: FieldProblem[];
  /** The names of the failing fields (`email`, `recipients.contacts.0`). */
  failed: ReadonlySet<string>;
}

/**
 * Checks `input` against `schema` in one pass, naming every failing field: zod's rules, and every
 * string Postgres can not store, whichever field it is in (such a string is named as that, whatever
 * else is wrong with it; under a field that is not allowed at all, only that is said).
 */
export function validate<S extends z.ZodType>(schema: S, input: unknown): Validated<z.output<S>> {
  const unstorable = unstorableStrings(input);
  const result = schema.safeParse(input, { reportInput: true });
  if (result.success && !unstorable.length) return { value: result.data, passed: result.data as Passed<z.output<S>>, problems: [], failed: new Set() };
  const fromZod = result.success ? [] : problems(result.error);
  const notAllowed = fromZod.filter((p) => p.unknown).map((p) => p.path);
  const strings: Found[] = unstorable
    .filter((path) => !notAllowed.some((prefix) => within(path, prefix)))
    .map((path) => ({ path, problem: { field: fieldOf(path), message: `${fieldOf(path)} must not contain NUL characters or unpaired surrogates` } }));
  const named = new Set(strings.map((s) => s.problem.field));
  const all = [...fromZod.filter((p) => !named.has(p.problem.field)), ...strings];
  return {
    passed: passedFields(schema, input, all.map((p) => p.path)) as Passed<z.output<S>> | undefined,
    problems: all.map((p) => p.problem),
    failed: new Set(all.map((p) => p.problem.field)),
  };
}

/** Checks `input` against `schema`, throwing a 400 that names every failing field. */
export function parse<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const { value, problems } = validate(schema, input);
  if (problems.length) throw validationFailed(problems);
  return value as z.output<S>;
}

// Reusable field rules, as decisions.md sets them.
/**
 * A resource id: a UUID by the same rule as path ids (`isUuid`, either case), lower-cased as Postgres
 * writes it back, so that ids compare as they are stored; a bad one is a 400 naming its field.
 */
export const id = () =>
  z
    .string()
    .refine(isUuid, 'must be a valid id')
    .transform((s) => s.toLowerCase());
export const name = () => z.string().trim().min(1).max(100);
/**
 * A recipient's email address, lower-cased. A domain without a dot (`root@localhost`) passes here:
 * the operation's check refuses it where private relays are blocked (`dotlessRefused`).
 */
export const recipientEmail = () =>
  z
    .string()
    .trim()
    .max(254)
    .refine((a) => isEmailAddress(a, { dotlessDomains: true }), 'must be a valid email')
    .transform((a) => a.toLowerCase());
/** The problem of a `recipientEmail` on a domain without a dot, where private relays are blocked. */
export const dotlessRefused = (field: string, address: string | null | undefined, blockPrivateHosts: boolean): FieldProblem[] =>
  blockPrivateHosts && address && !isEmailAddress(address) ? [{ field, message: `${field} must be a valid email` }] : [];
export const email = () =>
  z
    .string()
    .trim()
    .max(254)
    .pipe(z.email({ error: 'must be a valid email' }))
    .transform((v) => v.toLowerCase());
export const password = () =>
  z
    .string()
    .min(8)
    .refine((v) => Buffer.byteLength(v, 'utf8') <= 72, 'must be at most 72 bytes');
export const countryCode = () => z.string().trim().regex(/^\+\d{1,4}$/, 'must be a plus sign followed by 1-4 digits');
export const localPhone = () => z.string().trim().regex(/^\d{4,15}$/, 'must be 4-15 digits without the country code');
export const role = () => z.enum(['admin', 'user']);
export const pageArgs = z.strictObject({
  limit: z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(1).max(1000))
    .optional(),
  cursor: z.string().max(200).optional(),
});

/**
 * For a rule on an object that reads some of its fields: run it once those fields passed their own
 * rules, whatever failed elsewhere (zod skips such rules after any failure by default), so that its
 * problems are named in the same answer as the others.
 */
export const whenPassed = (...fields: string[]) => ({
  when: (payload: z.core.ParsePayload) => isRecord(payload.value) && !payload.issues.some((issue) => fields.includes(String(issue.path?.[0]))),
});

/**
 * A person's phone as the interface splits it, `countryCode` (+254) and `phoneNumber`: what is wrong
 * with the pair, worded to follow the field name, or undefined when together they are a valid number.
 */
export function personPhoneProblem(countryCode: string, phoneNumber: string): string | undefined {
  if (toE164(phoneNumber, { countryCode })?.startsWith(countryCode)) return undefined;
  return `must be a valid phone number for country code ${countryCode}`;
}

/** The object rule for inputs that carry both halves of a person's phone (signup, user create). */
export const personPhone = <T extends { countryCode: string; phoneNumber: string }>(input: T, ctx: z.RefinementCtx<T>) => {
  const problem = personPhoneProblem(input.countryCode, input.phoneNumber);
  if (problem) ctx.addIssue({ code: 'custom', path: ['phoneNumber'], message: problem });
};
