import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import * as kms from 'aws-cdk-lib/aws-kms';
import type { Construct } from 'constructs';

export interface SecretsKeyProps {
  readonly removalPolicy: RemovalPolicy;
}

/**
 * The customer-managed key that wraps the data keys sealing customers' secrets (root passwords, generated private
 * keys, replayable responses that carry them). Rotated yearly; only the functions whose access names `secrets`
 * may generate data keys or decrypt with it, through their own IAM policies.
 */
export class SecretsKey extends kms.Key {
  constructor(scope: Construct, id: string, { removalPolicy }: SecretsKeyProps) {
    super(scope, id, {
      description: "Wraps the data keys that seal customers' root passwords and private keys",
      enableKeyRotation: true,
      rotationPeriod: Duration.days(365),
      // A retained key keeps retained tables readable; a deleted one waits the longest window in case of mistakes.
      pendingWindow: Duration.days(30),
      removalPolicy,
    });
  }
}
