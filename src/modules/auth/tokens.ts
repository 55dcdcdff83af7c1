import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { Role } from './caller.js';
import { unauthorized } from '../../lib/errors.js';

export interface TokenClaims {
  userId: string;
  orgId: string;
  role: Role;
  iat: number;
  exp: number;
}

const FUTURE_SKEW_SECONDS = 30;

/** How long the second step of a two-factor login may wait for its code. */
export const MFA_TOKEN_SECONDS = 5 * 60;

/** What an `mfaToken` carries: the user whose password was right, waiting for a code. */
export interface MfaClaims {
  userId: string;
  orgId: string;
  iat: number;
}

/** HS256 with a KeyObject (about 40x faster to verify than a string secret in jsonwebtoken). */
export class TokenService {
  private readonly key: KeyObject;
  /**
   * The key of `mfaToken`s, derived from the same secret but another: a pending two-factor login can
   * never verify as a session (nor a session as one), whatever its claims.
   */
  private readonly mfaKey: KeyObject;
  constructor(
    secret: string,
    private readonly expiresIn: string,
  ) {
    this.key = createSecretKey(Buffer.from(secret, 'utf8'));
    this.mfaKey = createSecretKey(createHmac('sha256', secret).update('herald two-factor login').digest());
  }

  /**
   * `notBefore` is the user's `tokens_valid_after`: a token minted in the same second as a password
   * change carries that later second as its `iat`, so it outlives the change while older ones do not.
   */
  sign(claims: { userId: string; orgId: string; role: Role }, notBefore = 0): string {
    const iat = Math.max(Math.floor(Date.now() / 1000), notBefore);
    return jwt.sign({ ...claims, iat }, this.key, {
      algorithm: 'HS256',
      expiresIn: this.expiresIn as jwt.SignOptions['expiresIn'],
    });
  }

  verify(token: string): TokenClaims {
    let payload: jwt.JwtPayload | string;
    try {
      payload = jwt.verify(token, this.key, { algorithms: ['HS256'], ignoreNotBefore: true });
    } catch (err) {
      if (err instanceof jwt.TokenExpiredError) throw unauthorized('Token expired');
      throw unauthorized('Invalid token');
    }
    if (typeof payload === 'string') throw unauthorized('Invalid token');
    const now = Date.now() / 1000;
    const { userId, orgId, role, iat, exp, nbf } = payload as Record<string, unknown>;
    const ok =
      typeof userId === 'string' &&
      typeof orgId === 'string' &&
      (role === 'admin' || role === 'user') &&
      typeof exp === 'number' &&
      typeof iat === 'number' &&
      iat <= now + FUTURE_SKEW_SECONDS &&
      (nbf === undefined || (typeof nbf === 'number' && nbf <= now + FUTURE_SKEW_SECONDS));
    if (!ok) throw unauthorized('Invalid token');
    return { userId, orgId, role, iat, exp } as TokenClaims;
  }

  /**
   * The `mfaToken` of a login whose password was right and that now needs a code: 5 minutes, signed
   * with its own key and marked `purpose: "mfa"`. `notBefore` is the user's `tokens_valid_after`, so
   * a password change also ends logins waiting for their code.
   */
  signMfa(claims: { userId: string; orgId: string }, notBefore = 0): string {
    const iat = Math.max(Math.floor(Date.now() / 1000), notBefore);
    return jwt.sign({ purpose: 'mfa', ...claims, iat }, this.mfaKey, { algorithm: 'HS256', expiresIn: MFA_TOKEN_SECONDS });
  }

  verifyMfa(token: string): MfaClaims {
    let payload: jwt.JwtPayload | string;
    try {
      payload = jwt.verify(token, this.mfaKey, { algorithms: ['HS256'], ignoreNotBefore: true });
    } catch (err) {
      if (err instanceof jwt.TokenExpiredError) throw unauthorized('Two-factor login expired: log in again');
      throw unauthorized('Invalid mfaToken');
    }
    const { purpose, userId, orgId, iat } = (typeof payload === 'string' ? {} : payload) as Record<string, unknown>;
    if (purpose !== 'mfa' || typeof userId !== 'string' || typeof orgId !== 'string' || typeof iat !== 'number') throw unauthorized('Invalid mfaToken');
    return { userId, orgId, iat };
  }
}
