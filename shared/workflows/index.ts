import type { WorkflowEngine } from './engine';
import { stepFunctionsEngine } from './step-functions';

let engine: WorkflowEngine = stepFunctionsEngine;

/** The workflow engine in use: Step Functions (locally, the local endpoint speaking its protocol). */
export const workflowEngine = (): WorkflowEngine => engine;

/** For unit tests of decisions that start or check workflows: another engine, until `reset` is called. */
export function useWorkflowEngine(replacement: WorkflowEngine): { reset(): void } {
  engine = replacement;
  return { reset: () => void (engine = stepFunctionsEngine) };
}
