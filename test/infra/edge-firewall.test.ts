import { Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { routes } from '../../shared/routes';
import type { ServiceStack } from '../../infra/stack';
import {
  ADDRESSES_TO_FILL_STAGE,
  EDGE_REQUESTS_PER_ADDRESS,
  EDGE_WINDOW_SECONDS,
  STAGE_BURST_LIMIT,
  STAGE_CONCURRENCY,
  STAGE_RATE_LIMIT,
} from '../../infra/constructs/sizing';
import { logicalId, PROD_CONTEXT, synthesize, type Resource } from './synth';

const CACHING_DISABLED = '4135ea2d-6df8-44a3-9df3-4b5a84be39ad';
const ALL_VIEWER_EXCEPT_HOST_HEADER = 'b689b0a8-53d0-40ab-baf2-68738e2966ac';

const functionsOf = (template: Template) => template.findResources('AWS::Lambda::Function') as Record<string, Resource>;

describe('the edge firewall (prod)', () => {
  let stack: ServiceStack;
  let template: Template;
  let aclStack: Stack;
  let acl: Template;
  let distribution: Record<string, any>;

  beforeAll(() => {
    ({ stack, template } = synthesize('prod', PROD_CONTEXT));
    aclStack = stack.node.scope!.node.findChild('VpsService-prod-EdgeAcl') as Stack;
    acl = Template.fromStack(aclStack);
    distribution = Object.values(template.findResources('AWS::CloudFront::Distribution'))[0]!.Properties.DistributionConfig;
  });

  it('makes the web ACL in us-east-1 (CloudFront scope), in a companion stack of the same account', () => {
    expect([aclStack.region, aclStack.account, aclStack.terminationProtection]).toEqual(['us-east-1', '111111111111', true]);
    acl.resourceCountIs('AWS::WAFv2::WebACL', 1);
    acl.hasResourceProperties('AWS::WAFv2::WebACL', { Scope: 'CLOUDFRONT', DefaultAction: { Allow: {} }, Name: 'VpsService-prod-edge' });
    template.resourceCountIs('AWS::WAFv2::WebACL', 0);
  });

  it("blocks an address over 3,000 requests in any 5 minutes with the spec's 429 body and Retry-After", () => {
    const rules = Object.values(acl.findResources('AWS::WAFv2::WebACL'))[0]!.Properties.Rules as any[];
    const rate = rules.find((rule) => rule.Name === 'RateLimitPerAddress');

    expect(rate.Statement).toEqual({ RateBasedStatement: { Limit: 3000, EvaluationWindowSec: 300, AggregateKeyType: 'IP' } });
    expect(rate.Action).toEqual({
      Block: {
        CustomResponse: {
          ResponseCode: 429,
          CustomResponseBodyKey: 'RateLimited',
          ResponseHeaders: [{ Name: 'Retry-After', Value: '60' }],
        },
      },
    });
    acl.hasResourceProperties('AWS::WAFv2::WebACL', {
      CustomResponseBodies: {
        RateLimited: { ContentType: 'APPLICATION_JSON', Content: '{"error":"Rate limit exceeded","retry_after":60}' },
      },
    });
  });

  it("adds AWS's IP reputation list, common rule set and known bad inputs, the 8 KB body rule only counting", () => {
    const rules = Object.values(acl.findResources('AWS::WAFv2::WebACL'))[0]!.Properties.Rules as any[];

    expect(rules.map((rule) => [rule.Priority, rule.Name])).toEqual([
      [0, 'AWSManagedRulesAmazonIpReputationList'],
      [1, 'RateLimitPerAddress'],
      [2, 'AWSManagedRulesCommonRuleSet'],
      [3, 'AWSManagedRulesKnownBadInputsRuleSet'],
    ]);
    const common = rules.find((rule) => rule.Name === 'AWSManagedRulesCommonRuleSet');
    expect(common.Statement.ManagedRuleGroupStatement).toEqual({
      VendorName: 'AWS',
      Name: 'AWSManagedRulesCommonRuleSet',
      RuleActionOverrides: [{ Name: 'SizeRestrictions_BODY', ActionToUse: { Count: {} } }],
    });
    for (const rule of rules)
      expect(rule.VisibilityConfig).toEqual({ CloudWatchMetricsEnabled: true, MetricName: rule.Name, SampledRequestsEnabled: true });
  });

  it('puts CloudFront with that ACL in front of the HTTP API, uncached, HTTPS only', () => {
    expect(distribution.WebACLId).toEqual({
      'Fn::GetStackOutput': { StackName: 'VpsService-prod-EdgeAcl', Region: 'us-east-1', OutputName: expect.any(String) },
    });
    const [origin] = distribution.Origins;
    expect(origin.DomainName).toEqual({
      'Fn::Join': ['', [{ Ref: logicalId(stack.api.api) }, '.execute-api.', { Ref: 'AWS::Region' }, '.', { Ref: 'AWS::URLSuffix' }]],
    });
    expect(origin.CustomOriginConfig).toEqual({ OriginProtocolPolicy: 'https-only', OriginSSLProtocols: ['TLSv1.2'] });
    expect(distribution.DefaultCacheBehavior).toMatchObject({
      ViewerProtocolPolicy: 'https-only',
      AllowedMethods: ['GET', 'HEAD', 'OPTIONS', 'PUT', 'PATCH', 'POST', 'DELETE'],
      CachePolicyId: CACHING_DISABLED,
      OriginRequestPolicyId: ALL_VIEWER_EXCEPT_HOST_HEADER,
    });
    expect(template.toJSON().Outputs.EdgeUrl.Value).toEqual({
      'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [logicalId(stack.edge!.distribution), 'DomainName'] }]],
    });
  });

  it('sends the generated origin secret with each request, and every API function (only they) requires it', () => {
    const secretId = logicalId(stack.edge!.originSecret);
    const reference = { 'Fn::Join': ['', ['{{resolve:secretsmanager:', { Ref: secretId }, ':SecretString:::}}']] };
    expect(distribution.Origins[0].OriginCustomHeaders).toEqual([{ HeaderName: 'x-origin-verify', HeaderValue: reference }]);
    template.hasResourceProperties('AWS::SecretsManager::Secret', {
      GenerateSecretString: { PasswordLength: 48, ExcludePunctuation: true },
    });
    expect(template.findResources('AWS::SecretsManager::Secret')[secretId]!.Properties).not.toHaveProperty('SecretString');

    const apiFunctionIds = new Set(Object.values(stack.api.functions).map((fn) => logicalId(fn.function)));
    expect(apiFunctionIds.size).toBe(routes.length);
    for (const [id, fn] of Object.entries(functionsOf(template))) {
      const variables = fn.Properties.Environment?.Variables ?? {};
      if (apiFunctionIds.has(id)) expect(variables.EDGE_ORIGIN_SECRET, id).toEqual(reference);
      else expect(variables, id).not.toHaveProperty('EDGE_ORIGIN_SECRET');
    }
  });

  it('serves the console from the same distribution: /console/* beside the API, one origin for both', () => {
    template.resourceCountIs('AWS::CloudFront::Distribution', 1);
    expect(distribution.CacheBehaviors.map((behavior: { PathPattern: string }) => behavior.PathPattern)).toEqual(['/console/*']);
    expect(stack.resolve(stack.console.distribution.distributionId)).toEqual(stack.resolve(stack.edge!.distribution.distributionId));
  });

  it('passes cdk-nag AwsSolutions in both stacks', () => {
    for (const scope of [stack.edge!, aclStack]) {
      const { violations } = new AwsSolutionsChecks().validateScope(scope);
      expect(
        violations.filter((violation) => violation.severity === 'error' || violation.severity === 'warning').map((v) => v.ruleName),
      ).toEqual([]);
    }
    expect(Annotations.fromStack(aclStack).findError('*', Match.anyValue())).toEqual([]);
  });
});

describe('the edge firewall elsewhere', () => {
  it('is not part of dev unless asked for: the execute-api endpoint serves, no function checks a header', () => {
    const { template } = synthesize('dev');

    // The console's own distribution only: no web ACL, and /api/* reaches the API without an origin header.
    const distributions = Object.values(template.findResources('AWS::CloudFront::Distribution'));
    expect(distributions.map((d) => [d.Properties.DistributionConfig.WebACLId, d.Properties.DistributionConfig.Comment])).toEqual([
      [undefined, 'Account console and API on one origin'],
    ]);
    template.resourceCountIs('AWS::WAFv2::WebACL', 0);
    for (const fn of Object.values(functionsOf(template)))
      expect(fn.Properties.Environment?.Variables ?? {}).not.toHaveProperty('EDGE_ORIGIN_SECRET');
  });

  it('keeps the web ACL in the stack itself when the stack is in us-east-1', () => {
    const { stack, template } = synthesize('prod', { ...PROD_CONTEXT, region: 'us-east-1' });

    template.resourceCountIs('AWS::WAFv2::WebACL', 1);
    expect(stack.node.scope!.node.tryFindChild('VpsService-prod-EdgeAcl')).toBeUndefined();
    const distribution = Object.values(template.findResources('AWS::CloudFront::Distribution'))[0]!.Properties.DistributionConfig;
    expect(distribution.WebACLId).toEqual({ 'Fn::GetAtt': [stack.resolve(stack.edge!.webAcl.logicalId), 'Arn'] });
  });

  it('can be turned on for dev, which then needs a region, or off for prod', () => {
    expect(() => synthesize('dev', { edge: 'true' })).toThrow("the edge firewall needs the stack's account and region");
    const off = synthesize('prod', { ...PROD_CONTEXT, edge: 'false' }).template;
    off.resourceCountIs('AWS::WAFv2::WebACL', 0);
    expect(Object.values(off.findResources('AWS::CloudFront::Distribution')).map((d) => d.Properties.DistributionConfig.WebACLId)).toEqual([
      undefined,
    ]);
    expect(() => synthesize('dev', { edge: 'yes' })).toThrow('context edge must be true or false; got yes');
  });
});

describe('sizing', () => {
  it('sizes the stage from the stated target load, and the edge rule from the per-account limit', () => {
    // 100 requests/s target × 5 headroom; a burst of 2 s; 500 × 0.25 s p99 = 125 functions busy.
    expect([STAGE_RATE_LIMIT, STAGE_BURST_LIMIT, STAGE_CONCURRENCY]).toEqual([500, 1000, 125]);
    // 10 accounts × 60 a minute × 5 minutes per address; 50 addresses at that rate fill the stage.
    expect([EDGE_REQUESTS_PER_ADDRESS, EDGE_WINDOW_SECONDS, ADDRESSES_TO_FILL_STAGE]).toEqual([3000, 300, 50]);
  });
});
