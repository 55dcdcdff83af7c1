import type { Role } from '../auth/caller.js';

export interface InvitationRow {
  id: string;
  organization_id: string;
  email: string;
  role: Role;
  first_name: string | null;
  last_name: string | null;
  invited_by: string;
  invited_by_email: string;
  expires_at: Date;
  accepted_at: Date | null;
  accepted_user_id: string | null;
  revoked_at: Date | null;
  created_at: Date;
}

/** A pending invitation as admins see it; its link is shown once, when it is made. */
export interface InvitationDto {
  _id: string;
  email: string;
  role: Role;
  firstName: string | null;
  lastName: string | null;
  organization: string;
  /** The admin who invited, by their email as it was then. */
  invitedBy: string;
  invitedById: string;
  createdAt: string;
  expiresAt: string;
}

export const INVITATION_COLUMNS = [
  'id',
  'organization_id',
  'email',
  'role',
  'first_name',
  'last_name',
  'invited_by',
  'invited_by_email',
  'expires_at',
  'accepted_at',
  'accepted_user_id',
  'revoked_at',
  'created_at',
] as const;

export const toInvitationDto = (row: InvitationRow): InvitationDto => ({
  _id: row.id,
  email: row.email,
  role: row.role,
  firstName: row.first_name,
  lastName: row.last_name,
  organization: row.organization_id,
  invitedBy: row.invited_by_email,
  invitedById: row.invited_by,
  createdAt: row.created_at.toISOString(),
  expiresAt: row.expires_at.toISOString(),
});

/** What an audit entry says of an invitation. */
export const invitationDetails = (row: Pick<InvitationRow, 'email' | 'role'>) => ({ email: row.email, role: row.role });
