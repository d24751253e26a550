import Table from 'cli-table3';

/**
 * How rows are laid out: `boxed` for a person at a terminal (a light frame, coloured headings when `colour`), `plain`
 * for text that goes on: aligned columns separated by two spaces, nothing around them, no trailing spaces.
 */
export interface TableLayout {
  readonly style: 'boxed' | 'plain';
  /** Colour the frame and headings (boxed only): for a terminal, never for a pipe. */
  readonly colour?: boolean;
  /** Put before every plain line (a plain table under a heading). */
  readonly indent?: string;
  /** Print the column headings. @default true */
  readonly header?: boolean;
}

/** No rule between rows. */
const COMPACT = { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' };

const boxedStyle = (colour: boolean, head: string[]) => (colour ? { head, border: ['grey'] } : { head: [], border: [] });

function alignedLines(rows: readonly (readonly string[])[], indent: string): string {
  const columns = Math.max(0, ...rows.map((row) => row.length));
  const widths = Array.from({ length: columns }, (_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows.map((row) => `${indent}${row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ')}`.trimEnd()).join('\n');
}

/** Rows under column headings. */
export function renderTable(head: readonly string[], rows: readonly (readonly string[])[], layout: TableLayout): string {
  const header = layout.header ?? true;
  if (layout.style === 'plain') return alignedLines(header ? [head, ...rows] : rows, layout.indent ?? '');
  const table = new Table({ head: header ? [...head] : [], chars: COMPACT, style: boxedStyle(layout.colour ?? false, ['cyan']) });
  table.push(...rows.map((row) => [...row]));
  return table.toString();
}

/** `name  value` pairs, one a line. */
export function renderFields(pairs: readonly (readonly [string, string])[], layout: TableLayout): string {
  if (layout.style === 'plain') return alignedLines(pairs, layout.indent ?? '');
  const table = new Table({ chars: COMPACT, style: boxedStyle(layout.colour ?? false, []) });
  table.push(...pairs.map(([name, value]) => ({ [name]: value })));
  return table.toString();
}
