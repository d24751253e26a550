import { runtimeSlot, type Platform } from '../platform';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { notBundled } from '../aws';
import { logger } from '../observability';

export interface MailMessage {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
}

/** Where the service's e-mail goes: Amazon SES on AWS, a folder of files on the local runtime. */
export interface Mailer {
  send(message: MailMessage): Promise<void>;
}

/** The SES SDK and the runtime's client, loaded on the first message: only functions that send mail bundle them. */
const ses = runtimeSlot(async ({ config }) => {
  if (typeof __BUNDLES_MAIL__ === 'undefined' || __BUNDLES_MAIL__) {
    const sdk = await import('@aws-sdk/client-sesv2');
    return { sdk, client: new sdk.SESv2Client({ region: config.region }) };
  }
  throw notBundled('Amazon SES');
});

/** The local runtime's mailbox: one RFC 822 file per message; its path (never its contents, which hold the link) is logged. */
async function writeToMailbox(deps: Platform, dir: string, message: MailMessage): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, `${deps.clock.now().toISOString().replaceAll(':', '-')}-${randomBytes(4).toString('hex')}.eml`);
  const headers = [
    `From: ${deps.config.console.mailFrom}`,
    `To: ${message.to}`,
    `Subject: ${message.subject}`,
    `Date: ${deps.clock.now().toUTCString()}`,
  ];
  await writeFile(file, `${headers.join('\r\n')}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${message.text}\r\n`, { mode: 0o600 });
  logger.info('mail written to the local mailbox', { file });
}

/** The runtime's mailer: into the mail folder when its configuration names one (the local runtime), else SES. */
export function configuredMailer(deps: Platform): Mailer {
  const { mailDir } = deps.config.console;
  return { send: (message) => (mailDir ? writeToMailbox(deps, mailDir, message) : sendWithSes(deps, message)) };
}

/** Sends one plain-text message through Amazon SES. */
async function sendWithSes(deps: Platform, message: MailMessage): Promise<void> {
  const { mailFrom } = deps.config.console;
  const { sdk, client } = await ses.of(deps);
  await client.send(
    new sdk.SendEmailCommand({
      FromEmailAddress: mailFrom,
      Destination: { ToAddresses: [message.to] },
      Content: { Simple: { Subject: { Data: message.subject }, Body: { Text: { Data: message.text } } } },
    }),
  );
}
