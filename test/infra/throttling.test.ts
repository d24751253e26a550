import type { Template } from 'aws-cdk-lib/assertions';
import type { ServiceStack } from '../../infra/stack';
import { synthesize, type Resource } from './synth';

describe('throttling', () => {
  let stack: ServiceStack;
  let template: Template;
  let stage: Resource & { DependsOn?: string[] };

  beforeAll(() => {
    ({ stack, template } = synthesize('dev'));
    stage = Object.values(template.findResources('AWS::ApiGatewayV2::Stage'))[0] as Resource & { DependsOn?: string[] };
  });

  it('limits the whole API to 500 requests/s with a burst of 1,000, five times the target load', () => {
    expect(stage.Properties.DefaultRouteSettings).toEqual({ ThrottlingRateLimit: 500, ThrottlingBurstLimit: 1000 });
  });

  it('gives the polling routes, the public sign-in routes and the payment webhook their own limits, and no other route any', () => {
    const signIn = { ThrottlingRateLimit: 10, ThrottlingBurstLimit: 20 };
    expect(stage.Properties.RouteSettings).toEqual({
      'GET /api/v1/instances/{instance_id}': { ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 },
      'GET /api/v1/jobs/{job_id}': { ThrottlingRateLimit: 300, ThrottlingBurstLimit: 600 },
      'POST /api/v1/auth/sign-up': signIn,
      'POST /api/v1/auth/confirm': signIn,
      'POST /api/v1/auth/sign-in': signIn,
      'POST /api/v1/auth/forgot-password': signIn,
      'POST /api/v1/auth/reset-password': signIn,
      'POST /api/v1/billing/stripe/webhook': { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 },
    });
  });

  it('is deployed after the routes it names', () => {
    const routeIds = Object.keys(template.findResources('AWS::ApiGatewayV2::Route'));
    expect(routeIds).toHaveLength(Object.keys(stack.api.functions).length);
    expect(stage.DependsOn).toEqual(expect.arrayContaining(routeIds));
  });
});
