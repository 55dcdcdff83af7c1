import type { Config } from '../config/config.js';
import type { Channel } from './types.js';

// GSM 03.38: the basic set costs one septet a character, the extension set two (escape + char).
const GSM_BASIC = new Set(
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà',
);
const GSM_EXTENSION = new Set('^{}\\[~]|€\f');

export interface SmsShape {
  encoding: 'GSM-7' | 'UCS-2';
  /** Septets for GSM-7, UTF-16 code units for UCS-2. */
  units: number;
  segments: number;
}

/**
 * Septets per UTF-16 code unit below 0x400 (every GSM character but the euro sign is there): 1
 * basic, 2 extension, 0 not GSM. A table, not a set lookup per character: personalised campaigns
 * shape every recipient's text.
 */
const SEPTETS = new Uint8Array(0x400);
for (const ch of GSM_BASIC) SEPTETS[ch.charCodeAt(0)] = 1;
for (const ch of GSM_EXTENSION) if (ch.charCodeAt(0) < 0x400) SEPTETS[ch.charCodeAt(0)] = 2;
const EURO = 0x20ac;

/** How many SMS segments a message takes: 160/153 septets in GSM-7, 70/67 code units in UCS-2. */
export function smsShape(message: string): SmsShape {
  let septets = 0;
  for (let i = 0; i < message.length; i++) {
    const code = message.charCodeAt(i);
    const n = code < 0x400 ? SEPTETS[code]! : code === EURO ? 2 : 0;
    if (n) septets += n;
    else {
      const units = message.length;
      return { encoding: 'UCS-2', units, segments: units <= 70 ? 1 : Math.ceil(units / 67) };
    }
  }
  return { encoding: 'GSM-7', units: septets, segments: septets <= 160 ? 1 : Math.ceil(septets / 153) };
}

/** Credits one recipient costs on a channel, from the platform's rates. */
export function unitCost(config: Config, channel: Channel, message: string): number {
  switch (channel) {
    case 'sms':
      // Any text of at most 70 UTF-16 code units is one segment in either encoding (at most 140
      // septets in GSM-7): most texts are, and a personalised campaign costs every recipient's.
      return (message.length <= 70 ? 1 : smsShape(message).segments) * config.costs.smsSegment;
    case 'email':
      return config.costs.email;
    case 'whatsapp':
      return config.costs.whatsapp;
  }
}

/** Characters as a person counts them (code points), for `messageLength`: UTF-16 code units less the second half of each surrogate pair. */
export function characterCount(message: string): number {
  let count = message.length;
  for (let i = 0; i < message.length; i++) {
    const code = message.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < message.length) {
      const next = message.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        count--;
        i++;
      }
    }
  }
  return count;
}

/** The first 100 characters, for `messagePreview`. */
export const preview = (message: string) => [...message].slice(0, 100).join('');
