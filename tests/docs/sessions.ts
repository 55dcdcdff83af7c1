import path from 'node:path';

/**
 * How the documents' example sessions are written, read by tests/docs/sessions.test.ts:
 *
 *   ```sh                                   a session: calls Herald through the `c` helper
 *   c() { curl -sS -w '%{stderr}\n-> %{http_code}\n' "$@"; }
 *   X=$(c localhost:4000/groups -H "$A" | field _id)
 *   ```
 *
 *   ```text                                 its answers, one line per call, in order
 *   201 { "_id": "...", "name": "VIP", ... }
 *   ```
 *
 * No comments in a sh block (an interactive zsh runs `# ...` as a command), every call through `c`
 * (so it prints its status), and nothing in the documents that points outside the repository.
 */

export interface Block {
  lang: string;
  body: string;
  /** Offsets in the document: where the opening fence starts, and just after the closing one. */
  start: number;
  end: number;
  /** The opening fence's line, 1-based. */
  line: number;
  closed: boolean;
  info: string;
}

/** The backtick fenced code blocks of a markdown document (CommonMark's rules, as far as the documents need them). */
export function fencedBlocks(text: string): Block[] {
  const blocks: Block[] = [];
  const lines = text.split('\n');
  let offset = 0;
  let open: { fence: string; info: string; start: number; line: number; body: string[] } | undefined;
  lines.forEach((line, i) => {
    const lineEnd = offset + line.length + 1;
    if (!open) {
      const m = /^ {0,3}(`{3,})(.*)$/.exec(line);
      if (m) open = { fence: m[1]!, info: m[2]!.trim(), start: offset, line: i + 1, body: [] };
    } else if (new RegExp(`^ {0,3}${open.fence}\`*\\s*$`).test(line)) {
      blocks.push({ lang: open.info.split(/\s/, 1)[0]!, info: open.info, body: open.body.join('\n'), start: open.start, end: lineEnd, line: open.line, closed: true });
      open = undefined;
    } else {
      open.body.push(line);
    }
    offset = lineEnd;
  });
  if (open) blocks.push({ lang: open.info.split(/\s/, 1)[0]!, info: open.info, body: open.body.join('\n'), start: open.start, end: text.length, line: open.line, closed: false });
  return blocks;
}

/** The helper every session calls Herald through; its one `curl`. */
const HELPER = /^c\(\) \{ curl .*"\$@"; \}$/;

/** How many times a session calls Herald: each `c` in command position. */
export const callsIn = (script: string) => [...script.matchAll(/(?:^|[;&|]|\$\()[ \t]*c[ \t]/gm)].length;

export interface Session {
  block: Block;
  script: string;
  /** The body of the ```text block right after it, if there is one. */
  answers?: string;
}

/** The sessions of a document: its sh blocks that call Herald, each with the answers shown after it. */
export function sessionsOf(text: string): Session[] {
  const blocks = fencedBlocks(text);
  return blocks.flatMap((block, i) => {
    if (block.lang !== 'sh' || !(callsIn(block.body) > 0 || /\bcurl\b/.test(block.body))) return [];
    const next = blocks[i + 1];
    const answers = next && next.lang === 'text' && text.slice(block.end, next.start).trim() === '' ? next.body : undefined;
    return [{ block, script: block.body, answers }];
  });
}

export interface Answer {
  status: number;
  /** The answer shown after the status. */
  shows: string;
}

const ANSWER = /^(\d{3})(?:\s+(.*))?$/;

/** The answer lines of a ```text block: `<status> <answer>`, blank lines left out. */
export const answerLines = (text: string): Answer[] =>
  text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      const m = ANSWER.exec(l.trim());
      return { status: m ? Number(m[1]) : NaN, shows: m?.[2]?.trim() ?? l };
    });

/**
 * The scalar fields an answer shows with a concrete value (`"status": "success"`, `"sent": 1`);
 * placeholders (`"eyJ..."`, `"..."`, `"<id>"`) are skipped.
 */
export function shownFields(shows: string): [string, unknown][] {
  const out: [string, unknown][] = [];
  for (const m of shows.matchAll(/"([A-Za-z_]\w*)"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null)/g)) {
    const value = JSON.parse(m[2]!);
    if (typeof value === 'string' && (value.includes('...') || value.startsWith('<'))) continue;
    out.push([m[1]!, value]);
  }
  return out;
}

/** The pieces of an answer that is not JSON (a CSV, a page, a text), between its `...` elisions. */
export const shownText = (shows: string) =>
  shows
    .split('...')
    .map((s) => s.trim())
    .filter(Boolean);

/** Words and names that belong to the project's history or to files outside it, never to its documents. */
const OUTSIDE = /\.\.\/shared|\b(decisions|platform|providers)\.md\b/;
const HISTORY = /\b(issue \d+|twenty-\w+|(first|second|third|\w+th) session|as before|previously)\b/i;

/**
 * What breaks the rules in a document: fences, sessions (comments, calls not through `c`, answers
 * missing or miscounted), references outside the repository, history, and relative links to files
 * that do not exist (`exists` is asked with a path from the repository root).
 */
export function documentProblems(doc: string, text: string, exists: (p: string) => boolean): string[] {
  const problems: string[] = [];
  const blocks = fencedBlocks(text);
  for (const b of blocks) {
    const where = `${doc}:${b.line}`;
    if (!b.closed) problems.push(`${where}: a code block is never closed`);
    if (b.info.includes('`')) problems.push(`${where}: a backtick fence's info string holds a backtick (it is not a fence then)`);
    if (b.lang !== 'sh') continue;
    b.body.split('\n').forEach((line, i) => {
      if (/(^|\s)#/.test(line)) problems.push(`${doc}:${b.line + 1 + i}: a comment in a sh block (an interactive zsh runs it as a command): ${line.trim()}`);
      if (/\bcurl\b/.test(line) && !HELPER.test(line.trim())) problems.push(`${doc}:${b.line + 1 + i}: call Herald through the c helper, so the status is printed: ${line.trim()}`);
    });
  }
  for (const s of sessionsOf(text)) {
    const where = `${doc}:${s.block.line}`;
    const calls = callsIn(s.script);
    if (s.answers === undefined) {
      problems.push(`${where}: a session without its answers (a \`\`\`text block right after it, one line per call)`);
      continue;
    }
    const answers = answerLines(s.answers);
    if (answers.length !== calls) problems.push(`${where}: ${answers.length} answer lines for ${calls} call${calls === 1 ? '' : 's'}`);
    for (const a of answers) if (Number.isNaN(a.status)) problems.push(`${where}: an answer line that does not start with a status: ${a.shows}`);
  }
  const prose = blocks.reduceRight((t, b) => t.slice(0, b.start) + t.slice(b.end), text);
  text.split('\n').forEach((line, i) => {
    if (OUTSIDE.test(line)) problems.push(`${doc}:${i + 1}: points outside the repository: ${line.trim()}`);
  });
  prose.split('\n').forEach((line) => {
    const m = HISTORY.exec(line);
    if (m) problems.push(`${doc}: development history ("${m[0]}"): ${line.trim()}`);
  });
  for (const m of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1]!.split('#', 1)[0]!;
    if (!target || /^[a-z]+:/i.test(target)) continue;
    const file = path.posix.normalize(path.posix.join(path.posix.dirname(doc), target));
    if (!exists(file)) problems.push(`${doc}: a link to ${m[1]}, which is not in the repository`);
  }
  return problems;
}
