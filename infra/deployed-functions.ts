import { mergeAccess, type FunctionAccess } from '../shared/access';
import { routeAuthAccess, routes } from '../shared/routes';
import { workflowNames } from '../shared/workflow-names';
import { eventFunctions, type EventFunctionName } from './event-functions';
import { scheduleNames, schedules } from './schedules';
import { workflows } from './workflows';

/** A function of the stack as it is bundled: its name, its entry and the access it declares (a route's with its auth's). */
export interface DeployedFunction {
  readonly name: string;
  readonly entry: string;
  readonly access: FunctionAccess;
}

/** Every function of the stack: routes, workflow steps, scheduled jobs and event functions. */
export const deployedFunctions = (): DeployedFunction[] => [
  ...routes.map((route) => ({ name: route.name, entry: route.entry, access: mergeAccess(route.access, routeAuthAccess(route)) })),
  ...workflowNames.flatMap((workflow) =>
    Object.entries(workflows[workflow].steps).map(([key, step]) => ({
      name: `${workflow}.${key}`,
      entry: step.entry,
      access: step.access,
    })),
  ),
  ...scheduleNames.map((name) => ({ name, entry: schedules[name].entry, access: schedules[name].access })),
  ...(Object.keys(eventFunctions) as EventFunctionName[]).map((name) => ({
    name,
    entry: eventFunctions[name].entry,
    access: eventFunctions[name].access as FunctionAccess,
  })),
];
