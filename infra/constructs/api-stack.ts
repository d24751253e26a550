import type { RemovalPolicy } from 'aws-cdk-lib';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import type { RouteDefinition } from '../../shared/routes';
import type { ServiceContext } from './api-function';
import { ConsoleSite } from './console-site';
import { EdgeFirewall } from './edge-firewall';
import { GradualDeployments } from './gradual-deployments';
import { HttpApi } from './http-api';
import { ApiRollbackAlarms } from './operations';
import { ServiceNestedStack } from './service-nested-stack';

export interface ApiStackProps {
  readonly stage: string;
  /** One function and one route each; a route's `access` is everything its function may touch. */
  readonly routes: readonly RouteDefinition[];
  readonly service: ServiceContext;
  /** The stage's alarm topic, which the rollback alarms notify. */
  readonly alarmTopic: sns.ITopic;
  /** Comma-separated origins of other web pages of the service; the console's own is added. */
  readonly trustedOrigins: string;
  /** Of the console's buckets and the edge's origin secret. */
  readonly removalPolicy: RemovalPolicy;
  /** Put CloudFront with the web ACL in front of the API, and the console on that same distribution. */
  readonly edge: boolean;
}

/**
 * A nested stack for the HTTP API: its stage and access log, one function per route (with its version, live alias,
 * role and log group), each function's canary deployment group with the two alarms that roll it back, and the
 * console's CloudFront distribution and bucket in front of the API. A route adds about ten resources, so the routes
 * live here, away from the parent stack's tables and workflows. The console sits with the API because each needs
 * the other: the distribution sends /api/* to the API, and the functions learn the distribution's origin.
 */
export class ApiStack extends ServiceNestedStack {
  readonly httpApi: HttpApi;
  readonly edge: EdgeFirewall | undefined;
  readonly console: ConsoleSite;
  readonly rollbackAlarms: ApiRollbackAlarms;
  readonly deployments: GradualDeployments;

  constructor(scope: Construct, id: string, props: ApiStackProps) {
    super(scope, id, {
      description: `VpsService-${props.stage} HTTP API: routes, their functions and gradual deployments, and the console`,
    });
    this.httpApi = new HttpApi(this, 'HttpApi', { routes: props.routes, service: props.service });
    this.edge = props.edge ? new EdgeFirewall(this, 'Edge', { api: this.httpApi, removalPolicy: props.removalPolicy }) : undefined;
    // Behind the edge the console shares its distribution: one origin, one web ACL, and /api/* carries the origin header.
    this.console = new ConsoleSite(this, 'Console', {
      httpApi: this.httpApi.api,
      distribution: this.edge?.distribution,
      removalPolicy: props.removalPolicy,
    });
    // The functions learn the console's origin: links in e-mails, and the Origin check of cookie-authenticated calls.
    const trustedOrigins = [props.trustedOrigins, this.console.origin].filter(Boolean).join(',');
    for (const fn of Object.values(this.httpApi.functions)) {
      fn.function.addEnvironment('CONSOLE_URL', this.console.url);
      fn.function.addEnvironment('TRUSTED_ORIGINS', trustedOrigins);
    }
    this.rollbackAlarms = new ApiRollbackAlarms(this, 'RollbackAlarms', {
      stage: props.stage,
      httpStage: this.httpApi.stage,
      alarmTopic: props.alarmTopic,
    });
    // A new version of a route takes 10 % of its traffic for 5 minutes; an API 5xx or latency alarm rolls it back.
    this.deployments = new GradualDeployments(this, 'ApiDeployments', {
      aliases: Object.fromEntries(Object.entries(this.httpApi.functions).map(([name, fn]) => [name, fn.alias])),
      rollbackAlarms: this.rollbackAlarms.alarms,
    });
  }
}
