/** Kubernetes label selectors: validation, a canonical form (equal meaning -> equal text, so
 * identical peers in different policies share one set), matching, and an index from labels to
 * the selectors a labelled object could satisfy. */

import type { LabelSelector } from './model';

/** `list` without spare room, for arrays kept as long as their pod or policy (an array grown by
 * push reserves room for 16 more elements). */
export function compact<T>(list: T[]): T[] {
  return list.length === 0 ? list : list.slice();
}

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
  const matchLabels = selector?.matchLabels ?? {};
  for (const key of Object.keys(matchLabels)) {
    const value = matchLabels[key];
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
  const unique = compact(requirements.length < 2 ? requirements : sortUnique(requirements));
  return { selector: { requirements: unique, canonical: describeRequirements(unique) }, errors };
}

function sortUnique(requirements: Requirement[]): Requirement[] {
  requirements.sort(compareRequirements);
  return requirements.filter((r, i) => i === 0 || compareRequirements(r, requirements[i - 1]) !== 0);
}

function compareRequirements(a: Requirement, b: Requirement): number {
  if (a.key !== b.key) return a.key < b.key ? -1 : 1;
  if (a.operator !== b.operator) return a.operator < b.operator ? -1 : 1;
  const av = a.values.join('\0');
  const bv = b.values.join('\0');
  return av === bv ? 0 : av < bv ? -1 : 1;
}

const UNQUOTED_LABEL_TEXT = /^[A-Za-z0-9._/-]+$/;

/** `{app=web,tier in (a,b),!debug}`; `{}` matches everything. JSON-quoted where a label needs it,
 * so the text is unambiguous. */
function describeRequirements(reqs: Requirement[]): string {
  if (reqs.length === 0) return '{}';
  const q = (s: string): string => (UNQUOTED_LABEL_TEXT.test(s) ? s : JSON.stringify(s));
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
  /** Selectors filed under `key=value`, by key and value (no text is built per lookup). */
  private readonly byValue = new Map<string, Map<string, Set<Id>>>();
  /** Selectors filed under `key` (Exists). */
  private readonly byKey = new Map<string, Set<Id>>();
  private readonly broad = new Set<Id>();
  private readonly filedUnder = new Map<Id, Requirement | null>();

  add(id: Id, selector: CompiledSelector): void {
    this.remove(id);
    const anchor = anchorOf(selector);
    this.filedUnder.set(id, anchor);
    if (!anchor) {
      this.broad.add(id);
    } else if (anchor.operator === 'Exists') {
      addToIndex(this.byKey, anchor.key, id);
    } else {
      let byValue = this.byValue.get(anchor.key);
      if (!byValue) this.byValue.set(anchor.key, (byValue = new Map()));
      for (const v of anchor.values) addToIndex(byValue, v, id);
    }
  }

  remove(id: Id): void {
    const anchor = this.filedUnder.get(id);
    if (anchor === undefined) return;
    this.filedUnder.delete(id);
    if (!anchor) {
      this.broad.delete(id);
    } else if (anchor.operator === 'Exists') {
      removeFromIndex(this.byKey, anchor.key, id);
    } else {
      const byValue = this.byValue.get(anchor.key)!;
      for (const v of anchor.values) removeFromIndex(byValue, v, id);
      if (byValue.size === 0) this.byValue.delete(anchor.key);
    }
  }

  get size(): number {
    return this.filedUnder.size;
  }

  /** Every selector that may match `labels` (a superset; callers still test each), each once:
   * the broad ones, then per label those filed under its value and those filed under its key. */
  candidates(labels: Record<string, string>): Id[] {
    const out = [...this.broad];
    for (const k of Object.keys(labels)) {
      const exact = this.byValue.get(k)?.get(labels[k]);
      if (exact) for (const id of exact) out.push(id);
      const exists = this.byKey.get(k);
      if (exists) for (const id of exists) out.push(id);
    }
    return out;
  }
}

function addToIndex<Id>(index: Map<string, Set<Id>>, key: string, id: Id): void {
  let ids = index.get(key);
  if (!ids) index.set(key, (ids = new Set()));
  ids.add(id);
}

function removeFromIndex<Id>(index: Map<string, Set<Id>>, key: string, id: Id): void {
  const ids = index.get(key);
  ids?.delete(id);
  if (ids?.size === 0) index.delete(key);
}

/** The most selective positive requirement (In, else Exists), or null when there is none. */
function anchorOf(selector: CompiledSelector): Requirement | null {
  let best: Requirement | undefined;
  for (const r of selector.requirements) {
    if (r.operator === 'In' && (!best || best.operator !== 'In' || r.values.length < best.values.length)) best = r;
    else if (r.operator === 'Exists' && !best) best = r;
  }
  return best ?? null;
}
