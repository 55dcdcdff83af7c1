/**
 * The first rows of a CSV file the user picked, read in the browser before anything is uploaded:
 * the header and a few rows, split with the separator the server would read (its
 * `detectDelimiter`, src/modules/contact-imports/options.ts), so the preview shows what the import
 * will see. Only the file's start is read: a preview of a 100 MiB file costs no more than of a small one.
 */
import { parse } from 'csv-parse/browser/esm/sync';

export const DELIMITERS = [',', ';', '\t', '|'] as const;
export type Delimiter = (typeof DELIMITERS)[number];

/** The rows shown under the header. */
export const PREVIEW_ROWS = 5;
/** Enough for a header and a few rows of any sensible file. */
const HEAD_BYTES = 256 * 1024;

export interface CsvPreview {
  delimiter: Delimiter;
  /** The header row, each name trimmed (as the server compares them). */
  headers: string[];
  /** Up to `PREVIEW_ROWS` rows after it. */
  rows: string[][];
}

/** The separator used most outside quotes on the first line, of those Herald reads; `,` when none. */
export function detectDelimiter(firstLine: string): Delimiter {
  const counts = new Map<string, number>(DELIMITERS.map((d) => [d, 0]));
  let quoted = false;
  for (const ch of firstLine) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && counts.has(ch)) counts.set(ch, counts.get(ch)! + 1);
  }
  let best: Delimiter = ',';
  for (const d of DELIMITERS) if (counts.get(d)! > counts.get(best)!) best = d;
  return best;
}

/**
 * The preview of `file`, split by `delimiter` or by the one its first line uses. Throws with the
 * parser's message when the start of the file is not CSV.
 */
export async function readPreview(file: Blob, delimiter?: Delimiter): Promise<CsvPreview> {
  let head = (await file.slice(0, HEAD_BYTES).text()).replace(/^\uFEFF/, '');
  // A cut file ends mid-row: its last, partial line is left out.
  if (file.size > HEAD_BYTES) head = head.slice(0, Math.max(0, head.lastIndexOf('\n') + 1));
  const used = delimiter ?? detectDelimiter(head.split(/\r?\n/, 1)[0] ?? '');
  const records = parse(head, { delimiter: used, to: PREVIEW_ROWS + 1, relax_quotes: true, relax_column_count: true, skip_empty_lines: true });
  const [header = [], ...rows] = records;
  return { delimiter: used, headers: header.map((h) => h.trim()), rows };
}
