import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

/**
 * The layers of shared/, lowest first: a module may import its own layer and those below it, never one above.
 * `schemas` (the wire schemas) stand apart: they import only the model, and only the layers from `domain` up import
 * them — and the event transports, which carry the wire events to EventBridge, SQS and the webhooks.
 */
export const layers = ['model', 'platform', 'adapters', 'schemas', 'domain', 'edge'] as const;
export type Layer = (typeof layers)[number];

const PLATFORM = new Set([
  'access.ts',
  'aws.ts',
  'config.ts',
  'deadline.ts',
  'encryption-sdk.ts',
  'metric-names.ts',
  'observability.ts',
  'platform.ts',
  'request-guard.ts',
  'retry.ts',
  'secrets.ts',
  'tables.ts',
  'tracing.ts',
  'workflow-names.ts',
]);
/** Root modules of the adapters' layer: the classification of the dependencies' failures (SDK errors, upstream errors). */
const ADAPTER_ROOT = new Set(['transient-errors.ts']);
const ADAPTERS = new Set(['store', 'upstream', 'workflows', 'events', 'mail', 'webhooks', 'payments']);

/** The layer of a file under shared/ (path relative to shared/). */
export function layerOf(path: string): Layer {
  const [top, ...rest] = path.split('/');
  if (rest.length === 0) return PLATFORM.has(top!) ? 'platform' : ADAPTER_ROOT.has(top!) ? 'adapters' : 'edge';
  if (top === 'model') return 'model';
  if (top === 'schemas') return 'schemas';
  if (top === 'domain') return 'domain';
  if (ADAPTERS.has(top!)) return 'adapters';
  return 'edge';
}

/** Whether `from` may import `to` (layers of two files under shared/). */
export function mayImport(from: Layer, to: Layer): boolean {
  if (from === to) return true;
  if (to === 'schemas') return from === 'domain' || from === 'edge';
  if (from === 'schemas') return to === 'model';
  return layers.indexOf(to) < layers.indexOf(from);
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Every relative import between the files of shared/, as paths relative to shared/ (type-only imports included). */
export function importGraph(root: string): Map<string, string[]> {
  const shared = resolve(root, 'shared');
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(shared)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = importedFiles
      .map(({ fileName }) => fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) => {
        const base = resolve(dirname(file), name);
        for (const candidate of [`${base}.ts`, join(base, 'index.ts')]) {
          try {
            if (statSync(candidate).isFile()) return relative(shared, candidate);
          } catch {
            // not this one
          }
        }
        return undefined;
      })
      .filter((target): target is string => target !== undefined && !target.startsWith('..'));
    graph.set(relative(shared, file), targets);
  }
  return graph;
}

/** Imports that go up a layer (or into the wire schemas from below the domain). */
export function upwardImports(graph: Map<string, string[]>): { from: string; to: string }[] {
  const allowed = (from: string, to: string) =>
    mayImport(layerOf(from), layerOf(to)) || (from.startsWith('events/') && layerOf(to) === 'schemas');
  return [...graph].flatMap(([from, targets]) => targets.filter((to) => !allowed(from, to)).map((to) => ({ from, to })));
}

/** The import cycles, each as the files on it (strongly connected components with more than one file, or a self-import). */
export function importCycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (node: string) => {
    indexOf.set(node, index);
    low.set(node, index);
    index += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!indexOf.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, indexOf.get(next)!));
    }
    if (low.get(node) === indexOf.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) cycles.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!indexOf.has(node)) visit(node);
  return cycles;
}
