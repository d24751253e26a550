import { Annotations, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as backup from 'aws-cdk-lib/aws-backup';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as kms from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import { stackUniqueName } from './stack-unique-name';

/** Daily backups are kept this long here and in the copy: past PITR's 35 days, for what is noticed late. */
const DAILY_RETENTION = Duration.days(90);
/** The ledger is the record of every charge and deposit: a monthly backup of it is kept for seven years. */
const LEDGER_ARCHIVE_RETENTION = Duration.days(7 * 365);

export interface BackupsProps {
  /** Backed up daily, each recovery point copied when `copyVaultArn` is given. */
  readonly tables: readonly dynamodb.ITableV2[];
  /** Also archived monthly for seven years. */
  readonly ledger: dynamodb.ITableV2;
  /** A backup vault in another region or account that receives a copy of each daily recovery point. */
  readonly copyVaultArn: string | undefined;
  /** Keep the vault, its key and its recovery points when the stack goes (prod). */
  readonly retain: boolean;
}

/**
 * An AWS Backup plan over the tables that hold money and customers' servers, in a vault under a customer-managed
 * key of its own. The vault's name carries the stack's id, so a stack recreated beside a retained vault never
 * collides with it.
 */
export class Backups extends Construct {
  readonly key: kms.Key;
  readonly vault: backup.BackupVault;
  readonly plan: backup.BackupPlan;

  constructor(scope: Construct, id: string, props: BackupsProps) {
    super(scope, id);
    const removalPolicy = props.retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    this.key = new kms.Key(this, 'Key', {
      description: 'Encrypts the recovery points of the service tables',
      enableKeyRotation: true,
      removalPolicy,
    });
    this.vault = new backup.BackupVault(this, 'Vault', {
      backupVaultName: stackUniqueName(Stack.of(this).stackName),
      encryptionKey: this.key,
      removalPolicy,
      // Nobody, the account's administrators included, may delete recovery points before they expire.
      blockRecoveryPointDeletion: props.retain,
    });
    const copyActions = props.copyVaultArn
      ? [
          {
            destinationBackupVault: backup.BackupVault.fromBackupVaultArn(this, 'CopyVault', props.copyVaultArn),
            deleteAfter: DAILY_RETENTION,
          },
        ]
      : [];
    if (!props.copyVaultArn && props.retain) {
      Annotations.of(this).addWarningV2(
        'vps:backup-copy',
        'No backupCopyVaultArn in context: recovery points stay in this account and region only.',
      );
    }
    this.plan = new backup.BackupPlan(this, 'Plan', {
      backupVault: this.vault,
      backupPlanRules: [
        new backup.BackupPlanRule({
          ruleName: 'Daily',
          scheduleExpression: events.Schedule.cron({ hour: '3', minute: '0' }),
          startWindow: Duration.hours(1),
          completionWindow: Duration.hours(4),
          deleteAfter: DAILY_RETENTION,
          copyActions,
        }),
      ],
    });
    this.plan.addSelection('Tables', {
      resources: props.tables.map((table) => backup.BackupResource.fromDynamoDbTable(table)),
      allowRestores: true,
    });
    const archive = new backup.BackupPlan(this, 'LedgerArchive', {
      backupVault: this.vault,
      backupPlanRules: [
        new backup.BackupPlanRule({
          ruleName: 'Monthly',
          scheduleExpression: events.Schedule.cron({ day: '1', hour: '4', minute: '0' }),
          deleteAfter: LEDGER_ARCHIVE_RETENTION,
          copyActions: copyActions.map((action) => ({ ...action, deleteAfter: LEDGER_ARCHIVE_RETENTION })),
        }),
      ],
    });
    archive.addSelection('Ledger', { resources: [backup.BackupResource.fromDynamoDbTable(props.ledger)] });
    for (const plan of [this.plan, archive]) {
      for (const role of plan.node.findAll().filter((child) => child.node.id === 'Role')) {
        Validations.of(role).acknowledge({
          id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForBackup]',
          reason: "AWS Backup's own policy for taking backups, kept current by AWS as it supports more resource types.",
        });
        Validations.of(role).acknowledge({
          id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForRestores]',
          reason: "AWS Backup's own policy for restoring, which needs to create tables under names chosen at restore time.",
        });
      }
    }
  }
}
