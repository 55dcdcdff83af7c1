import { parse as parseCsv } from 'csv-parse/sync';
import { z } from 'zod';
import { validationFailed, type FieldProblem } from '../../lib/errors.js';
import * as v from '../../lib/validation.js';
import { columnTarget, CONTACT_FIELDS, type ColumnTarget } from '../contacts/csv-columns.js';

/**
 * What an import is told besides its file, the same through both doors: the REST door gives each as a
 * query parameter (`text/csv`) or a form field before the file (`multipart/form-data`), lists as
 * comma-separated text and the mapping as JSON text; GraphQL gives them typed.
 */
export const DELIMITERS = [',', ';', '\t', '|'] as const;

/** A comma-separated list from the REST door, or a list from GraphQL. */
const list = <T extends z.ZodType>(item: T, max: number) =>
  z.preprocess((raw) => (typeof raw === 'string' ? raw.split(',').map((s) => s.trim()).filter(Boolean) : raw), z.array(item).max(max));

/** Header -> target (`email`, `attributes.plan`, ...; an empty string or null ignores the column). */
const mapping = z.preprocess(
  (raw) => {
    if (typeof raw !== 'string') return raw;
    try {
      return JSON.parse(raw);
    } catch {
      return raw;
    }
  },
  z.record(z.string().max(200), z.string().max(200).nullable(), { error: 'must be a JSON object of column -> field' }),
);

export const importOptions = z.strictObject({
  /** The field an existing contact is found by; by default `email` when a column goes to it, else `phone`. */
  matchBy: z.enum(['email', 'phone']).optional(),
  existing: z.enum(['update', 'skip']).default('update'),
  groups: list(v.id(), 100).default([]),
  tags: list(z.string().trim().min(1).max(50), 50).default([]),
  mapping: mapping.optional(),
  delimiter: z.enum(DELIMITERS).optional(),
});
export type ImportOptions = z.output<typeof importOptions>;

/** One column of the file and where it goes (null: ignored). */
export interface Column {
  header: string;
  target: ColumnTarget | null;
}

/** The file's layout, read from its first line with the options. */
export interface Layout {
  delimiter: (typeof DELIMITERS)[number];
  matchBy: 'email' | 'phone';
  columns: Column[];
}

/** Headers compared without case, spaces, dashes or underscores: `E-mail`, `Country Code`. */
const loose = (header: string) => header.toLowerCase().replace(/[\s_-]+/g, '');
const LOOSE_FIELDS = new Map<string, string>([...CONTACT_FIELDS.map((f): [string, string] => [loose(f), f]), ['email', 'email'], ['emailaddress', 'email'], ['phonenumber', 'phone'], ['mobile', 'phone'], ['company', 'organization']]);

/** The target a header maps to when the mapping does not name it: its own name, read loosely for the contact fields. */
function defaultTarget(header: string): ColumnTarget | null {
  return columnTarget(header.trim()) ?? columnTarget(LOOSE_FIELDS.get(loose(header)) ?? '');
}

/** The separator used most outside quotes on the first line, of those Herald reads; `,` when none. */
export function detectDelimiter(firstLine: string): (typeof DELIMITERS)[number] {
  const counts = new Map<string, number>(DELIMITERS.map((d) => [d, 0]));
  let quoted = false;
  for (const ch of firstLine) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && counts.has(ch)) counts.set(ch, counts.get(ch)! + 1);
  }
  let best: (typeof DELIMITERS)[number] = ',';
  for (const d of DELIMITERS) if (counts.get(d)! > counts.get(best)!) best = d;
  return best;
}

/** The first line of the file's start (a header may hold quoted newlines: the sync parser reads one record). */
const firstLineOf = (head: string) => head.replace(/^\uFEFF/, '').split(/\r?\n/, 1)[0] ?? '';

/**
 * The layout of a file from its first bytes and the options: the header row parsed, each column's
 * target (the mapping's, else its own name), and the rules a file must meet before it is stored: a
 * header row, a mapping that names only its columns and known targets, no target twice, and a column
 * for the match key. Problems are a 400 naming them.
 */
export function layoutOf(head: string, options: ImportOptions): Layout {
  const delimiter = options.delimiter ?? detectDelimiter(firstLineOf(head));
  let headers: string[];
  try {
    const [record] = parseCsv(head, { bom: true, delimiter, to_line: 1, relax_quotes: true, skip_empty_lines: true }) as string[][];
    headers = (record ?? []).map((h) => h.trim());
  } catch {
    throw validationFailed([{ field: 'file', message: 'file must start with a header row of column names' }]);
  }
  if (!headers.length || headers.every((h) => !h)) throw validationFailed([{ field: 'file', message: 'file must start with a header row of column names' }]);
  const problems: FieldProblem[] = [];
  const given = options.mapping ?? {};
  const unknown = Object.keys(given).filter((h) => !headers.includes(h));
  if (unknown.length) problems.push({ field: 'mapping', message: `mapping names columns the file lacks: ${unknown.map((h) => JSON.stringify(h)).join(', ')}` });
  const columns = headers.map((header): Column => {
    if (!(header in given)) return { header, target: defaultTarget(header) };
    const named = given[header];
    if (!named) return { header, target: null };
    const target = columnTarget(named);
    if (!target) problems.push({ field: 'mapping', message: `mapping of ${JSON.stringify(header)}: ${JSON.stringify(named)} is not a contact field, attributes.<key>, subscriptions.<channel> or unsubscribed` });
    return { header, target };
  });
  for (const { header, target } of columns) {
    if (target?.kind === 'attribute' && !/^[A-Za-z0-9_]{1,50}$/.test(target.key)) {
      problems.push({ field: 'mapping', message: `mapping of ${JSON.stringify(header)}: attribute keys must be 1-50 letters, digits or underscores` });
    }
  }
  const seen = new Map<string, string>();
  for (const { header, target } of columns) {
    if (!target) continue;
    const key = JSON.stringify(target);
    if (seen.has(key)) problems.push({ field: 'mapping', message: `mapping sends columns ${JSON.stringify(seen.get(key))} and ${JSON.stringify(header)} to the same field` });
    else seen.set(key, header);
  }
  const has = (field: string) => columns.some((c) => c.target?.kind === 'field' && c.target.field === field);
  const matchBy = options.matchBy ?? (has('email') || !has('phone') ? 'email' : 'phone');
  if (!has('email') && !has('phone')) problems.push({ field: 'mapping', message: 'mapping must send a column to email or phone' });
  else if (!has(matchBy)) problems.push({ field: 'matchBy', message: `matchBy is ${matchBy}, but no column goes to ${matchBy}` });
  if (problems.length) throw validationFailed(problems);
  return { delimiter, matchBy, columns };
}
