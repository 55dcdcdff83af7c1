import { simpleParser, type Attachment, type HeaderValue, type ParsedMail, type StructuredHeader } from 'mailparser';

export type BounceType = 'hard' | 'soft';

export interface RecipientStatus {
  /** Final-Recipient's address, lower-case, without the `rfc822;` type; null when absent. */
  finalRecipient: string | null;
  action: 'failed' | 'delayed' | 'delivered' | 'relayed' | 'expanded' | string;
  /**
   * The RFC 3463 status, e.g. '5.1.1'. When the Status field is missing or malformed this is the
   * enhanced code found in Diagnostic-Code, else the field's text as given ('' when absent).
   */
  status: string;
  /** Diagnostic-Code's text without its type (e.g. '550 5.1.1 <x@y>: Recipient address rejected'), else null. */
  diagnostic: string | null;
}

export type InboundReport =
  | { kind: 'bounce'; type: BounceType; status: string; reason: string; recipients: RecipientStatus[] }
  | {
      kind: 'complaint';
      feedbackType: string;
      userAgent: string | null;
      originalRecipient: string | null;
      arrivalDate: Date | null;
    }
  | { kind: 'none'; why: string };

const STATUS_CODE = /^[245]\.\d{1,3}\.\d{1,3}$/;
// The lookarounds keep an IP address such as 10.5.1.1 or 192.0.2.1 from reading as a status code.
const STATUS_IN_TEXT = /(?<![\d.])([245]\.\d{1,3}\.\d{1,3})(?!\.?\d)/;
const MAX_REASON = 500;
const MAX_DIAGNOSTIC = 2000;
// A status part is a few hundred bytes per recipient; past this it is not a report worth reading whole.
const MAX_REPORT_TEXT = 512 * 1024;
// Where to look for the top-level Content-Type before handing the message to mailparser.
const MAX_HEADER_SCAN = 256 * 1024;
const DSN_PARTS = ['message/delivery-status', 'message/global-delivery-status'];
const ARF_PART = 'message/feedback-report';

/** Reads one inbound message. Never throws for any input (malformed mail is `{ kind: 'none', why }`). */
export async function readInboundReport(raw: Buffer): Promise<InboundReport> {
  try {
    if (!Buffer.isBuffer(raw) || raw.length === 0) return none('empty message');
    // Most mail reaching a bounce address that is not a report can be turned away without decoding its parts.
    if (!mayBeReport(raw)) return none('not a multipart/report');

    let mail: ParsedMail;
    try {
      mail = await simpleParser(raw, {
        // Left to its default, mailparser folds message/delivery-status into `text` instead of listing it as a part.
        keepDeliveryStatus: true,
        skipHtmlToText: true,
        skipTextToHtml: true,
        skipTextLinks: true,
        keepCidLinks: true,
      });
    } catch {
      return none('unparseable message');
    }
    return readParsed(mail);
  } catch {
    return none('unreadable message');
  }
}

function readParsed(mail: ParsedMail): InboundReport {
  const contentType = structured(mail.headers?.get('content-type'));
  if (contentType?.value.toLowerCase() !== 'multipart/report') return none('not a multipart/report');
  const reportType = String(contentType.params?.['report-type'] ?? '')
    .trim()
    .toLowerCase();

  // mailparser keeps a message/rfc822 part whole, so a bounce forwarded inside this one is not among these.
  const parts = mail.attachments ?? [];
  const dsnPart = parts.find((part) => DSN_PARTS.includes(part.contentType.toLowerCase()));
  const arfPart = parts.find((part) => part.contentType.toLowerCase() === ARF_PART);

  if (reportType === 'delivery-status' || reportType === 'global-delivery-status') {
    return dsnPart ? readDeliveryStatus(partText(dsnPart)) : none('no delivery-status part');
  }
  if (reportType === 'feedback-report') {
    return arfPart ? readFeedbackReport(partText(arfPart)) : none('no feedback-report part');
  }
  if (reportType) return none(`report-type ${reportType.slice(0, 40)} is not read`);
  // RFC 6522 requires report-type, but a sender that leaves it out still sends a readable part.
  if (dsnPart) return readDeliveryStatus(partText(dsnPart));
  if (arfPart) return readFeedbackReport(partText(arfPart));
  return none('multipart/report without report-type');
}

function readDeliveryStatus(text: string): InboundReport {
  const recipients = fieldGroups(text)
    .filter((group) => group.has('final-recipient') || group.has('original-recipient') || group.has('action') || group.has('status'))
    .map(recipientStatus);
  if (recipients.length === 0) return none('no recipient in delivery-status');

  let chosen: RecipientStatus | null = null;
  let chosenType: BounceType | null = null;
  for (const recipient of recipients) {
    const type = bounceType(recipient);
    if (type === 'hard') {
      chosen = recipient;
      chosenType = type;
      break;
    }
    if (type === 'soft' && !chosen) {
      chosen = recipient;
      chosenType = type;
    }
  }
  if (!chosen || !chosenType) return none('no failed or delayed recipient');

  const reason = singleLine(chosen.diagnostic ?? `Status ${chosen.status} (${chosen.action})`).slice(0, MAX_REASON).trim();
  return { kind: 'bounce', type: chosenType, status: chosen.status, reason, recipients };
}

function bounceType(recipient: RecipientStatus): BounceType | null {
  if (recipient.action !== 'failed' && recipient.action !== 'delayed') return null;
  if (!STATUS_CODE.test(recipient.status)) return null;
  if (recipient.status.startsWith('5.')) return 'hard';
  if (recipient.status.startsWith('4.')) return 'soft';
  return null;
}

function recipientStatus(group: Map<string, string>): RecipientStatus {
  const diagnosticField = group.get('diagnostic-code');
  const diagnostic = diagnosticField === undefined ? null : singleLine(withoutType(diagnosticField)).slice(0, MAX_DIAGNOSTIC).trim() || null;
  const statusField = firstToken(group.get('status') ?? '');
  let status = statusField;
  if (!STATUS_CODE.test(statusField) && diagnostic) {
    const found = STATUS_IN_TEXT.exec(diagnostic);
    if (found) status = found[1];
  }
  const finalRecipient = group.get('final-recipient');
  return {
    finalRecipient: finalRecipient === undefined ? null : typedAddress(finalRecipient),
    action: firstToken(group.get('action') ?? '').toLowerCase(),
    status,
    diagnostic,
  };
}

function readFeedbackReport(text: string): InboundReport {
  const fields = new Map<string, string>();
  // An ARF report is a single block of fields; a stray blank line inside it should not hide the rest.
  for (const group of fieldGroups(text)) {
    for (const [name, value] of group) if (!fields.has(name)) fields.set(name, value);
  }
  const feedbackType = firstToken(fields.get('feedback-type') ?? '').toLowerCase();
  if (!feedbackType) return none('feedback report without Feedback-Type');
  if (feedbackType === 'not-spam') return none('not-spam feedback');

  const userAgent = singleLine(fields.get('user-agent') ?? '');
  const rcptTo = fields.get('original-rcpt-to');
  return {
    kind: 'complaint',
    feedbackType: feedbackType.slice(0, 100),
    userAgent: userAgent ? userAgent.slice(0, MAX_REASON) : null,
    originalRecipient: rcptTo === undefined ? null : bareAddress(rcptTo),
    arrivalDate: parseDate(fields.get('arrival-date')),
  };
}

/**
 * Splits header-style text into blank-line separated groups of unfolded fields, keyed by lower-case
 * name. The first occurrence of a name in a group wins.
 */
function fieldGroups(text: string): Map<string, string>[] {
  const groups: Map<string, string>[] = [];
  let group = new Map<string, string>();
  let lastName: string | null = null;
  const close = () => {
    if (group.size > 0) groups.push(group);
    group = new Map();
    lastName = null;
  };
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line.trim() === '') {
      close();
      continue;
    }
    if (line[0] === ' ' || line[0] === '\t') {
      if (lastName !== null) group.set(lastName, `${group.get(lastName)} ${line.trim()}`);
      continue;
    }
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon).trim().toLowerCase() : '';
    if (!name || /[\s\x00-\x1f]/.test(name)) {
      lastName = null;
      continue;
    }
    if (group.has(name)) {
      // A repeated field keeps the first value; its continuation lines must not extend that value.
      lastName = null;
      continue;
    }
    group.set(name, line.slice(colon + 1).trim());
    lastName = name;
  }
  close();
  return groups;
}

function structured(header: HeaderValue | undefined): StructuredHeader | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value || typeof value !== 'object' || value instanceof Date) return null;
  return 'params' in value && typeof value.value === 'string' ? value : null;
}

function partText(part: Attachment): string {
  const content = Buffer.isBuffer(part.content) ? part.content : Buffer.alloc(0);
  // RFC 6533 makes a global status part UTF-8; a classic one is ASCII, which UTF-8 also reads.
  return content.subarray(0, MAX_REPORT_TEXT).toString('utf8');
}

/** Whether the top-level header block declares multipart/report: a cheap necessary condition. */
function mayBeReport(raw: Buffer): boolean {
  const head = raw.subarray(0, MAX_HEADER_SCAN).toString('latin1');
  const end = head.search(/\r?\n\r?\n/);
  const block = end === -1 ? head : head.slice(0, end);
  return /^content-type[ \t]*:\s*multipart\s*\/\s*report\b/im.test(block);
}

/** 'smtp; 550 5.1.1 ...' → '550 5.1.1 ...'; text without a leading type token is kept whole. */
function withoutType(value: string): string {
  const typed = /^\s*[A-Za-z][\w.+-]*\s*;/.exec(value);
  return typed ? value.slice(typed[0].length) : value;
}

/** 'rfc822; User@Example.org' → 'user@example.org', decoding RFC 6533's \x{…} for the utf-8 type. */
function typedAddress(value: string): string | null {
  const typed = /^\s*([A-Za-z][\w.+-]*)\s*;/.exec(value);
  let address = typed ? value.slice(typed[0].length) : value;
  if (typed && typed[1].toLowerCase() === 'utf-8') {
    address = address.replace(/\\x\{([0-9A-Fa-f]{1,6})\}/g, (whole, hex: string) => {
      const code = parseInt(hex, 16);
      return code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : whole;
    });
  }
  return bareAddress(address);
}

function bareAddress(value: string): string | null {
  const address = singleLine(value)
    .replace(/^<\s*|\s*>$/g, '')
    .trim()
    .toLowerCase();
  return address ? address.slice(0, 320) : null;
}

function parseDate(value: string | undefined): Date | null {
  if (!value) return null;
  // V8 reads almost anything as a date ('1' is 2001-01-01); a real Arrival-Date carries a time of day.
  if (!/\d{1,2}:\d{2}/.test(value)) return null;
  const time = Date.parse(value);
  return Number.isFinite(time) ? new Date(time) : null;
}

/** The value's first token, without a trailing comment: 'failed (bad mailbox)' → 'failed'. */
function firstToken(value: string): string {
  return value.trim().split(/[\s(;]/, 1)[0] ?? '';
}

function singleLine(value: string): string {
  return value.replace(/[\s\x00-\x1f\x7f]+/g, ' ').trim();
}

function none(why: string): InboundReport {
  return { kind: 'none', why };
}
