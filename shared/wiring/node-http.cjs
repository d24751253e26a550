// Stands in for `node:http` in the functions' bundles (infra/bundling.ts): required, not imported, so that Node loads
// it when first used instead of at import. Node builds an imported built-in's ES module facade by reading every export,
// and `node:http`'s include lazy ones that load its whole fetch implementation (undici): about 20 ms of every cold
// start, for a module most functions never use (the SDK imports it only to ask EC2's metadata for a region).
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS module, so that the import becomes a require()
module.exports = require('node:http');
