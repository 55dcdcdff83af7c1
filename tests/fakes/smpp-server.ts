import type { AddressInfo } from 'node:net';
import smpp from 'smpp';

/**
 * A local SMSC speaking SMPP 3.4, made with the `smpp` package's server: it binds transmitters,
 * receivers and transceivers with one system id and password, answers submit_sm (reassembling
 * concatenated segments from their UDH), enquire_link and unbind, and sends delivery receipts.
 *
 *   const smsc = await startSmppServer({ systemId: 'herald', password: 'secret' });  // smsc.port
 *   smsc.throttleNext(2);                         // the next two submit_sm answer ESME_RTHROTTLED
 *   smsc.failNext(1, smpp.errors.ESME_RINVDSTADR);
 *   smsc.delay(200);                              // every submit_sm_resp 200 ms late (0: at once)
 *   smsc.submits()                                // accepted messages, whole
 *   await smsc.deliverReceipt(messageId, 'UNDELIV');
 *   await smsc.stop();
 *
 * A wrong system id is refused with ESME_RINVSYSID, a wrong password with ESME_RINVPASWD, and
 * every bind with ESME_RBINDFAIL while `refuseBinds(true)`; a refused session is closed.
 * `idleTimeoutMs` drops a session that sends nothing for that long, as SMSCs do.
 */

export interface SmppSubmit {
  /** destination_addr as received. */
  destination: string;
  destTon: number;
  destNpi: number;
  source: string;
  sourceTon: number;
  sourceNpi: number;
  /** The whole text: its segments' texts joined in their UDH order. */
  text: string;
  /** Each segment's own text, decoded alone (as a handset that shows segments as they come would). */
  parts: string[];
  dataCoding: number;
  segments: number;
  registeredDelivery: number;
  /** The first segment's message id (what a sender keeps), then every segment's. */
  messageId: string;
  messageIds: string[];
  /** When its last segment arrived (ms since the epoch). */
  at: number;
}

export interface SmppBind {
  command: string;
  systemId: string;
  systemType: string;
  interfaceVersion: number;
  /** What it was answered: 0 when bound. */
  status: number;
}

export interface SmppServerOptions {
  systemId: string;
  password: string;
  idleTimeoutMs?: number;
}

export interface SmppServerFake {
  host: string;
  port: number;
  /** `smpp://127.0.0.1:<port>`. */
  url: string;
  /** Accepted messages, whole, in the order their last segment was accepted. */
  submits(): SmppSubmit[];
  /** submit_sm PDUs received (one per segment), answered or not. */
  received(): number;
  /** Sessions bound and open now. */
  sessions(): number;
  /** Every bind attempt, accepted or refused. */
  binds(): SmppBind[];
  /** enquire_link received from clients. */
  enquireLinks(): number;
  /** The most submit_sm a session had received and not yet answered at once. */
  maxOutstandingSeen(): number;
  /** Forgets what was received and every scripted behaviour. */
  reset(): void;
  refuseBinds(on: boolean): void;
  throttleNext(n: number): void;
  failNext(n: number, status: number): void;
  delay(ms: number): void;
  /**
   * A delivery receipt for a message it accepted, on the newest bound session: the standard text
   * (`id:... sub:... dlvrd:... submit date:... done date:... stat:... err:... text:...`) with the
   * receipted_message_id and message_state TLVs (`withoutTlvs`: the text alone). Resolves with the
   * status of the client's deliver_sm_resp.
   */
  deliverReceipt(messageId: string, stat?: string, options?: { err?: string; withoutTlvs?: boolean }): Promise<number>;
  /** A message from a handset (not a receipt); resolves with the client's deliver_sm_resp status. */
  deliverMessage(from: string, text: string): Promise<number>;
  /** An enquire_link to every bound session; resolves with how many answered within a second. */
  enquireLink(): Promise<number>;
  /** Destroys every client connection. */
  dropConnections(): void;
  stop(): Promise<void>;
}

const MESSAGE_STATES: Record<string, number> = { ENROUTE: 1, DELIVRD: 2, EXPIRED: 3, DELETED: 4, UNDELIV: 5, ACCEPTD: 6, UNKNOWN: 7, REJECTD: 8 };
const { ESME_RBINDFAIL, ESME_RINVBNDSTS, ESME_RINVPASWD, ESME_RINVSYSID, ESME_RTHROTTLED } = smpp.errors as Record<string, number>;

interface SessionState {
  bound: boolean;
  outstanding: number;
  boundAt: number;
  idle?: NodeJS.Timeout;
}

/** Segments of a concatenated message received so far, by their parts' numbers. */
interface Pending {
  parts: Map<number, { text: string; messageId: string }>;
  total: number;
}

/** `yyMMddHHmm`, the receipt's date form. */
const receiptDate = (at: number) => new Date(at).toISOString().replace(/\D/g, '').slice(2, 12);

export async function startSmppServer(options: SmppServerOptions): Promise<SmppServerFake> {
  const states = new Map<smpp.Session, SessionState>();
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, work: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      work();
    }, ms);
    timers.add(timer);
    return timer;
  };

  let submits: SmppSubmit[] = [];
  let binds: SmppBind[] = [];
  let pending = new Map<string, Pending>();
  let received = 0;
  let enquireLinks = 0;
  let maxOutstanding = 0;
  let refusing = false;
  let throttleLeft = 0;
  let failLeft = 0;
  let failStatus = 0;
  let delayMs = 0;
  let nextId = 1;

  const textOf = (pdu: smpp.PDU) => {
    const sm = pdu.short_message;
    if (!sm) return { text: '', udh: [] as Buffer[] };
    if (Buffer.isBuffer(sm)) return { text: sm.toString('latin1'), udh: [] as Buffer[] };
    return { text: typeof sm.message === 'string' ? sm.message : sm.message.toString('latin1'), udh: sm.udh ?? [] };
  };

  /** Records an accepted segment; a message is whole once every segment its UDH announces is in. */
  function accept(pdu: smpp.PDU, messageId: string, at: number) {
    const { text, udh } = textOf(pdu);
    const message = (texts: { text: string; messageId: string }[]): SmppSubmit => ({
      destination: pdu.destination_addr ?? '',
      destTon: pdu.dest_addr_ton ?? 0,
      destNpi: pdu.dest_addr_npi ?? 0,
      source: pdu.source_addr ?? '',
      sourceTon: pdu.source_addr_ton ?? 0,
      sourceNpi: pdu.source_addr_npi ?? 0,
      text: texts.map((t) => t.text).join(''),
      parts: texts.map((t) => t.text),
      dataCoding: pdu.data_coding ?? 0,
      segments: texts.length,
      registeredDelivery: pdu.registered_delivery ?? 0,
      messageId: texts[0]!.messageId,
      messageIds: texts.map((t) => t.messageId),
      at,
    });
    // Concatenation: IEI 0 (8-bit reference) or 8 (16-bit), then reference, total, number.
    const concat = udh.find((ie) => ie[0] === 0x00 || ie[0] === 0x08);
    if (!concat) return void submits.push(message([{ text, messageId }]));
    const wide = concat[0] === 0x08;
    const reference = wide ? concat.readUInt16BE(2) : concat[2]!;
    const [total, number] = wide ? [concat[4]!, concat[5]!] : [concat[3]!, concat[4]!];
    const key = `${pdu.source_addr}|${pdu.destination_addr}|${reference}|${total}`;
    let entry = pending.get(key);
    if (!entry) pending.set(key, (entry = { parts: new Map(), total }));
    entry.parts.set(number, { text, messageId });
    if (entry.parts.size < entry.total) return;
    pending.delete(key);
    submits.push(message([...entry.parts].sort(([a], [b]) => a - b).map(([, part]) => part)));
  }

  function onSession(session: smpp.Session) {
    const state: SessionState = { bound: false, outstanding: 0, boundAt: 0 };
    states.set(session, state);
    session.socket.setNoDelay(true);
    // A client that goes away mid-write resets the socket; the fake only forgets the session.
    session.on('error', () => session.destroy());
    session.socket.on('close', () => {
      clearTimeout(state.idle);
      states.delete(session);
    });
    const touch = () => {
      if (!options.idleTimeoutMs) return;
      clearTimeout(state.idle);
      state.idle = setTimeout(() => session.destroy(), options.idleTimeoutMs);
    };
    touch();
    session.on('pdu', touch);

    for (const command of ['bind_transceiver', 'bind_transmitter', 'bind_receiver']) {
      session.on(command, (pdu: smpp.PDU) => {
        const status = refusing
          ? ESME_RBINDFAIL
          : pdu.system_id !== options.systemId
            ? ESME_RINVSYSID
            : pdu.password !== options.password
              ? ESME_RINVPASWD
              : 0;
        binds.push({ command, systemId: pdu.system_id ?? '', systemType: pdu.system_type ?? '', interfaceVersion: pdu.interface_version ?? 0, status });
        if (status) {
          session.send(pdu.response({ command_status: status }));
          return session.close();
        }
        state.bound = true;
        state.boundAt = Date.now();
        session.send(pdu.response({ system_id: 'FakeSMSC' }));
      });
    }

    session.on('submit_sm', (pdu: smpp.PDU) => {
      if (!state.bound) return void session.send(pdu.response({ command_status: ESME_RINVBNDSTS }));
      received++;
      const at = Date.now();
      state.outstanding++;
      maxOutstanding = Math.max(maxOutstanding, state.outstanding);
      let status = 0;
      if (throttleLeft > 0) {
        throttleLeft--;
        status = ESME_RTHROTTLED;
      } else if (failLeft > 0) {
        failLeft--;
        status = failStatus;
      }
      const answer = () => {
        state.outstanding--;
        if (!states.has(session)) return;
        if (status) return void session.send(pdu.response({ command_status: status }));
        const messageId = (nextId++).toString(16).padStart(8, '0');
        accept(pdu, messageId, at);
        session.send(pdu.response({ message_id: messageId }));
      };
      if (delayMs > 0) later(delayMs, answer);
      else answer();
    });

    session.on('enquire_link', (pdu: smpp.PDU) => {
      enquireLinks++;
      session.send(pdu.response());
    });
    session.on('unbind', (pdu: smpp.PDU) => {
      session.send(pdu.response());
      session.close();
    });
  }

  const server = smpp.createServer(onSession);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;

  /** The newest bound session: where an SMSC sends what is for the account. */
  const boundSession = () => {
    const bound = [...states].filter(([, s]) => s.bound).sort(([, a], [, b]) => b.boundAt - a.boundAt);
    if (!bound.length) throw new Error('fake SMSC: no bound session to deliver on');
    return bound[0]![0];
  };

  const deliver = (fields: Record<string, unknown>) =>
    new Promise<number>((resolve) => {
      boundSession().deliver_sm(fields, (resp) => resolve(resp.command_status));
    });

  return {
    host: '127.0.0.1',
    port,
    url: `smpp://127.0.0.1:${port}`,
    submits: () => [...submits],
    received: () => received,
    sessions: () => [...states.values()].filter((s) => s.bound).length,
    binds: () => [...binds],
    enquireLinks: () => enquireLinks,
    maxOutstandingSeen: () => maxOutstanding,
    reset() {
      submits = [];
      binds = [];
      pending = new Map();
      received = enquireLinks = maxOutstanding = 0;
      refusing = false;
      throttleLeft = failLeft = failStatus = delayMs = 0;
    },
    refuseBinds: (on) => void (refusing = on),
    throttleNext: (n) => void (throttleLeft = n),
    failNext(n, status) {
      failLeft = n;
      failStatus = status;
    },
    delay: (ms) => void (delayMs = ms),
    deliverReceipt(messageId, stat = 'DELIVRD', receiptOptions = {}) {
      const submit = submits.find((s) => s.messageIds.includes(messageId));
      const now = Date.now();
      const err = receiptOptions.err ?? (stat === 'DELIVRD' ? '000' : '001');
      const excerpt = (submit?.text ?? '').slice(0, 20).replace(/[^\x20-\x7e]/g, '?');
      const date = receiptDate(submit?.at ?? now);
      const text = `id:${messageId} sub:001 dlvrd:${stat === 'DELIVRD' ? '001' : '000'} submit date:${date} done date:${receiptDate(now)} stat:${stat} err:${err} text:${excerpt}`;
      return deliver({
        source_addr: submit?.destination ?? '',
        source_addr_ton: 1,
        source_addr_npi: 1,
        destination_addr: submit?.source ?? '',
        esm_class: 0x04,
        data_coding: 0,
        // The receipt text as SMSCs send it: ASCII bytes.
        short_message: Buffer.from(text, 'latin1'),
        ...(receiptOptions.withoutTlvs ? {} : { receipted_message_id: messageId, message_state: MESSAGE_STATES[stat] ?? 7 }),
      });
    },
    deliverMessage: (from, text) => deliver({ source_addr: from, source_addr_ton: 1, source_addr_npi: 1, esm_class: 0, data_coding: 0, short_message: text }),
    async enquireLink() {
      const answers = [...states].filter(([, s]) => s.bound).map(
        ([session]) =>
          new Promise<number>((resolve) => {
            const timer = later(1000, () => resolve(0));
            session.enquire_link(() => {
              clearTimeout(timer);
              timers.delete(timer);
              resolve(1);
            });
          }),
      );
      return (await Promise.all(answers)).reduce((a, b) => a + b, 0);
    },
    dropConnections() {
      for (const session of states.keys()) session.destroy();
    },
    async stop() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const session of states.keys()) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
