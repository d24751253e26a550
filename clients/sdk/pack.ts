import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Builds the SDK as its own package (ES modules and type declarations, from clients/sdk/package.json) in a staging
 * directory, outside the tree, and packs it: `npm run sdk:pack [-- DIR]` leaves `vps-service-sdk-<version>.tgz` in
 * DIR (default: the current directory) and prints its path.
 */
export function packSdk(destination: string): string {
  const sdk = fileURLToPath(new URL('.', import.meta.url));
  const staging = mkdtempSync(join(tmpdir(), 'vps-sdk-'));
  copyFileSync(join(sdk, 'package.json'), join(staging, 'package.json'));
  const tsc = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));
  execFileSync(process.execPath, [tsc, '-p', join(sdk, 'tsconfig.build.json'), '--outDir', join(staging, 'dist')], { stdio: 'inherit' });
  execFileSync('npm', ['pack', '--silent', '--pack-destination', resolve(destination)], {
    cwd: staging,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const tarball = readdirSync(resolve(destination)).find((file) => /^vps-service-sdk-.*\.tgz$/.test(file));
  if (!tarball) throw new Error('npm pack left no tarball');
  return join(resolve(destination), tarball);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(`${packSdk(process.argv[2] ?? '.')}\n`);
