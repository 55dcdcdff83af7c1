import nodemailer from 'nodemailer';

/**
 * Bounce messages (RFC 3464) and feedback reports (RFC 5965) as mail servers and mailbox providers
 * write them, and a way to hand one to an SMTP listener as they would: from the null sender, to
 * the bounce address of the email they are about.
 */

const CRLF = '\r\n';
const lines = (...parts: string[]) => parts.join(CRLF);

export interface DsnFields {
  /** The bounce address it goes to (the email's envelope sender). */
  to: string;
  /** The recipient that bounced. */
  recipient: string;
  action?: 'failed' | 'delayed' | 'delivered';
  status?: string;
  diagnostic?: string;
}

/** A delivery status notification as Postfix writes one. */
export function dsn({ to, recipient, action = 'failed', status = '5.1.1', diagnostic = `smtp; 550 ${status} <${recipient}>: Recipient address rejected: User unknown` }: DsnFields): string {
  const boundary = `dsn-${Math.random().toString(36).slice(2)}`;
  return lines(
    'From: MAILER-DAEMON@mx.example.net (Mail Delivery System)',
    `To: ${to}`,
    'Subject: Undelivered Mail Returned to Sender',
    `Date: ${new Date().toUTCString()}`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=delivery-status; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=us-ascii',
    '',
    'I\'m sorry to have to inform you that your message could not be delivered.',
    '',
    `--${boundary}`,
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.example.net',
    'Arrival-Date: Wed, 2 Dec 2026 10:00:00 +0000',
    '',
    `Final-Recipient: rfc822; ${recipient}`,
    `Original-Recipient: rfc822;${recipient}`,
    `Action: ${action}`,
    `Status: ${status}`,
    `Diagnostic-Code: ${diagnostic}`,
    '',
    `--${boundary}`,
    'Content-Type: text/rfc822-headers',
    '',
    `Return-Path: <${to}>`,
    'From: News <noreply@herald.test>',
    `To: ${recipient}`,
    'Subject: News',
    '',
    `--${boundary}--`,
    '',
  );
}

/** A feedback-loop abuse report (the RFC 5965 example's shape). */
export function arf({ to, recipient, feedbackType = 'abuse' }: { to: string; recipient: string; feedbackType?: string }): string {
  const boundary = `arf-${Math.random().toString(36).slice(2)}`;
  return lines(
    'From: <abusedesk@mailbox.example>',
    `To: <${to}>`,
    'Subject: FW: News',
    `Date: ${new Date().toUTCString()}`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=feedback-report; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset="US-ASCII"',
    '',
    'This is an email abuse report for an email message received from IP 192.0.2.1.',
    '',
    `--${boundary}`,
    'Content-Type: message/feedback-report',
    '',
    `Feedback-Type: ${feedbackType}`,
    'User-Agent: SomeGenerator/1.0',
    'Version: 1',
    `Original-Rcpt-To: <${recipient}>`,
    'Arrival-Date: Wed, 02 Dec 2026 10:00:00 +0000',
    'Source-IP: 192.0.2.1',
    '',
    `--${boundary}`,
    'Content-Type: text/rfc822-headers',
    '',
    `Return-Path: <${to}>`,
    'From: News <noreply@herald.test>',
    `To: ${recipient}`,
    'Subject: News',
    '',
    `--${boundary}--`,
    '',
  );
}

/** The SMTP answer to handing `raw` to the listener at `port` from the null sender, to `to`. */
export async function deliverReport(port: number, to: string | string[], raw: string): Promise<{ ok: boolean; code?: number; response: string }> {
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, name: 'mx.example.net' });
  try {
    const info = await transport.sendMail({ envelope: { from: '', to }, raw });
    return { ok: true, response: info.response };
  } catch (err) {
    const e = err as { responseCode?: number; response?: string; message: string };
    return { ok: false, code: e.responseCode, response: e.response ?? e.message };
  } finally {
    transport.close();
  }
}
