import smpp from 'smpp';
import {
  bodyOf,
  type DeliveryResult,
  type OutboundMessage,
  type DeliveryTarget,
  type ProviderAccount,
  type ProviderAdapter,
  type ProviderField,
  type ProviderReport,
  type SendOptions,
} from '../types.js';

/** An SMPP 3.4 account at an aggregator's or operator's SMSC. */
export const SMPP_FIELDS: readonly ProviderField[] = [
  { name: 'host', required: true, description: "The SMSC's host name or address." },
  { name: 'port', kind: 'integer', description: 'The SMPP port (default 2775).' },
  { name: 'systemId', required: true, description: 'The system_id the account binds with.' },
  { name: 'systemType', description: 'The system_type, for an SMSC that asks for one.' },
  { name: 'sourceAddr', required: true, description: 'The sender: an alphanumeric id (11 characters at most), a short code or an international number.' },
  { name: 'sourceAddrTon', kind: 'integer', description: "The sender's type of number (default 5 for an alphanumeric id, 3 for a short code, 1 for a number)." },
  { name: 'sourceAddrNpi', kind: 'integer', description: "The sender's numbering plan (default 0 for an alphanumeric id or a short code, 1 for a number)." },
  { name: 'window', kind: 'integer', description: "Messages awaiting the SMSC's answer at once (default 10): what the SMSC allows the account." },
  { name: 'password', secret: true, required: true, description: 'The password the account binds with.' },
];

export interface SmppOptions {
  /** Limit on a bind, on waiting for one, and on each submit_sm's answer. */
  timeoutMs: number;
  /**
   * Receives each final delivery receipt. The receipt is answered once it settles: a rejection
   * answers a temporary error (ESME_RX_T_APPN), so the SMSC sends the receipt again later.
   */
  onReport: (account: ProviderAccount, report: ProviderReport) => Promise<void> | void;
  /** An enquire_link this often while bound (default 30 s): SMSCs drop a silent session. */
  enquireLinkMs?: number;
  /** Waits between attempts to bind again after a drop or a failure, doubling (default 1 s to 30 s). */
  reconnect?: { initialMs: number; maxMs: number };
}

export interface SmppSessionInfo {
  accountId: string;
  state: 'connecting' | 'bound' | 'closed';
  /** submit_sm written and not answered yet. */
  outstanding: number;
}

export type SmppAdapter = ProviderAdapter & { sessions(): SmppSessionInfo[]; close(): Promise<void> };

// ---- Texts and segments ---------------------------------------------------------------------

// The GSM 03.38 tables the library encodes data_coding 0 with, so that what is counted is what is
// sent. Its table holds the escape (0x1B) at its position; a text's own ESC character is not GSM.
const GSM_BASIC = new Set([...smpp.gsmCoder.GSM.chars].filter((c) => c !== '\x1b'));
const GSM_EXTENDED = new Set(smpp.gsmCoder.GSM.extChars);

const isGsm = (text: string) => {
  for (const c of text) if (!GSM_BASIC.has(c) && !GSM_EXTENDED.has(c)) return false;
  return true;
};

interface Split {
  encoding: 'GSM7' | 'UCS2';
  dataCoding: 0 | 8;
  /** One text per SMS, each cut on a character (an extension character or a surrogate pair stays whole). */
  parts: string[];
  /** The parts encoded, once for every recipient of the text. */
  encoded?: Buffer[];
}

/** 160 septets or 70 UCS-2 units alone; 153 or 67 per segment once a 6-octet UDH takes its room. */
function splitText(text: string): Split {
  const gsm = isGsm(text);
  const size = gsm ? (c: string) => (GSM_EXTENDED.has(c) ? 2 : 1) : (c: string) => c.length;
  const [single, segment] = gsm ? [160, 153] : [70, 67];
  const split = { encoding: gsm ? 'GSM7' : 'UCS2', dataCoding: gsm ? 0 : 8 } as const;
  let total = 0;
  for (const c of text) total += size(c);
  if (total <= single) return { ...split, parts: [text] };
  const parts: string[] = [];
  let part = '';
  let used = 0;
  for (const c of text) {
    if (used + size(c) > segment) {
      parts.push(part);
      part = '';
      used = 0;
    }
    part += c;
    used += size(c);
  }
  parts.push(part);
  return { ...split, parts };
}

/** How a text goes out over SMPP: its encoding and how many SMS it takes (what it is priced by). */
export function smsSegments(text: string): { encoding: 'GSM7' | 'UCS2'; segments: number } {
  const { encoding, parts } = splitText(text);
  return { encoding, segments: parts.length };
}

/**
 * The submit_sm of each segment. Data coding is always set: left out, the library guesses, and
 * marks a GSM text as IA5 (1) and a Latin-1 one as 3, which SMSCs render wrongly. The text is
 * encoded here (GSM unpacked, UCS-2 big-endian); the library adds the UDH and sets the UDHI bit.
 */
function segmentPdus(split: Split, common: Record<string, unknown>, reference: () => number): Record<string, unknown>[] {
  const encoding = split.dataCoding === 0 ? smpp.encodings.ASCII : smpp.encodings.UCS2;
  // The library only reads these buffers: one encoding serves every recipient of the text.
  const encoded = (split.encoded ??= split.parts.map((text) => encoding.encode(text)));
  const base = { ...common, data_coding: split.dataCoding };
  if (encoded.length === 1) return [{ ...base, short_message: encoded[0]! }];
  const ref = reference();
  const total = encoded.length;
  return encoded.map((message, i) => ({
    ...base,
    // Concatenation with an 8-bit reference: IEI 0, length 3, reference, total, this one's number.
    short_message: { udh: Buffer.from([5, 0, 3, ref, total, i + 1]), message },
  }));
}

// ---- Command statuses -----------------------------------------------------------------------

const STATUS_NAMES = new Map(Object.entries(smpp.errors).map(([name, value]) => [value, name]));
const statusText = (status: number) => `${STATUS_NAMES.get(status) ?? 'unknown status'} (0x${status.toString(16).toUpperCase().padStart(2, '0')})`;

/** ESME_RMSGQFUL, ESME_RTHROTTLED: the SMSC asks to slow down. */
const THROTTLING = new Set([0x14, 0x58]);
/** ESME_RINVBNDSTS, ESME_RSYSERR, ESME_RX_T_APPN: the SMSC's own trouble, worth another try. */
const TRANSIENT = new Set([0x04, 0x08, 0x64]);
/** The account's, not the recipient's: a sender, system type or service it may not use. */
const ACCOUNT = new Set([0x0a, 0x0d, 0x0e, 0x0f, 0x48, 0x49, 0x53, 0x100, 0x101, 0x103]);
const ESME_RINVCMDID = 0x03;
const ESME_RX_T_APPN = 0x64;

type Outcome =
  | { ok: true; messageId: string }
  | { ok: false; error: string; retryable: boolean; throttled?: boolean; providerFault?: boolean };

const failure = (reason: string, retryable: boolean): Outcome => ({ ok: false, error: `SMPP: ${reason}`, retryable });

function refused(status: number): Outcome {
  const error = `SMPP: ${statusText(status)}`;
  if (THROTTLING.has(status)) return { ok: false, error, retryable: true, throttled: true };
  if (ACCOUNT.has(status)) return { ok: false, error, retryable: false, providerFault: true };
  return { ok: false, error, retryable: TRANSIENT.has(status) };
}

// ---- Delivery receipts ----------------------------------------------------------------------

/** Message states (SMPP 3.4, 5.2.28) by the receipt's `stat:` word, known by its first five letters. */
const STATE_OF_STAT: Record<string, number> = { ENROU: 1, DELIV: 2, EXPIR: 3, DELET: 4, UNDEL: 5, ACCEP: 6, UNKNO: 7, REJEC: 8 };
const STAT_OF_STATE = ['SCHEDULED', 'ENROUTE', 'DELIVRD', 'EXPIRED', 'DELETED', 'UNDELIV', 'ACCEPTD', 'UNKNOWN', 'REJECTD', 'SKIPPED'];
const NOT_DELIVERED = new Set([3, 4, 5, 7, 8]);

function textOf(message: smpp.PDU['short_message']): string {
  if (!message) return '';
  if (Buffer.isBuffer(message)) return message.toString('latin1');
  return typeof message.message === 'string' ? message.message : message.message.toString('latin1');
}

/**
 * A receipt's final state, or undefined for an intermediate one (ENROUTE, ACCEPTD) or one naming no
 * message. Its `done date` is not used: SMPP dates carry no time zone, so the receipt's arrival is
 * the better time.
 */
function readReceipt(pdu: smpp.PDU): ProviderReport | undefined {
  const text = textOf(pdu.short_message) || textOf(pdu.message_payload);
  const id = pdu.receipted_message_id?.trim() || /\bid:(\S+)/i.exec(text)?.[1];
  if (!id) return undefined;
  const stat = /\bstat:(\S+)/i.exec(text)?.[1]?.toUpperCase();
  const err = /\berr:(\S+)/i.exec(text)?.[1];
  const state = typeof pdu.message_state === 'number' ? pdu.message_state : stat ? STATE_OF_STAT[stat.slice(0, 5)] : undefined;
  if (state === undefined || (state !== 2 && !NOT_DELIVERED.has(state))) return undefined;
  const status = stat ?? STAT_OF_STATE[state]!;
  const report: ProviderReport = { providerMessageId: id, delivered: state === 2, at: new Date(), status };
  if (state !== 2) report.error = `SMPP: ${status}${err ? ` (err ${err})` : ''}`;
  return report;
}

// ---- Settings -------------------------------------------------------------------------------

interface SmppConfig {
  host: string;
  port: number;
  systemId: string;
  systemType: string;
  password: string;
  window: number;
  source: { source_addr: string; source_addr_ton: number; source_addr_npi: number };
}

function readConfig(account: ProviderAccount): SmppConfig | string {
  const { settings, secrets } = account;
  const text = (value: unknown) => (value === undefined || value === null ? '' : String(value).trim());
  const missing = ['host', 'systemId', 'sourceAddr'].filter((name) => !text(settings[name]));
  if (!secrets.password) missing.push('password');
  if (missing.length) return `missing ${missing.join(', ')}`;
  const integer = (name: string, min: number, max: number, fallback?: number) => {
    const raw = text(settings[name]);
    if (!raw) return fallback;
    const value = Number(raw);
    return Number.isInteger(value) && value >= min && value <= max ? value : Number.NaN;
  };
  const port = integer('port', 1, 65_535, 2775)!;
  const window = integer('window', 1, 10_000, 10)!;
  const ton = integer('sourceAddrTon', 0, 255);
  const npi = integer('sourceAddrNpi', 0, 255);
  const invalid = Object.entries({ port, window, sourceAddrTon: ton, sourceAddrNpi: npi }).filter(([, v]) => Number.isNaN(v));
  if (invalid.length) return `invalid ${invalid.map(([name]) => name).join(', ')}`;
  // An alphanumeric sender is TON 5, NPI 0; a short code TON 3 (network specific), NPI 0; any other
  // number international E.164, TON 1, NPI 1, written without its '+'.
  const addr = text(settings.sourceAddr);
  const numeric = /^\+?\d+$/.test(addr);
  const [derivedTon, derivedNpi] = !numeric ? [5, 0] : addr.startsWith('+') || addr.length > 8 ? [1, 1] : [3, 0];
  return {
    host: text(settings.host),
    port,
    systemId: text(settings.systemId),
    systemType: text(settings.systemType),
    password: secrets.password,
    window,
    source: { source_addr: numeric ? addr.replace(/^\+/, '') : addr, source_addr_ton: ton ?? derivedTon, source_addr_npi: npi ?? derivedNpi },
  };
}

// ---- The session ----------------------------------------------------------------------------

interface Timing {
  timeoutMs: number;
  enquireLinkMs: number;
  initialMs: number;
  maxMs: number;
}

/** One submit_sm waiting for its turn in the window (and, while not bound, for a bind). */
interface Submission {
  pdu: Record<string, unknown>;
  resolve: (outcome: Outcome) => void;
  settled: boolean;
  /** Runs while it waits for a bind. */
  timer?: NodeJS.Timeout;
}

/** First in, first out, taking from the head without moving the rest (a campaign queues thousands). */
class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  push(item: T) {
    this.items.push(item);
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) this.clear();
    else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  clear() {
    this.items = [];
    this.head = 0;
  }

  *[Symbol.iterator]() {
    for (let i = this.head; i < this.items.length; i++) yield this.items[i]!;
  }
}

/**
 * One account's transceiver session: bound on first use, kept bound (enquire_link, binding again
 * with backoff after a drop, since receipts arrive on it) until closed. Submissions go out in turn,
 * at most `window` unanswered, transactional ones before bulk ones.
 */
class SmppSession {
  state: SmppSessionInfo['state'] = 'closed';
  outstanding = 0;
  window: number;
  private link?: smpp.Session;
  private readonly transactional = new Fifo<Submission>();
  private readonly bulk = new Fifo<Submission>();
  /** By sequence number, in the order written: their deadlines come in the same order. */
  private readonly inFlight = new Map<number, { submission: Submission; deadline: number }>();
  /** Fires at the oldest unanswered submit_sm's deadline (one timer for the window, not one each). */
  private deadlineTimer?: NodeJS.Timeout;
  /** Writes of this turn of the event loop go out together (the socket is corked until the next tick). */
  private corked = false;
  /** A pump is due once this turn's answers are read. */
  private pumpSoon = false;
  /** The last bind attempt's failure, until a bind succeeds: sends meanwhile fail at once with it. */
  private failure?: string;
  private retryAt = 0;
  private backoffMs: number;
  private everBound = false;
  private closing = false;
  private reconnectTimer?: NodeJS.Timeout;
  private attemptTimer?: NodeJS.Timeout;
  private enquireTimer?: NodeJS.Timeout;
  private enquireDeadline?: NodeJS.Timeout;
  private whenIdle?: () => void;
  private reference = Math.floor(Math.random() * 256);

  constructor(
    readonly fingerprint: string,
    private readonly config: SmppConfig,
    public account: ProviderAccount,
    private readonly timing: Timing,
    private readonly onReport: SmppOptions['onReport'],
  ) {
    this.window = config.window;
    this.backoffMs = timing.initialMs;
  }

  nextReference = () => (this.reference = (this.reference + 1) & 0xff);

  /** A message's segments in order; the first failure ends it, its later segments unsent. */
  async submit(pdus: Record<string, unknown>[], lane: SendOptions['lane']): Promise<Outcome> {
    let first: string | undefined;
    for (const pdu of pdus) {
      const outcome = await this.submitOne(pdu, lane);
      if (!outcome.ok) return outcome;
      first ??= outcome.messageId;
    }
    return { ok: true, messageId: first! };
  }

  private submitOne(pdu: Record<string, unknown>, lane: SendOptions['lane']): Promise<Outcome> {
    if (this.closing) return Promise.resolve(failure('session closed', true));
    if (this.state !== 'bound' && !this.link) {
      if (this.failure && (this.reconnectTimer || Date.now() < this.retryAt)) return Promise.resolve(this.bindFailure());
      if (!this.reconnectTimer) this.connect();
    }
    return new Promise((resolve) => {
      const submission: Submission = { pdu, resolve, settled: false };
      (lane === 'transactional' ? this.transactional : this.bulk).push(submission);
      if (this.state === 'bound') this.pump();
      else this.awaitBind(submission);
    });
  }

  /** A failed bind is the provider's (another may carry the message) and may pass. */
  private bindFailure(): Outcome {
    return { ok: false, error: this.failure!, retryable: true, providerFault: true };
  }

  private awaitBind(submission: Submission) {
    submission.timer ??= setTimeout(() => this.settle(submission, failure(`not bound within ${this.timing.timeoutMs} ms`, true)), this.timing.timeoutMs);
  }

  private stopWaiting(submission: Submission) {
    clearTimeout(submission.timer);
    submission.timer = undefined;
  }

  private settle(submission: Submission, outcome: Outcome) {
    if (submission.settled) return;
    submission.settled = true;
    this.stopWaiting(submission);
    submission.resolve(outcome);
  }

  private failQueued(outcome: Outcome) {
    for (const queue of [this.transactional, this.bulk]) {
      for (const submission of queue) this.settle(submission, outcome);
      queue.clear();
    }
  }

  private pump() {
    while (this.state === 'bound' && this.outstanding < this.window) {
      const submission = this.transactional.shift() ?? this.bulk.shift();
      if (!submission) return;
      if (submission.settled) continue;
      this.stopWaiting(submission);
      const link = this.link!;
      const pdu = new smpp.PDU('submit_sm', submission.pdu);
      this.cork(link);
      if (!link.send(pdu)) {
        this.settle(submission, failure('connection lost before submit_sm', true));
        this.lost(link, 'socket closed');
        return;
      }
      this.outstanding++;
      this.inFlight.set(pdu.sequence_number, { submission, deadline: Date.now() + this.timing.timeoutMs });
      this.deadlineTimer ??= setTimeout(() => this.expire(), this.timing.timeoutMs);
    }
  }

  /**
   * Holds the socket's writes until the next tick: the submit_sm written as a burst of answers
   * frees the window (or as a send queues its recipients) leave in one segment, not one each.
   */
  private cork(link: smpp.Session) {
    if (this.corked) return;
    this.corked = true;
    link.socket.cork();
    process.nextTick(() => {
      this.corked = false;
      link.socket.uncork();
    });
  }

  /** The submit_sm past their deadline fail (retryable); the timer is set again for the next oldest. */
  private expire() {
    this.deadlineTimer = undefined;
    const now = Date.now();
    for (const [sequence, entry] of this.inFlight) {
      if (entry.deadline > now) {
        clearTimeout(this.deadlineTimer);
        this.deadlineTimer = setTimeout(() => this.expire(), entry.deadline - now);
        return;
      }
      this.answered(sequence, failure(`no submit_sm_resp within ${this.timing.timeoutMs} ms`, true));
    }
  }

  private answered(sequence: number, outcome: Outcome) {
    const entry = this.inFlight.get(sequence);
    if (!entry) return;
    this.inFlight.delete(sequence);
    if (this.inFlight.size === 0) {
      clearTimeout(this.deadlineTimer);
      this.deadlineTimer = undefined;
    }
    this.outstanding--;
    this.settle(entry.submission, outcome);
    if (this.inFlight.size === 0) this.whenIdle?.();
    // The window's freed places are filled once the answers read in this turn are all in: their
    // submit_sm then leave in one write, not one each.
    if (!this.pumpSoon) {
      this.pumpSoon = true;
      setImmediate(() => {
        this.pumpSoon = false;
        this.pump();
      });
    }
  }

  private connect() {
    this.reconnectTimer = undefined;
    this.state = 'connecting';
    const { host, port, systemId, password, systemType } = this.config;
    const link = smpp.connect({ host, port });
    // Without it Nagle holds each submit_sm written while one is unacknowledged until the SMSC's
    // delayed ACK (40 ms and more), and the window never fills.
    link.socket.setNoDelay(true);
    this.link = link;
    let bound = false;
    let lastError: (Error & { code?: string }) | undefined;
    this.attemptTimer = setTimeout(() => this.attemptFailed(link, `bind failed: no bind_transceiver_resp within ${this.timing.timeoutMs} ms`), this.timing.timeoutMs);
    link.on('connect', () => {
      link.bind_transceiver({ system_id: systemId, password, system_type: systemType, interface_version: 0x34 }, (resp) => {
        if (resp.command_status !== 0) return this.attemptFailed(link, `bind refused: ${statusText(resp.command_status)}`);
        bound = true;
        this.bound(link);
      });
    });
    link.on('pdu', (pdu: smpp.PDU) => this.received(link, pdu));
    // The library reports socket errors and unreadable PDUs here; either way the link is done.
    link.on('error', (err: Error & { code?: string }) => {
      lastError = err;
      link.destroy();
    });
    link.on('close', () => {
      const reason = lastError ? (lastError.code === 'ECONNREFUSED' ? 'connection refused (ECONNREFUSED)' : `connection failed (${lastError.code ?? lastError.message})`) : 'connection closed';
      if (bound) this.lost(link, reason);
      else this.attemptFailed(link, `bind failed: ${reason}`);
    });
  }

  private bound(link: smpp.Session) {
    if (link !== this.link) return;
    clearTimeout(this.attemptTimer);
    this.state = 'bound';
    this.everBound = true;
    this.failure = undefined;
    this.backoffMs = this.timing.initialMs;
    for (const queue of [this.transactional, this.bulk]) for (const submission of queue) this.stopWaiting(submission);
    this.enquireTimer = setInterval(() => this.enquire(link), this.timing.enquireLinkMs);
    this.pump();
  }

  private attemptFailed(link: smpp.Session, reason: string) {
    if (link !== this.link) return;
    this.link = undefined;
    clearTimeout(this.attemptTimer);
    link.destroy();
    this.failure = `SMPP: ${reason}`;
    this.failQueued(this.bindFailure());
    if (this.closing) {
      this.state = 'closed';
      return;
    }
    const delay = this.backoff();
    // A session that was bound keeps trying (receipts for its messages arrive on it); one that
    // never was waits for the next send, and sends before `retryAt` fail at once.
    if (this.everBound) {
      this.state = 'connecting';
      this.reconnectTimer = setTimeout(() => this.connect(), delay);
    } else {
      this.state = 'closed';
      this.retryAt = Date.now() + delay;
    }
  }

  /** The bound link is gone: what was unanswered fails (it may or may not have been taken), what was queued waits for the next bind. */
  private lost(link: smpp.Session, reason: string, graceful = false) {
    if (link !== this.link) return;
    this.link = undefined;
    this.stopEnquiring();
    if (graceful) link.close();
    else link.destroy();
    this.state = this.closing ? 'closed' : 'connecting';
    for (const sequence of [...this.inFlight.keys()]) this.answered(sequence, failure(`connection lost before submit_sm_resp (${reason})`, true));
    if (this.closing) return this.failQueued(failure('session closed', true));
    for (const queue of [this.transactional, this.bulk]) for (const submission of queue) if (!submission.settled) this.awaitBind(submission);
    this.reconnectTimer = setTimeout(() => this.connect(), this.backoff());
  }

  private backoff(): number {
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, this.timing.maxMs);
    return delay;
  }

  /** One enquire_link at a time; no answer within the timeout means the link is dead. */
  private enquire(link: smpp.Session) {
    if (this.enquireDeadline) return;
    const deadline = setTimeout(() => {
      this.enquireDeadline = undefined;
      this.lost(link, `no enquire_link_resp within ${this.timing.timeoutMs} ms`);
    }, this.timing.timeoutMs);
    this.enquireDeadline = deadline;
    link.enquire_link(() => {
      clearTimeout(deadline);
      if (this.enquireDeadline === deadline) this.enquireDeadline = undefined;
    });
  }

  private stopEnquiring() {
    clearInterval(this.enquireTimer);
    clearTimeout(this.enquireDeadline);
    this.enquireTimer = this.enquireDeadline = undefined;
  }

  private received(link: smpp.Session, pdu: smpp.PDU) {
    if (link !== this.link) return;
    if (pdu.isResponse()) {
      if (pdu.command === 'submit_sm_resp' && pdu.command_status === 0) this.answered(pdu.sequence_number, { ok: true, messageId: String(pdu.message_id ?? '') });
      else if (pdu.command === 'submit_sm_resp' || pdu.command === 'generic_nack') this.answered(pdu.sequence_number, refused(pdu.command_status));
      return;
    }
    switch (pdu.command) {
      case 'deliver_sm':
      case 'data_sm':
        return void this.deliver(link, pdu);
      case 'enquire_link':
        return void link.send(pdu.response());
      case 'unbind':
        link.send(pdu.response());
        return this.lost(link, 'the SMSC unbound', true);
      case 'alert_notification':
        return;
      default:
        link.send(new smpp.PDU('generic_nack', { sequence_number: pdu.sequence_number, command_status: ESME_RINVCMDID }));
    }
  }

  /** Receipts are reported; a message from a handset (no receipt) is answered and left alone. */
  private async deliver(link: smpp.Session, pdu: smpp.PDU) {
    const receipt = ((pdu.esm_class ?? 0) & 0x3c) === 0x04 ? readReceipt(pdu) : undefined;
    let status = 0;
    if (receipt) {
      try {
        await this.onReport(this.account, receipt);
      } catch {
        status = ESME_RX_T_APPN;
      }
    }
    link.send(pdu.response({ command_status: status }));
  }

  /** Sends nothing more: what is queued fails (retryable), what is unanswered is waited for, then unbinds. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    this.failQueued(failure('session closed', true));
    const link = this.link;
    if (link && this.state === 'bound') {
      if (this.inFlight.size) await new Promise<void>((resolve) => (this.whenIdle = resolve));
      if (this.link === link) await unbind(link, Math.min(this.timing.timeoutMs, 2000));
    }
    clearTimeout(this.attemptTimer);
    this.stopEnquiring();
    this.link = undefined;
    link?.destroy();
    this.state = 'closed';
  }
}

/** Unbinds, waiting for the SMSC's unbind_resp at most `ms`. */
function unbind(link: smpp.Session, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    if (!link.unbind(done)) done();
  });
}

// ---- The adapter ----------------------------------------------------------------------------

/**
 * SMPP 3.4 over one transceiver session per account and process, shared by every send: each
 * recipient is a submit_sm (or one per segment of a long text, concatenated by UDH) with a
 * delivery receipt requested; receipts come back on the same session to `onReport`. A long text's
 * id is its first segment's, so the receipts of its other segments name ids no send answered.
 */
export function createSmppAdapter(options: SmppOptions): SmppAdapter {
  const timing: Timing = {
    timeoutMs: options.timeoutMs,
    enquireLinkMs: options.enquireLinkMs ?? 30_000,
    initialMs: options.reconnect?.initialMs ?? 1000,
    maxMs: options.reconnect?.maxMs ?? 30_000,
  };
  const sessions = new Map<string, SmppSession>();
  /** Sessions whose account changed how it binds, closing once their answers are in. */
  const retiring = new Set<Promise<void>>();

  function sessionFor(account: ProviderAccount, config: SmppConfig): SmppSession {
    const fingerprint = JSON.stringify([config.host, config.port, config.systemId, config.systemType, config.password]);
    let session = sessions.get(account.id);
    if (session && session.fingerprint !== fingerprint) {
      const closing = session.close().finally(() => retiring.delete(closing));
      retiring.add(closing);
      session = undefined;
    }
    if (!session) sessions.set(account.id, (session = new SmppSession(fingerprint, config, account, timing, options.onReport)));
    session.account = account;
    session.window = config.window;
    return session;
  }

  return {
    channel: 'sms',
    async send(message: OutboundMessage, targets: DeliveryTarget[], account: ProviderAccount, sendOptions?: SendOptions): Promise<DeliveryResult[]> {
      if (!targets.length) return [];
      const config = readConfig(account);
      if (typeof config === 'string') {
        const host = account.settings.host;
        const network = host ? `smpp:${host}` : 'smpp';
        return targets.map((t) => ({ recipient: t.recipient, ok: false, error: `SMPP: ${config}`, retryable: false, providerFault: true, network }));
      }
      const network = `smpp:${config.host}`;
      const session = sessionFor(account, config);
      const splits = new Map<string, Split>();
      return Promise.all(
        targets.map(async (target): Promise<DeliveryResult> => {
          const body = bodyOf(message, target);
          let split = splits.get(body);
          if (!split) splits.set(body, (split = splitText(body)));
          const destination = target.recipient.replace(/^\+/, '');
          let outcome: Outcome;
          if (!/^\d{5,15}$/.test(destination)) outcome = failure(`invalid destination ${target.recipient}`, false);
          else if (split.parts.length > 255) outcome = failure(`text too long (${split.parts.length} segments, at most 255)`, false);
          else {
            const common = { ...config.source, dest_addr_ton: 1, dest_addr_npi: 1, destination_addr: destination, registered_delivery: 1 };
            outcome = await session.submit(segmentPdus(split, common, session.nextReference), sendOptions?.lane);
          }
          if (outcome.ok) return { recipient: target.recipient, ok: true, network, providerMessageId: outcome.messageId };
          const { ok, ...rest } = outcome;
          return { recipient: target.recipient, ok, throttled: false, ...rest, network };
        }),
      );
    },
    sessions: () => [...sessions].map(([accountId, s]) => ({ accountId, state: s.state, outstanding: s.outstanding })),
    async close() {
      const all = [...sessions.values()];
      sessions.clear();
      await Promise.all([...all.map((s) => s.close()), ...retiring]);
    },
  };
}
