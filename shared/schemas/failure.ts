import { failureCodes, failureSchema } from '../model/failure';

/** Why a failed instance or job failed; present only then (and not on jobs that failed before reasons were kept). */
export const failureView = failureSchema
  .meta({
    description: `Why it failed: \`code\` (one of ${failureCodes.map((code) => `\`${code}\``).join(', ')}) for programs, \`message\` for people.`,
  })
  .optional();
