/**
 * The Content-Security-Policy of Herald's own tool pages (the GraphQL IDE, the API reference): only
 * this server's scripts (plus those `scriptSrc` names, such as the hashes of inline ones), its
 * styles, images and fonts, and connections back to itself.
 */
export const toolPageCsp = (scriptSrc: string[] = [], extra: string[] = []) =>
  [
    "default-src 'self'",
    `script-src ${["'self'", ...scriptSrc].join(' ')}`,
    ...extra,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "frame-ancestors 'self'",
  ].join('; ');
