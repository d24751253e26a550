import {
  isLabelKey,
  isLabelValue,
  labelSetRefusal,
  labelsMatch,
  labelTags,
  parseLabelSelector,
  patchLabels,
} from '../../shared/model/labels';
import { createInstanceBodySchema, updateInstanceBodySchema } from '../../shared/schemas/instances';
import { parseOrBadRequest } from '../../shared/schemas/validation';

describe('isLabelKey', () => {
  it.each([
    ['env', true],
    ['app.kubernetes.io/name', true],
    ['example.com/tier', true],
    ['a', true],
    ['a-b_c.d', true],
    ['x'.repeat(63), true],
    ['x'.repeat(64), false],
    ['-env', false],
    ['env-', false],
    ['bad key', false],
    ['', false],
    ['/name', false],
    ['Example.com/name', false],
    [`${'a'.repeat(254)}/name`, false],
    ['example.com/', false],
    ['a/b/c', false],
  ])('%j is %s', (key, valid) => {
    expect(isLabelKey(key)).toBe(valid);
  });
});

describe('isLabelValue', () => {
  it.each([
    ['', true],
    ['prod', true],
    ['v1.2_3-x', true],
    ['x'.repeat(63), true],
    ['x'.repeat(64), false],
    ['a/b', false],
    ['.x', false],
  ])('%j is %s', (value, valid) => {
    expect(isLabelValue(value)).toBe(valid);
  });
});

describe('parseLabelSelector', () => {
  it.each([
    ['env=prod', [{ op: 'equals', key: 'env', value: 'prod' }]],
    ['env==prod', [{ op: 'equals', key: 'env', value: 'prod' }]],
    ['tier!=db', [{ op: 'not_equals', key: 'tier', value: 'db' }]],
    ['gpu', [{ op: 'exists', key: 'gpu' }]],
    ['!legacy', [{ op: 'not_exists', key: 'legacy' }]],
    [
      ' env = prod , !legacy ',
      [
        { op: 'equals', key: 'env', value: 'prod' },
        { op: 'not_exists', key: 'legacy' },
      ],
    ],
    ['env=', [{ op: 'equals', key: 'env', value: '' }]],
  ])('parses %j', (selector, requirements) => {
    expect(parseLabelSelector(selector)).toEqual(requirements);
  });

  it.each([['env===x'], ['env=a/b'], ['bad key'], [''], ['env,,tier'], ['!'], [Array.from({ length: 17 }, (_, i) => `k${i}`).join(',')]])(
    'refuses %j',
    (selector) => {
      expect(parseLabelSelector(selector)).toBeUndefined();
    },
  );
});

describe('labelsMatch', () => {
  const labels = { env: 'prod', tier: 'web' };

  it.each([
    ['env=prod', true],
    ['env=dev', false],
    ['env=prod,tier=web', true],
    ['tier!=db', true],
    ['tier!=web', false],
    ['missing!=x', true],
    ['tier', true],
    ['gpu', false],
    ['!gpu', true],
    ['!env', false],
  ])('%s on env=prod,tier=web is %s', (selector, matches) => {
    expect(labelsMatch(labels, parseLabelSelector(selector) ?? [])).toBe(matches);
  });
});

describe('patchLabels', () => {
  it('sets what a string names, removes what null names, and keeps the rest', () => {
    expect(patchLabels({ env: 'dev', team: 'a', keep: 'x' }, { env: 'prod', team: null, tier: 'web' })).toEqual({
      env: 'prod',
      keep: 'x',
      tier: 'web',
    });
  });
});

describe('labels named like what every object inherits', () => {
  it('merges __proto__, constructor, toString and hasOwnProperty as labels of their own', () => {
    const patch = JSON.parse('{"__proto__":"p","constructor":"c","toString":null,"hasOwnProperty":"h"}');

    const merged = patchLabels({ toString: 't', env: 'prod' }, patch);

    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(Object.entries(merged)).toEqual([
      ['env', 'prod'],
      ['__proto__', 'p'],
      ['constructor', 'c'],
      ['hasOwnProperty', 'h'],
    ]);
  });

  it.each([
    ['a create', createInstanceBodySchema, { project_name: 'p', flavor: 's-1vcpu-2gb' }],
    ['a PATCH', updateInstanceBodySchema, {}],
  ])('keeps constructor, toString and hasOwnProperty in %s', (_, schema, body) => {
    const labels = JSON.parse('{"constructor":"c","toString":"t","hasOwnProperty":"h"}');

    const parsed = parseOrBadRequest(schema, { ...body, labels });

    expect(Object.entries(parsed.labels ?? {})).toEqual([
      ['constructor', 'c'],
      ['toString', 't'],
      ['hasOwnProperty', 'h'],
    ]);
  });
});

describe('labelTags', () => {
  it('makes upstream tags of the labels that fit the tag syntax, prefixed apart from the service tags', () => {
    expect(labelTags({ env: 'prod', flag: '', 'example.com/tier': 'web', ver: '1.2' })).toEqual(['label:env:prod', 'label:flag']);
  });
});

describe('labelSetRefusal', () => {
  const labels = (count: number, length: number) =>
    Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${String(i).padStart(2, '0')}`, 'v'.repeat(length)]));

  it.each([
    ['32 labels of 60 characters', labels(32, 60), undefined],
    ['33 labels', labels(33, 1), 'labels: at most 32 labels'],
    ['32 labels of 63 characters (2,112 in all)', labels(32, 63), 'labels: at most 2048 characters of keys and values in all'],
    ['removals (null) counted by their keys only', { k: null }, undefined],
  ])('judges %s', (_, set, refusal) => {
    expect(labelSetRefusal(set)).toBe(refusal);
  });
});
