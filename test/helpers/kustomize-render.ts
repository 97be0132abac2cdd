/** `kubectl kustomize` for the plain overlay deploy/kubernetes uses (resources files, namespace,
 * images), so the chart can be compared with it where kubectl is not installed. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml, parseAllDocuments } from 'yaml';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition', 'PriorityClass', 'StorageClass']);

export function renderKustomization(dir: string): Obj[] {
  const k = parseYaml(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Obj;
  const supported = new Set(['apiVersion', 'kind', 'namespace', 'resources', 'images']);
  for (const key of Object.keys(k)) if (!supported.has(key)) throw new Error(`kustomization.yaml: "${key}" is not supported by this renderer`);
  const objects: Obj[] = [];
  for (const file of k.resources ?? []) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
      if (doc.errors.length) throw new Error(`${file}: ${doc.errors.join('; ')}`);
      const o = doc.toJS() as Obj | null;
      if (o) objects.push(o);
    }
  }
  const accounts = new Set(objects.filter((o) => o.kind === 'ServiceAccount').map((o) => o.metadata.name));
  for (const o of objects) {
    if (k.namespace && !CLUSTER_SCOPED.has(o.kind)) o.metadata.namespace = k.namespace;
    if (k.namespace && (o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding')) {
      for (const s of o.subjects ?? []) if (s.kind === 'ServiceAccount' && accounts.has(s.name)) s.namespace = k.namespace;
    }
    const spec = o.spec?.template?.spec;
    for (const c of [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])]) {
      const name = String(c.image).split('@')[0].replace(/:[^/:]+$/, '');
      const rule = (k.images ?? []).find((r: Obj) => r.name === name);
      if (!rule) continue;
      const tag = rule.digest ? `@${rule.digest}` : rule.newTag ? `:${rule.newTag}` : String(c.image).slice(name.length);
      c.image = `${rule.newName ?? name}${tag}`;
    }
  }
  return objects;
}
