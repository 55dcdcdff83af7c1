import { z } from 'zod';
import { nowMs } from '../../db/database.js';
import { isUniqueViolation } from '../../db/errors.js';
import { tenant } from '../../db/tenant.js';
import type { Channel } from '../../delivery/types.js';
import { badRequest, validationFailed, type FieldProblem } from '../../lib/errors.js';
import { isUuid } from '../../lib/ids.js';
import { templateProblems } from '../../lib/templates.js';
import * as v from '../../lib/validation.js';
import { listOf, operation } from '../../operation.js';
import { templateColumns, toTemplateDto, type TemplateRow } from './dto.js';

// The role matrix: everyone in the organization reads, admins (and admin-role keys) write.
const READ = { role: 'any', apiKeys: true } as const;
const WRITE = { role: 'admin', apiKeys: true } as const;
const DUPLICATE = 'A template with this name already exists';
const TABLE = 'message_templates';

/** The longest content per channel: an email's body, else a text message's. */
const CONTENT_LIMIT: Record<Channel, number> = { email: 1_000_000, sms: 10_000, whatsapp: 10_000 };

const channel = () => z.enum(['email', 'sms', 'whatsapp']);
/** `null` means "no subject": how an update takes it away when the channel stops being email. */
const subject = () => z.string().trim().min(1).max(255).nullable();
const content = () => z.string().min(1).max(CONTENT_LIMIT.email);

interface Fields {
  channel?: Channel;
  subject?: string | null;
  content?: string;
}

/**
 * The rules a template's fields obey together, judged on the whole template (an update's change
 * merged with what is stored): a subject for email and only for email, the channel's content limit.
 * A field that already failed its own rule (`failed`) is not named twice.
 */
function channelProblems(t: Fields, failed: ReadonlySet<string> = new Set()): FieldProblem[] {
  if (!t.channel) return [];
  const out: FieldProblem[] = [];
  if (!failed.has('subject')) {
    if (t.channel === 'email' && !t.subject) out.push({ field: 'subject', message: 'subject is required for email' });
    if (t.channel !== 'email' && t.subject) out.push({ field: 'subject', message: `subject is only for email, not ${t.channel}` });
  }
  const limit = CONTENT_LIMIT[t.channel];
  if (!failed.has('content') && t.content !== undefined && t.content.length > limit) {
    out.push({ field: 'content', message: `content must be at most ${limit} characters for ${t.channel}` });
  }
  return out;
}

/** The Liquid problems of the texts the input gives (a stored text was checked when it was written). */
const liquidProblems = (input: Fields, failed: ReadonlySet<string>): FieldProblem[] => [
  ...(failed.has('subject') ? [] : templateProblems('subject', input.subject)),
  ...(failed.has('content') ? [] : templateProblems('content', input.content)),
];

/** Merges rule problems with Liquid ones, one answer per field (the rule's first). */
const oncePerField = (problems: FieldProblem[]): FieldProblem[] => problems.filter((p, i) => problems.findIndex((q) => q.field === p.field) === i);

/** Runs a write, answering the unique name's violation as the 400 it is. */
async function uniqueName<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (isUniqueViolation(err, 'organization_id, lower(name)')) throw badRequest(DUPLICATE);
    throw err;
  }
}

export const list = listOf(READ, TABLE, templateColumns, toTemplateDto);

export const get = operation({
  access: READ,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    return toTemplateDto(await tenant(ctx.db, ctx.caller.orgId).owned<TemplateRow>(TABLE, id, templateColumns));
  },
});

export const create = operation({
  access: WRITE,
  input: z.strictObject({ name: v.name(), channel: channel(), subject: subject().optional(), content: content() }),
  async check(_ctx, input, _params, failed) {
    return oncePerField([...channelProblems(input, failed), ...liquidProblems(input, failed)]);
  },
  async run(ctx, input) {
    const [row] = await uniqueName(() =>
      ctx.db(TABLE)
        .insert({ organization_id: ctx.caller.orgId, name: input.name, channel: input.channel, subject: input.subject ?? null, content: input.content })
        .returning(templateColumns),
    );
    return toTemplateDto(row as TemplateRow);
  },
});

export const update = operation({
  access: WRITE,
  input: z.strictObject({ name: v.name().optional(), channel: channel().optional(), subject: subject().optional(), content: content().optional() }),
  /** The change merged with the stored template; a missing one is run's 404 or 403. */
  async check(ctx, input, { id }: { id: string }, failed) {
    const stored = isUuid(id) ? ((await tenant(ctx.db, ctx.caller.orgId).scoped(TABLE).where(`${TABLE}.id`, id).first(['channel', 'subject', 'content'])) as Fields | undefined) : undefined;
    const rules = stored ? channelProblems(merge(stored, input), failed) : [];
    return oncePerField([...rules, ...liquidProblems(input, failed)]);
  },
  async run(ctx, input, { id }: { id: string }) {
    return uniqueName(() =>
      ctx.db.transaction(async (trx) => {
        const t = tenant(trx, ctx.caller.orgId);
        // Judged again on the row as locked: a change committed since `check` read it counts.
        const stored = await t.owned<Fields>(TABLE, id, ['channel', 'subject', 'content'], { forUpdate: true });
        const problems = channelProblems(merge(stored, input));
        if (problems.length) throw validationFailed(problems);
        const [row] = await t
          .scoped(TABLE)
          .where(`${TABLE}.id`, id)
          .update({ ...input, updated_at: nowMs(ctx.db) })
          .returning(templateColumns);
        return toTemplateDto(row as TemplateRow);
      }),
    );
  },
});

export const remove = operation({
  access: WRITE,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    const t = tenant(ctx.db, ctx.caller.orgId);
    await t.owned(TABLE, id, ['id']);
    await t.scoped(TABLE).where(`${TABLE}.id`, id).delete();
    return { message: 'Template deleted successfully' };
  },
});

/** The template an update would leave: the stored fields, overridden by those the change gives. */
function merge(stored: Fields, change: Fields): Fields {
  return {
    channel: change.channel ?? stored.channel,
    subject: change.subject !== undefined ? change.subject : stored.subject,
    content: change.content ?? stored.content,
  };
}
