import type { StoredCredentials } from './credentials.js';
import type { DkimSigner } from './dkim.js';

export type Channel = 'sms' | 'email' | 'whatsapp';
export const CHANNELS: readonly Channel[] = ['sms', 'email', 'whatsapp'];

export interface Attachment {
  filename: string;
  /** Base64. */
  content: string;
  contentType: string;
}

/** What is sent: the content shared by every target of one call (a target may carry its own, `TargetContent`). */
export interface OutboundMessage {
  channel: Channel;
  orgId: string;
  /** Display name for email's From: the organization's `emailFromName`, else its name. */
  fromName: string;
  subject?: string;
  body: string;
  attachments?: Attachment[];
}

/** A recipient's own message (personalised), replacing the shared one where set. */
export interface TargetContent {
  subject?: string;
  body?: string;
  /** Email headers, such as `List-Unsubscribe`. */
  headers?: Record<string, string>;
}

export interface DeliveryTarget {
  /** E.164 phone (`+254712345678`) for sms/whatsapp, a lower-case address for email. */
  readonly recipient: string;
  /** Stable per-recipient id (UUID-shaped), passed to providers that deduplicate on a client id. */
  readonly clientId: string;
  /** Set when this recipient's message is its own. */
  readonly content?: TargetContent;
}

/** What one target is sent: its own content where it has one, else the shared message's. */
export const bodyOf = (message: OutboundMessage, target: DeliveryTarget) => target.content?.body ?? message.body;
export const subjectOf = (message: OutboundMessage, target: DeliveryTarget) => target.content?.subject ?? message.subject;

/**
 * A recipient at a position of a message log. Its id for providers that deduplicate is the log's id
 * ending in the position: unique, the same on every attempt (a campaign batch's log id is derived
 * from the batch), and built only when a provider asks for it.
 */
export class LogTarget implements DeliveryTarget {
  constructor(
    readonly recipient: string,
    /** The message log the recipient is in. */
    readonly logId: string,
    /** Its position in the log (1 is the first). */
    readonly position: number,
    readonly content?: TargetContent,
  ) {}

  get clientId(): string {
    return this.logId.slice(0, 28) + this.position.toString(16).padStart(8, '0');
  }
}

export interface DeliveryResult {
  recipient: string;
  ok: boolean;
  /** The provider's reason when `ok` is false. */
  error?: string;
  /** True when trying again later may succeed (timeouts, 5xx, throttling, 4xx SMTP replies). */
  retryable?: boolean;
  /**
   * The provider asked to slow down (HTTP 429, WhatsApp 130429, 131056 and 80007, SMTP 421, 450,
   * 451 and 452, the gateway's try-later code): the recipient is sent again once its credential's
   * rate, slowed down, allows, and never failed for it.
   */
  throttled?: boolean;
  /**
   * The failure is the provider's or the account's, not the recipient's (refused credentials, no
   * balance left, a sender id the account may not use): not tried again on this provider, but
   * another provider of the channel may carry it. (A `retryable` failure may fail over as well.)
   */
  providerFault?: boolean;
  /** Who carried it: `smtp:<host>`, the SMS gateway's network id or host, `whatsapp-cloud`, `sandbox`. */
  network: string;
  providerMessageId?: string;
  /** The provider account (`providers.id`) that answered for it: the last one tried. */
  carrier?: string;
  /** The mail server refused the recipient's address or mailbox at once: a bounce, counted as one. */
  bounce?: BounceType;
}

/** A bounce: permanent (the address does not exist) or temporary (a full mailbox). */
export type BounceType = 'hard' | 'soft';

/**
 * One channel's way out. `send` never throws for a provider failure: every target gets a result,
 * failures included, so the caller can log and charge per recipient.
 */
export interface ChannelAdapter {
  readonly channel: Channel;
  send(message: OutboundMessage, targets: DeliveryTarget[], credentials: StoredCredentials, options?: SendOptions): Promise<DeliveryResult[]>;
  close?(): Promise<void>;
}

/** How a call is made: its lane decides which of the credential's connections or calls in flight it may use. */
export interface SendOptions {
  lane?: 'transactional' | 'bulk';
}


/** One field of a provider type's settings (shown) or secrets (write-only, encrypted). */
export interface ProviderField {
  readonly name: string;
  readonly secret?: boolean;
  readonly required?: boolean;
  /** How it is given: text (the default), a whole number, or a switch. */
  readonly kind?: 'text' | 'integer' | 'boolean';
  /** One line for the API reference and the console's form. */
  readonly description: string;
}

/** A provider's settings and secrets are plain values: text, numbers, switches. */
export type ProviderSettings = Readonly<Record<string, string | number | boolean>>;

/** One provider account an organization registered (`providers`): its settings and its decrypted secrets. */
export interface ProviderAccount {
  /** The provider's id: what its callbacks name, and what its connections are kept by. */
  readonly id: string;
  readonly orgId: string;
  /** Its type (`africastalking`, `twilio`, `smpp`, ...). */
  readonly type: string;
  readonly settings: ProviderSettings;
  readonly secrets: Readonly<Record<string, string>>;
  /** Email: the organization's DKIM keys, to sign with. */
  readonly dkim?: readonly DkimSigner[];
}

/**
 * A provider type's way out. As `ChannelAdapter`: `send` never throws for a provider failure, every
 * target gets a result. `retryable` marks what another provider may well carry (refused connection,
 * timeout, 5xx, throttling, a failed bind); a final answer about the recipient (an invalid number)
 * is never retryable.
 */
export interface ProviderAdapter {
  readonly channel: Channel;
  send(message: OutboundMessage, targets: DeliveryTarget[], account: ProviderAccount, options?: SendOptions): Promise<DeliveryResult[]>;
  close?(): Promise<void>;
}

/** What a provider reports about one message it took: delivered to the handset, or not. */
export interface ProviderReport {
  /** The id the provider answered the send with (`DeliveryResult.providerMessageId`). */
  providerMessageId: string;
  delivered: boolean;
  /** When it happened: the provider's time when it gives one, else now. */
  at: Date;
  /** Why it was not delivered, as the provider says it. */
  error?: string;
  /** The provider's own word for the state (`Success`, `DELIVRD`, `undelivered`, ...). */
  status: string;
}
