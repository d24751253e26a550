import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { routes } from '../../shared/routes';
import { openApiDocument } from '../../shared/contracts/openapi';

const root = join(import.meta.dirname, '../..');

/**
 * The service's own source: what runs, and what deploys it. Clients call the paths without defining them: the SDK,
 * the console, the tests, and the canaries, which check the public API as a customer would, with no service code.
 */
const CLIENTS = [join(root, 'functions/canary')];
function sourceFiles(directory: string): string[] {
  return readdirSync(directory).flatMap((name) => {
    const path = join(directory, name);
    if (CLIENTS.includes(path)) return [];
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}
const sources = ['shared', 'functions', 'infra'].flatMap((directory) => sourceFiles(join(root, directory)));
const files = sources.map((path) => ({ path: relative(root, path), text: readFileSync(path, 'utf8') }));

type Json = any;
const document: Json = openApiDocument();
const documented = routes.filter((route) => route.doc !== undefined);
const operationOf = (route: (typeof routes)[number]) => document.paths[route.path][route.method.toLowerCase()];

describe('route contracts', () => {
  it.each(routes.filter((route) => route.path.startsWith('/')).map((route) => [route.name, route.path]))(
    'writes the path of %s in one source file',
    (_, path) => {
      const quoted = [`'${path}'`, `"${path}"`, `\`${path}\``, `'${path}?`, `<${path}?`];
      const holders = files.filter(({ text }) => quoted.some((literal) => text.includes(literal))).map(({ path: file }) => file);

      expect(holders).toEqual(holders.length === 0 ? [] : [expect.stringMatching(/^shared\/contracts\//)]);
    },
  );

  it('documents every route but the catch-all, under its method and path', () => {
    expect(documented.map((route) => route.name).sort()).toEqual(
      routes
        .map((route) => route.name)
        .filter((name) => name !== 'NotFound')
        .sort(),
    );
    for (const route of documented)
      expect({ route: route.name, operation: operationOf(route) !== undefined }).toEqual({ route: route.name, operation: true });
  });

  it.each([
    ['CreateInstance', [{ bearerAuth: [] }]],
    ['ListKeys', [{ sessionCookie: [] }]],
    ['RevokeKey', [{ sessionCookie: [], csrfToken: [] }]],
    ['AuthSignIn', []],
    ['OpenApiDocument', []],
  ])('derives the security of %s from its auth kind', (name, security) => {
    const route = routes.find((candidate) => candidate.name === name)!;

    expect(operationOf(route).security).toEqual(security);
  });

  it('documents the Idempotency-Key header on exactly the idempotent routes', () => {
    const withHeader = documented
      .filter((route) => (operationOf(route).parameters ?? []).some((parameter: Json) => parameter.name === 'Idempotency-Key'))
      .map((route) => route.name);

    expect(withHeader.sort()).toEqual(['CreateInstance', 'InstanceAction', 'UpdateInstance']);
  });

  it('documents 415 on exactly the routes that take a body', () => {
    const with415 = documented.filter((route) => operationOf(route).responses['415']).map((route) => route.name);

    expect(with415.sort()).toEqual([
      'AuthConfirm',
      'AuthForgotPassword',
      'AuthResetPassword',
      'AuthSignIn',
      'AuthSignUp',
      'CreateInstance',
      'CreateKey',
      'CreateTopUp',
      'CreateWebhook',
      'InstanceAction',
      'SetAutoRecharge',
      'UpdateInstance',
    ]);
  });

  it('documents the rate-limit policies with the limits the service counts', () => {
    const policy = document.paths['/api/v1/instances'].post.responses['202'].headers['RateLimit-Policy'].description;

    expect(policy).toContain('`"general";q=60;w=60`');
    expect(policy).toContain('`"deploy";q=5;w=3600`');
    expect(policy).toContain('`"failed-auth";q=20;w=60`');
  });
});
