import { spawn } from 'node:child_process';
import { repositoryRoot } from '../../infra/local/runtime';

export interface ProcessRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a script on the project's Node from the repository root, with stdout and stderr piped and collected. */
export function runNode(args: readonly string[], options: { env: NodeJS.ProcessEnv; stdin?: string }): Promise<ProcessRun> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, args, { cwd: repositoryRoot, env: options.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
    child.stdin.end(options.stdin ?? '');
  });
}
