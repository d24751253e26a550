import { join } from 'node:path';
import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3deploy from 'aws-cdk-lib/aws-s3-deployment';
import { Construct } from 'constructs';
import { CONSOLE_PATH, CONTENT_SECURITY_POLICY } from '../console-headers';
import { REPO_ROOT } from './api-function';
import { acknowledgeWildcardResources } from './nag';

/** The console's built files (`npm run build:console`). */
const CONSOLE_DIST = join(REPO_ROOT, 'console/dist');

/**
 * BucketDeployment's handler is one function per stack that CDK builds and owns: its runtime, managed policy and
 * its grants on the asset and target buckets (object-level wildcards) are CDK's, not ours to narrow. The wildcard
 * resources are acknowledged as its policy names them once the stack is resolved: the asset bucket's name carries
 * the region, a literal when the stack is bound to one.
 */
function acknowledgeDeploymentHandler(deployment: s3deploy.BucketDeployment): void {
  const stack = Stack.of(deployment);
  const handler = stack.node.children.find((child) => child.node.id.startsWith('Custom::CDKBucketDeployment'));
  if (!handler) return;
  const reason =
    'CDK-managed BucketDeployment handler: it copies the console files from the CDK asset bucket into the console bucket and invalidates the distribution.';
  const findings = [
    'AwsSolutions-L1',
    'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
    ...['s3:GetBucket*', 's3:GetObject*', 's3:List*', 's3:Abort*', 's3:DeleteObject*'].map(
      (action) => `AwsSolutions-IAM5[Action::${action}]`,
    ),
    'Serverless-LambdaLatestVersion',
    'Serverless-LambdaTracing',
  ];
  Validations.of(handler).acknowledge(...findings.map((id) => ({ id, reason })));
  Validations.of(handler).acknowledge({
    id: 'Serverless-LambdaDLQ',
    reason:
      'CDK-managed custom resource handler: CloudFormation waits for its answer and fails the deploy without one, so a dead-letter queue would hold nothing to act on.',
  });
  acknowledgeWildcardResources(handler, reason);
}

/** The console's one page: the folder itself is served as its index.html (hashed assets are requested by name). */
const INDEX_REWRITE = `function handler(event) {
  var request = event.request;
  if (request.uri === '/console' || request.uri === '/console/') request.uri = '/console/index.html';
  return request;
}`;

export interface ConsoleSiteProps {
  /** The HTTP API that `/api/*` reaches. */
  readonly httpApi: apigwv2.IHttpApi;
  /**
   * A distribution whose default behaviour is the API (the edge firewall's, with its web ACL and origin header): the
   * console adds `/console/*` to it. Without it the site makes its own, with the console as its default behaviour.
   */
  readonly distribution?: cloudfront.Distribution;
  readonly removalPolicy: RemovalPolicy;
}

/**
 * The account console on AWS: a private S3 bucket read only by CloudFront through Origin Access Control, and one
 * distribution that serves the console under /console/ and sends /api/* to the HTTP API, so that the console and
 * the API share one origin (the session cookie and the Origin check rely on it).
 */
export class ConsoleSite extends Construct {
  readonly bucket: s3.Bucket;
  readonly distribution: cloudfront.Distribution;

  constructor(scope: Construct, id: string, props: ConsoleSiteProps) {
    super(scope, id);
    const autoDelete = props.removalPolicy === RemovalPolicy.DESTROY;
    const logs = new s3.Bucket(this, 'Logs', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      // CloudFront standard logs are delivered with ACLs.
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
      lifecycleRules: [{ expiration: Duration.days(90) }],
      removalPolicy: props.removalPolicy,
      autoDeleteObjects: autoDelete,
    });
    Validations.of(logs).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'This is the log bucket itself; logging its own access would loop.',
    });
    this.bucket = new s3.Bucket(this, 'Bucket', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      serverAccessLogsBucket: logs,
      serverAccessLogsPrefix: 'bucket/',
      removalPolicy: props.removalPolicy,
      autoDeleteObjects: autoDelete,
    });

    const consoleBehavior: cloudfront.BehaviorOptions = {
      origin: origins.S3BucketOrigin.withOriginAccessControl(this.bucket),
      viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
      cachePolicy: cloudfront.CachePolicy.CACHING_OPTIMIZED,
      responseHeadersPolicy: this.securityHeaders(),
      functionAssociations: [
        {
          eventType: cloudfront.FunctionEventType.VIEWER_REQUEST,
          function: new cloudfront.Function(this, 'IndexRewrite', {
            code: cloudfront.FunctionCode.fromInline(INDEX_REWRITE),
            runtime: cloudfront.FunctionRuntime.JS_2_0,
          }),
        },
      ],
    };
    const apiBehavior: cloudfront.BehaviorOptions = {
      origin: new origins.HttpOrigin(`${props.httpApi.apiId}.execute-api.${Stack.of(this).region}.amazonaws.com`, {
        protocolPolicy: cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
      }),
      viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
      allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
      cachePolicy: cloudfront.CachePolicy.CACHING_DISABLED,
      // Everything the functions read (cookies, Origin, Sec-Fetch-Site, the CSRF header), but the Host API Gateway needs.
      originRequestPolicy: cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
    };

    if (props.distribution) {
      this.distribution = props.distribution;
      this.distribution.addBehavior(`${CONSOLE_PATH}*`, consoleBehavior.origin, consoleBehavior);
    } else {
      this.distribution = new cloudfront.Distribution(this, 'Distribution', {
        comment: 'Account console and API on one origin',
        defaultBehavior: consoleBehavior,
        additionalBehaviors: { '/api/*': apiBehavior },
        enableLogging: true,
        logBucket: logs,
        logFilePrefix: 'cloudfront/',
      });
      Validations.of(this.distribution).acknowledge(
        { id: 'AwsSolutions-CFR1', reason: 'A self-service console for customers anywhere: no country is excluded.' },
        {
          id: 'AwsSolutions-CFR2',
          reason: 'The WAF web ACL belongs to the distribution that fronts the API; pass it as `distribution` to share it.',
        },
        {
          id: 'AwsSolutions-CFR4',
          reason: 'The default *.cloudfront.net certificate cannot be pinned to TLS 1.2; a custom domain with its own certificate can.',
        },
      );
    }

    const files = new s3deploy.BucketDeployment(this, 'Files', {
      sources: [s3deploy.Source.asset(CONSOLE_DIST)],
      destinationBucket: this.bucket,
      destinationKeyPrefix: CONSOLE_PATH.slice(1),
      distribution: this.distribution,
      distributionPaths: [`${CONSOLE_PATH}*`],
      // Hashed asset names change with their contents; the page itself is checked again on each visit.
      cacheControl: [s3deploy.CacheControl.fromString('public, max-age=300')],
    });
    acknowledgeDeploymentHandler(files);
  }

  /** The origin of the console and the API, for links in e-mails and the Origin check. */
  get origin(): string {
    return `https://${this.distribution.distributionDomainName}`;
  }

  /** The console's own address. */
  get url(): string {
    return `${this.origin}${CONSOLE_PATH}`;
  }

  private securityHeaders(): cloudfront.ResponseHeadersPolicy {
    return new cloudfront.ResponseHeadersPolicy(this, 'SecurityHeaders', {
      comment: 'Console security headers (the local gateway sends the same)',
      securityHeadersBehavior: {
        contentSecurityPolicy: { contentSecurityPolicy: CONTENT_SECURITY_POLICY, override: true },
        contentTypeOptions: { override: true },
        frameOptions: { frameOption: cloudfront.HeadersFrameOption.DENY, override: true },
        referrerPolicy: { referrerPolicy: cloudfront.HeadersReferrerPolicy.NO_REFERRER, override: true },
        strictTransportSecurity: { accessControlMaxAge: Duration.days(365), includeSubdomains: true, override: true },
      },
      customHeadersBehavior: { customHeaders: [{ header: 'Cross-Origin-Opener-Policy', value: 'same-origin', override: true }] },
    });
  }
}
