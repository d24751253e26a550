import { describe, expect, it, vi } from 'vitest';
import * as z from '../../shared/model/zod';

describe('shared/model/zod', () => {
  it('parses objects without generating code: no schema compiles a parser with new Function', () => {
    const generated = vi.spyOn(globalThis, 'Function');
    const schema = z.object({ id: z.string().min(1), count: z.number().int().optional(), state: z.enum(['on', 'off']) });

    const parsed = [schema.parse({ id: 'a', state: 'on' }), schema.parse({ id: 'b', count: 2, state: 'off' })];

    expect(parsed).toEqual([
      { id: 'a', state: 'on' },
      { id: 'b', count: 2, state: 'off' },
    ]);
    expect(generated).not.toHaveBeenCalled();
    generated.mockRestore();
  });
});
