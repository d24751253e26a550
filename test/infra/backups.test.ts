import type { Template } from 'aws-cdk-lib/assertions';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import type { ServiceStack } from '../../infra/stack';
import { logicalId, PROD_CONTEXT, referencedIds, synthesize, type Resource } from './synth';
import { workflowNames } from '../../shared/workflow-names';

const COPY_VAULT = 'arn:aws:backup:eu-central-1:222222222222:backup-vault:vps-copies';

/** Whether a name is made unique per stack creation: joined with the stack id's last part. */
const carriesStackId = (name: unknown) => JSON.stringify(name).includes('"AWS::StackId"');

describe('backups', () => {
  let stack: ServiceStack;
  let template: Template;
  const resources = (type: string) => template.findResources(type) as Record<string, Resource>;

  beforeAll(() => {
    ({ stack, template } = synthesize('prod', { ...PROD_CONTEXT, backupCopyVaultArn: COPY_VAULT }));
  });

  it('backs up accounts, ledger and instances daily for 90 days, copying each recovery point to the second vault', () => {
    const plan = resources('AWS::Backup::BackupPlan')[logicalId(stack.backups.plan)]!;
    expect(plan.Properties.BackupPlan.BackupPlanRule).toEqual([
      expect.objectContaining({
        RuleName: 'Daily',
        ScheduleExpression: 'cron(0 3 * * ? *)',
        Lifecycle: { DeleteAfterDays: 90 },
        CopyActions: [{ DestinationBackupVaultArn: COPY_VAULT, Lifecycle: { DeleteAfterDays: 90 } }],
      }),
    ]);
    const selection = Object.values(resources('AWS::Backup::BackupSelection')).find(
      (candidate) => candidate.Properties.BackupPlanId['Fn::GetAtt'][0] === logicalId(stack.backups.plan),
    )!;
    const tables = JSON.stringify(selection.Properties.BackupSelection.Resources);
    for (const name of ['accounts', 'ledger', 'instances'] as const) expect(tables).toContain(logicalId(stack.tables[name]));
    for (const name of ['sessions', 'idempotency', 'counters', 'jobs', 'apiKeys'] as const) {
      expect(tables).not.toContain(logicalId(stack.tables[name]));
    }
  });

  it('archives the ledger monthly for seven years, copies included', () => {
    template.hasResourceProperties('AWS::Backup::BackupPlan', {
      BackupPlan: {
        BackupPlanRule: [
          Match.objectLike({
            RuleName: 'Monthly',
            Lifecycle: { DeleteAfterDays: 2555 },
            CopyActions: [{ DestinationBackupVaultArn: COPY_VAULT, Lifecycle: { DeleteAfterDays: 2555 } }],
          }),
        ],
      },
    });
  });

  it('keeps recovery points in a retained vault under a rotating customer-managed key of its own, named per stack creation', () => {
    const vault = resources('AWS::Backup::BackupVault')[logicalId(stack.backups.vault)]!;
    expect(vault.Properties.EncryptionKeyArn).toEqual({ 'Fn::GetAtt': [logicalId(stack.backups.key), 'Arn'] });
    expect(vault.DeletionPolicy).toBe('Retain');
    expect(vault.Properties.LockConfiguration).toBeUndefined();
    expect(carriesStackId(vault.Properties.BackupVaultName)).toBe(true);
    const key = resources('AWS::KMS::Key')[logicalId(stack.backups.key)]!;
    expect(key.Properties.EnableKeyRotation).toBe(true);
    expect(key.DeletionPolicy).toBe('Retain');
  });

  it('names no retained resource so that the stack could not be created again', () => {
    const fixedNames = Object.entries(template.toJSON().Resources as Record<string, Resource & { Type: string }>)
      .filter(([, resource]) => resource.DeletionPolicy === 'Retain')
      .flatMap(([id, resource]) => {
        const name = resource.Properties?.LogGroupName ?? resource.Properties?.BackupVaultName ?? resource.Properties?.Name;
        // A name made from a resource CloudFormation names itself (`/aws/lambda/<function>`) is new with the stack too.
        const generated = referencedIds(name).some((referenced) => referenced in template.toJSON().Resources);
        return name !== undefined && !carriesStackId(name) && !generated ? [`${id}: ${JSON.stringify(name)}`] : [];
      });
    expect(fixedNames).toEqual([]);
    const stateMachineLogs = Object.values(resources('AWS::Logs::LogGroup')).filter((group) =>
      JSON.stringify(group.Properties.LogGroupName ?? '').includes('/aws/vendedlogs/states/'),
    );
    expect(stateMachineLogs).toHaveLength(workflowNames.length);
  });

  // A whole prod synth: about 25 s alone, three times that on a machine busy with the other suites.
  it('warns at synth when prod has no second vault to copy to', { timeout: 180_000 }, () => {
    const { stack: uncopied } = synthesize('prod', PROD_CONTEXT);
    Annotations.fromStack(uncopied).hasWarning('*', Match.stringLikeRegexp('No backupCopyVaultArn in context'));
    expect(Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('backupCopyVaultArn'))).toEqual([]);
  });
});
