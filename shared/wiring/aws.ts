import type { Deps } from '../domain/deps';
import { loadConfig, type Environment } from '../config';
import { eventBridgeSink, sqsAuthMailQueue, sqsDeliveryQueue } from '../events/aws-transports';
import { depsOf } from './platform';

function required(value: string | undefined, name: string): string {
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

/**
 * The service's dependencies on AWS, from a function's environment: DynamoDB, Step Functions, EventBridge and SQS
 * through the function role. A transport the function was not given (its bus or queue variable unset) fails when
 * used, naming the variable: the stack grants each function only what its route declares.
 */
export function awsDeps(env: Environment): Deps {
  const config = loadConfig(env);
  return depsOf(config, (platform) => ({
    events: { publish: (events) => eventBridgeSink(platform, required(config.events.busName, 'EVENT_BUS_NAME')).publish(events) },
    deliveries: {
      send: (message, delayMs) =>
        sqsDeliveryQueue(platform, required(config.events.deliveryQueueUrl, 'WEBHOOK_QUEUE_URL')).send(message, delayMs),
    },
    authMail: { send: (message) => sqsAuthMailQueue(platform, required(config.console.mailQueueUrl, 'AUTH_MAIL_QUEUE_URL')).send(message) },
  }));
}
