import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadFilesSync } from '@graphql-tools/load-files';
import { makeExecutableSchema } from '@graphql-tools/schema';
import type { Resolvers } from './generated/resolvers-types.js';
import { scalars } from './scalars.js';
import { resolvers as apiKeys } from '../modules/api-keys/resolvers.js';
import { resolvers as audit } from '../modules/audit/resolvers.js';
import { resolvers as auth } from '../modules/auth/resolvers.js';
import { resolvers as campaigns } from '../modules/campaigns/resolvers.js';
import { resolvers as contacts } from '../modules/contacts/resolvers.js';
import { resolvers as contactImports } from '../modules/contact-imports/resolvers.js';
import { resolvers as groups } from '../modules/groups/resolvers.js';
import { resolvers as invitations } from '../modules/invitations/resolvers.js';
import { resolvers as messageLogs } from '../modules/message-logs/resolvers.js';
import { resolvers as notifications } from '../modules/notifications/resolvers.js';
import { resolvers as sandbox } from '../modules/sandbox/resolvers.js';
import { resolvers as suppressions } from '../modules/suppressions/resolvers.js';
import { resolvers as dkim } from '../modules/dkim/resolvers.js';
import { resolvers as templates } from '../modules/templates/resolvers.js';
import { resolvers as webhooks } from '../modules/webhooks/resolvers.js';
import { resolvers as organizations } from '../modules/organizations/resolvers.js';
import { resolvers as providers } from '../modules/providers/resolvers.js';
import { resolvers as users } from '../modules/users/resolvers.js';
import { resolvers as twoFactor } from '../modules/two-factor/resolvers.js';
import { resolvers as stats } from '../modules/stats/resolvers.js';
import { resolvers as personData } from '../modules/person-data/resolvers.js';
import { resolvers as erasure } from '../modules/erasure/resolvers.js';
import { resolvers as closure } from '../modules/closure/resolvers.js';

export const SCHEMA_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../schema');

const base: Resolvers = { Query: { health: () => 'ok' } };

export function buildSchema() {
  return makeExecutableSchema({
    typeDefs: loadFilesSync(path.join(SCHEMA_DIR, '**/*.graphql')),
    resolvers: [base, scalars, auth, users, invitations, organizations, providers, apiKeys, contacts, contactImports, groups, templates, notifications, messageLogs, sandbox, campaigns, webhooks, audit, twoFactor, suppressions, dkim, stats, personData, erasure, closure],
  });
}
