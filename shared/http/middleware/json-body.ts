import httpJsonBodyParser from '@middy/http-json-body-parser';
import { Failure } from '../../model/errors';
import { bodyTooLarge, MAX_BODY_BYTES, UNSUPPORTED_MEDIA_TYPE } from '../../contracts/contract';
import type { Event, Middleware } from './state';

/**
 * The Content-Type a JSON body may come with. `application/json` (and any `+json` type) always; on a request with an
 * API key also none at all and `application/x-www-form-urlencoded`, which is what `curl -d` sends unless told otherwise: the
 * body is parsed as JSON either way, so real form fields fail as `Invalid JSON body`. Cookie routes, which a browser
 * page calls, take JSON types only: another site's page can send a form or plain text without asking first, but
 * not JSON.
 */
const JSON_TYPE = /^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/i;
const LENIENT_TYPE = /^application\/x-www-form-urlencoded\s*(;|$)/i;

function acceptsContentType(contentType: string | undefined, lenient: boolean): boolean {
  if (contentType !== undefined && JSON_TYPE.test(contentType)) return true;
  return lenient && (contentType === undefined || LENIENT_TYPE.test(contentType));
}

const decoded = (body: string, isBase64Encoded: boolean) => (isBase64Encoded ? Buffer.from(body, 'base64').toString() : body);

/**
 * Reads the body as JSON with @middy/http-json-body-parser, within the size limit and the Content-Type policy, with
 * the service's own answers: 413 past the limit, 415 for another type, 400 `Invalid JSON body` for what does not
 * parse (or carries a prototype key). An empty body parses as nothing, for the schema to accept or refuse.
 */
export const jsonBody = (lenientContentType: (event: Event) => boolean, maxBytes = MAX_BODY_BYTES): Middleware => {
  const parser = httpJsonBodyParser({ disableContentTypeCheck: true });
  return {
    before: async (request) => {
      const { event } = request;
      const raw = event.body === undefined ? '' : decoded(event.body, event.isBase64Encoded);
      if (Buffer.byteLength(raw) > maxBytes) throw new Failure('too_large', bodyTooLarge(maxBytes / 1024));
      if (raw.trim() === '') {
        event.body = undefined;
        return;
      }
      if (!acceptsContentType(event.headers['content-type'], lenientContentType(event))) {
        throw new Failure('unsupported_media_type', UNSUPPORTED_MEDIA_TYPE);
      }
      try {
        await parser.before?.(request);
      } catch {
        throw new Failure('invalid_request', 'Invalid JSON body');
      }
    },
  };
};
