/** A user's or an API key's role in its organization. */
export type Role = 'admin' | 'user';

/** Who is calling: a user through a JWT, or an organization's API key acting with its role. */
export interface Caller {
  orgId: string;
  role: Role;
  via: 'jwt' | 'apiKey';
  /** The user behind a JWT, or the user who created the API key (null if since deleted). */
  userId: string | null;
  apiKeyId: string | null;
  /**
   * A user of an organization that requires two-factor authentication who has not enrolled yet: such
   * a session may only enrol (and read who it is), every other operation is 403.
   */
  twoFactorSetupRequired?: boolean;
}

/** The credentials a request may carry; exactly one is allowed. */
export interface Credentials {
  authorization?: string;
  headerKey?: string;
  queryKey?: string | string[];
}
