import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { deploymentEnvironment, ServiceStack, stageOf } from './stack';

const app = new App();
new ServiceStack(app, `VpsService-${stageOf(app)}`, { env: deploymentEnvironment(app) });
// cdk-nag 3 is a policy-validation plugin: any unacknowledged finding of either pack fails `cdk synth`.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
