import type { CallShape } from './protocol';

/**
 * AWS list prices (us-east-1, on-demand) used for the cost per 1,000 provisions. Assumptions are stated next to
 * each figure; logs, X-Ray and data transfer are left out.
 */
export const prices = {
  /** HTTP API, per request (first 300 million a month). */
  apiRequest: 1.0 / 1_000_000,
  /** Lambda arm64, per request and per GB-second. */
  lambdaRequest: 0.2 / 1_000_000,
  lambdaGbSecond: 0.0000133334,
  /** Step Functions Standard, per state transition. */
  stateTransition: 0.025 / 1_000,
  /** DynamoDB on-demand, per write and read request unit. */
  writeUnit: 0.625 / 1_000_000,
  readUnit: 0.125 / 1_000_000,
} as const;

const LAMBDA_MEMORY_GB = 0.5;

/** Request units of one call: items under 1 KB (an instance, about 2 KB, counts 2); transactions cost twice per item. */
export function requestUnits(shape: CallShape): { read: number; write: number } {
  const itemUnits = shape.table === 'instances' ? 2 : 1;
  if (shape.operation === 'TransactWriteItemsCommand') return { read: 0, write: 2 * shape.items };
  if (/^(Put|Update|Delete)ItemCommand$/.test(shape.operation)) return { read: 0, write: itemUnits };
  return { read: 1, write: 0 };
}

export interface CostInputs {
  readonly apiRequests: number;
  readonly lambdaInvocations: number;
  readonly lambdaMs: number;
  readonly transitions: number;
  readonly calls: CallShape[];
}

export function costOf(inputs: CostInputs) {
  const units = inputs.calls
    .map(requestUnits)
    .reduce((sum, u) => ({ read: sum.read + u.read, write: sum.write + u.write }), { read: 0, write: 0 });
  const parts = {
    apiGateway: inputs.apiRequests * prices.apiRequest,
    lambda:
      inputs.lambdaInvocations * prices.lambdaRequest + (Math.ceil(inputs.lambdaMs) / 1000) * LAMBDA_MEMORY_GB * prices.lambdaGbSecond,
    stepFunctions: inputs.transitions * prices.stateTransition,
    dynamodb: units.write * prices.writeUnit + units.read * prices.readUnit,
  };
  return { ...parts, total: Object.values(parts).reduce((a, b) => a + b, 0), units };
}
