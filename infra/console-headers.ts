/**
 * Security headers on every console response, defined once for the local gateway and for CloudFront's response
 * headers policy: scripts and styles only from the console's own files (no inline script), no framing, no
 * referrer, no MIME sniffing.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export const consoleSecurityHeaders: Readonly<Record<string, string>> = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

/** The console's path on the service's origin. */
export const CONSOLE_PATH = '/console/';
