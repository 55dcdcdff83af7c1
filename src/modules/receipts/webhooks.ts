import { createHmac } from 'node:crypto';
import express, { Router, type Request, type RequestHandler, type Response } from 'express';
import type { Config } from '../../config/config.js';
import type { Deps } from '../../context.js';
import type { Db } from '../../db/database.js';
import { parseAfricasTalkingReport } from '../../delivery/channels/africastalking.js';
import { twilioStatusReport, verifyTwilioSignature } from '../../delivery/channels/twilio.js';
import { PROVIDER_COLUMNS, readSecrets, type ProviderRow } from '../../delivery/providers.js';
import { providerReportToken, providerReportUrl } from '../../delivery/report-urls.js';
import type { ProviderReport } from '../../delivery/types.js';
import { badRequest, forbidden, methodNotAllowed, notFound, unauthorized } from '../../lib/errors.js';
import { isUuid } from '../../lib/ids.js';
import { macOf, sameText } from '../../lib/signed-tokens.js';
import { replied } from '../consent/service.js';
import { ReceiptBatcher } from './batcher.js';
import { recipientByProviderId, recipientByReference, type Receipt, type RecipientRef } from './service.js';

/**
 * The providers' receipts: WhatsApp Cloud API webhooks, the SMS gateway's delivery reports, and each
 * provider account's own report URL (Africa's Talking's delivery reports, Twilio's status
 * callbacks; SMPP's receipts arrive on its session, `providerReports`). Reached without a
 * credential, so each request proves itself before its body is parsed: WhatsApp by the
 * `X-Hub-Signature-256` HMAC of the raw body under the organization's app secret, the SMS gateway
 * and Africa's Talking (which do not sign) by the unguessable token in their URL, Twilio by the
 * token and its `X-Twilio-Signature` (checked by the `twilio` package's validator). Mounted before
 * the JSON body parser so the raw bytes are what is verified.
 *
 * Answers: a WhatsApp notification without a valid signature (or for an organization without an
 * app secret, or unknown) is 401 (the request's credential, the signature, is refused; 403 is kept
 * for the verification handshake, as Meta documents it). A wrong SMS token is 404, as for any path
 * Herald does not have. Ids Herald does not know are acknowledged with 200 so providers stop
 * retrying; nothing a caller sends is answered 5xx.
 */

/** Far above one provider notification (Meta batches at most a few hundred statuses). */
const MAX_BODY = 256 * 1024;

const WHATSAPP_KINDS: Record<string, Receipt['kind']> = { delivered: 'delivered', read: 'read', failed: 'failed' };

/** The SMS report URL's token: the HMAC of the organization id under the report URLs' own key (`lib/signed-tokens.ts`). */
export const smsReportToken = (jwtSecret: string, orgId: string): string => macOf(jwtSecret, 'sms-report-url', orgId.toLowerCase()).toString('base64url').slice(0, 32);

/** Where the SMS gateway account should push delivery reports for this organization (shown to its admins). */
export const smsReportUrl = (config: Pick<Config, 'publicUrl' | 'jwtSecret'>, orgId: string) =>
  `${config.publicUrl}/webhooks/sms/${orgId}/${smsReportToken(config.jwtSecret, orgId)}`;

/** Where Meta's app should send this organization's WhatsApp webhooks. */
export const whatsappWebhookUrl = (config: Pick<Config, 'publicUrl'>, orgId: string) => `${config.publicUrl}/webhooks/whatsapp/${orgId}`;


const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const arrayOf = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : typeof v === 'number' && Number.isFinite(v) ? String(v) : undefined);

/** The app secrets and verify tokens of the organization's WhatsApp Cloud providers (none for an id that names no organization). */
async function whatsappSecrets(deps: Pick<Deps, 'config' | 'db'>, orgId: string): Promise<{ appSecrets: string[]; verifyTokens: string[] }> {
  if (!isUuid(orgId)) return { appSecrets: [], verifyTokens: [] };
  const rows = (await deps.db('providers').where({ organization_id: orgId.toLowerCase(), type: 'whatsapp-cloud' }).orderBy('position').select('secrets')) as Pick<ProviderRow, 'secrets'>[];
  const secrets = rows.map((row) => readSecrets(deps.config, row));
  return {
    appSecrets: secrets.map((s) => s.appSecret).filter((s): s is string => !!s),
    verifyTokens: secrets.map((s) => s.verifyToken).filter((s): s is string => !!s),
  };
}

const rawBody = express.raw({ type: () => true, limit: MAX_BODY, inflate: false });
const bodyOf = (req: Request): Buffer => (Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0));

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw badRequest('Malformed JSON in request body');
  }
}

/** The recipient a receipt names: Herald's own reference first (no lookup by provider id needed), else the provider's id. */
async function recipientOf(db: Db, orgId: string, reference: string | undefined, providerId: string | undefined): Promise<RecipientRef | null> {
  const byReference = reference ? await recipientByReference(db, orgId, reference) : null;
  if (byReference) return byReference;
  return providerId ? recipientByProviderId(db, orgId, providerId) : null;
}

/** A unix-seconds timestamp, else now. */
function unixTime(value: unknown): Date {
  const s = Number(str(value));
  return Number.isFinite(s) && s > 0 && s < 1e11 ? new Date(s * 1000) : new Date();
}

/** The gateway's `YYYY-MM-DD HH:MM:SS`, taken as UTC, else now. */
function gatewayTime(value: unknown): Date {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})$/.exec(str(value)?.trim() ?? '');
  if (!m) return new Date();
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  const at = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  const roundTrips = at.getUTCMonth() === mo - 1 && at.getUTCDate() === d && h < 24 && mi < 60 && s < 60;
  return roundTrips ? at : new Date();
}

async function whatsappStatus(db: Db, receipts: ReceiptBatcher, orgId: string, status: Record<string, unknown>): Promise<void> {
  const name = str(status.status);
  const kind = name ? WHATSAPP_KINDS[name] : undefined;
  if (!kind) return; // `sent` adds nothing to what the send recorded
  const ref = await recipientOf(db, orgId, str(status.biz_opaque_callback_data), str(status.id));
  if (!ref) return;
  const first = arrayOf(status.errors).find(isObject);
  const reason = first && (str(first.title) ?? str(first.message));
  await receipts.record(orgId, ref, {
    kind,
    at: unixTime(status.timestamp),
    ...(kind === 'failed' && { error: `WhatsApp: ${(reason ?? 'not delivered').slice(0, 500)}` }),
    data: { provider: 'whatsapp', status: name },
  });
}

async function whatsappReply(db: Db, orgId: string, message: Record<string, unknown>): Promise<void> {
  const from = str(message.from);
  const text = isObject(message.text) ? str(message.text.body) : undefined;
  if (!from || !/^\d{6,15}$/.test(from) || text === undefined) return;
  await replied(db, orgId, `+${from}`, 'whatsapp', text, unixTime(message.timestamp));
}

/** A delivery report of the SMS gateway; false when it is not one. */
function isSmsReport(v: unknown): v is Record<string, unknown> {
  return isObject(v) && str(v.status) !== undefined;
}

async function smsReport(db: Db, receipts: ReceiptBatcher, orgId: string, report: Record<string, unknown>): Promise<void> {
  const ref = await recipientOf(db, orgId, str(report.clientsmsid), str(report.messageid));
  if (!ref) return;
  const status = str(report.status)!;
  const delivered = status === 'DeliveredToTerminal';
  const reason = str(report.description)?.trim() || status;
  await receipts.record(orgId, ref, {
    kind: delivered ? 'delivered' : 'failed',
    at: gatewayTime(report.timestamp),
    ...(!delivered && { error: `SMS: ${reason.slice(0, 500)}` }),
    data: { provider: 'sms', status: status.slice(0, 100) },
  });
}

const allow = (methods: string[]): RequestHandler => (req, res, next) => {
  if (req.method === 'OPTIONS') return void res.set('Allow', methods.join(', ')).status(204).end();
  next(methodNotAllowed(req.method, methods));
};

export function receiptsRouter(deps: Pick<Deps, 'config' | 'db'>): Router {
  const router = Router();
  const WHATSAPP = '/webhooks/whatsapp/:orgId';
  const SMS = '/webhooks/sms/:orgId/:token';
  const PROVIDER = '/webhooks/providers/:orgId/:providerId/:token';
  // Receipts arrive one or a few per request, many requests at once while a campaign is delivered: written together.
  const receipts = new ReceiptBatcher(deps.db);
  const reports = providerReports(deps.db, receipts);

  router.get(WHATSAPP, async (req, res: Response) => {
    const { verifyTokens } = await whatsappSecrets(deps, String(req.params.orgId));
    const given = req.query['hub.verify_token'];
    const challenge = req.query['hub.challenge'];
    const ok = req.query['hub.mode'] === 'subscribe' && typeof given === 'string' && verifyTokens.some((t) => sameText(given, t)) && typeof challenge === 'string';
    if (!ok) throw forbidden('Verification refused');
    res.set('Cache-Control', 'no-store').type('text/plain').status(200).send(challenge);
  });

  router.post(WHATSAPP, rawBody, async (req, res) => {
    const orgId = String(req.params.orgId).toLowerCase();
    const { appSecrets } = await whatsappSecrets(deps, orgId);
    const header = (req.get('x-hub-signature-256') ?? '').toLowerCase();
    const raw = bodyOf(req);
    const signed = appSecrets.some((secret) => sameText(header, `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`));
    if (!signed) throw unauthorized('Invalid or missing X-Hub-Signature-256');
    const body = parseJson(raw);
    if (!isObject(body)) throw badRequest('A notification is a JSON object');
    for (const entry of arrayOf(body.entry).filter(isObject)) {
      for (const change of arrayOf(entry.changes).filter(isObject)) {
        const value = isObject(change.value) ? change.value : {};
        await Promise.all(arrayOf(value.statuses).filter(isObject).map((status) => whatsappStatus(deps.db, receipts, orgId, status)));
        for (const message of arrayOf(value.messages).filter(isObject)) await whatsappReply(deps.db, orgId, message);
      }
    }
    res.status(200).json({ ok: true });
  });

  router.post(
    SMS,
    (req, _res, next) => {
      const orgId = String(req.params.orgId);
      const valid = isUuid(orgId) && sameText(String(req.params.token), smsReportToken(deps.config.jwtSecret, orgId));
      next(valid ? undefined : notFound());
    },
    rawBody,
    async (req, res) => {
      const body = parseJson(bodyOf(req));
      const reports = Array.isArray(body) ? body : [body];
      if (!reports.length || !reports.every(isSmsReport)) throw badRequest('Send a delivery report object, or an array of them, each with a status');
      const orgId = String(req.params.orgId).toLowerCase();
      await Promise.all(reports.map((report) => smsReport(deps.db, receipts, orgId, report)));
      res.status(200).json({ ok: true });
    },
  );

  router.post(
    PROVIDER,
    (req, _res, next) => {
      const providerId = String(req.params.providerId);
      const valid = isUuid(String(req.params.orgId)) && isUuid(providerId) && sameText(String(req.params.token), providerReportToken(deps.config.jwtSecret, providerId));
      next(valid ? undefined : notFound());
    },
    rawBody,
    async (req, res) => {
      const orgId = String(req.params.orgId).toLowerCase();
      const providerId = String(req.params.providerId).toLowerCase();
      const row = (await deps.db('providers').where({ organization_id: orgId, id: providerId }).first(PROVIDER_COLUMNS)) as ProviderRow | undefined;
      if (!row) throw notFound();
      const form = new URLSearchParams(bodyOf(req).toString('utf8'));
      let report: ProviderReport | null;
      if (row.type === 'twilio') {
        // Twilio signs the URL it posted to and the form's parameters, with the account's auth token.
        const params = Object.fromEntries(form);
        const url = providerReportUrl(deps.config, orgId, providerId);
        if (!verifyTwilioSignature(readSecrets(deps.config, row).authToken ?? '', req.get('x-twilio-signature'), url, params)) throw unauthorized('Invalid or missing X-Twilio-Signature');
        report = twilioStatusReport(params);
      } else if (row.type === 'africastalking') {
        if (!form.get('id') || !form.get('status')) throw badRequest('Send a delivery report form with id and status');
        report = parseAfricasTalkingReport(form);
      } else throw notFound();
      if (report) await reports(orgId, row.type, report);
      res.status(200).json({ ok: true });
    },
  );

  router.all(WHATSAPP, allow(['GET', 'POST']));
  router.all(SMS, allow(['POST']));
  router.all(PROVIDER, allow(['POST']));
  return router;
}

/**
 * Records a provider's report of one message it took (Africa's Talking, Twilio, SMPP): the
 * recipient is found by the provider's message id; a report for an id Herald does not know changes nothing.
 */
export function providerReports(db: Db, receipts = new ReceiptBatcher(db)) {
  return async (orgId: string, provider: string, report: ProviderReport): Promise<void> => {
    const ref = await recipientOf(db, orgId, undefined, report.providerMessageId);
    if (!ref) return;
    await receipts.record(orgId, ref, {
      kind: report.delivered ? 'delivered' : 'failed',
      at: report.at,
      ...(!report.delivered && { error: (report.error ?? 'Not delivered').slice(0, 500) }),
      data: { provider, status: report.status.slice(0, 100) },
    });
  };
}
