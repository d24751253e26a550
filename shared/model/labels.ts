/**
 * Labels: a customer's own `key: value` pairs on an instance, with Kubernetes' syntax and limits, and the selectors
 * that filter a list by them. Pure: the route contracts validate with these rules and the store filters with them.
 */

/** At most this many labels on one instance. */
const MAX_LABELS = 32;
/** At most this many characters of keys and values in all: every summary in a list carries them. */
const MAX_LABEL_CHARACTERS = 2048;
/** A name (the key's part after any prefix) and a value: at most 63 characters. */
const NAME_MAX = 63;
/** A key's optional DNS-subdomain prefix (`example.com/`): at most 253 characters. */
const PREFIX_MAX = 253;

const NAME = /^[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$/;
const PREFIX = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

export type Labels = Readonly<Record<string, string>>;

export const LABEL_KEY_RULE = `a label key is a name of 1-${NAME_MAX} letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, optionally after a DNS-subdomain prefix and '/' (as in example.com/tier)`;
export const LABEL_VALUE_RULE = `a label value is empty or 1-${NAME_MAX} letters, digits, '-', '_' or '.' that starts and ends with a letter or digit`;

export function isLabelKey(key: string): boolean {
  const slash = key.indexOf('/');
  const name = slash < 0 ? key : key.slice(slash + 1);
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > PREFIX_MAX || !PREFIX.test(prefix))) return false;
  return name.length <= NAME_MAX && NAME.test(name);
}

export const isLabelValue = (value: string): boolean => value === '' || (value.length <= NAME_MAX && NAME.test(value));

/** Why an instance cannot carry these labels as a whole (too many, too long in all), or undefined. */
export function labelSetRefusal(labels: Readonly<Record<string, string | null>>): string | undefined {
  const entries = Object.entries(labels);
  if (entries.length > MAX_LABELS) return `labels: at most ${MAX_LABELS} labels`;
  const characters = entries.reduce((sum, [key, value]) => sum + key.length + (value?.length ?? 0), 0);
  return characters > MAX_LABEL_CHARACTERS ? `labels: at most ${MAX_LABEL_CHARACTERS} characters of keys and values in all` : undefined;
}

export const LABEL_LIMITS = `up to ${MAX_LABELS} labels, ${MAX_LABEL_CHARACTERS} characters of keys and values in all`;

/** One requirement of a selector, as Kubernetes' equality-based selectors have them. */
export type LabelRequirement =
  | { readonly op: 'equals' | 'not_equals'; readonly key: string; readonly value: string }
  | { readonly op: 'exists' | 'not_exists'; readonly key: string };

/** At most this many requirements in one selector. */
const MAX_SELECTOR_REQUIREMENTS = 16;

/**
 * `env=prod,tier!=db,gpu,!legacy`: comma-separated requirements, all of which must hold (`==` is `=`). Undefined for
 * a selector that does not parse, names an invalid key or value, or has too many requirements.
 */
export function parseLabelSelector(selector: string): LabelRequirement[] | undefined {
  const parts = selector.split(',').map((part) => part.trim());
  if (parts.length > MAX_SELECTOR_REQUIREMENTS || parts.some((part) => part === '')) return undefined;
  const requirements: LabelRequirement[] = [];
  for (const part of parts) {
    const comparison = /^([^=!]+?)\s*(==|=|!=)\s*([^=!]*)$/.exec(part);
    let requirement: LabelRequirement;
    if (comparison) {
      const [, key = '', op, value = ''] = comparison;
      requirement = { op: op === '!=' ? 'not_equals' : 'equals', key: key.trim(), value: value.trim() };
      if (!isLabelValue(requirement.value)) return undefined;
    } else if (part.startsWith('!')) {
      requirement = { op: 'not_exists', key: part.slice(1).trim() };
    } else {
      requirement = { op: 'exists', key: part };
    }
    if (!isLabelKey(requirement.key)) return undefined;
    requirements.push(requirement);
  }
  return requirements;
}

/** Whether `labels` meet every requirement (a `!=` holds where the key is absent, as in Kubernetes). */
export function labelsMatch(labels: Labels, requirements: readonly LabelRequirement[]): boolean {
  return requirements.every((requirement) => {
    const present = Object.hasOwn(labels, requirement.key);
    switch (requirement.op) {
      case 'equals':
        return present && labels[requirement.key] === requirement.value;
      case 'not_equals':
        return !present || labels[requirement.key] !== requirement.value;
      case 'exists':
        return present;
      case 'not_exists':
        return !present;
    }
  });
}

/**
 * Labels after a merge patch: a string sets the key, null removes it (RFC 7396). Merged in a Map and returned as own
 * properties, so that no key (`__proto__`, `constructor`) reaches an object's prototype.
 */
export function patchLabels(labels: Labels, patch: Readonly<Record<string, string | null>>): Record<string, string> {
  const next = new Map(Object.entries(labels));
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) next.delete(key);
    else next.set(key, value);
  }
  return Object.fromEntries(next);
}

/**
 * The labels as upstream tags (`label:key:value`, DigitalOcean's tag syntax: letters, digits, `_`, `-`, `:`), for
 * those that fit it; the prefix keeps them apart from the service's own tags, which never start with it.
 */
export function labelTags(labels: Labels): string[] {
  return Object.entries(labels)
    .map(([key, value]) => `label:${key}${value === '' ? '' : `:${value}`}`)
    .filter((tag) => /^[A-Za-z0-9_:-]{1,255}$/.test(tag));
}
