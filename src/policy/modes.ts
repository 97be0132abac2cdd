/** Policy mode per namespace: `enforce` drops what no policy allows; `audit` logs it and lets it
 * through, so a team can roll policies out and see what would break first. The global mode
 * (`--policy-mode`) applies to every namespace; in enforce, the namespace annotation
 * `nfkube.io/policy-mode: audit` switches one namespace. Any other annotation value is enforce
 * (fail closed) and reported once. */
import type { NamespaceInfo } from '../k8s/model';

export const POLICY_MODE_ANNOTATION = 'nfkube.io/policy-mode';
export type PolicyMode = 'enforce' | 'audit';
/** What a deny does to a packet no policy allows (--deny-action). */
export type { DenyAction } from '../options/values';

export function parsePolicyMode(v: string | undefined, flag = '--policy-mode'): PolicyMode {
  const m = v ?? 'enforce';
  if (m !== 'enforce' && m !== 'audit') throw new Error(`${flag}: "${m}" is not enforce or audit`);
  return m;
}

export class PolicyModes {
  private readonly audited = new Set<string>();

  /** onInvalid hears about an annotation value that is neither enforce nor audit. */
  constructor(
    readonly global: PolicyMode = 'enforce',
    private readonly onInvalid: (namespace: string, value: string) => void = () => undefined,
  ) {}

  mode(namespace: string): PolicyMode {
    return this.global === 'audit' || this.audited.has(namespace) ? 'audit' : 'enforce';
  }

  /** Takes the namespace's annotation; true when its effective mode changed. */
  setNamespace(ns: Readonly<NamespaceInfo>): boolean {
    const before = this.mode(ns.name);
    const value = ns.policyMode;
    if (value === 'audit') this.audited.add(ns.name);
    else {
      this.audited.delete(ns.name);
      if (value !== undefined && value !== 'enforce') this.onInvalid(ns.name, value);
    }
    return this.mode(ns.name) !== before;
  }

  /** A deleted namespace goes back to the global mode; true when that changed its mode. */
  deleteNamespace(name: string): boolean {
    const before = this.mode(name);
    this.audited.delete(name);
    return this.mode(name) !== before;
  }
}

/** The namespace of a `namespace/name` key. */
export function namespaceOf(podKey: string): string {
  return podKey.slice(0, podKey.indexOf('/'));
}
