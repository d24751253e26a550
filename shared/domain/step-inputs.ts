import * as z from '../model/zod';
import { instanceStatusSchema } from '../model/instance-status';
import { namedError } from '../model/errors';

/**
 * What each workflow step is given by its state machine (the Task's Parameters in statemachines/*.asl.json), parsed
 * before the step runs: strict about what the steps rely on, tolerant of fields a definition adds.
 */
const stepInput = z.looseObject({ instance_id: z.number().int().positive(), job_id: z.string().min(1) });
/** `$$.Execution.StartTime`, or a time a step recorded: an ISO instant. */
const instant = z.iso.datetime({ offset: true });
/** What a Catch puts at `$.error`: the error's name and its cause. */
const caughtError = z.looseObject({ Error: z.string().optional(), Cause: z.string().optional() }).optional();

export const findActionInputSchema = stepInput.extend({ action_type: z.string().min(1), started_at: instant });
/**
 * `after_action_id`: the job's previous action (the phase before, or the power-on a pause reverses); the action this
 * step starts can only be a later one (upstream action ids increase).
 */
export const startActionInputSchema = stepInput.extend({
  type: z.enum(['resize', 'power_on', 'power_off']),
  after_action_id: z.number().int().nullish(),
});
export const checkActionInputSchema = stepInput.extend({ action_id: z.number().int(), started_at: instant });
/** When the server was first found running after the action, while its SSH is awaited (absent on the first try). */
const sshSince = { ssh_since: instant.optional() };
export const finishPowerInputSchema = stepInput.extend({
  type: z.enum(['power_on', 'power_off', 'reboot']),
  /** The action that just completed. */
  action_id: z.number().int().nullish(),
  paused_by: z.enum(['user', 'billing']),
  ...sshSince,
});
export const finishResizeInputSchema = stepInput.extend({ previous_status: instanceStatusSchema, ...sshSince });
export const failActionInputSchema = stepInput.extend({ error: caughtError });

export const deleteStepInputSchema = stepInput;
export const destroyServersInputSchema = stepInput.extend({ started_at: instant });
export const failDeleteInputSchema = stepInput.extend({ error: caughtError });

export const provisionInputSchema = stepInput;
export const checkServerInputSchema = stepInput.extend({ upstream_id: z.number().int(), started_at: instant });
export const probeSshInputSchema = stepInput.extend({ booted_at: instant });
export const compensateInputSchema = stepInput.extend({ error: caughtError });

export type ActionStepInput = z.output<typeof stepInput>;
export type DeleteStepInput = z.output<typeof deleteStepInputSchema>;
export type ProvisionInput = z.output<typeof provisionInputSchema>;
export type CheckServerInput = z.output<typeof checkServerInputSchema>;
export type ProbeSshInput = z.output<typeof probeSshInputSchema>;
export type CompensateInput = z.output<typeof compensateInputSchema>;

/**
 * A step given an input it cannot take: a defect in a definition or a hand-started execution, never transient, so no
 * Retry meant for transient failures names it and the Catch sends the execution to its failure path.
 */
export class InvalidStepInput extends namedError('InvalidStepInput') {}

/** Where and how an input failed its schema, without the values (inputs may carry ids worth keeping out of logs). */
export function issuesOf(error: z.ZodError): { path: string; code: string }[] {
  return error.issues.map((issue) => ({ path: issue.path.map(String).join('.') || '(root)', code: issue.code }));
}
