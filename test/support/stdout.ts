/** Captures what is written to stdout (where Powertools writes log lines and EMF metrics) while `work` runs. */
export async function captureStdoutLines(work: () => Promise<void>): Promise<string[]> {
  const lines: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  try {
    await work();
  } finally {
    process.stdout.write = write;
  }
  return lines
    .join('')
    .split('\n')
    .filter((line) => line.startsWith('{'));
}
