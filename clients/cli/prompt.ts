import { createInterface } from 'node:readline/promises';
import { UsageError } from './errors';

/**
 * Asks on the terminal for a secret without echoing it: the question on stderr, the answer read key by key until
 * Enter (Backspace erases, Ctrl-C or Ctrl-D gives up).
 */
export function promptHidden(question: string, input: NodeJS.ReadStream = process.stdin): Promise<string> {
  process.stderr.write(question);
  input.setRawMode(true);
  input.setEncoding('utf8');
  input.resume();
  let answer = '';
  return new Promise((resolve, reject) => {
    const finish = (outcome: () => void) => {
      input.off('data', onData);
      input.setRawMode(false);
      input.pause();
      process.stderr.write('\n');
      outcome();
    };
    const onData = (chunk: string) => {
      for (const character of chunk) {
        if (character === '\r' || character === '\n') return finish(() => resolve(answer.trim()));
        if (character === '\u0003' || character === '\u0004') return finish(() => reject(new UsageError('cancelled')));
        answer = character === '\u007f' || character === '\b' ? answer.slice(0, -1) : answer + character;
      }
    };
    input.on('data', onData);
  });
}

/** Asks on the terminal and reads one line of answer (echoed as typed). */
export async function promptLine(question: string): Promise<string> {
  const lines = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return (await lines.question(question)).trim();
  } finally {
    lines.close();
  }
}
