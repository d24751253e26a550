import { createAndDelete } from './checks';
import { readApiKey, required } from './secret';

/** CloudWatch Synthetics entry point: creates the smallest server on the canary's own account and deletes it. */
export const handler = async (): Promise<void> => {
  await createAndDelete({
    baseUrl: required('API_URL'),
    apiKey: await readApiKey(process.env.CANARY_KEY_SECRET_ARN),
    flavor: required('CANARY_FLAVOR'),
    activeWithinMs: Number(required('ACTIVE_WITHIN_SECONDS')) * 1000,
    deletedWithinMs: Number(required('DELETED_WITHIN_SECONDS')) * 1000,
  });
};
