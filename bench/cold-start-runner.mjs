// Loads one bundled function in a fresh Node process and, given an event, serves it once; prints the timings.
// Plain JavaScript, so that nothing but Node itself runs before the bundle.
const [bundle, eventJson] = process.argv.slice(2);
const importStarted = performance.now();
const { handler } = await import(bundle);
const imported = performance.now();
let status = null;
if (eventJson) {
  const context = {
    awsRequestId: 'cold-start',
    functionName: 'cold-start',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:cold-start',
    memoryLimitInMB: '512',
    logGroupName: '/aws/lambda/cold-start',
    logStreamName: 'local',
    getRemainingTimeInMillis: () => 30_000,
    callbackWaitsForEmptyEventLoop: true,
  };
  const response = await handler(JSON.parse(eventJson), context);
  status = response?.statusCode ?? null;
}
const served = performance.now();
// performance.now() counts from the process's start, so `served` is the whole cold start as a client sees it.
process.stdout.write(JSON.stringify({ importMs: imported - importStarted, servedAtMs: served, status }));
process.exit(0);
