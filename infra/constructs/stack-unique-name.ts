import { Aws, Fn } from 'aws-cdk-lib';

/**
 * `base` followed by the id CloudFormation gave this stack when it created it. A retained resource keeps its name
 * after the stack is deleted; a stack created again gets a new id, so its resources never collide with the old ones.
 */
export function stackUniqueName(base: string): string {
  return `${base}-${Fn.select(2, Fn.split('/', Aws.STACK_ID))}`;
}
