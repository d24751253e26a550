import ipaddr from 'ipaddr.js';
import { addressRefusal, carriedIPv4, checkReceiverUrl, type Resolver } from '../../shared/webhooks/urls';

const production = { allowLoopback: false };
const local = { allowLoopback: true };
const resolvingTo =
  (addresses: string[]): Resolver =>
  async () =>
    addresses;

describe('addressRefusal', () => {
  it.each([
    { address: '127.0.0.1', range: 'loopback' },
    { address: '127.255.0.9', range: 'loopback' },
    { address: '::1', range: 'loopback' },
    { address: '10.1.2.3', range: 'private' },
    { address: '172.16.0.1', range: 'private' },
    { address: '192.168.1.1', range: 'private' },
    { address: '169.254.169.254', range: 'linkLocal' },
    { address: 'fe80::1', range: 'linkLocal' },
    { address: '100.64.0.1', range: 'carrierGradeNat' },
    { address: 'fd00:ec2::254', range: 'uniqueLocal' },
    { address: 'fc00::1', range: 'uniqueLocal' },
    { address: '0.0.0.0', range: 'unspecified' },
    { address: '::', range: 'unspecified' },
    { address: '224.0.0.1', range: 'multicast' },
    { address: '255.255.255.255', range: 'broadcast' },
    { address: '::ffff:127.0.0.1', range: 'loopback' },
    { address: '::ffff:169.254.169.254', range: 'linkLocal' },
    { address: '2002:5db8:d822::', range: '6to4' },
    { address: '64:ff9b::5db8:d822', range: 'rfc6052' },
    { address: '2001:0:4136:e378:8000:63bf:a247:27dd', range: 'teredo' },
    { address: '2001:db8::1', range: 'reserved' },
    { address: 'not-an-address', range: 'invalid' },
  ])('refuses $address ($range) in production', ({ address, range }) => {
    expect(addressRefusal(address, production)).toBe(range);
  });

  it.each(['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:93.184.216.34'])('accepts the public address %s', (address) => {
    expect(addressRefusal(address, production)).toBeUndefined();
  });

  it.each([
    { address: '127.0.0.1', refusal: undefined },
    { address: '::1', refusal: undefined },
    { address: '10.0.0.1', refusal: 'private' },
    { address: '169.254.169.254', refusal: 'linkLocal' },
  ])('allows loopback but nothing else private locally: $address', ({ address, refusal }) => {
    expect(addressRefusal(address, local)).toBe(refusal);
  });
});

// Every way IPv6 carries an IPv4 address, each carrying 169.254.169.254 (the metadata service) or 10.0.0.1.
const carrying = [
  { form: 'IPv4-compatible, dotted', address: '::169.254.169.254', ipv4: '169.254.169.254' },
  { form: 'IPv4-compatible, hex', address: '::a9fe:a9fe', ipv4: '169.254.169.254' },
  { form: 'IPv4-compatible, hex', address: '::a00:1', ipv4: '10.0.0.1' },
  { form: 'IPv4-mapped', address: '::ffff:a9fe:a9fe', ipv4: '169.254.169.254' },
  { form: 'IPv4-translated', address: '::ffff:0:a00:1', ipv4: '10.0.0.1' },
  { form: 'NAT64 64:ff9b::/96', address: '64:ff9b::a9fe:a9fe', ipv4: '169.254.169.254' },
  { form: 'NAT64 64:ff9b:1::/48', address: '64:ff9b:1::a00:1', ipv4: '10.0.0.1' },
  { form: '6to4', address: '2002:a9fe:a9fe::1', ipv4: '169.254.169.254' },
  { form: 'Teredo', address: '2001:0:4136:e378:8000:63bf:f5ff:fffe', ipv4: '10.0.0.1' },
  { form: 'Teredo', address: '2001:0:4136:e378:8000:63bf:5601:5601', ipv4: '169.254.169.254' },
  { form: 'ISATAP', address: '::5efe:169.254.169.254', ipv4: '169.254.169.254' },
  { form: 'ISATAP, global prefix', address: '2a00:1450:4001:1:200:5efe:a00:1', ipv4: '10.0.0.1' },
];

describe('carriedIPv4', () => {
  it.each(carrying)('finds $ipv4 in $address ($form)', ({ address, ipv4 }) => {
    expect(carriedIPv4(ipaddr.IPv6.parse(address))?.toString()).toBe(ipv4);
  });

  it.each(['::1', '2606:4700:4700::1111', 'fd00:ec2::254'])('finds none in %s', (address) => {
    expect(carriedIPv4(ipaddr.IPv6.parse(address))).toBeUndefined();
  });
});

describe('an IPv6 address that carries an IPv4 address', () => {
  it.each(carrying)('is refused as $ipv4 in $address ($form), in production and locally', ({ address, ipv4 }) => {
    const range = ipaddr.IPv4.parse(ipv4).range();

    expect(addressRefusal(address, production)).toBe(range);
    expect(addressRefusal(address, local)).toBe(range);
  });

  it.each([
    { address: '::7f00:1', form: 'IPv4-compatible' },
    { address: '64:ff9b::7f00:1', form: 'NAT64' },
    { address: '2002:7f00:1::', form: '6to4' },
    { address: '2001:0:4136:e378:8000:63bf:80ff:fffe', form: 'Teredo' },
    { address: '::5efe:7f00:1', form: 'ISATAP' },
  ])('is refused as loopback in production: $address ($form)', ({ address }) => {
    expect(addressRefusal(address, production)).toBe('loopback');
  });
});

describe('checkReceiverUrl', () => {
  const privateText = 'url must not point to a loopback, private, link-local or reserved address';

  it.each([
    { url: 'http://example.com/hook', addresses: ['93.184.216.34'], error: 'url must be an absolute https URL' },
    { url: 'https://localhost/hook', addresses: ['127.0.0.1', '::1'], error: privateText },
    { url: 'https://rebind.example/hook', addresses: ['93.184.216.34', '10.0.0.1'], error: privateText },
    { url: 'https://[fd00:ec2::254]/latest', addresses: [], error: privateText },
    { url: 'https://169.254.169.254/latest/meta-data/', addresses: [], error: privateText },
    { url: 'https://[::ffff:7f00:1]/hook', addresses: [], error: privateText },
    { url: 'https://[::a9fe:a9fe]/latest/meta-data/', addresses: [], error: privateText },
    { url: 'https://[::169.254.169.254]/latest/meta-data/', addresses: [], error: privateText },
    { url: 'https://ipv6-only.example/hook', addresses: ['64:ff9b::a00:1'], error: privateText },
    { url: 'https://nowhere.invalid/hook', addresses: [], error: 'url host does not resolve' },
    { url: 'https://user:secret@example.com/hook', addresses: ['93.184.216.34'], error: 'url must not contain credentials' },
    { url: 'example.com/hook', addresses: ['93.184.216.34'], error: 'url must be an absolute https URL' },
  ])('refuses $url in production', async ({ url, addresses, error }) => {
    await expect(checkReceiverUrl(url, production, resolvingTo(addresses))).rejects.toMatchObject({
      kind: 'invalid_request',
      message: error,
    });
  });

  it('accepts an https URL whose every address is public', async () => {
    const url = await checkReceiverUrl('https://hooks.example.com/in?x=1', production, resolvingTo(['93.184.216.34', '2606:4700::1']));

    expect(url.href).toBe('https://hooks.example.com/in?x=1');
  });

  it('refuses a real DNS name that resolves to loopback (localhost) in production', async () => {
    await expect(checkReceiverUrl('https://localhost:8443/hook', production)).rejects.toMatchObject({
      kind: 'invalid_request',
      message: privateText,
    });
  });

  it('accepts http on loopback only where loopback is allowed', async () => {
    await expect(checkReceiverUrl('http://127.0.0.1:3000/hook', local)).resolves.toBeInstanceOf(URL);
    await expect(checkReceiverUrl('http://127.0.0.1:3000/hook', production)).rejects.toMatchObject({
      message: 'url must be an absolute https URL',
    });
  });
});
