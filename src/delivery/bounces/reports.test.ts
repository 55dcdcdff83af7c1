import { describe, expect, it } from '@jest/globals';
import { readInboundReport } from './reports.js';

/** Samples are written with LF for readability; SMTP delivers them with CRLF. */
const crlf = (text: string): Buffer => Buffer.from(text.replace(/\r?\n/g, '\r\n'), 'utf8');

const POSTFIX_DSN = crlf(`Return-Path: <>
Received: by mail.example.org (Postfix)
	id 3F2A81C0123; Wed,  1 Oct 2025 10:00:05 +0000 (UTC)
Date: Wed,  1 Oct 2025 10:00:05 +0000 (UTC)
From: MAILER-DAEMON@mail.example.org (Mail Delivery System)
Subject: Undelivered Mail Returned to Sender
To: bounces+7d3f@herald.example
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status;
	boundary="3F2A81C0123.1759312805/mail.example.org"
Content-Transfer-Encoding: 7bit
Message-Id: <20251001100005.3F2A81C0123@mail.example.org>

This is a MIME-encapsulated message.

--3F2A81C0123.1759312805/mail.example.org
Content-Description: Notification
Content-Type: text/plain; charset=us-ascii

This is the mail system at host mail.example.org.

I'm sorry to have to inform you that your message could not
be delivered to one or more recipients. It's attached below.

For further assistance, please send mail to postmaster.

If you do so, please include this problem report. You can
delete your own text from the attached returned message.

                   The mail system

<nobody@nomailbox.test>: unknown user: "nobody"

--3F2A81C0123.1759312805/mail.example.org
Content-Description: Delivery report
Content-Type: message/delivery-status

Reporting-MTA: dns; mail.example.org
X-Postfix-Queue-ID: 3F2A81C0123
X-Postfix-Sender: rfc822; bounces+7d3f@herald.example
Arrival-Date: Wed,  1 Oct 2025 10:00:04 +0000 (UTC)

Final-Recipient: rfc822; nobody@nomailbox.test
Original-Recipient: rfc822;nobody@nomailbox.test
Action: failed
Status: 5.1.1
Diagnostic-Code: X-Postfix; unknown user: "nobody"

--3F2A81C0123.1759312805/mail.example.org
Content-Description: Undelivered Message Headers
Content-Type: text/rfc822-headers

Return-Path: <bounces+7d3f@herald.example>
Received: from herald.example (herald.example [198.51.100.7])
	by mail.example.org (Postfix) with ESMTPS id 3F2A81C0123
	for <nobody@nomailbox.test>; Wed,  1 Oct 2025 10:00:04 +0000 (UTC)
From: Herald <noreply@herald.example>
To: nobody@nomailbox.test
Subject: Your receipt
Message-Id: <e1c2a3b4@herald.example>
Date: Wed, 01 Oct 2025 10:00:03 +0000

--3F2A81C0123.1759312805/mail.example.org--
`);

const DELAYED_DSN = crlf(`From: MAILER-DAEMON@mail.example.org (Mail Delivery System)
Subject: Delayed Mail (still being retried)
To: bounces+7d3f@herald.example
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status;
	boundary="8C1E0A2.1759316405/mail.example.org"

--8C1E0A2.1759316405/mail.example.org
Content-Description: Notification
Content-Type: text/plain; charset=us-ascii

This is the mail system at host mail.example.org.

####################################################################
# THIS IS A WARNING ONLY.  YOU DO NOT NEED TO RESEND YOUR MESSAGE. #
####################################################################

Your message could not be delivered for more than 1 hour(s).
It will be retried until it is 3 day(s) old.

--8C1E0A2.1759316405/mail.example.org
Content-Description: Delivery report
Content-Type: message/delivery-status

Reporting-MTA: dns; mail.example.org
X-Postfix-Queue-ID: 8C1E0A2
Arrival-Date: Wed,  1 Oct 2025 10:00:04 +0000 (UTC)

Final-Recipient: rfc822; slow@greylist.test
Original-Recipient: rfc822;slow@greylist.test
Action: delayed
Status: 4.4.1
Diagnostic-Code: X-Postfix; connect to mx.greylist.test[192.0.2.25]:25:
    Connection timed out
Will-Retry-Until: Sat,  4 Oct 2025 10:00:04 +0000 (UTC)

--8C1E0A2.1759316405/mail.example.org
Content-Description: Undelivered Message Headers
Content-Type: text/rfc822-headers

From: Herald <noreply@herald.example>
To: slow@greylist.test
Subject: Your receipt

--8C1E0A2.1759316405/mail.example.org--
`);

// Gmail puts an HTML notice with an inline image first, so the report has parts nested one level down.
const GMAIL_DSN = crlf(`Delivered-To: bounces+7d3f@herald.example
From: Mail Delivery Subsystem <mailer-daemon@googlemail.com>
To: bounces+7d3f@herald.example
Auto-Submitted: auto-replied
Subject: Delivery Status Notification (Failure)
MIME-Version: 1.0
Content-Type: multipart/report; boundary="000000000000f00dfeed0619a1"; report-type=delivery-status

--000000000000f00dfeed0619a1
Content-Type: multipart/related; boundary="000000000000f00dfeed0619b2"

--000000000000f00dfeed0619b2
Content-Type: text/html; charset="UTF-8"

<html><body><h2>Address not found</h2><p>Your message wasn't delivered to <b>Ghost@Example.com</b>
because the address couldn't be found, or is unable to receive mail.</p><img src="cid:icon.png"></body></html>

--000000000000f00dfeed0619b2
Content-Type: image/png; name="icon.png"
Content-Disposition: attachment; filename="icon.png"
Content-Transfer-Encoding: base64
Content-ID: <icon.png>

iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==
--000000000000f00dfeed0619b2--

--000000000000f00dfeed0619a1
Content-Type: message/delivery-status

reporting-mta: dns; googlemail.com
received-from-mta: dns; herald.example
arrival-date: Wed, 01 Oct 2025 03:00:04 -0700 (PDT)
x-original-message-id: <e1c2a3b4@herald.example>

final-recipient: rfc822; Ghost@Example.com
action: Failed
status: 5.1.1
remote-mta: dns; mx.example.com. (192.0.2.10, the server for the domain example.com.)
diagnostic-code: smtp; 550-5.1.1 The email account that you tried to reach does not exist. Please try
 550-5.1.1 double-checking the recipient's email address for typos or
 550-5.1.1 unnecessary spaces. For more information, go to
 550 5.1.1  https://support.google.com/mail/?p=NoSuchUser a1si123.45 - gsmtp
last-attempt-date: Wed, 01 Oct 2025 03:00:05 -0700 (PDT)

--000000000000f00dfeed0619a1
Content-Type: message/rfc822

From: Herald <noreply@herald.example>
To: Ghost@Example.com
Subject: Your receipt

Thanks for your order.

--000000000000f00dfeed0619a1--
`);

const EXCHANGE_DSN = crlf(`From: Microsoft Outlook <MicrosoftExchange329e71ec88ae4615bbc36ab6ce41109e@contoso.test>
To: <bounces+7d3f@herald.example>
Subject: Undeliverable: Your receipt
Content-Language: en-US
MIME-Version: 1.0
Content-Type: multipart/report; report-type="delivery-status";
	boundary="_8a7f0b1c-1c4e-4d3e-9f2a-5b6c7d8e9f00_"

--_8a7f0b1c-1c4e-4d3e-9f2a-5b6c7d8e9f00_
Content-Type: text/plain; charset="us-ascii"
Content-Transfer-Encoding: quoted-printable

Delivery has failed to these recipients or groups:

gone@contoso.test
The email address you entered couldn't be found.

--_8a7f0b1c-1c4e-4d3e-9f2a-5b6c7d8e9f00_
Content-Type: message/delivery-status

Reporting-MTA: dns;AM0PR01MB1234.eurprd01.prod.exchangelabs.com
Received-From-MTA: dns;herald.example
Arrival-Date: Wed, 1 Oct 2025 10:00:04 +0000

Final-Recipient: RFC822;gone@contoso.test
Action: failed
Status: 5.1.10
Diagnostic-Code: smtp;550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup
X-Display-Name: Gone

--_8a7f0b1c-1c4e-4d3e-9f2a-5b6c7d8e9f00_--
`);

const TWO_RECIPIENTS_DSN = crlf(`From: MAILER-DAEMON@relay.example.net
To: bounces+7d3f@herald.example
Subject: Returned mail: see transcript for details
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="RR"

--RR
Content-Type: text/plain

Two recipients could not be reached.

--RR
Content-Type: message/delivery-status

Reporting-MTA: dns; relay.example.net

Final-Recipient: rfc822; later@busy.test
Action: delayed
Status: 4.2.2
Diagnostic-Code: smtp; 452 4.2.2 Mailbox full, try again later

Final-Recipient: rfc822; never@gone.test
Action: failed
Status: 5.1.1
Diagnostic-Code: smtp; 550 5.1.1 <never@gone.test>: Recipient address rejected

--RR--
`);

const GLOBAL_DSN = crlf(String.raw`From: MAILER-DAEMON@mail.example.org (Mail Delivery System)
To: bounces+7d3f@herald.example
Subject: Undelivered Mail Returned to Sender
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="GG"

--GG
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: 8bit

Your message could not be delivered.

--GG
Content-Type: message/global-delivery-status
Content-Transfer-Encoding: 8bit

Reporting-MTA: dns; mail.example.org

Final-Recipient: utf-8; j\x{00F6}rg@b\x{00FC}cher.test
Original-Recipient: utf-8; jörg@bücher.test
Action: failed
Status: 5.1.1
Diagnostic-Code: smtp; 550 5.1.1 <jörg@bücher.test>: Recipient address rejected: User unknown

--GG--
`);

const STATUSLESS_DSN = crlf(`From: MAILER-DAEMON@relay.example.net
To: bounces+7d3f@herald.example
Subject: Undelivered mail
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="SS"

--SS
Content-Type: message/delivery-status

Reporting-MTA: dns; relay.example.net

Final-Recipient: rfc822; full@inbox.test
Action: failed
Diagnostic-Code: smtp; host mx.inbox.test[10.4.1.1] said: 552-5.2.2 The recipient's inbox is
    out of storage space (in reply to RCPT TO command)

--SS--
`);

const DELIVERED_DSN = crlf(`From: MAILER-DAEMON@mail.example.org
To: bounces+7d3f@herald.example
Subject: Successful Mail Delivery Report
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="OK"

--OK
Content-Type: text/plain

Your message was successfully delivered to the destination(s) listed below.

--OK
Content-Type: message/delivery-status

Reporting-MTA: dns; mail.example.org

Final-Recipient: rfc822; happy@example.com
Original-Recipient: rfc822;happy@example.com
Action: delivered
Status: 2.0.0
Diagnostic-Code: smtp; 250 2.0.0 Ok: queued as 9A8B7C6

Final-Recipient: rfc822; list@example.com
Action: relayed
Status: 2.0.0

--OK--
`);

// RFC 5965, Appendix B.
const ARF_REPORT = crlf(`From: <abusedesk@example.com>
Date: Thu, 8 Mar 2005 17:40:36 EDT
Subject: FW: Earn money
To: <abuse@example.net>
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report;
     boundary="part1_13d.2e68ed54_boundary"

--part1_13d.2e68ed54_boundary
Content-Type: text/plain; charset="US-ASCII"
Content-Transfer-Encoding: 7bit

This is an email abuse report for an email message received from IP
192.0.2.1 on Thu, 8 Mar 2005 14:00:00 EDT.  For more information
about this format please see http://www.mipassoc.org/arf/.

--part1_13d.2e68ed54_boundary
Content-Type: message/feedback-report

Feedback-Type: abuse
User-Agent: SomeGenerator/1.0
Version: 1
Original-Mail-From: <somespammer@example.net>
Original-Rcpt-To: <user@example.com>
Arrival-Date: Thu, 8 Mar 2005 14:00:00 EDT
Reporting-MTA: dns; mail.example.com
Source-IP: 192.0.2.1
Authentication-Results: mail.example.com;
               spf=fail smtp.mail=somespammer@example.com
Reported-Domain: example.net
Reported-Uri: http://example.net/earn_money.html
Reported-Uri: mailto:user@example.com
Removal-Recipient: user@example.com

--part1_13d.2e68ed54_boundary
Content-Type: message/rfc822
Content-Disposition: inline

From: <somespammer@example.net>
Received: from mailserver.example.net
        (mailserver.example.net [192.0.2.1])
        by example.com with ESMTP id M63d4137594e46;
        Thu, 08 Mar 2005 14:00:00 -0400
To: <Undisclosed Recipients>
Subject: Earn money
MIME-Version: 1.0
Content-type: text/plain
Message-ID: 8787KJKJ3K4J3K4J3K4J3.mail@example.net
Date: Thu, 02 Sep 2004 12:31:03 -0500

Spam Spam Spam
Spam Spam Spam
Spam Spam Spam
Spam Spam Spam
--part1_13d.2e68ed54_boundary--
`);

const NOT_SPAM_REPORT = crlf(`From: <fbl@isp.test>
To: <fbl@herald.example>
Subject: Not spam report
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report; boundary="NS"

--NS
Content-Type: text/plain

A user marked this message as not spam.

--NS
Content-Type: message/feedback-report

Feedback-Type: not-spam
User-Agent: ISP-FBL/2.1
Version: 1
Original-Rcpt-To: <reader@isp.test>

--NS--
`);

const PLAIN_BOUNCE_TALK = crlf(`From: Alice <alice@example.com>
To: support@herald.example
Subject: your mail bounced
Content-Type: text/plain; charset=utf-8

Hi, my colleague says your mail bounced with "550 5.1.1 user unknown".
Action: failed
Status: 5.1.1
`);

function pseudoRandomBytes(length: number, seed: number): Buffer {
  const out = Buffer.alloc(length);
  let state = seed >>> 0;
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out[i] = state >>> 24;
  }
  return out;
}

describe('readInboundReport: delivery status notifications', () => {
  it('reads a Postfix bounce as a hard 5.1.1 with the diagnostic as the reason', async () => {
    expect(POSTFIX_DSN.includes('\r\n')).toBe(true);
    expect(await readInboundReport(POSTFIX_DSN)).toEqual({
      kind: 'bounce',
      type: 'hard',
      status: '5.1.1',
      reason: 'unknown user: "nobody"',
      recipients: [{ finalRecipient: 'nobody@nomailbox.test', action: 'failed', status: '5.1.1', diagnostic: 'unknown user: "nobody"' }],
    });
  });

  it('reads a delay warning as soft, unfolding a Diagnostic-Code continued on the next line', async () => {
    const report = await readInboundReport(DELAYED_DSN);
    expect(report).toEqual({
      kind: 'bounce',
      type: 'soft',
      status: '4.4.1',
      reason: 'connect to mx.greylist.test[192.0.2.25]:25: Connection timed out',
      recipients: [
        {
          finalRecipient: 'slow@greylist.test',
          action: 'delayed',
          status: '4.4.1',
          diagnostic: 'connect to mx.greylist.test[192.0.2.25]:25: Connection timed out',
        },
      ],
    });
  });

  it('reads Gmail lower-case fields and a multi-line SMTP reply as one line, lower-casing the address', async () => {
    const report = await readInboundReport(GMAIL_DSN);
    expect(report).toMatchObject({ kind: 'bounce', type: 'hard', status: '5.1.1' });
    if (report.kind !== 'bounce') throw new Error('expected a bounce');
    expect(report.reason).toBe(
      "550-5.1.1 The email account that you tried to reach does not exist. Please try 550-5.1.1 double-checking the recipient's email address for typos or 550-5.1.1 unnecessary spaces. For more information, go to 550 5.1.1 https://support.google.com/mail/?p=NoSuchUser a1si123.45 - gsmtp",
    );
    expect(report.recipients).toEqual([{ finalRecipient: 'ghost@example.com', action: 'failed', status: '5.1.1', diagnostic: report.reason }]);
  });

  it('reads an Exchange NDR with a three-digit status detail and no space after the type', async () => {
    expect(await readInboundReport(EXCHANGE_DSN)).toEqual({
      kind: 'bounce',
      type: 'hard',
      status: '5.1.10',
      reason: '550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup',
      recipients: [
        {
          finalRecipient: 'gone@contoso.test',
          action: 'failed',
          status: '5.1.10',
          diagnostic: '550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup',
        },
      ],
    });
  });

  it('prefers a failed 5.x recipient over a delayed 4.x one listed before it, and lists both', async () => {
    const report = await readInboundReport(TWO_RECIPIENTS_DSN);
    expect(report).toMatchObject({
      kind: 'bounce',
      type: 'hard',
      status: '5.1.1',
      reason: '550 5.1.1 <never@gone.test>: Recipient address rejected',
    });
    if (report.kind !== 'bounce') throw new Error('expected a bounce');
    expect(report.recipients.map((r) => [r.finalRecipient, r.action, r.status])).toEqual([
      ['later@busy.test', 'delayed', '4.2.2'],
      ['never@gone.test', 'failed', '5.1.1'],
    ]);
  });

  it('reads message/global-delivery-status the same way, decoding utf-8 addresses', async () => {
    const report = await readInboundReport(GLOBAL_DSN);
    expect(report).toMatchObject({
      kind: 'bounce',
      type: 'hard',
      status: '5.1.1',
      reason: '550 5.1.1 <jörg@bücher.test>: Recipient address rejected: User unknown',
    });
    if (report.kind !== 'bounce') throw new Error('expected a bounce');
    expect(report.recipients[0].finalRecipient).toBe('jörg@bücher.test');
  });

  it('takes the status from Diagnostic-Code when the Status field is missing, not from an IP address', async () => {
    const report = await readInboundReport(STATUSLESS_DSN);
    expect(report).toEqual({
      kind: 'bounce',
      type: 'hard',
      status: '5.2.2',
      reason:
        "host mx.inbox.test[10.4.1.1] said: 552-5.2.2 The recipient's inbox is out of storage space (in reply to RCPT TO command)",
      recipients: [
        {
          finalRecipient: 'full@inbox.test',
          action: 'failed',
          status: '5.2.2',
          diagnostic:
            "host mx.inbox.test[10.4.1.1] said: 552-5.2.2 The recipient's inbox is out of storage space (in reply to RCPT TO command)",
        },
      ],
    });
  });

  it('uses Diagnostic-Code for a malformed Status, and skips a group with neither', async () => {
    const malformed = crlf(
      new TextDecoder()
        .decode(STATUSLESS_DSN)
        .replace(/\r\n/g, '\n')
        .replace('Action: failed\n', 'Action: failed\nStatus: 5.2\n'),
    );
    expect(await readInboundReport(malformed)).toMatchObject({ kind: 'bounce', type: 'hard', status: '5.2.2' });

    const nothing = crlf(
      new TextDecoder()
        .decode(POSTFIX_DSN)
        .replace(/\r\n/g, '\n')
        .replace('Status: 5.1.1\n', 'Status: permanent\n')
        .replace('Diagnostic-Code: X-Postfix; unknown user: "nobody"\n', 'Diagnostic-Code: X-Postfix; unknown user\n'),
    );
    expect(await readInboundReport(nothing)).toEqual({ kind: 'none', why: 'no failed or delayed recipient' });
  });

  it('builds the reason from status and action when there is no Diagnostic-Code', async () => {
    const bare = crlf(
      new TextDecoder()
        .decode(POSTFIX_DSN)
        .replace(/\r\n/g, '\n')
        .replace('Diagnostic-Code: X-Postfix; unknown user: "nobody"\n', ''),
    );
    expect(await readInboundReport(bare)).toMatchObject({
      kind: 'bounce',
      type: 'hard',
      status: '5.1.1',
      reason: 'Status 5.1.1 (failed)',
      recipients: [{ finalRecipient: 'nobody@nomailbox.test', action: 'failed', status: '5.1.1', diagnostic: null }],
    });
  });

  it('caps a long reason at 500 characters on one line', async () => {
    const long = crlf(
      new TextDecoder()
        .decode(POSTFIX_DSN)
        .replace(/\r\n/g, '\n')
        .replace('Diagnostic-Code: X-Postfix; unknown user: "nobody"\n', `Diagnostic-Code: X-Postfix; unknown user:\n\t${'word '.repeat(300)}\n`),
    );
    const report = await readInboundReport(long);
    if (report.kind !== 'bounce') throw new Error('expected a bounce');
    expect(report.reason.length).toBeLessThanOrEqual(500);
    expect(report.reason).toMatch(/^unknown user: word word /);
    expect(report.reason).not.toMatch(/[\r\n\t]|\s$/);
  });

  it('is none when every recipient was delivered or relayed', async () => {
    expect(await readInboundReport(DELIVERED_DSN)).toEqual({ kind: 'none', why: 'no failed or delayed recipient' });
  });
});

describe('readInboundReport: feedback-loop complaints', () => {
  it('reads the RFC 5965 example report', async () => {
    expect(await readInboundReport(ARF_REPORT)).toEqual({
      kind: 'complaint',
      feedbackType: 'abuse',
      userAgent: 'SomeGenerator/1.0',
      originalRecipient: 'user@example.com',
      arrivalDate: new Date('2005-03-08T18:00:00Z'),
    });
  });

  it('lower-cases Feedback-Type and the recipient, and gives a null date for an unreadable Arrival-Date', async () => {
    const odd = crlf(
      new TextDecoder()
        .decode(ARF_REPORT)
        .replace(/\r\n/g, '\n')
        .replace('Feedback-Type: abuse', 'Feedback-Type: Fraud')
        .replace('Original-Rcpt-To: <user@example.com>', 'Original-Rcpt-To: <User@Example.COM>')
        .replace('Arrival-Date: Thu, 8 Mar 2005 14:00:00 EDT', 'Arrival-Date: sometime yesterday'),
    );
    expect(await readInboundReport(odd)).toEqual({
      kind: 'complaint',
      feedbackType: 'fraud',
      userAgent: 'SomeGenerator/1.0',
      originalRecipient: 'user@example.com',
      arrivalDate: null,
    });
  });

  it('is none for not-spam feedback and for a report without Feedback-Type', async () => {
    expect(await readInboundReport(NOT_SPAM_REPORT)).toEqual({ kind: 'none', why: 'not-spam feedback' });
    const untyped = crlf(new TextDecoder().decode(NOT_SPAM_REPORT).replace(/\r\n/g, '\n').replace('Feedback-Type: not-spam\n', ''));
    expect(await readInboundReport(untyped)).toEqual({ kind: 'none', why: 'feedback report without Feedback-Type' });
  });
});

describe('readInboundReport: anything else', () => {
  it('is none for plain text that only talks about a bounce', async () => {
    expect(await readInboundReport(PLAIN_BOUNCE_TALK)).toEqual({ kind: 'none', why: 'not a multipart/report' });
  });

  it('is none for a multipart/report of another report-type, or one missing its report part', async () => {
    const mdn = crlf(
      new TextDecoder()
        .decode(POSTFIX_DSN)
        .replace(/\r\n/g, '\n')
        .replace('report-type=delivery-status', 'report-type=disposition-notification'),
    );
    expect(await readInboundReport(mdn)).toMatchObject({ kind: 'none' });

    const mislabelled = crlf(
      new TextDecoder()
        .decode(ARF_REPORT)
        .replace(/\r\n/g, '\n')
        .replace('report-type=feedback-report', 'report-type=delivery-status'),
    );
    expect(await readInboundReport(mislabelled)).toEqual({ kind: 'none', why: 'no delivery-status part' });
  });

  it('does not read a delivery-status part inside a forwarded message', async () => {
    const forwarded = crlf(`From: Alice <alice@example.com>
To: support@herald.example
Subject: Fwd: Undelivered Mail Returned to Sender
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="FW"

--FW
Content-Type: text/plain

Why did this bounce?

--FW
Content-Type: message/rfc822

${new TextDecoder().decode(POSTFIX_DSN).replace(/\r\n/g, '\n')}
--FW--
`);
    expect(await readInboundReport(forwarded)).toEqual({ kind: 'none', why: 'not a multipart/report' });

    const wrapped = crlf(
      new TextDecoder()
        .decode(forwarded)
        .replace(/\r\n/g, '\n')
        .replace('multipart/mixed; boundary="FW"', 'multipart/report; report-type=delivery-status; boundary="FW"'),
    );
    expect(await readInboundReport(wrapped)).toEqual({ kind: 'none', why: 'no delivery-status part' });
  });

  it('is none, without throwing, for garbage, an empty buffer, an unclosed boundary and huge messages', async () => {
    expect(await readInboundReport(Buffer.alloc(0))).toMatchObject({ kind: 'none' });
    expect(await readInboundReport(pseudoRandomBytes(64 * 1024, 7))).toMatchObject({ kind: 'none' });
    expect(await readInboundReport(Buffer.alloc(5 * 1024 * 1024, pseudoRandomBytes(4096, 11)))).toMatchObject({ kind: 'none' });
    expect(await readInboundReport(Buffer.from('Content-Type: multipart/report\r\n\r\n\0\0\xff\xfe', 'latin1'))).toMatchObject({ kind: 'none' });

    const unclosed = crlf(`From: MAILER-DAEMON@mail.example.org
To: bounces+7d3f@herald.example
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="NEVER"

--NEVER
Content-Type: text/plain

This is the mail system at host mail.example.org. The report was cut off here
`);
    expect(await readInboundReport(unclosed)).toEqual({ kind: 'none', why: 'no delivery-status part' });

    const body = Buffer.alloc(2 * 1024 * 1024, 0x5a)
      .toString('base64')
      .replace(/.{76}/g, '$&\n');
    const attachmentOnly = crlf(`From: someone@example.com
To: bounces+7d3f@herald.example
Subject: report
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="BIG"

--BIG
Content-Type: application/pdf; name="report.pdf"
Content-Disposition: attachment; filename="report.pdf"
Content-Transfer-Encoding: base64

${body}
--BIG--
`);
    expect(await readInboundReport(attachmentOnly)).toEqual({ kind: 'none', why: 'no delivery-status part' });
  });

  it('never throws for any truncation of a real bounce', async () => {
    for (let end = 0; end < POSTFIX_DSN.length; end += 41) {
      const report = await readInboundReport(POSTFIX_DSN.subarray(0, end));
      expect(['bounce', 'none']).toContain(report.kind);
    }
  });
});
