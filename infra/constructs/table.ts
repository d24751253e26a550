import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import type { AttributeType, KeyDefinition, TableDefinition } from '../../shared/tables';

export interface ServiceTableProps {
  readonly definition: TableDefinition;
  /** Keep the table (deletion protection, RETAIN) instead of destroying it with the stack. */
  readonly retain: boolean;
}

const attributeTypes: Record<AttributeType, dynamodb.AttributeType> = {
  S: dynamodb.AttributeType.STRING,
  N: dynamodb.AttributeType.NUMBER,
};

function attribute(key: KeyDefinition): dynamodb.Attribute;
function attribute(key: KeyDefinition | undefined): dynamodb.Attribute | undefined;
function attribute(key: KeyDefinition | undefined): dynamodb.Attribute | undefined {
  return key && { name: key.name, type: attributeTypes[key.type] };
}

/** An on-demand table with PITR, built from its shared definition. */
export class ServiceTable extends dynamodb.TableV2 {
  constructor(scope: Construct, id: string, { definition, retain }: ServiceTableProps) {
    super(scope, id, {
      partitionKey: attribute(definition.partitionKey),
      sortKey: attribute(definition.sortKey),
      billing: dynamodb.Billing.onDemand(),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      // AWS-managed KMS key: encrypted and CloudTrail-audited, with no key policy to keep in step with the grants.
      encryption: dynamodb.TableEncryptionV2.awsManagedKey(),
      timeToLiveAttribute: definition.timeToLiveAttribute,
      dynamoStream: definition.stream ? dynamodb.StreamViewType.NEW_AND_OLD_IMAGES : undefined,
      globalSecondaryIndexes: definition.globalSecondaryIndexes?.map((index) => ({
        indexName: index.indexName,
        partitionKey: attribute(index.partitionKey),
        sortKey: attribute(index.sortKey),
        ...(index.projection.type === 'INCLUDE'
          ? { projectionType: dynamodb.ProjectionType.INCLUDE, nonKeyAttributes: [...index.projection.attributes] }
          : { projectionType: dynamodb.ProjectionType.KEYS_ONLY }),
      })),
      deletionProtection: retain,
      removalPolicy: retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
  }
}
