import { serverUserData } from '../../shared/model/user-data';

const credentials = '#cloud-config\nssh_pwauth: true\n';

describe('serverUserData', () => {
  it('is the service cloud-config alone when the customer gave none', () => {
    expect(serverUserData(credentials, undefined)).toBe(credentials);
  });

  it.each([
    ['#cloud-config\npackages: [nginx]\n', 'text/cloud-config'],
    ['#!/bin/bash\necho hi\n', 'text/x-shellscript'],
    ['#cloud-boothook\necho early\n', 'text/cloud-boothook'],
    ['#include\nhttps://example.com/config\n', 'text/x-include-url'],
    ['#part-handler\ndef list_types(): pass\n', 'text/part-handler'],
    ['## template: jinja\n#cloud-config\n', 'text/jinja2'],
    ['just text\n', 'text/plain'],
  ])('sends %j as a second MIME part of type %s after the service part', (customer, type) => {
    const document = serverUserData(credentials, customer);
    const boundary = /^Content-Type: multipart\/mixed; boundary="([^"]+)"\nMIME-Version: 1\.0\n/.exec(document)?.[1] ?? '';
    const parts = document.split(`--${boundary}`);

    expect(boundary).toMatch(/^==vps-[0-9a-f]{24}==$/);
    expect(parts).toHaveLength(4);
    expect(parts[1]).toContain(`Content-Type: text/cloud-config; charset="utf-8"\nMIME-Version: 1.0\n\n${credentials}`);
    expect(parts[2]).toContain(`Content-Type: ${type}; charset="utf-8"`);
    expect(parts[2]?.endsWith(`\n\n${customer}\n`)).toBe(true);
    expect(parts[3]).toBe('--\n');
  });

  it("merges a customer's cloud-config into the service's, appending lists", () => {
    expect(serverUserData(credentials, '#cloud-config\nusers: []\n')).toContain(
      'Merge-Type: list(append)+dict(no_replace,recurse_list)+str()',
    );
    expect(serverUserData(credentials, '#!/bin/sh\n')).not.toContain('Merge-Type');
  });

  it('sends the same document for the same create', () => {
    expect(serverUserData(credentials, '#!/bin/sh\n')).toBe(serverUserData(credentials, '#!/bin/sh\n'));
  });
});
