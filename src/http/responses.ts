import { z } from 'zod';

/**
 * What the REST door answers, as zod schemas the API description (`./openapi.ts`) turns into its
 * response schemas, keyed by route (`<method> <path>` of the route table). Objects are open (a field
 * added later is not a break), but each lists the fields it always carries, with their types and
 * nullability: the test suite checks every answer it receives against them. Every JSON route is
 * named here (a download is described by its media type).
 */

const id = z.string().describe('An id (a UUID).');
const instant = z.string().describe('ISO 8601 UTC with milliseconds.');
const channel = z.enum(['email', 'sms', 'whatsapp']);

const subscription = z.looseObject({
  status: z.enum(['subscribed', 'unsubscribed']),
  unsubscribedAt: instant.nullable(),
  source: z.string().nullable(),
});

export const contact = z
  .looseObject({
    _id: id,
    name: z.string(),
    email: z.string().nullable(),
    phone: z.string().nullable().describe('E.164.'),
    countryCode: z.string().nullable(),
    organization: z.string().nullable().describe("The contact's own company."),
    tags: z.array(z.string()),
    attributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
    groups: z.array(id),
    subscriptions: z.looseObject({ email: subscription, sms: subscription, whatsapp: subscription }),
    timezone: z.string().nullable().describe('Its time zone (IANA): its own, or its phone number\'s country\'s; null: the organization\'s.'),
    createdAt: instant,
    updatedAt: instant,
  })
  .describe('A contact.');

export const group = z
  .looseObject({
    _id: id,
    name: z.string(),
    description: z.string().nullable(),
    color: z.string(),
    organization: id,
    contactCount: z.number().int(),
    createdAt: instant,
    updatedAt: instant,
  })
  .describe('A group of contacts.');

export const template = z
  .looseObject({
    _id: id,
    name: z.string(),
    channel,
    subject: z.string().nullable(),
    content: z.string(),
    organization: id,
    createdAt: instant,
    updatedAt: instant,
  })
  .describe('A saved message template.');

const analytics = z.looseObject({
  sent: z.number().int(),
  delivered: z.number().int(),
  failed: z.number().int(),
  opened: z.number().int(),
  clicked: z.number().int(),
  bounced: z.number().int(),
  complained: z.number().int(),
  suppressed: z.number().int(),
});

const campaignStatus = z.enum(['draft', 'scheduled', 'active', 'completed', 'canceled']);
const campaignType = z.enum(['broadcast', 'targeted', 'automated', 'recurring']);

const campaignCore = {
  _id: id,
  name: z.string(),
  type: campaignType,
  status: campaignStatus,
  channels: z.array(channel),
  analytics,
  createdAt: instant,
};

const campaignFull = {
  ...campaignCore,
  description: z.string().nullable(),
  recipientType: z.enum(['all', 'selected', 'group']),
  selectedContacts: z.array(id),
  selectedGroup: id.nullable(),
  selectedGroups: z.array(id),
  manualRecipients: z.array(z.string()),
  messages: z.looseObject({}),
  scheduleDate: instant.nullable(),
  updatedAt: instant,
};

/** How a campaign is being sent (in `GET /campaigns/:id` and its progress). */
const sending = {
  throttled: z.boolean().describe("Sending waits for a channel credential's rate (its own, or slowed by the provider's throttling answers)."),
  sendRate: z.number().nullable().describe('Recipients settled a second since the campaign started; null until one is, or once it is no longer active.'),
  estimatedCompletionAt: instant.nullable().describe("When the rest should be settled at that pace (or at the credential's rate when slower); null when not active."),
};

export const campaign = z.looseObject(campaignFull).describe('A campaign.');

const run = z
  .looseObject({
    _id: id,
    scheduledAt: instant,
    startedAt: instant.nullable(),
    completedAt: instant.nullable(),
    status: z.enum(['scheduled', 'active', 'completed', 'canceled', 'failed']),
    failureReason: z.string().nullable(),
    recipients: z.number().int(),
    analytics,
    createdAt: instant,
  })
  .describe('A run of a recurring or automated campaign.');

const pendingSend = z.looseObject({ contactId: id, name: z.string().nullable(), triggeredAt: instant, dueAt: instant }).describe('A contact waiting for its delay.');

const logRecipient = z.looseObject({ recipient: z.string(), status: z.enum(['success', 'failed', 'pending']), error: z.string().optional() });

export const messageLog = z
  .looseObject({
    _id: id,
    channel,
    senderUserId: id.nullable(),
    senderOrgId: id,
    network: z.string().nullable(),
    recipients: z.array(logRecipient),
    messagePreview: z.string(),
    messageLength: z.number().int(),
    cost: z.number(),
    campaignId: id.nullable(),
    test: z.boolean(),
    createdAt: instant,
    updatedAt: instant,
  })
  .describe('A message log: one send to up to 100 recipients.');

const contactImport = z
  .looseObject({
    _id: id,
    status: z.enum(['queued', 'running', 'completed', 'failed', 'canceled']),
    rowsRead: z.number().int(),
    created: z.number().int(),
    updated: z.number().int(),
    skipped: z.number().int(),
    failed: z.number().int(),
    errors: z.array(z.looseObject({ line: z.number().int(), message: z.string() })),
    createdAt: instant,
  })
  .describe('A contact import.');

const webhookEndpoint = z
  .looseObject({
    _id: id,
    url: z.string(),
    description: z.string().nullable(),
    eventTypes: z.array(z.string()),
    enabled: z.boolean(),
    disabledReason: z.string().nullable(),
    lastSuccessAt: instant.nullable(),
    lastFailureAt: instant.nullable(),
    failingSince: instant.nullable(),
    failuresInARow: z.number().int(),
    organization: id,
    createdAt: instant,
    updatedAt: instant,
  })
  .describe('A webhook endpoint.');

const apiKey = z
  .looseObject({
    _id: id,
    name: z.string(),
    role: z.enum(['admin', 'user']),
    prefix: z.string(),
    organization: id,
    createdBy: id.nullable(),
    lastUsedAt: instant.nullable(),
    revokedAt: instant.nullable(),
    createdAt: instant,
    updatedAt: instant,
  })
  .describe('An API key (never the key itself, which only its creation answers).');

const outboxMessage = z
  .looseObject({
    _id: id,
    channel,
    recipient: z.string(),
    subject: z.string().nullable(),
    body: z.string(),
    headers: z.record(z.string(), z.string()),
    status: z.enum(['success', 'failed']),
    error: z.string().nullable(),
    createdAt: instant,
  })
  .describe('A message sandbox delivery recorded.');

const recipientResult = z.looseObject({ recipient: z.string(), status: z.enum(['success', 'failed']), error: z.string().optional() });

const auditEntry = z
  .looseObject({
    _id: id,
    at: instant,
    actorType: z.enum(['user', 'api_key']),
    actorId: id,
    actorLabel: z.string(),
    action: z.string(),
    resourceType: z.string(),
    resourceId: z.string().nullable(),
    details: z.looseObject({}),
    ip: z.string().nullable(),
    requestId: z.string().nullable(),
  })
  .describe('An admin action, as the audit log keeps it.');

const role = z.enum(['admin', 'user']);

/** A user as login and `GET /users` list one. */
const listedUser = z.looseObject({
  _id: id,
  firstName: z.string(),
  lastName: z.string(),
  email: z.string(),
  role,
  organization: id,
  isActive: z.boolean(),
});

export const user = listedUser
  .extend({ countryCode: z.string(), phoneNumber: z.string(), createdAt: instant, updatedAt: instant })
  .describe('A user of the organization.');

const session = z.looseObject({ token: z.string().describe('A JWT.'), user: listedUser });

const invitation = z
  .looseObject({
    _id: id,
    email: z.string(),
    role,
    firstName: z.string().nullable(),
    lastName: z.string().nullable(),
    organization: id,
    invitedBy: z.string().describe("The inviting admin's email, as it was then."),
    invitedById: id,
    createdAt: instant,
    expiresAt: instant.describe('When the link stops working.'),
  })
  .describe('A pending invitation to join the organization.');

const closure = z
  .looseObject({
    _id: id,
    status: z.enum(['scheduled', 'cancelled', 'deleting', 'deleted']),
    requestedAt: instant,
    deleteAfter: instant.describe('When every row of the organization is deleted, unless the closing is cancelled before.'),
    cancelledAt: instant.nullable(),
  })
  .describe("A closing of the organization: after its grace period every row of the organization is deleted.");

const organization = z
  .looseObject({
    _id: id,
    name: z.string(),
    sector: z.string(),
    country: z.string(),
    credits: z.number(),
    deliveryMode: z.enum(['sandbox', 'live']).describe('How messages are delivered: `sandbox` records them in the sandbox outbox instead of sending them (the platform\'s `DELIVERY_MODE`).'),
    emailFromName: z.string().nullable(),
    tracking: z.boolean(),
    requireTwoFactor: z.boolean(),
    retentionDays: z.number().int().describe('Days message logs, receipts, events, the sandbox outbox and webhook events are kept (30-3650).'),
    timezone: z.string().describe('Its time zone (IANA): its contacts\' unless they have their own.'),
    closure: closure.nullable().describe('Its closing while one is scheduled or under way, else null.'),
    credentials: z.looseObject({ sms_apiUrl: z.string(), whatsapp_webhookUrl: z.string(), sms_reportUrl: z.string().nullable().describe('Admins only: null for the user role (it carries the token delivery reports prove themselves with).') }),
  })
  .describe('The caller\'s organization, its credentials masked.');

const deleted = z.looseObject({ message: z.string() }).describe('What was deleted.');

const twoFactorStatus = z.looseObject({
  enabled: z.boolean(),
  enabledAt: instant.nullable(),
  pending: z.boolean().describe('An enrolment waits for its first code.'),
  requiredByOrganization: z.boolean(),
  recoveryCodesRemaining: z.number().int(),
});

const recoveryCodes = z.looseObject({ recoveryCodes: z.array(z.string()).describe('Ten one-time codes, shown only here.') });

const webhookAttempt = z
  .looseObject({
    _id: id,
    endpointId: id,
    eventId: id,
    eventType: z.string(),
    attempt: z.number().int(),
    status: z.enum(['succeeded', 'failed']),
    responseStatus: z.number().int().nullable(),
    durationMs: z.number(),
    response: z.string().nullable().describe('The first 1 KiB of the answer.'),
    error: z.string().nullable(),
    attemptedAt: instant,
    createdAt: instant,
  })
  .describe('One delivery attempt of an event to an endpoint.');

const webhookEvent = z
  .looseObject({
    _id: id,
    type: z.string(),
    timestamp: instant,
    data: z.looseObject({}),
    deliveries: z.array(
      z.looseObject({ endpointId: id, status: z.string(), attempts: z.number().int(), nextAttemptAt: instant.nullable(), lastResponseStatus: z.number().int().nullable() }),
    ),
    createdAt: instant,
  })
  .describe('An event, with its delivery to each endpoint that takes it.');

const messageEvent = z
  .looseObject({
    _id: id,
    type: z.string(),
    recipient: z.string(),
    position: z.number().int(),
    campaignId: id.nullable(),
    counted: z.boolean(),
    data: z.looseObject({}),
    occurredAt: instant,
    createdAt: instant,
  })
  .describe("What happened to a log's recipient after the send.");

const previewMessage = z.looseObject({
  channel,
  recipient: z.string().nullable(),
  subject: z.string().nullable(),
  text: z.string().nullable(),
  html: z.boolean(),
  segments: z.number().int().nullable(),
  encoding: z.string().nullable(),
  cost: z.number(),
  error: z.string().nullable(),
});

const draftPreview = z
  .looseObject({
    contactId: id.nullable().describe('The contact rendered for; null when none.'),
    recipient: z.string().nullable(),
    subject: z.string().nullable(),
    body: z.string().nullable().describe('The rendered text; null when it cannot be rendered (see `error`).'),
    html: z.boolean().describe('Email: whether the rendered text is sent as HTML (it holds markup), else as plain text.'),
    length: z.number().int().describe('Characters of the rendered text.'),
    segments: z.number().int().nullable(),
    encoding: z.string().nullable(),
    cost: z.number(),
    emptyVariables: z.array(z.string()).describe('The `contact.*` variables the texts read that are empty for this recipient.'),
    error: z.string().nullable(),
  })
  .describe('A message rendered for one recipient, as a send would render it.');

const list = (item: z.ZodType) => z.array(item);

/** The rollup's counters (`GET /stats/daily`, `GET /campaigns/:id/funnel`). */
const figures = {
  sent: z.number().int(),
  failed: z.number().int(),
  delivered: z.number().int(),
  opened: z.number().int(),
  clicked: z.number().int(),
  bounced: z.number().int(),
  complained: z.number().int(),
  unsubscribed: z.number().int(),
  credits: z.number(),
};
const day = z.string().describe('A day, `YYYY-MM-DD`, in the answer\'s `timeZone`.');

const erasure = z
  .looseObject({
    _id: id,
    contactId: id.nullable(),
    channels: z.array(z.enum(['email', 'phone'])),
    tokens: z.array(z.string()).describe('`erased:<HMAC>`: what stands for each erased address wherever it was.'),
    status: z.enum(['pending', 'done']),
    stepsDone: z.number().int(),
    steps: z.number().int(),
    rowsChanged: z.number().int(),
    createdAt: instant,
    finishedAt: instant.nullable(),
  })
  .describe('An erasure and how far its job got.');

/** The success answer of each described route. */
export const RESPONSES: Record<string, z.ZodType> = {
  'post /auth/signup': z.looseObject({ token: z.string(), user }),
  'post /auth/login': z
    .union([session, z.looseObject({ mfaRequired: z.literal(true), mfaToken: z.string().describe('For `POST /auth/login/mfa`, 5 minutes.') })])
    .describe('A session, or (with two-factor authentication) the token of the second step.'),
  'post /auth/login/mfa': session,
  'get /users': list(listedUser.extend({ createdAt: instant, updatedAt: instant })),
  'get /users/me': user.extend({ organization: z.looseObject({ _id: id, name: z.string(), credits: z.number() }) }),
  'get /users/:id': user,
  'post /users': user,
  'put /users/:id': user,
  'put /users/:id/deactivate': user,
  'put /users/:id/reactivate': user,
  'put /users/:id/password': user,
  'delete /users/:id': deleted,
  'get /users/me/two-factor': twoFactorStatus,
  'post /users/me/two-factor': z.looseObject({ secret: z.string().describe('Base32, shown only here.'), otpauthUri: z.string() }),
  'delete /users/me/two-factor': twoFactorStatus,
  'post /users/me/two-factor/confirm': recoveryCodes,
  'post /users/me/two-factor/recovery-codes': recoveryCodes,
  'delete /users/:id/two-factor': user,
  'get /invitations': list(invitation),
  'post /invitations': z.looseObject({
    invitation,
    link: z.string().describe('`<PUBLIC_URL>/invite/<token>`: the page where the person accepts.'),
    emailed: z.boolean().describe('Whether the link was emailed (an ad hoc email of the organization, charged like one).'),
    emailError: z.string().nullable().describe('Why it was not emailed; null when it was.'),
    sandbox: z.boolean().describe('Sandbox delivery mode: the email went to the sandbox outbox.'),
  }),
  'delete /invitations/:id': deleted,
  'get /invitations/accept/:token': z
    .looseObject({
      organization: z.looseObject({ _id: id, name: z.string() }),
      email: z.string(),
      role,
      firstName: z.string().nullable(),
      lastName: z.string().nullable(),
      expiresAt: instant,
    })
    .describe('What the invitation link shows.'),
  'post /invitations/accept/:token': session.extend({ twoFactorSetupRequired: z.literal(true).optional() }).describe('A session for the new user, as login answers it.'),
  'delete /contacts/:id': deleted,
  'post /contacts/:id/erase': erasure,
  'post /erasures': erasure,
  'get /erasures': list(erasure),
  'get /erasures/:id': erasure,
  'delete /groups/:id': deleted,
  'delete /templates/:id': deleted,
  'delete /webhooks/:id': deleted,
  'delete /api-keys/:id': deleted,
  'post /campaigns/:id/preview': z.looseObject({ contactId: id.nullable(), messages: z.array(previewMessage) }),
  'post /campaigns/preview': draftPreview,
  'get /contacts/attribute-keys': z.array(z.string()).describe("The attribute keys of the organization's newest 1,000 contacts, sorted."),
  'post /webhooks/:id/rotate-secret': z.looseObject({ secret: z.string(), previousSecretExpiresAt: instant }),
  'post /webhooks/:id/test': z.looseObject({ eventId: id }),
  'get /webhooks/:id/attempts': list(webhookAttempt),
  'get /webhook-events': list(webhookEvent),
  'get /webhook-events/:id': webhookEvent,
  'get /webhook-events/:id/attempts': list(webhookAttempt),
  'post /webhook-events/:id/resend': z.looseObject({ eventId: id, endpointId: id }),
  'get /message-logs/stats': z.looseObject({
    since: instant,
    total: z.number().int(),
    byChannel: z.array(z.looseObject({ channel, status: z.enum(['success', 'failed', 'pending']), count: z.number().int() })),
  }),
  'get /message-logs/:id/events': z.array(messageEvent),
  'get /stats/daily': z
    .looseObject({
      days: z.number().int(),
      from: day,
      to: day,
      timeZone: z.string(),
      channel: channel.nullable(),
      daily: z.array(z.looseObject({ date: day, channel, ...figures })),
      byChannel: z.array(z.looseObject({ channel, ...figures })),
      totals: z.looseObject(figures),
    })
    .describe("The organization's sends per day and channel over its last days, with totals."),
  'get /campaigns/:id/funnel': z
    .looseObject({
      audience: z.number().int(),
      suppressed: z.number().int(),
      ...figures,
      byChannel: z.array(z.looseObject({ channel, audience: z.number().int(), ...figures })),
      timeline: z.looseObject({ bucketMinutes: z.number().int(), points: z.array(z.looseObject({ at: instant, sent: z.number().int(), failed: z.number().int() })) }),
    })
    .describe('A campaign from its audience to its clicks, per channel, with its cost and its sends over time.'),
  'post /sandbox/events': z.looseObject({ recorded: z.string() }),
  'get /organizations/current': organization,
  'put /organizations/current': organization,
  'put /organizations/current/credentials': organization,
  'get /organizations/current/closure': closure,
  'post /organizations/current/closure': closure,
  'delete /organizations/current/closure': closure,
  'post /contacts': contact,
  'get /contacts': list(contact),
  'get /contacts/:id': contact,
  'put /contacts/:id': contact,
  'post /contacts/bulk': z.looseObject({ action: z.string(), count: z.number().int() }),
  'post /contacts/import': contactImport,
  'get /contact-imports': list(contactImport),
  'get /contact-imports/:id': contactImport,
  'post /contact-imports/:id/cancel': contactImport,
  'post /groups': group,
  'get /groups': list(group),
  'get /groups/:id': group,
  'put /groups/:id': group,
  'post /templates': template,
  'get /templates': list(template),
  'get /templates/:id': template,
  'put /templates/:id': template,
  'post /campaigns': campaign,
  'get /campaigns': list(z.looseObject(campaignCore)),
  'get /campaigns/:id': campaign.and(z.looseObject(sending)),
  'get /campaigns/:id/progress': z
    .looseObject({
      total: z.number().int(),
      sent: z.number().int(),
      failed: z.number().int(),
      pending: z.number().int(),
      canceled: z.number().int(),
      ...sending,
    })
    .describe("A campaign's recipients by state, and how it is being sent."),
  'put /campaigns/:id': campaign,
  'post /campaigns/:id/launch': z.looseObject({ _id: id, status: campaignStatus, analytics: analytics.optional(), updatedAt: instant }),
  'post /campaigns/:id/cancel': z.looseObject({ _id: id, status: campaignStatus, updatedAt: instant }),
  'get /campaigns/:id/runs': list(run),
  'get /campaigns/:id/pending-sends': list(pendingSend),
  'post /webhooks': webhookEndpoint.and(z.looseObject({ secret: z.string().describe('`whsec_...`, shown only here.') })),
  'get /webhooks': list(webhookEndpoint),
  'get /webhooks/:id': webhookEndpoint,
  'put /webhooks/:id': webhookEndpoint,
  'post /api-keys': z.looseObject({ apiKey, key: z.string().describe('The key itself (`uak_...`), shown only here.') }),
  'get /api-keys': list(apiKey),
  'put /api-keys/:id/revoke': apiKey,
  'get /sandbox/outbox': list(outboxMessage),
  'post /notifications/send': z.union([recipientResult, z.array(recipientResult)]).describe('One result for a string `to`, an array for an array.'),
  'post /notifications/send-to-all': z.array(recipientResult),
  'post /notifications/estimate': z
    .looseObject({
      recipients: z.number().int().describe('Distinct recipients, those that cannot be sent to included.'),
      invalid: z.number().int().describe('Of them, those the send would fail before sending (not an address, a message that cannot be rendered for them, an email address that bounced permanently): never charged.'),
      unitCost: z.number().describe("Credits a recipient costs: the dearest recipient's when their messages differ; 0 when none can be sent to."),
      cost: z.number().describe('Credits the send would reserve.'),
      balance: z.number().describe("The organization's credits now."),
    })
    .describe('What the send would cost, counted as the send counts it; nothing is sent, reserved or logged.'),
  'get /campaigns/:id/estimate': z.looseObject({
    channels: z.array(
      z.looseObject({ channel, recipients: z.number().int(), suppressed: z.looseObject({ unsubscribed: z.number().int() }), unitCost: z.number(), cost: z.number() }),
    ),
    recipients: z.number().int(),
    suppressed: z.number().int(),
    cost: z.number(),
    balance: z.number(),
  }),
  'post /campaigns/:id/test': z.array(recipientResult),
  'get /audit-log': list(auditEntry),
  'get /message-logs': list(messageLog),
  'get /message-logs/:id': messageLog,
};
