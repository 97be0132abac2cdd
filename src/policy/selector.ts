/** Kubernetes label selectors: validation, a canonical form (equal meaning -> equal text, so
 * identical peers in different policies share one set), matching, and an index from labels to
 * the selectors a labelled object could satisfy. */

import type { LabelSelector } from '../k8s/model';

export type SelectorOperator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';

export interface Requirement {
  key: string;
  operator: SelectorOperator;
  /** Sorted, unique. Empty for Exists/DoesNotExist. */
  values: string[];
}

export interface CompiledSelector {
  /** Sorted by key, operator, values; matchLabels entries become `In [value]`. */
  requirements: Requirement[];
  /** Canonical text: identical for selectors with identical meaning as written. */
  canonical: string;
}

export interface FieldError {
  field: string;
  message: string;
}

const OPERATORS: ReadonlySet<string> = new Set(['In', 'NotIn', 'Exists', 'DoesNotExist']);

/** Compiles a selector; invalid requirements are reported and left out of the result, so the
 * caller decides what failing closed means where the selector is used. */
export function compileSelector(
  selector: LabelSelector | undefined,
  field: string,
): { selector: CompiledSelector; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const requirements: Requirement[] = [];
  for (const [key, value] of Object.entries(selector?.matchLabels ?? {})) {
    if (typeof value !== 'string') {
      errors.push({ field: `${field}.matchLabels[${key}]`, message: 'value must be a string' });
      continue;
    }
    requirements.push({ key, operator: 'In', values: [value] });
  }
  (selector?.matchExpressions ?? []).forEach((expr, i) => {
    const at = `${field}.matchExpressions[${i}]`;
    const values = expr.values ?? [];
    if (typeof expr.key !== 'string' || expr.key === '') {
      errors.push({ field: `${at}.key`, message: 'key must be a non-empty string' });
    } else if (!OPERATORS.has(expr.operator)) {
      errors.push({
        field: `${at}.operator`,
        message: `unknown operator ${JSON.stringify(expr.operator)} (expected In, NotIn, Exists or DoesNotExist)`,
      });
    } else if ((expr.operator === 'In' || expr.operator === 'NotIn') && values.length === 0) {
      errors.push({ field: `${at}.values`, message: `must be non-empty for operator ${expr.operator}` });
    } else if ((expr.operator === 'Exists' || expr.operator === 'DoesNotExist') && values.length > 0) {
      errors.push({ field: `${at}.values`, message: `must be empty for operator ${expr.operator}` });
    } else {
      requirements.push({ key: expr.key, operator: expr.operator as SelectorOperator, values: [...new Set(values)].sort() });
    }
  });
  requirements.sort(compareRequirements);
  const unique = requirements.filter((r, i) => i === 0 || compareRequirements(r, requirements[i - 1]) !== 0);
  return { selector: { requirements: unique, canonical: describeRequirements(unique) }, errors };
}

function compareRequirements(a: Requirement, b: Requirement): number {
  if (a.key !== b.key) return a.key < b.key ? -1 : 1;
  if (a.operator !== b.operator) return a.operator < b.operator ? -1 : 1;
  const av = a.values.join('\0');
  const bv = b.values.join('\0');
  return av === bv ? 0 : av < bv ? -1 : 1;
}

/** `{app=web,tier in (a,b),!debug}`; `{}` matches everything. JSON-quoted where a label needs it,
 * so the text is unambiguous. */
function describeRequirements(reqs: Requirement[]): string {
  const q = (s: string): string => (/^[A-Za-z0-9._/-]+$/.test(s) ? s : JSON.stringify(s));
  const parts = reqs.map((r) => {
    switch (r.operator) {
      case 'In':
        return r.values.length === 1 ? `${q(r.key)}=${q(r.values[0])}` : `${q(r.key)} in (${r.values.map(q).join(',')})`;
      case 'NotIn':
        return `${q(r.key)} notin (${r.values.map(q).join(',')})`;
      case 'Exists':
        return q(r.key);
      case 'DoesNotExist':
        return `!${q(r.key)}`;
    }
  });
  return `{${parts.join(',')}}`;
}

export function matches(selector: CompiledSelector, labels: Record<string, string>): boolean {
  for (const r of selector.requirements) {
    const has = Object.prototype.hasOwnProperty.call(labels, r.key);
    switch (r.operator) {
      case 'In':
        if (!has || !r.values.includes(labels[r.key])) return false;
        break;
      case 'NotIn':
        if (has && r.values.includes(labels[r.key])) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
    }
  }
  return true;
}

/** Finds, for a label set, the selectors it could match without testing every selector: each
 * selector is filed under one positive requirement (`key=value` for In, `key` for Exists) and
 * only selectors with none (e.g. `{}` or only NotIn) are tested for every object. */
export class SelectorIndex<Id> {
  private readonly byLabel = new Map<string, Set<Id>>();
  private readonly broad = new Set<Id>();
  private readonly filedUnder = new Map<Id, string[] | null>();

  add(id: Id, selector: CompiledSelector): void {
    this.remove(id);
    const anchors = anchorKeys(selector);
    this.filedUnder.set(id, anchors);
    if (!anchors) {
      this.broad.add(id);
      return;
    }
    for (const k of anchors) {
      let ids = this.byLabel.get(k);
      if (!ids) this.byLabel.set(k, (ids = new Set()));
      ids.add(id);
    }
  }

  remove(id: Id): void {
    const anchors = this.filedUnder.get(id);
    if (anchors === undefined) return;
    this.filedUnder.delete(id);
    if (!anchors) {
      this.broad.delete(id);
      return;
    }
    for (const k of anchors) {
      const ids = this.byLabel.get(k);
      ids?.delete(id);
      if (ids?.size === 0) this.byLabel.delete(k);
    }
  }

  get size(): number {
    return this.filedUnder.size;
  }

  /** Every selector that may match `labels` (a superset; callers still test each). */
  *candidates(labels: Record<string, string>): Iterable<Id> {
    yield* this.broad;
    for (const [k, v] of Object.entries(labels)) {
      const exact = this.byLabel.get(labelKey(k, v));
      if (exact) yield* exact;
      const exists = this.byLabel.get(k);
      if (exists) yield* exists;
    }
  }
}

function labelKey(key: string, value: string): string {
  return `${key}\0${value}`;
}

/** The index keys of the most selective positive requirement, or null when there is none. */
function anchorKeys(selector: CompiledSelector): string[] | null {
  let best: Requirement | undefined;
  for (const r of selector.requirements) {
    if (r.operator === 'In' && (!best || best.operator !== 'In' || r.values.length < best.values.length)) best = r;
    else if (r.operator === 'Exists' && !best) best = r;
  }
  if (!best) return null;
  return best.operator === 'In' ? best.values.map((v) => labelKey(best!.key, v)) : [best.key];
}
