/** The stack's output names, shared by the stack and the tools that read a deployed stack (the operations CLI). */
export const pascal = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);

export const outputNames = {
  apiUrl: 'ApiUrl',
  consoleUrl: 'ConsoleUrl',
  upstreamTokenSecretArn: 'UpstreamTokenSecretArn',
  upstreamBaseUrl: 'UpstreamBaseUrl',
  alarmTopicArn: 'AlarmTopicArn',
  dashboardName: 'DashboardName',
  eventBusName: 'EventBusName',
  apiCheckKeySecretArn: 'ApiCheckKeySecretArn',
  lifecycleCheckKeySecretArn: 'LifecycleCheckKeySecretArn',
  table: (table: string) => `${pascal(table)}TableName`,
  stateMachine: (workflow: string) => `${pascal(workflow)}StateMachineArn`,
} as const;
