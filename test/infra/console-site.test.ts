import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import { ConsoleSite } from '../../infra/constructs/console-site';
import type { ServiceStack } from '../../infra/stack';
import { cdkJsonContext, logicalId, policyStatements, synthesize, type Resource } from './synth';

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
const CACHING_DISABLED = '4135ea2d-6df8-44a3-9df3-4b5a84be39ad';

describe('ConsoleSite in the service stack', () => {
  let stack: ServiceStack;
  let template: Template;
  let distribution: Resource;

  beforeAll(() => {
    ({ stack, template } = synthesize('dev'));
    distribution = Object.values(template.findResources('AWS::CloudFront::Distribution'))[0] as Resource;
  });

  it('keeps the console bucket private, readable only by its distribution through Origin Access Control', () => {
    const bucketId = logicalId(stack.console.bucket);
    template.hasResourceProperties('AWS::S3::Bucket', {
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
    });
    template.resourceCountIs('AWS::CloudFront::OriginAccessControl', 1);
    const policy = Object.values(
      template.findResources('AWS::S3::BucketPolicy', { Properties: { Bucket: { Ref: bucketId } } }),
    )[0] as Resource;
    const statements = policy.Properties.PolicyDocument.Statement as { Effect: string; Principal?: unknown }[];
    const toServices = statements.filter(
      (statement) => statement.Effect === 'Allow' && JSON.stringify(statement.Principal).includes('Service'),
    );
    expect(statements.filter((statement) => statement.Effect === 'Allow' && JSON.stringify(statement.Principal).includes('"*"'))).toEqual(
      [],
    );
    expect(toServices).toEqual([
      expect.objectContaining({
        Action: 's3:GetObject',
        Principal: { Service: 'cloudfront.amazonaws.com' },
        Condition: { StringEquals: { 'AWS:SourceArn': expect.anything() } },
      }),
    ]);
  });

  it('serves the console from S3 by default and sends /api/* to the HTTP API uncached, every method', () => {
    const config = distribution.Properties.DistributionConfig;
    const apiBehavior = config.CacheBehaviors.find((behavior: { PathPattern: string }) => behavior.PathPattern === '/api/*');
    const apiOrigin = config.Origins.find((origin: { Id: string }) => origin.Id === apiBehavior.TargetOriginId);
    const consoleOrigin = config.Origins.find((origin: { Id: string }) => origin.Id === config.DefaultCacheBehavior.TargetOriginId);

    expect(config.CacheBehaviors).toHaveLength(1);
    expect(apiBehavior.CachePolicyId).toBe(CACHING_DISABLED);
    expect(apiBehavior.AllowedMethods).toEqual(['GET', 'HEAD', 'OPTIONS', 'PUT', 'PATCH', 'POST', 'DELETE']);
    expect(apiBehavior.ViewerProtocolPolicy).toBe('https-only');
    expect(JSON.stringify(apiOrigin.DomainName)).toContain('.execute-api.');
    expect(apiOrigin.CustomOriginConfig.OriginProtocolPolicy).toBe('https-only');
    expect(consoleOrigin.S3OriginConfig).toBeDefined();
    expect(consoleOrigin.OriginAccessControlId).toBeDefined();
    expect(config.DefaultCacheBehavior.FunctionAssociations).toHaveLength(1);
  });

  it('sends the console security headers', () => {
    template.hasResourceProperties('AWS::CloudFront::ResponseHeadersPolicy', {
      ResponseHeadersPolicyConfig: Match.objectLike({
        SecurityHeadersConfig: {
          ContentSecurityPolicy: { ContentSecurityPolicy: CSP, Override: true },
          ContentTypeOptions: { Override: true },
          FrameOptions: { FrameOption: 'DENY', Override: true },
          ReferrerPolicy: { ReferrerPolicy: 'no-referrer', Override: true },
          StrictTransportSecurity: { AccessControlMaxAgeSec: 31_536_000, IncludeSubdomains: true, Override: true },
        },
      }),
    });
  });

  it('throttles each public sign-in route below the stage default', () => {
    const stage = Object.values(template.findResources('AWS::ApiGatewayV2::Stage'))[0] as Resource;

    const publicRoutes = [
      'POST /api/v1/auth/confirm',
      'POST /api/v1/auth/forgot-password',
      'POST /api/v1/auth/reset-password',
      'POST /api/v1/auth/sign-in',
      'POST /api/v1/auth/sign-up',
    ];
    // Beside the polling routes' own limits, which the sign-in routes' must not replace.
    expect(Object.keys(stage.Properties.RouteSettings).sort()).toEqual(
      [...publicRoutes, 'GET /api/v1/instances/{instance_id}', 'GET /api/v1/jobs/{job_id}', 'POST /api/v1/billing/stripe/webhook'].sort(),
    );
    for (const route of publicRoutes) {
      expect(stage.Properties.RouteSettings[route], route).toEqual({ ThrottlingRateLimit: 10, ThrottlingBurstLimit: 20 });
    }
  });

  // Sign-up and forgot-password only queue a message, the same for every address; the mail sender sends it.
  it.each([
    ['SendAuthMail', (built: ServiceStack) => built.events.functions.sendAuthMail, true],
    ['AuthSignUp', (built: ServiceStack) => built.api.functions.AuthSignUp!, false],
    ['AuthForgotPassword', (built: ServiceStack) => built.api.functions.AuthForgotPassword!, false],
    ['AuthSignIn', (built: ServiceStack) => built.api.functions.AuthSignIn!, false],
    ['ListKeys', (built: ServiceStack) => built.api.functions.ListKeys!, false],
  ])('lets %s send e-mail through SES: %s', (_name, functionOf, sends) => {
    const fn = functionOf(stack);
    const ses = policyStatements(template, logicalId(fn.role)).filter((statement) => JSON.stringify(statement.Action).includes('ses:'));

    expect(ses).toEqual(
      sends
        ? [
            {
              Effect: 'Allow',
              Action: 'ses:SendEmail',
              Resource: {
                'Fn::Join': [
                  '',
                  [
                    'arn:',
                    { Ref: 'AWS::Partition' },
                    ':ses:',
                    { Ref: 'AWS::Region' },
                    ':',
                    { Ref: 'AWS::AccountId' },
                    ':identity/vps.example.net',
                  ],
                ],
              },
              Condition: { StringEquals: { 'ses:FromAddress': 'no-reply@vps.example.net' } },
            },
          ]
        : [],
    );
  });

  it('tells the API functions the console origin, for e-mailed links and the Origin check', () => {
    const fn = template.toJSON().Resources[logicalId(stack.api.functions.AuthSignUp!.function)] as Resource;
    const domain = { 'Fn::GetAtt': [logicalId(stack.console.distribution), 'DomainName'] };

    expect(fn.Properties.Environment.Variables.CONSOLE_URL).toEqual({ 'Fn::Join': ['', ['https://', domain, '/console/']] });
    expect(fn.Properties.Environment.Variables.TRUSTED_ORIGINS).toEqual({ 'Fn::Join': ['', ['https://', domain]] });
  });
});

describe('ConsoleSite with an existing distribution', () => {
  it('adds /console/* to a distribution whose default behaviour is the API, instead of making its own', () => {
    const app = new App({ context: { ...cdkJsonContext, 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'Edge');
    const httpApi = new apigwv2.HttpApi(stack, 'Api');
    const existing = new cloudfront.Distribution(stack, 'Existing', {
      defaultBehavior: { origin: new origins.HttpOrigin('api.example.com') },
    });

    const site = new ConsoleSite(stack, 'Console', { httpApi, distribution: existing, removalPolicy: RemovalPolicy.DESTROY });

    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::CloudFront::Distribution', 1);
    const config = (Object.values(template.findResources('AWS::CloudFront::Distribution'))[0] as Resource).Properties.DistributionConfig;
    expect(config.CacheBehaviors.map((behavior: { PathPattern: string }) => behavior.PathPattern)).toEqual(['/console/*']);
    expect(site.distribution).toBe(existing);
  });
});
