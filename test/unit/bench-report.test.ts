import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repositoryRoot = fileURLToPath(new URL('../..', import.meta.url));

/** The code a report's figures come from: once any of it changes, the report must be made again. */
const MEASURED = ['shared', 'functions', 'infra'];

const git = (...args: string[]) => execFileSync('git', args, { cwd: repositoryRoot, encoding: 'utf8' }).trim();

describe('bench/results.md', () => {
  const report = readFileSync(join(repositoryRoot, 'bench/results.md'), 'utf8');
  const commit = /^Produced by `npm run bench` at commit ([0-9a-f]{40})( \(with uncommitted changes)?/m.exec(report);

  it('names the commit it measured, with the measured code as committed', () => {
    expect(commit?.[1]).toMatch(/^[0-9a-f]{40}$/);
    expect(commit?.[2]).toBeUndefined();
  });

  it('is the report of the code here: nothing under shared/, functions/ or infra/ changed since the commit it measured', () => {
    const changed = git('diff', '--name-only', `${commit?.[1]}`, 'HEAD', '--', ...MEASURED);

    expect(changed.split('\n').filter(Boolean)).toEqual([]);
  });
});
