import type { WorkflowEngine } from './engine';
import { stepFunctionsEngine } from './step-functions';

/** The workflow engine in use: Step Functions (locally, the local endpoint speaking its protocol). */
export const workflowEngine = (): WorkflowEngine => stepFunctionsEngine;
