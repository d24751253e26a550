import './quiet';
import '../../infra/local/env-defaults';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { startLocalService } from '../../infra/local/runtime';
import type { EndpointFault } from '../../infra/local/step-functions';
import { CHAOS_RUNTIME } from './runtime-settings';

/**
 * The service alone in its own process (gateway, local Step Functions, handlers, change streams, webhook deliveries),
 * as a chaos run starts it, kills it with SIGKILL and starts it again on the same data. Configured by CHAOS_SERVICE
 * (JSON, see ServiceSpec); prints `ready` once it answers. GET /idle on the control port answers once no workflow
 * execution is running; POST /step-functions-fault `{"operation": "StartExecution", "fault": {...} | null}` sets or
 * clears the local Step Functions endpoint's fault switch for that operation.
 */
export interface ServiceSpec {
  readonly dynamodbEndpoint: string;
  readonly tablePrefix: string;
  readonly upstream: { readonly url: string; readonly token: string; readonly sshPort?: number | undefined };
  readonly payments: { readonly url: string; readonly secretKey: string; readonly webhookSecret: string };
  readonly dataDir: string;
  readonly secretsKeyFile: string;
  readonly port: number;
  readonly stepFunctionsPort: number;
  readonly controlPort: number;
}

const spec = JSON.parse(process.env.CHAOS_SERVICE ?? '') as ServiceSpec;
const service = await startLocalService({
  ...spec,
  waitMs: CHAOS_RUNTIME.waitMs,
  retryMs: CHAOS_RUNTIME.retryMs,
  schedules: false,
  env: CHAOS_RUNTIME.env,
});
const control = createServer((request, response) => {
  if (request.url === '/step-functions-fault' && request.method === 'POST') return void setStepFunctionsFault(request, response);
  if (request.url !== '/idle') return void response.writeHead(404).end();
  service.stepFunctions.idle().then(
    () => response.writeHead(204).end(),
    () => response.writeHead(500).end(),
  );
});
control.listen(spec.controlPort, '127.0.0.1', () => console.log('ready'));

/** The run's workflow-engine faults: the endpoint refuses an operation (an error status, or a reset connection). */
function setStepFunctionsFault(request: IncomingMessage, response: ServerResponse): void {
  let body = '';
  request.on('data', (chunk: Buffer) => (body += chunk.toString()));
  request.on('end', () => {
    try {
      const { operation, fault } = JSON.parse(body) as { operation: string; fault: EndpointFault | null };
      service.stepFunctions.fault(operation, fault ?? undefined);
      response.writeHead(204).end();
    } catch {
      response.writeHead(400).end();
    }
  });
}
