import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import type { WindowState } from '../../model/rate-limits';
import type { ApiKey } from '../../store/api-keys';
import type { BearerPrincipal } from '../bearer-auth';
import type { SessionPrincipal } from '../session-auth';
import type { ApiResponse } from '../responses';

export type Event = APIGatewayProxyEventV2;

/** What the middlewares learn about a request, kept on the Lambda context for those after them and the handler. */
export interface RequestState {
  /** The limit windows the request was counted in; every answer carries them as headers. */
  windows: WindowState[];
  /** A Bearer request's key, once found active. */
  apiKey?: ApiKey;
  /**
   * The rest of a Bearer authentication (the owner's read and standing), started as soon as the key is found so that
   * it overlaps the rate-limit counters: both take one round trip.
   */
  bearer?: Promise<BearerPrincipal>;
  session?: SessionPrincipal;
  /** The route's early work (started beside a Bearer key's lookup), when it has any and the request has a key. */
  early?: Promise<unknown>;
  /** The claimed Idempotency-Key, settled when the response is known. */
  idempotencyKey?: string;
  /** The first request's response, when this one replays it. */
  replay?: ApiResponse;
  /** The route's work, once started: it may outlive the answer when the route's budget runs out first. */
  work?: Promise<ApiResponse>;
}

export type StatefulContext = Context & { request: RequestState };
export type Middleware = MiddlewareObj<Event, ApiResponse, Error, StatefulContext>;
