/**
 * The shape of shared/ in figures: the size of the instance store, imports that go up a layer, and import cycles
 * (see test/support/import-graph.ts for the layers). `npx tsx bench/layers.ts [root]`
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { importCycles, importGraph, upwardImports } from '../test/support/import-graph';

const root = resolve(process.argv[2] ?? '.');
const graph = importGraph(root);
const upward = upwardImports(graph);
const cycles = importCycles(graph);
const storeLines = readFileSync(resolve(root, 'shared/store/instances.ts'), 'utf8').split('\n').length;
console.log(
  JSON.stringify({ instance_store_lines: storeLines, modules: graph.size, upward_imports: upward.length, cycles: cycles.length }),
);
for (const { from, to } of upward) console.log(`up: ${from} → ${to}`);
for (const cycle of cycles) console.log(`cycle: ${cycle.join(' ↔ ')}`);
