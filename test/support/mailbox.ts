import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface Mail {
  readonly file: string;
  readonly to: string;
  readonly subject: string;
  readonly text: string;
}

/** Every message the local runtime wrote to its mail folder for this address, oldest first. */
export async function mailsTo(mailDir: string, address: string): Promise<Mail[]> {
  const files = (await readdir(mailDir).catch(() => [])).filter((name) => name.endsWith('.eml')).sort();
  const mails = await Promise.all(
    files.map(async (name) => {
      const raw = await readFile(join(mailDir, name), 'utf8');
      const [head = '', ...body] = raw.split('\r\n\r\n');
      const header = (field: string) => new RegExp(`^${field}: (.*)$`, 'm').exec(head)?.[1] ?? '';
      return { file: join(mailDir, name), to: header('To'), subject: header('Subject'), text: body.join('\r\n\r\n') };
    }),
  );
  return mails.filter((mail) => mail.to === address);
}

/**
 * The link of the latest message to this address with this subject, waiting a while for the first one: the
 * service writes its e-mail after it has answered.
 */
export async function latestLink(mailDir: string, address: string, subject: string): Promise<URL> {
  for (const deadline = Date.now() + 10_000; ; await new Promise((resolve) => setTimeout(resolve, 50))) {
    const mail = (await mailsTo(mailDir, address)).filter((candidate) => candidate.subject === subject).at(-1);
    const link = mail && /https?:\/\/\S+/.exec(mail.text)?.[0];
    if (link) return new URL(link);
    if (Date.now() > deadline) throw new Error(`no "${subject}" mail with a link to ${address}`);
  }
}

/** The token a link carries in its fragment (`#/confirm?token=…`). */
export function tokenOf(link: URL): string {
  const token = new URLSearchParams(link.hash.split('?')[1] ?? '').get('token');
  if (!token) throw new Error(`no token in ${link.href}`);
  return token;
}
