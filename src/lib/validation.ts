import { z } from 'zod';
import { validationFailed, type FieldProblem } from './errors.js';

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

function problems(error: z.ZodError): FieldProblem[] {
  const out: FieldProblem[] = [];
  for (const issue of error.issues) {
    const base = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const field = base ? `${base}.${key}` : key;
        out.push({ field, message: `${field} is not allowed` });
      }
      continue;
    }
    const field = base || 'body';
    out.push({ field, message: `${field} ${phrase(issue)}` });
  }
  return out;
}

/** Checks `input` against `schema`, throwing a 400 that names every failing field. */
export function parse<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input, { reportInput: true });
  if (result.success) return result.data;
  throw validationFailed(problems(result.error));
}

// Reusable field rules, as decisions.md sets them.
export const name = () => z.string().trim().min(1).max(100);
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
