import { describe, expect, it } from 'vitest';
import { renderFields, renderTable } from '../../clients/cli/table';

describe('renderTable', () => {
  it('aligns plain columns to their widest cell, two spaces apart, with no trailing spaces', () => {
    const text = renderTable(
      ['id', 'status', 'flavor'],
      [
        ['7', 'active', 's-1vcpu-2gb'],
        ['12', 'stopped', '-'],
      ],
      { style: 'plain' },
    );

    expect(text).toBe(['id  status   flavor', '7   active   s-1vcpu-2gb', '12  stopped  -'].join('\n'));
  });

  it('indents every plain line when asked', () => {
    expect(renderTable(['a', 'b'], [['1', '2']], { style: 'plain', indent: '  ' })).toBe('  a  b\n  1  2');
  });

  it('prints only the headings of a plain table without rows', () => {
    expect(renderTable(['ID', 'NAME'], [], { style: 'plain' })).toBe('ID  NAME');
  });

  it('frames a boxed table, with no colour codes when colour is not asked for', () => {
    const text = renderTable(['ID', 'NAME'], [['7', 'web']], { style: 'boxed' });

    expect(text).toBe(['┌────┬──────┐', '│ ID │ NAME │', '│ 7  │ web  │', '└────┴──────┘'].join('\n'));
  });
});

describe('renderFields', () => {
  it('aligns plain names and values', () => {
    expect(
      renderFields(
        [
          ['account_id', 'acct_1'],
          ['balance_usd', '5.00'],
        ],
        { style: 'plain' },
      ),
    ).toBe('account_id   acct_1\nbalance_usd  5.00');
  });

  it('frames boxed name and value pairs', () => {
    expect(renderFields([['ID', '7']], { style: 'boxed' })).toBe(['┌────┬───┐', '│ ID │ 7 │', '└────┴───┘'].join('\n'));
  });
});
