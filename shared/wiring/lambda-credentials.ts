import { fromEnv } from '@aws-sdk/credential-provider-env';

/**
 * Stands in for `@aws-sdk/credential-provider-node` in the functions' bundles (infra/bundling.ts): the default chain's
 * `defaultProvider`, reduced to its first link, the credentials Lambda puts in the environment for the function role.
 */
export const defaultProvider = () => fromEnv();
