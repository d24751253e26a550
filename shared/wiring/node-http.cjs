// Stands in for `node:http` in the functions' bundles (infra/bundling.ts): loaded when first used instead of at import.
// Node builds an imported built-in's ES module facade by reading every export, and `node:http`'s include lazy ones
// that load its whole fetch implementation (undici): about 20 ms of every cold start, for a module most functions
// never use (the SDK imports it only for plain-HTTP endpoints and to ask EC2's metadata for a region). Taken with
// getBuiltinModule, which the bundler does not resolve (a require of `node:http` here would be aliased to this file).
module.exports = process.getBuiltinModule('node:http');
