import { readFileSync } from 'node:fs';
import { bundle } from '../../bench/cold-start';
import { routes } from '../../shared/routes';

/** The payment provider's package is a quarter of a megabyte that every function would compile at a cold start. */
describe('function bundles', () => {
  const bundled = async (name: string) => {
    const route = routes.find((candidate) => candidate.name === name)!;
    return readFileSync(await bundle(`test-${name}`, route.entry, route.access), 'utf8');
  };

  it('hold the payment provider’s package only where payments are declared', async () => {
    const [getInstance, createTopUp] = await Promise.all([bundled('GetInstance'), bundled('CreateTopUp')]);

    expect(getInstance).not.toContain('api.stripe.com');
    expect(getInstance).toContain('import("stripe")');
    expect(createTopUp).toContain('api.stripe.com');
  });
});
