import { randomBytes } from 'node:crypto';
import type { SmtpSink } from '../fakes/smtp-sink.js';
import type { WhatsAppFake } from '../fakes/whatsapp-fake.js';
import { signupOrg, type Client, type Org } from './herald.js';

/** The providers a live organization is pointed at: the SMS gateway fake (key-1/42), the SMTP sink, the WhatsApp fake. */
export interface LiveProviders {
  sink?: SmtpSink;
  wa?: WhatsAppFake;
}

/**
 * A fresh organization with the channels' credentials set through the API, as its admin would:
 * SMS always (the gateway fake's `key-1`/`42`), email and WhatsApp when their fakes are given.
 * Its own SMTP login gives it its own SMTP pool, so no warm connection from another test hides a
 * fault that happens at connect time. `overrides` replace any credential.
 */
export async function liveOrg(api: Client, { sink, wa }: LiveProviders, overrides: Record<string, string> = {}): Promise<Org> {
  const org = await signupOrg(api);
  const credentials: Record<string, string> = { sms_apiKey: 'key-1', sms_partnerID: '42', sms_shortCode: 'HERALD' };
  if (sink) {
    Object.assign(credentials, {
      email_host: sink.host,
      email_port: String(sink.port),
      email_user: `mailer-${randomBytes(4).toString('hex')}`,
      email_pass: 's3cret',
      email_from: 'noreply@herald.test',
    });
  }
  if (wa) Object.assign(credentials, { whatsapp_access_token: wa.token, whatsapp_phone_number_id: wa.phoneNumberId });
  const res = await api.put('/organizations/current/credentials', { ...credentials, ...overrides }, { token: org.token });
  if (res.status !== 200) throw new Error(`credentials: ${res.status} ${JSON.stringify(res.body)}`);
  return org;
}
