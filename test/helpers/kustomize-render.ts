/** `kubectl kustomize` for the subset deploy/ uses (resources files and directories, namespace,
 * images, inline JSON 6902 `add` patches), so the chart can be compared with it and the overlays
 * applied where kubectl is not installed. */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml, parseAllDocuments } from 'yaml';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition', 'PriorityClass', 'StorageClass']);

export function renderKustomization(dir: string): Obj[] {
  const k = parseYaml(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Obj;
  const supported = new Set(['apiVersion', 'kind', 'namespace', 'resources', 'images', 'patches']);
  for (const key of Object.keys(k)) if (!supported.has(key)) throw new Error(`kustomization.yaml: "${key}" is not supported by this renderer`);
  const objects: Obj[] = [];
  for (const file of k.resources ?? []) {
    if (statSync(join(dir, file)).isDirectory()) {
      objects.push(...renderKustomization(join(dir, file)));
      continue;
    }
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
  for (const patch of k.patches ?? []) applyPatch(objects, patch);
  return objects;
}

/** An inline JSON 6902 patch of `add` operations on the object its target names. */
function applyPatch(objects: Obj[], patch: Obj): void {
  const target = objects.find((o) => o.kind === patch.target?.kind && o.metadata?.name === patch.target?.name);
  if (!target) throw new Error(`kustomization patch: no ${patch.target?.kind} ${patch.target?.name}`);
  for (const op of parseYaml(patch.patch) as Obj[]) {
    if (op.op !== 'add') throw new Error(`kustomization patch: op "${op.op}" is not supported by this renderer`);
    const keys = String(op.path).split('/').slice(1);
    const last = keys.pop()!;
    let parent: Obj = target;
    for (const key of keys) {
      parent = parent[key];
      if (parent === undefined) throw new Error(`kustomization patch: ${op.path} does not exist in ${target.kind} ${target.metadata.name}`);
    }
    if (Array.isArray(parent)) parent.splice(last === '-' ? parent.length : Number(last), 0, op.value);
    else parent[last] = op.value;
  }
}
