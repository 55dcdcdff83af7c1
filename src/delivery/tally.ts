import { characterCount, preview } from './cost.js';
import { round2 } from './credits.js';
import type { DeliveryResult } from './types.js';

/**
 * The message a log shows: its text's first 100 characters, its length, and what one recipient
 * costs. A log of personalised recipients shows its first recipient's text, its longest text's
 * length and its dearest recipient's cost (`PersonalLogText`).
 */
export interface LogText {
  preview: string;
  length: number;
  unit: number;
}

export const logTextOf = (text: string, unit: number): LogText => ({ preview: preview(text), length: characterCount(text), unit });

/** A personalised log's `LogText`, recipient by recipient. */
export class PersonalLogText {
  private first: string | null = null;
  private length = 0;
  private unit = 0;

  /** A recipient's rendered text and cost (its length counted only when it may be the longest). */
  add(text: string, cost: number) {
    this.first ??= text;
    // A text has at most as many characters as code units: only a longer one can be the longest.
    if (text.length > this.length) this.length = Math.max(this.length, characterCount(text));
    this.unit = Math.max(this.unit, cost);
  }

  /** A recipient already measured (its preview and length worked out when it was priced). */
  addMeasured(shown: { preview: string; length: number; cost: number }) {
    this.first ??= shown.preview;
    this.length = Math.max(this.length, shown.length);
    this.unit = Math.max(this.unit, shown.cost);
  }

  /** The log's text; null when no recipient was added. */
  result(): LogText | null {
    return this.first === null ? null : { preview: preview(this.first), length: this.length, unit: this.unit };
  }
}

/** Why a recipient went unsent when the credits did not cover it: worth another try, unlike an unsendable message. */
export const INSUFFICIENT_CREDITS = 'Insufficient credits';

/** How one log's recipients ended, as its settle writes them. */
export interface Tally {
  /** Recipients sent. */
  sent: number;
  /** What the sent ones cost together. */
  cost: number;
  /** The network of the first success, else of the first recipient (`herald` for one never sent). */
  network: string | null;
  /** Each recipient's provider message id, by position; null when the provider gave none. */
  providerIds: (string | null)[] | null;
  /**
   * The provider accounts that carried the log's recipients: one id when one carried every one, else
   * one per position (null for a recipient none was asked about); null when none was.
   */
  carriers: (string | null)[] | null;
  /**
   * The positions (1 is the first) of the recipients that failed for good: a final answer about the
   * recipient (an invalid number) or a message that cannot be sent as it is (a render error, too
   * long). Another try may reach the others (a provider down, refused credentials, credits short).
   */
  finals: number[] | null;
  /** Why each failed recipient failed, by position; null when none failed (a log sent whole builds nothing per recipient). */
  errors: Map<number, string> | null;
}

/**
 * The one settle computation of every send: per recipient of a log (`size` of them, in order), the
 * reason it was not sent (`unsent(i)`) or the provider's answer (the next of `results`, which
 * `from` points into and is moved past), and what it costs when sent (`cost(i)`).
 */
export function tally(
  size: number,
  unsent: (i: number) => string | null | undefined,
  cost: (i: number) => number,
  results: readonly DeliveryResult[],
  from: { next: number },
): Tally {
  let sent = 0;
  let spent = 0;
  let firstNetwork: string | null = null;
  let sentNetwork: string | null = null;
  let providerIds: (string | null)[] | null = null;
  let errors: Map<number, string> | null = null;
  let carriers: (string | null)[] | null = null;
  let firstCarrier: string | null = null;
  let finals: number[] | null = null;
  let single = true;
  for (let i = 0; i < size; i++) {
    const error = unsent(i);
    if (error) {
      firstNetwork ??= 'herald';
      (errors ??= new Map()).set(i, error);
      if (error !== INSUFFICIENT_CREDITS) (finals ??= []).push(i + 1);
      continue;
    }
    const r = results[from.next++]!;
    firstNetwork ??= r.network;
    if (r.carrier) {
      carriers ??= new Array<string | null>(size).fill(null);
      carriers[i] = r.carrier;
      firstCarrier ??= r.carrier;
      if (r.carrier !== firstCarrier) single = false;
    }
    if (r.providerMessageId) (providerIds ??= new Array<string | null>(size).fill(null))[i] = r.providerMessageId;
    if (!r.ok) {
      (errors ??= new Map()).set(i, r.error ?? 'Delivery failed');
      if (!r.retryable && !r.providerFault && !r.throttled) (finals ??= []).push(i + 1);
      continue;
    }
    sent++;
    sentNetwork ??= r.network;
    spent += cost(i);
  }
  // One carrier of every recipient is written once.
  if (carriers && single && !carriers.includes(null)) carriers = [firstCarrier!];
  return { sent, cost: round2(spent), network: sentNetwork ?? firstNetwork, providerIds, errors, carriers, finals };
}
