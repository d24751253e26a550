type Stream = NodeJS.WriteStream;

/** The JSON lines written to `streams` while `work` runs, in the order they were written. */
async function captureLines(streams: Stream[], work: () => Promise<void>): Promise<string[]> {
  const chunks: string[] = [];
  const writes = streams.map((stream) => stream.write.bind(stream));
  for (const stream of streams) {
    stream.write = ((chunk: string | Uint8Array) => {
      chunks.push(String(chunk));
      return true;
    }) as Stream['write'];
  }
  try {
    await work();
  } finally {
    streams.forEach((stream, i) => (stream.write = writes[i]!));
  }
  return chunks
    .join('')
    .split('\n')
    .filter((line) => line.startsWith('{'));
}

/** Captures what is written to stdout (where Powertools writes log lines and EMF metrics) while `work` runs. */
export const captureStdoutLines = (work: () => Promise<void>) => captureLines([process.stdout], work);

/** Captures every log line while `work` runs: Powertools writes WARN and above to stderr, the rest to stdout. */
export const captureLogLines = (work: () => Promise<void>) => captureLines([process.stdout, process.stderr], work);
