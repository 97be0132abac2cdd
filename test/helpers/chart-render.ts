/** `helm template` for the subset of Go templates nfkube's chart uses, the fallback where the
 * real helm (scripts/build-helm.sh) is not built: `{{ .Values.x }}`, `.Release.*`, `.Chart.*`,
 * `$var`, pipelines with toYaml, nindent, indent, quote, default, printf (%s, %v, %d), kindIs,
 * not, and, or, `include` of a `define` (from _*.tpl), `if`/`else`, `with` and `range` (maps in
 * sorted key order, as Go does), and `{{-`/`-}}` trimming. Anything else is refused, so a
 * template that would need real Helm fails the test rather than rendering wrongly. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml, parseAllDocuments, stringify } from 'yaml';

type Node =
  | { t: 'text'; text: string }
  | { t: 'out'; pipe: string }
  | { t: 'if'; pipe: string; body: Node[]; otherwise: Node[] }
  | { t: 'with'; pipe: string; body: Node[]; otherwise: Node[] }
  | { t: 'range'; vars: string[]; pipe: string; body: Node[] }
  | { t: 'define'; name: string; body: Node[] };

interface Scope {
  dot: unknown;
  root: unknown;
  vars: Record<string, unknown>;
  /** Named templates (`define`), for `include`. */
  defines: Map<string, Node[]>;
}

function tokenize(src: string): (string | { action: string })[] {
  const out: (string | { action: string })[] = [];
  const re = /\{\{(-?)\s*([\s\S]*?)\s*(-?)\}\}/g;
  let last = 0;
  let trimNext = false;
  for (let m = re.exec(src); m; m = re.exec(src)) {
    let text = src.slice(last, m.index);
    if (trimNext) text = text.replace(/^\s+/, '');
    if (m[1]) text = text.replace(/\s+$/, '');
    out.push(text, { action: m[2] });
    trimNext = m[3] === '-';
    last = re.lastIndex;
  }
  out.push(trimNext ? src.slice(last).replace(/^\s+/, '') : src.slice(last));
  return out;
}

function parseTemplate(src: string): Node[] {
  const tokens = tokenize(src);
  let i = 0;
  const block = (): { nodes: Node[]; end: 'end' | 'else' | 'eof' } => {
    const nodes: Node[] = [];
    while (i < tokens.length) {
      const tok = tokens[i++];
      if (typeof tok === 'string') {
        if (tok) nodes.push({ t: 'text', text: tok });
        continue;
      }
      const a = tok.action;
      if (a.startsWith('/*')) continue;
      if (a === 'end' || a === 'else') return { nodes, end: a };
      const ctl = /^(if|with|range|define)\s+([\s\S]+)$/.exec(a);
      if (!ctl) {
        nodes.push({ t: 'out', pipe: a });
        continue;
      }
      const body = block();
      const otherwise = body.end === 'else' ? block() : { nodes: [], end: 'end' as const };
      if (body.end === 'eof' || otherwise.end !== 'end') throw new Error(`template: {{ ${a} }} has no {{ end }}`);
      if (ctl[1] === 'define') {
        if (otherwise.nodes.length) throw new Error('template: define ... else is not supported');
        nodes.push({ t: 'define', name: JSON.parse(ctl[2]) as string, body: body.nodes });
      } else if (ctl[1] === 'range') {
        const decl = /^(\$\w+)(?:\s*,\s*(\$\w+))?\s*:=\s*([\s\S]+)$/.exec(ctl[2]);
        if (otherwise.nodes.length) throw new Error('template: range ... else is not supported');
        nodes.push({ t: 'range', vars: decl ? [decl[1], decl[2]].filter(Boolean) : [], pipe: decl ? decl[3] : ctl[2], body: body.nodes });
      } else nodes.push({ t: ctl[1] === 'if' ? 'if' : 'with', pipe: ctl[2], body: body.nodes, otherwise: otherwise.nodes });
    }
    return { nodes, end: 'eof' };
  };
  const top = block();
  if (top.end !== 'eof') throw new Error(`template: unexpected {{ ${top.end} }}`);
  return top.nodes;
}

function lookup(base: unknown, path: string[]): unknown {
  let v = base;
  for (const p of path) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[p] : undefined;
  return v;
}

function operand(word: string, s: Scope): unknown {
  if (word === '.') return s.dot;
  if (word.startsWith('.')) return lookup(s.dot, word.slice(1).split('.'));
  if (word === '$') return s.root;
  if (word.startsWith('$')) {
    const [name, ...path] = word.split('.');
    if (!(name in s.vars)) throw new Error(`template: undefined variable ${name}`);
    return lookup(s.vars[name], path);
  }
  if (/^"(?:[^"\\]|\\.)*"$/.test(word)) return JSON.parse(word);
  if (/^-?\d+$/.test(word)) return Number(word);
  throw new Error(`template: unsupported operand "${word}"`);
}

const indentLines = (n: number, text: string) => text.split('\n').map((l) => ' '.repeat(n) + l).join('\n');
const FUNCS: Record<string, (...args: unknown[]) => unknown> = {
  toYaml: (v) => (v === undefined || v === null ? 'null' : stringify(v).replace(/\n$/, '')),
  nindent: (n, v) => `\n${indentLines(n as number, String(v))}`,
  indent: (n, v) => indentLines(n as number, String(v)),
  quote: (v) => JSON.stringify(v === undefined || v === null ? '' : String(v)),
  default: (d, v) => (truthy(v) ? v : d),
  printf: (format, ...args) => {
    let k = 0;
    return String(format).replace(/%[svd%]/g, (verb) => (verb === '%%' ? '%' : show(args[k++])));
  },
  kindIs: (kind, v) => (kind === 'bool' ? typeof v === 'boolean' : kind === 'string' ? typeof v === 'string' : kind === 'map' ? v !== null && typeof v === 'object' && !Array.isArray(v) : kind === 'slice' ? Array.isArray(v) : false),
  not: (v) => !truthy(v),
  and: (...vs) => vs.find((v) => !truthy(v)) ?? vs[vs.length - 1],
  or: (...vs) => vs.find((v) => truthy(v)) ?? vs[vs.length - 1],
};

function evalPipe(pipe: string, s: Scope): unknown {
  let value: unknown;
  pipe.split('|').forEach((cmd, i) => {
    const words = cmd.trim().match(/"(?:[^"\\]|\\.)*"|\S+/g) ?? [];
    const [head = '', ...rest] = words;
    if (head === 'include') {
      const [name, arg] = rest.map((w) => operand(w, s));
      const body = s.defines.get(name as string);
      if (!body) throw new Error(`template: include of undefined template ${JSON.stringify(name)}`);
      value = run(body, { ...s, dot: arg, vars: { $: s.root } });
    } else if (head in FUNCS) {
      const args = rest.map((w) => operand(w, s));
      value = FUNCS[head](...(i > 0 ? [...args, value] : args));
    } else {
      if (i > 0 || rest.length) throw new Error(`template: unsupported command "${cmd.trim()}"`);
      value = operand(head, s);
    }
  });
  return value;
}

function truthy(v: unknown): boolean {
  if (Array.isArray(v)) return v.length > 0;
  if (v !== null && typeof v === 'object') return Object.keys(v).length > 0;
  return Boolean(v);
}

function show(v: unknown): string {
  if (v === undefined || v === null) return '<no value>';
  if (typeof v === 'object') throw new Error('template: printing a map or list needs toYaml');
  return String(v);
}

function run(nodes: Node[], s: Scope): string {
  let out = '';
  for (const n of nodes) {
    if (n.t === 'define') continue;
    if (n.t === 'text') out += n.text;
    else if (n.t === 'out') out += show(evalPipe(n.pipe, s));
    else if (n.t === 'if') out += run(truthy(evalPipe(n.pipe, s)) ? n.body : n.otherwise, s);
    else if (n.t === 'with') {
      const v = evalPipe(n.pipe, s);
      out += truthy(v) ? run(n.body, { ...s, dot: v }) : run(n.otherwise, s);
    } else {
      const v = evalPipe(n.pipe, s);
      const entries: [unknown, unknown][] = Array.isArray(v) ? v.map((x, k) => [k, x]) : v && typeof v === 'object' ? Object.keys(v).sort().map((k) => [k, (v as Record<string, unknown>)[k]]) : [];
      for (const [k, x] of entries) {
        const vars = { ...s.vars };
        if (n.vars.length === 1) vars[n.vars[0]] = x;
        if (n.vars.length === 2) [vars[n.vars[0]], vars[n.vars[1]]] = [k, x];
        out += run(n.body, { ...s, dot: x, vars });
      }
    }
  }
  return out;
}

function merge(base: unknown, over: unknown): unknown {
  if (!over || typeof over !== 'object' || Array.isArray(over) || !base || typeof base !== 'object' || Array.isArray(base)) return over;
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [k, v] of Object.entries(over)) out[k] = merge(out[k], v);
  return out;
}

/** Renders every template of the chart in `dir` as `helm template --namespace ns` would, with
 * `values` merged over values.yaml; returns the objects. */
export function renderChart(dir: string, options: { namespace: string; releaseName?: string; values?: unknown }): Record<string, any>[] {
  const chart = parseYaml(readFileSync(join(dir, 'Chart.yaml'), 'utf8')) as Record<string, unknown>;
  const values = merge(parseYaml(readFileSync(join(dir, 'values.yaml'), 'utf8')), options.values ?? {});
  const root = {
    Values: values,
    Release: { Name: options.releaseName ?? 'nfkube', Namespace: options.namespace, Service: 'Helm' },
    Chart: { Name: chart.name, Version: chart.version, AppVersion: chart.appVersion },
  };
  const objects: Record<string, any>[] = [];
  // crds/: plain YAML Helm installs before the templates, never templated.
  const crds = join(dir, 'crds');
  for (const file of existsSync(crds) ? readdirSync(crds).filter((f) => f.endsWith('.yaml')).sort() : []) {
    for (const doc of parseAllDocuments(readFileSync(join(crds, file), 'utf8'))) {
      if (doc.errors.length) throw new Error(`crds/${file}: ${doc.errors.join('; ')}`);
      const o = doc.toJS();
      if (o) objects.push(o);
    }
  }
  const templates = new Map(readdirSync(join(dir, 'templates')).filter((f) => f.endsWith('.yaml') || f.endsWith('.tpl')).sort().map((f) => [f, parseTemplate(readFileSync(join(dir, 'templates', f), 'utf8'))]));
  const defines = new Map([...templates.values()].flat().flatMap((n) => (n.t === 'define' ? [[n.name, n.body] as const] : [])));
  // Files starting with _ hold only named templates; they render nothing, as in Helm.
  for (const [file, nodes] of [...templates].filter(([f]) => f.endsWith('.yaml') && !f.startsWith('_'))) {
    const text = run(nodes, { dot: root, root, vars: { $: root }, defines });
    for (const doc of parseAllDocuments(text)) {
      if (doc.errors.length) throw new Error(`${file}: ${doc.errors.join('; ')}\n${text}`);
      const o = doc.toJS();
      if (o) objects.push(o);
    }
  }
  return objects;
}
