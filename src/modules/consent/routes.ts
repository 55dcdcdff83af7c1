import express, { Router, type Request, type RequestHandler, type Response } from 'express';
import type { Deps } from '../../context.js';
import type { Channel } from '../../delivery/types.js';
import { badRequest, methodNotAllowed, unsupportedMediaType } from '../../lib/errors.js';
import { linkState, unsubscribeThroughLink, type LinkState } from './service.js';
import { readUnsubscribeToken, type UnsubscribeRef } from '../../delivery/unsubscribe-tokens.js';

/**
 * The public unsubscribe pages (platform.md, "Consent"), reached without a credential: the token
 * in the path is the only authority, so it is verified before anything else is read. `GET` only
 * shows (mail scanners prefetch links); the page's form, or a mail client's RFC 8058 one-click,
 * `POST`s and unsubscribes. Mounted before the JSON body parser, so no body is read for a bad token.
 */

const FORM_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data'];
const MAX_BODY = 1024;

const CHANNEL_WORDS: Record<Channel, string> = { email: 'email', sms: 'SMS', whatsapp: 'WhatsApp' };

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** A small page: no scripts and no inline styles, whatever the CSP. `body` is HTML already escaped. */
const html = (title: string, body: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>
</head>
<body>
<main>
<h1>${escapeHtml(title)}</h1>
${body}
</main>
</body>
</html>
`;

const messagesOf = (state: LinkState) => `${state.organization}'s ${CHANNEL_WORDS[state.channel]} messages`;

const pages = {
  invalid: () => html('This link is not valid', '<p>It may have been copied incompletely. Use the unsubscribe link of the latest message you received.</p>'),
  ask: (state: LinkState) =>
    html(
      `Unsubscribe from ${messagesOf(state)}?`,
      `<p>You will no longer receive ${escapeHtml(messagesOf(state))}.</p>
<form method="post">
<input type="hidden" name="confirm" value="1">
<button type="submit">Unsubscribe</button>
</form>`,
    ),
  already: (state: LinkState) => html(`You are already unsubscribed from ${messagesOf(state)}`, '<p>There is nothing more to do.</p>'),
  done: (state: LinkState) => html(`You are unsubscribed from ${messagesOf(state)}`, `<p>You will no longer receive ${escapeHtml(messagesOf(state))}.</p>`),
};

function send(res: Response, status: number, type: 'html' | 'text', body: string) {
  res.set({ 'Cache-Control': 'no-store', 'X-Robots-Tag': 'noindex' }).type(type).status(status).send(body);
}

/** The fields of a form body: URL-encoded, or the plain text fields of a `multipart/form-data` one. */
function formFields(req: Request): Map<string, string> {
  const raw = Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '';
  if (req.is('application/x-www-form-urlencoded')) return new Map(new URLSearchParams(raw));
  const boundary = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(req.get('content-type') ?? '');
  const fields = new Map<string, string>();
  if (!boundary) return fields;
  for (const part of raw.split(`--${boundary[1] ?? boundary[2]}`)) {
    const split = part.indexOf('\r\n\r\n');
    const name = split > 0 ? /\bname="([^"]*)"/i.exec(part.slice(0, split)) : null;
    if (name) fields.set(name[1]!, part.slice(split + 4).replace(/\r\n$/, ''));
  }
  return fields;
}

export function consentRouter(deps: Pick<Deps, 'config' | 'db'>): Router {
  const router = Router();
  const verify: RequestHandler = (req, res, next) => {
    const ref = readUnsubscribeToken(deps.config.jwtSecret, String(req.params.token));
    if (!ref) return send(res, 404, 'html', pages.invalid());
    res.locals.unsubscribe = ref;
    next();
  };

  const formBody: RequestHandler[] = [
    (req, _res, next) => {
      const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
      next(hasBody && !req.is(FORM_TYPES) ? unsupportedMediaType(FORM_TYPES.join(' or ')) : undefined);
    },
    express.raw({ type: () => true, limit: MAX_BODY, inflate: false }),
  ];

  const refOf = (res: Response) => res.locals.unsubscribe as UnsubscribeRef;

  router.get('/u/:token', verify, async (_req, res) => {
    const state = await linkState(deps.db, refOf(res));
    if (!state) return send(res, 404, 'html', pages.invalid());
    send(res, 200, 'html', state.unsubscribed ? pages.already(state) : pages.ask(state));
  });

  router.post('/u/:token', verify, ...formBody, async (req, res) => {
    const fields = formFields(req);
    const oneClick = fields.get('List-Unsubscribe') === 'One-Click';
    if (!oneClick && fields.get('confirm') !== '1') throw badRequest('Send List-Unsubscribe=One-Click or confirm=1');
    const state = await unsubscribeThroughLink(deps.db, refOf(res), oneClick ? 'one-click' : 'link');
    if (!state) return send(res, 404, 'html', pages.invalid());
    if (oneClick) send(res, 200, 'text', 'Unsubscribed.\n');
    else send(res, 200, 'html', pages.done(state));
  });

  router.all('/u/:token', (req, res, next) => {
    if (req.method === 'OPTIONS') return void res.set('Allow', 'GET, POST').status(204).end();
    next(methodNotAllowed(req.method, ['GET', 'POST']));
  });
  return router;
}
