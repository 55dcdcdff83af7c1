import { Router, type Request, type Response } from 'express';
import type { Deps } from '../../context.js';
import type { Db } from '../../db/database.js';
import { tenant } from '../../db/tenant.js';
import { readTrackingToken, type TrackingToken } from '../../delivery/tracking-tokens.js';
import { methodNotAllowed, notFound } from '../../lib/errors.js';
import { ReceiptBatcher } from './batcher.js';
import { record, type Outcome, type Receipt } from './service.js';

/**
 * The open pixel and tracked links of emails (platform.md, "Receipts and engagement"), reached
 * without a credential: the signed token in the path is the only authority (`delivery/tracking-tokens.ts`).
 *
 * `GET /t/o/:token` answers the transparent pixel and records an open; `GET /t/c/:token` answers
 * 302 to the link the token names and records a click. For both, a forged or altered token (or one
 * of the other kind) is 404 and records nothing, as platform.md has it: only a token Herald signed
 * gets the pixel, so the path cannot be used to probe tokens or as a free image host. Neither
 * answers 5xx for anything a client can send: a failure to record is logged and the reader still
 * gets the pixel or the link.
 *
 * Neither answer depends on the write, so the reader gets it at once and the open or click is
 * recorded after, batched with the others arriving (`ReceiptBatcher`) as deps.background's work:
 * finished before a stopping process closes its pool, and bounded (past its limit a request waits
 * for its own write, so a flood queues at the readers and not in memory). What a crash can lose is
 * the receipts of the last few milliseconds, where a failed write already lost its receipt (logged:
 * a reader does not retry).
 *
 * Scanners and prefetchers (mail security gateways follow every link of a message as it arrives)
 * are recorded but not counted: known scanner user agents, no user agent at all, `HEAD` requests,
 * `Purpose`/`Sec-Purpose: prefetch`, and clicks within `SCANNER_WINDOW_MS` of the send (no reader
 * clicks that fast; a gateway does). Gmail's image proxy (`GoogleImageProxy`) fetches the pixel when
 * the reader opens the message, so it counts as an open. Apple Mail Privacy Protection fetches
 * every pixel on delivery through proxies that look like an ordinary client: those opens cannot be
 * told apart from a reader's and are counted.
 */

/** The 43-byte transparent 1x1 GIF. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');

/** A click this soon after its message was sent is a scanner's. */
export const SCANNER_WINDOW_MS = 5000;

/** User agents of link scanners, security gateways and link-preview bots: never a reader's own client. */
const SCANNER_AGENTS =
  /barracuda|proofpoint|mimecast|bingpreview|messagelabs|symantec|trend ?micro|sophos|forcepoint|fireeye|ironport|zscaler|checkpoint|agari|safelinks|\bbot\b|bot\/|bot-|crawler|spider|slurp|facebookexternalhit|skypeuripreview|headlesschrome|phantomjs|python-requests|python-urllib|go-http-client|libwww-perl|java\/|curl\/|wget\//i;

/** Kept with an uncounted event: enough to see whose it was. */
const MAX_AGENT = 256;

/** Why a request is a scanner's or a prefetch, or null when it looks like a reader's. */
export function scannerReason(req: Pick<Request, 'method' | 'get'>): string | null {
  if (req.method === 'HEAD') return 'head';
  const purpose = `${req.get('purpose') ?? ''} ${req.get('sec-purpose') ?? ''} ${req.get('x-purpose') ?? ''} ${req.get('x-moz') ?? ''}`;
  if (/prefetch|preview/i.test(purpose)) return 'prefetch';
  const agent = req.get('user-agent') ?? '';
  if (!agent.trim()) return 'no-user-agent';
  // Gmail's image proxy fetches as the reader opens the message: an open, not a scanner.
  if (/GoogleImageProxy/i.test(agent)) return null;
  return SCANNER_AGENTS.test(agent) ? 'user-agent' : null;
}

/** When the log was written (its send began), or null when the organization has no such log. */
async function sentAt(db: Db, token: TrackingToken): Promise<Date | null> {
  const row = (await tenant(db, token.orgId).scoped('message_logs').where('message_logs.id', token.logId).first('message_logs.created_at')) as { created_at: Date } | undefined;
  return row?.created_at ?? null;
}

const agentOf = (req: Request) => (req.get('user-agent') ?? '').slice(0, MAX_AGENT);

export function trackingRouter(deps: Pick<Deps, 'config' | 'db' | 'log' | 'background'>): Router {
  const router = Router();
  const read = (req: Request) => readTrackingToken(deps.config.jwtSecret, String(req.params.token));
  // Readers' opens and clicks arrive one per request, many at once after a campaign: written together.
  const batcher = new ReceiptBatcher(deps.db, 1);

  /** Records the receipt; an unknown log is ignored, and a failure never reaches the reader (its outcome is then null). */
  async function recordSafely(token: TrackingToken, receipt: Receipt): Promise<Outcome | null> {
    try {
      const ref = { logId: token.logId, position: token.position };
      return await (receipt.scanner ? record(deps.db, token.orgId, ref, receipt) : batcher.record(token.orgId, ref, receipt));
    } catch (err) {
      deps.log.warn({ err, logId: token.logId }, `tracking: recording an ${token.kind} failed`);
      return null;
    }
  }

  /** A scanner's open or click: recorded uncounted, with whose it looks like. */
  const recordScanner = (token: TrackingToken, userAgent: string, kind: 'opened' | 'clicked', at: Date, scanner: string) =>
    recordSafely(token, { kind, at, scanner: true, data: { ...(token.url && { url: token.url }), userAgent, scanner } });

  router.get('/t/o/:token', async (req, res: Response) => {
    const token = read(req);
    if (token?.kind !== 'open') throw notFound('This link is not valid');
    const reason = scannerReason(req);
    const agent = reason ? agentOf(req) : '';
    const at = new Date();
    const recording = deps.background.run(async () => {
      if (reason) await recordScanner(token, agent, 'opened', at, reason);
      else await recordSafely(token, { kind: 'opened', at });
    });
    await recording;
    res
      .set({ 'Cache-Control': 'no-store, private', 'Cross-Origin-Resource-Policy': 'cross-origin', 'X-Robots-Tag': 'noindex' })
      .type('image/gif')
      .status(200)
      .send(PIXEL);
  });

  router.get('/t/c/:token', async (req, res: Response) => {
    const token = read(req);
    // Only a URL Herald signed is followed; the check of its scheme keeps a redirect to anything else impossible even so.
    if (token?.kind !== 'click' || !/^https?:\/\//i.test(token.url)) throw notFound('This link is not valid');
    const at = new Date();
    const reason = scannerReason(req);
    const agent = agentOf(req);
    const recording = deps.background.run(async () => {
      if (reason) return void (await recordScanner(token, agent, 'clicked', at, reason));
      // Counted only when its message was sent long enough ago; when it is not (or there is no such log), the send time tells which.
      const outcome = await recordSafely(token, { kind: 'clicked', at, data: { url: token.url }, sentBefore: new Date(at.getTime() - SCANNER_WINDOW_MS) });
      if (outcome === 'unknown' && (await sentWithin(token, at))) await recordScanner(token, agent, 'clicked', at, 'too-soon');
    });
    await recording;
    res.set({ 'Cache-Control': 'no-store, private', 'X-Robots-Tag': 'noindex', 'Referrer-Policy': 'no-referrer' }).redirect(302, token.url);
  });

  /** Whether the token's message was sent less than `SCANNER_WINDOW_MS` before `at`. */
  async function sentWithin(token: TrackingToken, at: Date): Promise<boolean> {
    try {
      const sent = await sentAt(deps.db, token);
      return sent !== null && at.getTime() - sent.getTime() < SCANNER_WINDOW_MS;
    } catch (err) {
      deps.log.warn({ err, logId: token.logId }, 'tracking: reading the log of a click failed');
      return false;
    }
  }

  router.all(['/t/o/:token', '/t/c/:token'], (req, res, next) => {
    if (req.method === 'OPTIONS') return void res.set('Allow', 'GET, HEAD').status(204).end();
    next(methodNotAllowed(req.method, ['GET', 'HEAD']));
  });
  return router;
}
