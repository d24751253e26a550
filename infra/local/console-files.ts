import { readFile } from 'node:fs/promises';
import { extname, resolve, sep } from 'node:path';
import type { ServerResponse } from 'node:http';
import { CONSOLE_PATH, consoleSecurityHeaders } from '../console-headers';

/**
 * Serves the built console (`console/dist`) under /console/ the way CloudFront and S3 do on AWS: the same security
 * headers, index.html for the folder itself, hashed assets cached for good and the page itself never.
 */
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

export function isConsolePath(pathname: string): boolean {
  return pathname === CONSOLE_PATH.slice(0, -1) || pathname.startsWith(CONSOLE_PATH);
}

export async function serveConsoleFile(distDir: string, pathname: string, response: ServerResponse): Promise<void> {
  if (pathname === CONSOLE_PATH.slice(0, -1)) {
    response.writeHead(301, { ...consoleSecurityHeaders, location: CONSOLE_PATH });
    response.end();
    return;
  }
  const relativePath = decodeURIComponent(pathname.slice(CONSOLE_PATH.length)) || 'index.html';
  const file = resolve(distDir, relativePath);
  const body = file.startsWith(distDir + sep) ? await readFile(file).catch(() => undefined) : undefined;
  if (!body) {
    response.writeHead(404, { ...consoleSecurityHeaders, 'content-type': 'text/plain; charset=utf-8' });
    response.end(
      pathname.includes('/assets/') || relativePath === 'index.html'
        ? 'Not found (has the console been built? npm run build:console)'
        : 'Not found',
    );
    return;
  }
  response.writeHead(200, {
    ...consoleSecurityHeaders,
    'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
    'cache-control': relativePath.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
  });
  response.end(body);
}
