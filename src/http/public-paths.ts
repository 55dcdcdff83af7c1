import { readFileSync } from 'node:fs';
import { z } from 'zod';

/**
 * The REST paths Herald serves outside the route table (`./routes.ts`), without a credential: the
 * index, the probes, the API description, the unsubscribe pages, the tracking links and the
 * providers' callbacks. One line each, as the table has them, so that `/openapi.json` describes
 * every path (`./openapi.ts`): its method, path, tag, what it is, and each status it answers with
 * the media types of that answer. A JSON answer names its zod schema; an error is the `Error` shape.
 * The handlers live with their module (`modules/consent/routes.ts`, `modules/receipts/*`, `./app.ts`).
 */

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/** Where an API client starts (`GET /` without `Accept: text/html`; a browser gets the console). */
export const API_INDEX = {
  name: 'Herald',
  version,
  links: { console: '/', docs: '/docs', openapi: '/openapi.json', graphql: '/graphql', health: '/health' },
} as const;

const apiIndex = z
  .looseObject({
    name: z.literal('Herald'),
    version: z.string().describe("Herald's version."),
    links: z.looseObject({
      console: z.string().describe('The web console (for a browser).'),
      docs: z.string().describe('The REST reference page.'),
      openapi: z.string().describe('This document.'),
      graphql: z.string().describe('The GraphQL endpoint (an IDE for a browser).'),
      health: z.string().describe('The liveness probe.'),
    }),
  })
  .describe('What Herald is and where its parts are.');

const ack = z.looseObject({ ok: z.literal(true) }).describe('The notification was taken.');

/** One answer: its description and media types (`json` with its schema, `error`, or others by name). */
export interface PublicAnswer {
  description: string;
  json?: z.ZodType;
  /** An error, in the `Error` shape. */
  error?: true;
  /** Media types of a body that is not JSON (`text/html`, `image/gif`, ...). */
  types?: string[];
}

export interface PublicPath {
  method: 'get' | 'post';
  /** As express writes it: `/u/:token`. */
  path: string;
  tag: string;
  summary: string;
  answers: Record<number, PublicAnswer>;
}

const E = (description: string): PublicAnswer => ({ description, error: true });
const METHOD = E('The path exists with other methods (`Allow` lists them).');
const UNAVAILABLE = E('The database is unreachable for now.');
const TOO_LARGE = E('The body is too large.');
const HTML = ['text/html'];

export const PUBLIC_PATHS: readonly PublicPath[] = [
  {
    method: 'get',
    path: '/',
    tag: 'service',
    summary: 'The API index: name, version and where the console, docs, description, GraphQL and health are. A browser (`Accept` preferring `text/html`) gets the console instead.',
    answers: {
      200: { description: 'The index (the console page for a browser).', json: apiIndex, types: HTML },
      405: METHOD,
      503: { description: 'A browser asked for the console, which is not built.', types: ['text/plain'] },
    },
  },
  {
    method: 'get',
    path: '/health',
    tag: 'service',
    summary: 'Liveness: the process is up.',
    answers: { 200: { description: 'Up.', json: z.looseObject({ status: z.literal('ok') }) }, 405: METHOD },
  },
  {
    method: 'get',
    path: '/ready',
    tag: 'service',
    summary: 'Readiness: the database answers.',
    answers: { 200: { description: 'Ready.', json: z.looseObject({ status: z.literal('ready') }) }, 405: METHOD, 503: UNAVAILABLE },
  },
  {
    method: 'get',
    path: '/openapi.json',
    tag: 'service',
    summary: 'This document (OpenAPI 3.1).',
    answers: { 200: { description: 'The document.', json: z.looseObject({ openapi: z.string() }) }, 405: METHOD },
  },
  {
    method: 'get',
    path: '/u/:token',
    tag: 'consent',
    summary: "An unsubscribe link's page: what it unsubscribes from, with a button that posts the form (it unsubscribes nothing by itself).",
    answers: {
      200: { description: 'The page.', types: HTML },
      404: { description: 'The link is not valid (a page saying so).', types: HTML },
      405: METHOD,
      503: UNAVAILABLE,
    },
  },
  {
    method: 'post',
    path: '/u/:token',
    tag: 'consent',
    summary: "Unsubscribes: the page's form (`confirm=1`) or a mail client's RFC 8058 one-click (`List-Unsubscribe=One-Click`), URL-encoded or multipart.",
    answers: {
      200: { description: 'Unsubscribed: a page, or `Unsubscribed.` as text for a one-click.', types: [...HTML, 'text/plain'] },
      400: E('Neither `confirm=1` nor `List-Unsubscribe=One-Click` was sent.'),
      404: { description: 'The link is not valid (a page saying so).', types: HTML },
      405: METHOD,
      413: TOO_LARGE,
      415: E('The body is not a form.'),
      503: UNAVAILABLE,
    },
  },
  {
    method: 'get',
    path: '/t/o/:token',
    tag: 'tracking',
    summary: "An email's open pixel: a transparent 1x1 GIF, recording an open.",
    answers: { 200: { description: 'The pixel.', types: ['image/gif'] }, 404: E('A forged or altered token.'), 405: METHOD },
  },
  {
    method: 'get',
    path: '/t/c/:token',
    tag: 'tracking',
    summary: "A tracked link of an email: a redirect to the link's URL, recording a click.",
    answers: { 302: { description: 'To the URL the token names (`Location`).' }, 404: E('A forged or altered token: redirects nowhere.'), 405: METHOD },
  },
  {
    method: 'get',
    path: '/webhooks/whatsapp/:orgId',
    tag: 'webhooks',
    summary: "Meta's webhook verification: `hub.mode=subscribe` with the organization's verify token echoes `hub.challenge`.",
    answers: { 200: { description: 'The challenge.', types: ['text/plain'] }, 403: E('Verification refused.'), 405: METHOD, 503: UNAVAILABLE },
  },
  {
    method: 'post',
    path: '/webhooks/whatsapp/:orgId',
    tag: 'webhooks',
    summary: "WhatsApp Cloud API notifications (statuses and replies), signed with the organization's app secret (`X-Hub-Signature-256`).",
    answers: {
      200: { description: 'Taken (ids Herald does not know are acknowledged too).', json: ack },
      400: E('The body is not a JSON object.'),
      401: E('No valid `X-Hub-Signature-256`.'),
      405: METHOD,
      413: TOO_LARGE,
      503: UNAVAILABLE,
    },
  },
  {
    method: 'post',
    path: '/webhooks/sms/:orgId/:token',
    tag: 'webhooks',
    summary: "The SMS gateway's delivery reports (an object or an array of them), on the organization's report URL (its token is the proof).",
    answers: {
      200: { description: 'Taken (ids Herald does not know are acknowledged too).', json: ack },
      400: E('Not a delivery report, or an array of them.'),
      404: E('No such report URL.'),
      405: METHOD,
      413: TOO_LARGE,
      503: UNAVAILABLE,
    },
  },
  {
    method: 'post',
    path: '/webhooks/providers/:orgId/:providerId/:token',
    tag: 'webhooks',
    summary: "A provider account's delivery reports, on its report URL (`reportUrl` of the provider): Africa's Talking's (form-encoded; the token is the proof) and Twilio's status callbacks (form-encoded, with a valid `X-Twilio-Signature` as well).",
    answers: {
      200: { description: 'Taken (ids Herald does not know are acknowledged too).', json: ack },
      400: E('Not a delivery report.'),
      401: E('A Twilio callback without a valid X-Twilio-Signature.'),
      404: E('No such report URL.'),
      405: METHOD,
      413: TOO_LARGE,
      503: UNAVAILABLE,
    },
  },
];
