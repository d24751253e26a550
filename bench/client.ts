import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Ready, Request, ServerSettings } from './protocol';

type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;

/** The service under measurement, in a child process (bench/server.ts), and how to talk to it. */
export interface BenchServer extends Ready {
  ask<T>(request: WithoutId<Request>): Promise<T>;
  call(
    method: string,
    path: string,
    options?: { apiKey?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<{ status: number; body: any }>;
  stop(): Promise<void>;
}

export async function startBenchServer(settings: ServerSettings): Promise<BenchServer> {
  const child: ChildProcess = fork(fileURLToPath(new URL('./server.ts', import.meta.url)), [JSON.stringify(settings)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let nextId = 1;
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the bench server exited (${code})`)));
    child.on('message', (message: { ready?: Ready; id?: number; result?: unknown; error?: string }) => {
      if (message.ready) resolve(message.ready);
      const waiting = message.id === undefined ? undefined : pending.get(message.id);
      if (!waiting || message.id === undefined) return;
      pending.delete(message.id);
      if (message.error) waiting.reject(new Error(message.error));
      else waiting.resolve(message.result);
    });
  });
  return {
    ...ready,
    ask<T>(request: WithoutId<Request>) {
      const id = nextId++;
      return new Promise<T>((resolve, reject) => {
        pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
        child.send({ ...request, id });
      });
    },
    async call(method, path, { apiKey, body, headers = {} } = {}) {
      const response = await fetch(`${ready.baseUrl}${path}`, {
        method,
        headers: {
          ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined };
    },
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.disconnect();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
