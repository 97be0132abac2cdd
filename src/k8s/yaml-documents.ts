/** The documents of a YAML manifest file as plain JS values, fast.
 *
 * `yaml`'s document model (parseAllDocuments + toJS) keeps a node per value with source ranges,
 * comments and errors: measured side by side on the bench cluster's manifests it costs about 80x
 * JSON.parse, and its lower-level Parser alone 45x; js-yaml builds the values directly, at about
 * 6x, and the block-style subset parser (yaml-block.ts) at about 3x, or 2x when it builds only
 * the fields the caller reads (bench/manifest-parse.bench.ts).
 * So a file is read by the subset parser when it is in the subset, else by js-yaml with the YAML
 * 1.2 core schema (no timestamps, no merge keys: the same scalars `yaml` resolves), and the slow,
 * exact path stays for what neither takes as it is: a file js-yaml refuses (syntax errors,
 * unknown tags, which `yaml` reports with the document index or tolerates) and a file whose
 * aliases share collections (`yaml` enforces the alias-expansion limit on those). */
import type * as JsYaml from 'js-yaml';
import { blockYamlDocuments, implicitTypes, type FieldsOf } from './yaml-block';

/** js-yaml and its core schema's scalar types, loaded with the first YAML file. */
let loaded: { jsYaml: typeof JsYaml; types?: ReturnType<typeof implicitTypes> } | undefined;

function jsYaml(): NonNullable<typeof loaded> {
  if (!loaded) {
    const jsYaml = require('js-yaml') as typeof JsYaml;
    loaded = { jsYaml, types: implicitTypes(jsYaml.CORE_SCHEMA) };
  }
  return loaded;
}

/** The documents (null for an empty one), or undefined when the caller must take the exact
 * path: js-yaml refused the text, or aliases share collections within it. With fieldsOf, the
 * subset parser builds only the fields it names of each object (js-yaml builds them all). */
export function fastYamlDocuments(text: string, fieldsOf?: FieldsOf): unknown[] | undefined {
  const { jsYaml: js, types } = jsYaml();
  const block = types ? blockYamlDocuments(text, types, fieldsOf) : undefined;
  if (block) return block;
  let documents: unknown[];
  try {
    documents = js.loadAll(text, null, { schema: js.CORE_SCHEMA });
  } catch {
    return undefined;
  }
  // An alias needs an anchor (`&`); without one no collection is shared.
  if (text.includes('&') && documents.some(sharesCollections)) return undefined;
  return documents;
}

/** True when a collection is reachable twice (an alias of an anchored map or list). */
function sharesCollections(root: unknown): boolean {
  const seen = new Set<object>();
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (seen.has(v)) return true;
    seen.add(v);
    if (Array.isArray(v)) for (const x of v) stack.push(x);
    else for (const k in v) stack.push((v as Record<string, unknown>)[k]);
  }
  return false;
}
