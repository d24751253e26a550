import { Duration, Validations } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

/** A queue that keeps what could not be processed for 14 days, encrypted, reachable over TLS only. */
export function deadLetterQueue(scope: Construct, id: string): sqs.Queue {
  const queue = new sqs.Queue(scope, id, {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
  });
  Validations.of(queue).acknowledge(
    { id: 'AwsSolutions-SQS3', reason: 'This queue is itself a dead-letter queue.' },
    { id: 'Serverless-SQSRedrivePolicy', reason: 'This queue is itself a dead-letter queue: nothing redrives from it but an operator.' },
  );
  return queue;
}
