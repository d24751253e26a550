import { NestedStack } from 'aws-cdk-lib';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import type { RouteDefinition } from '../routes';
import type { ServiceContext } from './api-function';
import { GradualDeployments } from './gradual-deployments';
import { HttpApi } from './http-api';
import { ApiRollbackAlarms } from './operations';

export interface ApiStackProps {
  readonly stage: string;
  /** One function and one route each; a route's `access` is everything its function may touch. */
  readonly routes: readonly RouteDefinition[];
  readonly service: ServiceContext;
  /** The stage's alarm topic, which the rollback alarms notify. */
  readonly alarmTopic: sns.ITopic;
}

/**
 * A nested stack for the HTTP API: its stage and access log, one function per route (with its version, live alias,
 * role and log group), and each function's canary deployment group with the two alarms that roll it back. A route
 * adds about ten resources, so the routes live here, away from the parent stack's tables and workflows.
 */
export class ApiStack extends NestedStack {
  readonly httpApi: HttpApi;
  readonly rollbackAlarms: ApiRollbackAlarms;
  readonly deployments: GradualDeployments;

  constructor(scope: Construct, id: string, props: ApiStackProps) {
    super(scope, id, { description: `VpsService-${props.stage} HTTP API: routes, their functions and gradual deployments` });
    this.httpApi = new HttpApi(this, 'HttpApi', { routes: props.routes, service: props.service });
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
