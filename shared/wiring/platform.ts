import type { Deps } from '../domain/deps';
import { dynamoClient } from '../aws';
import type { Config } from '../config';
import type { EventTransports } from '../events/ports';
import { randomIds, RuntimeState, systemClock, type Platform } from '../platform';
import { stepFunctionsEngine } from '../workflows/step-functions';
import { configuredMailer } from '../mail';
import { paymentProvider } from '../payments';
import { tcpSshProbe } from '../upstream/ssh-probe';

/** A runtime's dependencies from its configuration and where its events go: its own clients, state and engine. */
export function depsOf(config: Config, transports: (platform: Platform) => EventTransports): Deps {
  const platform: Platform = {
    config,
    dynamo: dynamoClient(config),
    clock: systemClock,
    ids: randomIds,
    state: new RuntimeState(),
  };
  return {
    ...platform,
    workflows: stepFunctionsEngine(platform),
    transports: transports(platform),
    mail: configuredMailer(platform),
    payments: paymentProvider(platform),
    ssh: tcpSshProbe(config.ssh.probeTimeoutMs),
  };
}
