import { Duration, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { DEFAULT_ROUTE, functionTimeoutSeconds, type RouteAuth, type RouteDefinition } from '../../shared/routes';
import { ApiFunction, type ServiceContext } from './api-function';
import { STAGE_BURST_LIMIT, STAGE_RATE_LIMIT } from './sizing';

/**
 * Whole-API ceiling against floods; per-account limits are enforced in the functions. Five times the 100 requests/s
 * target load, with a burst of two seconds at that rate; the bench measured p99 of 100–250 ms per request (3–4
 * DynamoDB round trips), so 500 requests/s holds about 125 functions busy at once, an eighth of the account's
 * default 1,000 concurrent executions (the arithmetic is in sizing.ts).
 */
const DEFAULT_THROTTLE: apigwv2.ThrottleSettings = { rateLimit: STAGE_RATE_LIMIT, burstLimit: STAGE_BURST_LIMIT };

const ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  JSON.stringify({
    requestId: '$context.requestId',
    time: '$context.requestTime',
    ip: '$context.identity.sourceIp',
    routeKey: '$context.routeKey',
    status: '$context.status',
    latency: '$context.responseLatency',
    integrationLatency: '$context.integrationLatency',
    responseLength: '$context.responseLength',
    integrationError: '$context.integrationErrorMessage',
  }),
);

/** Why a route has no API Gateway authorizer (cdk-nag APIG4). */
const NO_AUTHORIZER_REASON: Record<RouteAuth, string> = {
  bearer:
    'The function checks the API key and the per-account rate limits itself, answering with the error texts ' +
    'and check order the interface spec fixes; an authorizer could not.',
  session:
    'The function checks the session cookie and its CSRF token itself, answering with the error texts the ' +
    'interface spec fixes; an authorizer could not.',
  account:
    'The function checks the API key (with the per-account rate limits) or the session cookie and its CSRF token ' +
    'itself, answering with the error texts the interface spec fixes; an authorizer could not.',
  none:
    'Public by design: the catch-all route only answers 404/405 and reads no data; the console sign-up, sign-in and ' +
    'password-reset routes carry their own brute-force limits and route throttling.',
};

export interface HttpApiProps {
  /** One function and one route each; a route's `access` is everything its function may touch. */
  readonly routes: readonly RouteDefinition[];
  readonly service: ServiceContext;
  /** Default throttling of the stage; routes may set their own. @default 500 requests/s, burst 1,000 */
  readonly throttle?: apigwv2.ThrottleSettings;
}

/** The HTTP API: one Lambda per route (payload 2.0), access-logged, throttled `$default` stage. */
export class HttpApi extends Construct {
  readonly api: apigwv2.HttpApi;
  readonly stage: apigwv2.HttpStage;
  readonly accessLogs: logs.LogGroup;
  /** The route functions, by route name. */
  readonly functions: Readonly<Record<string, ApiFunction>>;

  constructor(scope: Construct, id: string, props: HttpApiProps) {
    super(scope, id);
    this.api = new apigwv2.HttpApi(this, 'Api', { createDefaultStage: false });
    const accessLogs = (this.accessLogs = new logs.LogGroup(this, 'AccessLogs', {
      retention: props.service.logs.retention,
      removalPolicy: props.service.logs.removalPolicy,
    }));
    this.stage = new apigwv2.HttpStage(this, 'DefaultStage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle: props.throttle ?? DEFAULT_THROTTLE,
      accessLogSettings: { destination: new apigwv2.LogGroupLogDestination(accessLogs), format: ACCESS_LOG_FORMAT },
    });
    this.functions = Object.fromEntries(props.routes.map((route) => [route.name, this.addRoute(route, props.service)]));
    this.throttleRoutes(props.routes);
  }

  /** Per-route limits where a route declares one (the L2 stage has only the stage-wide setting). */
  private throttleRoutes(routes: readonly RouteDefinition[]): void {
    const throttled = routes.filter((route) => route.throttle);
    if (throttled.length === 0) return;
    const stage = this.stage.node.defaultChild as apigwv2.CfnStage;
    stage.routeSettings = Object.fromEntries(
      throttled.map((route) => [
        routeKey(route).key,
        // A JSON property: CloudFormation's own casing, which CDK passes through as written.
        { ThrottlingRateLimit: route.throttle!.rateLimit, ThrottlingBurstLimit: route.throttle!.burstLimit },
      ]),
    );
    // A route's settings can only be set once the route exists.
    for (const route of this.node.children.filter((child) => child instanceof apigwv2.HttpRoute)) stage.node.addDependency(route);
  }

  /** The base URL clients call. */
  get url(): string {
    return this.stage.url;
  }

  private addRoute(route: RouteDefinition, service: ServiceContext): ApiFunction {
    const handler = new ApiFunction(this, route.name, {
      entry: route.entry,
      access: route.access,
      service,
      timeout: Duration.seconds(functionTimeoutSeconds(route)),
    });
    const httpRoute = new apigwv2.HttpRoute(this, `${route.name}Route`, {
      httpApi: this.api,
      routeKey: routeKey(route),
      integration: new HttpLambdaIntegration(`${route.name}Integration`, handler.alias, {
        payloadFormatVersion: apigwv2.PayloadFormatVersion.VERSION_2_0,
      }),
    });
    Validations.of(httpRoute).acknowledge({ id: 'AwsSolutions-APIG4', reason: NO_AUTHORIZER_REASON[route.auth] });
    Validations.of(handler.function).acknowledge({
      id: 'Serverless-LambdaDLQ',
      reason:
        'Invoked synchronously by API Gateway: the caller receives the error; a dead-letter queue only ever holds asynchronous events.',
    });
    return handler;
  }
}

function routeKey(route: RouteDefinition): apigwv2.HttpRouteKey {
  if (route.path === DEFAULT_ROUTE) return apigwv2.HttpRouteKey.DEFAULT;
  return apigwv2.HttpRouteKey.with(route.path, apigwv2.HttpMethod[route.method]);
}
