import http from 'node:http';
import type { AddressInfo } from 'node:net';

// What the fake providers (tests/fakes/) share: their HTTP server, their JSON in and out, and
// their table of scripted behaviours.

/**
 * What a fake provider can do with a call, whatever its protocol; each fake adds its own errors and
 * `{ kind: 'delay'; ms: number; then?: <its behaviour> }` (wait, then behave as `then`, default success).
 */
export type TransportBehaviour =
  | { kind: 'success' }
  /** The whole call answers this HTTP status, with `body` or the fake's default (no provider error object). */
  | { kind: 'http'; status: number; body?: string }
  /** HTTP 200 with a body that is not the documented JSON. */
  | { kind: 'malformed'; body?: string }
  /** The connection is destroyed without an answer. */
  | { kind: 'drop' };

/**
 * An HTTP server for a fake provider, on 127.0.0.1 at an ephemeral port once `listen` resolves.
 * `later` runs work after a delay unless the server stops first; `stop` cancels that work, drops
 * the open connections and closes.
 */
export function fakeHttpServer(handler: http.RequestListener) {
  const timers = new Set<NodeJS.Timeout>();
  const server = http.createServer(handler);
  return {
    later(ms: number, work: () => void) {
      const timer = setTimeout(() => {
        timers.delete(timer);
        work();
      }, ms);
      timers.add(timer);
    },
    /** Resolves to the server's base URL, `http://127.0.0.1:<port>`. */
    async listen(): Promise<string> {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
    async stop() {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A request's body parsed as JSON, or `ok: false` when it is not JSON. */
export function readJson(req: http.IncomingMessage): Promise<{ ok: true; body: any } | { ok: false }> {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  return new Promise((resolve) =>
    req.on('end', () => {
      try {
        resolve({ ok: true, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      } catch {
        resolve({ ok: false });
      }
    }),
  );
}

/** Answers with `body` (a string as it is, anything else as JSON) labelled JSON, unless the connection is gone. */
export function sendJson(res: http.ServerResponse, status: number, body: unknown) {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json' }).end(typeof body === 'string' ? body : JSON.stringify(body));
}

/**
 * A fake's scripted behaviours: one for every recipient (`initial` until set) and one per
 * recipient, keyed without a leading `+`; a recipient's own wins.
 */
export function behaviourTable<B>(initial: B) {
  let everyone = initial;
  const perRecipient = new Map<string, B>();
  return {
    of: (recipient: unknown): B => perRecipient.get(String(recipient)) ?? everyone,
    set(behaviour: B, recipient?: string) {
      if (recipient === undefined) everyone = behaviour;
      else perRecipient.set(recipient.replace(/^\+/, ''), behaviour);
    },
    /** Back to `initial` for everyone. */
    reset() {
      everyone = initial;
      perRecipient.clear();
    },
  };
}
