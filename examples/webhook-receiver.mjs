// A webhook receiver: `npm install standardwebhooks`, then `WEBHOOK_SECRET=whsec_… node webhook-receiver.mjs`.
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const webhook = new Webhook(process.env.WEBHOOK_SECRET);
const seen = new Set(); // event ids: a retried or republished event has the same id
const latest = new Map(); // instance_id → highest sequence applied: older news of an instance is skipped

createServer((req, res) => {
  let body = '';
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    let event;
    try {
      event = webhook.verify(body, req.headers);
    } catch {
      return res.writeHead(401).end();
    }
    res.writeHead(204).end(); // answer within 10 s; do the work after
    if (seen.has(event.id)) return;
    seen.add(event.id);
    // Only instance events carry a sequence; job and webhook events (sequence null) are never out of date.
    if (event.sequence !== null) {
      if (event.sequence < (latest.get(event.instance_id) ?? 0)) return;
      latest.set(event.instance_id, event.sequence);
    }
    console.log(event.type, event.instance_id ?? '', event.data.from ?? '', event.data.to ?? '');
  });
}).listen(Number(process.env.PORT ?? 4000), '127.0.0.1');
