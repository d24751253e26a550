import { checkApi } from './checks';
import { readApiKey, required } from './secret';

/** CloudWatch Synthetics entry point: lists instances and reads the OpenAPI document with the canary key. */
export const handler = async (): Promise<void> => {
  await checkApi({ baseUrl: required('API_URL'), apiKey: await readApiKey(process.env.CANARY_KEY_SECRET_ARN) });
};
