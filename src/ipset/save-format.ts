/** The `ipset save` text format: printing sets as `ipset save` does, and parsing create/add lines
 * into desired sets with every problem reported by line number before anything is applied. */
import { familyOf, SET_NAME_MAX, setNameFits } from './codec';
import { ElementSyntaxError, parseElement } from './element';
import { DesiredSet, Element, IpsetSet, isHashType, isSetType, MemberInput, SetOptions, SetType, supportsNomatch } from './types';

function quote(s: string): string {
  return `"${s}"`;
}

export function formatCreateLine(set: Pick<IpsetSet, 'name' | 'type' | 'family' | 'options'> & { header?: IpsetSet['header'] }): string {
  const o = set.options;
  const parts = ['create', set.name, set.type];
  if (isHashType(set.type)) {
    parts.push('family', set.family, 'hashsize', String(o.hashsize ?? 1024), 'maxelem', String(o.maxelem ?? 65536));
  }
  if (set.type === 'bitmap:port' && o.range) parts.push('range', `${o.range.from}-${o.range.to}`);
  if (set.type === 'list:set') parts.push('size', String(o.size ?? 8));
  if (o.timeout !== undefined) parts.push('timeout', String(o.timeout));
  if (o.counters) parts.push('counters');
  if (o.comment) parts.push('comment');
  if (set.header?.bucketsize !== undefined) parts.push('bucketsize', String(set.header.bucketsize));
  if (set.header?.initval !== undefined) parts.push('initval', `0x${set.header.initval.toString(16).padStart(8, '0')}`);
  return parts.join(' ');
}

export function formatAddLine(setName: string, e: Element): string {
  const parts = ['add', setName, e.key];
  // ipset save's order: timeout, nomatch, packets, bytes, comment.
  if (e.timeout !== undefined) parts.push('timeout', String(e.timeout));
  if (e.nomatch) parts.push('nomatch');
  if (e.packets !== undefined) parts.push('packets', String(e.packets));
  if (e.bytes !== undefined) parts.push('bytes', String(e.bytes));
  if (e.comment !== undefined) parts.push('comment', quote(e.comment));
  return parts.join(' ');
}

/** The text `ipset save` prints for these sets, in the order given. */
export function formatSave(sets: IpsetSet[]): string {
  let out = '';
  for (const s of sets) {
    out += formatCreateLine(s) + '\n';
    for (const m of s.members) out += formatAddLine(s.name, m) + '\n';
  }
  return out;
}

export interface LineError {
  line: number;
  message: string;
}

/** Input that does not parse; lists every bad line. */
export class RestoreSyntaxError extends Error {
  constructor(readonly errors: LineError[]) {
    super(errors.map((e) => `line ${e.line}: ${e.message}`).join('\n'));
    this.name = 'RestoreSyntaxError';
  }
}

/** A desired set with the line that created it. */
export interface ParsedSet extends DesiredSet {
  line: number;
}

const EXIST_FLAGS = new Set(['-exist', '-!']);

const WHITESPACE = /\s+/;

function tokenize(text: string): string[] {
  // Most lines hold no quoted comment: split them without matching token by token.
  if (!text.includes('"')) {
    const words = text.split(WHITESPACE);
    return words.some((w) => EXIST_FLAGS.has(w)) ? words.filter((w) => !EXIST_FLAGS.has(w)) : words;
  }
  const out: string[] = [];
  const re = /"([^"]*)"|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) {
    if (m[1] === undefined && m[2].includes('"')) throw new Error(`unbalanced quote in "${m[2]}"`);
    // ipset restore's -exist is how every line here is applied anyway.
    if (m[1] === undefined && EXIST_FLAGS.has(m[2])) continue;
    out.push(m[1] ?? m[2]);
  }
  return out;
}

function uint(v: string | undefined, what: string, max = 0xffffffff): number {
  if (v === undefined || !/^\d+$/.test(v) || Number(v) > max) throw new Error(`${what} needs a whole number up to ${max}, got "${v ?? ''}"`);
  return Number(v);
}

function checkSetName(name: string | undefined): string {
  if (!name) throw new Error('missing set name');
  if (!setNameFits(name)) throw new Error(`set name "${name}" is longer than ${SET_NAME_MAX} bytes`);
  return name;
}

function parseCreate(tokens: string[]): Omit<ParsedSet, 'line'> {
  const name = checkSetName(tokens[1]);
  const typeName = tokens[2];
  if (!typeName) throw new Error(`create ${name}: missing set type`);
  if (!isSetType(typeName)) throw new Error(`create ${name}: unknown or unsupported set type "${typeName}"`);
  const type: SetType = typeName;
  const options: SetOptions = {};
  let family: 'inet' | 'inet6' | undefined;
  for (let i = 3; i < tokens.length; i++) {
    const opt = tokens[i];
    const next = () => tokens[++i];
    const hashOnly = () => {
      if (!isHashType(type)) throw new Error(`create ${name}: option "${opt}" is for hash types, not ${type}`);
    };
    switch (opt) {
      case 'family': {
        hashOnly();
        const f = next();
        if (f !== 'inet' && f !== 'inet6') throw new Error(`create ${name}: family must be inet or inet6, got "${f ?? ''}"`);
        family = f;
        break;
      }
      case 'hashsize':
        hashOnly();
        options.hashsize = uint(next(), `create ${name}: hashsize`);
        break;
      case 'maxelem':
        hashOnly();
        options.maxelem = uint(next(), `create ${name}: maxelem`);
        break;
      case 'bucketsize':
        hashOnly();
        uint(next(), `create ${name}: bucketsize`, 255);
        break;
      case 'initval':
        hashOnly();
        if (!/^(0x[0-9a-fA-F]{1,8}|\d+)$/.test(next() ?? '')) throw new Error(`create ${name}: initval needs a 32-bit number`);
        break;
      case 'timeout':
        options.timeout = uint(next(), `create ${name}: timeout`, 2147483);
        break;
      case 'counters':
        options.counters = true;
        break;
      case 'comment':
        options.comment = true;
        break;
      case 'range': {
        if (type !== 'bitmap:port') throw new Error(`create ${name}: option "range" is supported here for bitmap:port only`);
        const m = /^(\d+)-(\d+)$/.exec(next() ?? '');
        if (!m) throw new Error(`create ${name}: range needs FROM-TO ports`);
        const from = uint(m[1], `create ${name}: range start`, 65535);
        const to = uint(m[2], `create ${name}: range end`, 65535);
        if (from > to) throw new Error(`create ${name}: range ${from}-${to} is empty`);
        options.range = { from, to };
        break;
      }
      case 'size':
        if (type !== 'list:set') throw new Error(`create ${name}: option "size" is for list:set`);
        options.size = uint(next(), `create ${name}: size`);
        break;
      default:
        throw new Error(`create ${name}: unknown option "${opt}"`);
    }
  }
  if (type === 'bitmap:port' && !options.range) throw new Error(`create ${name}: bitmap:port needs "range FROM-TO"`);
  return { type, family, options, members: [] };
}

function parseAdd(tokens: string[], set: Omit<ParsedSet, 'line'>, name: string): MemberInput {
  const text = tokens[2];
  if (text === undefined) throw new Error(`add ${name}: missing member`);
  const family = familyOf(set.type, set.family);
  let element: Element;
  try {
    element = parseElement(set.type, family, text);
  } catch (err) {
    if (err instanceof ElementSyntaxError) throw new Error(`add ${name}: ${err.message}`);
    throw err;
  }
  if (set.type === 'bitmap:port' && set.options?.range) {
    const { from, to } = set.options.range;
    // A bitmap:port key is the port number.
    const port = Number(element.key);
    if (port < from || port > to) throw new Error(`add ${name}: port ${port} is outside the set's range ${from}-${to}`);
  }
  const member: Exclude<MemberInput, string> = { elem: text };
  for (let i = 3; i < tokens.length; i++) {
    const opt = tokens[i];
    if (opt === 'nomatch') {
      if (!supportsNomatch(set.type)) throw new Error(`add ${name}: ${set.type} members cannot be nomatch (hash:net, hash:net,port and hash:ip,port,net can)`);
      member.nomatch = true;
      continue;
    }
    const value = tokens[++i];
    switch (opt) {
      case 'timeout':
        if (set.options?.timeout === undefined) throw new Error(`add ${name}: member timeout needs a set created with "timeout"`);
        member.timeout = uint(value, `add ${name}: timeout`, 2147483);
        break;
      case 'comment':
        if (!set.options?.comment) throw new Error(`add ${name}: member comment needs a set created with "comment"`);
        if (value === undefined || Buffer.byteLength(value) > 255) throw new Error(`add ${name}: comment must be 0 to 255 bytes`);
        member.comment = value;
        break;
      case 'packets':
      case 'bytes':
        if (!set.options?.counters) throw new Error(`add ${name}: ${opt} needs a set created with "counters"`);
        if (value === undefined || !/^\d{1,20}$/.test(value) || BigInt(value) >= 1n << 64n) throw new Error(`add ${name}: ${opt} needs a 64-bit count`);
        member[opt] = BigInt(value);
        break;
      default:
        throw new Error(`add ${name}: unknown member option "${opt}"`);
    }
  }
  return Object.keys(member).length === 1 ? text : member;
}

/** Parses `ipset save` text (create and add lines; blank lines, `#` comments and COMMIT are
 * skipped). Every set that gets members must have its create line earlier in the input. */
export function parseSave(text: string): Map<string, ParsedSet> {
  const sets = new Map<string, ParsedSet>();
  const errors: LineError[] = [];
  const lines = text.split('\n');
  for (let n = 0; n < lines.length; n++) {
    const raw = lines[n].trim();
    if (raw === '' || raw.startsWith('#') || raw === 'COMMIT') continue;
    try {
      const tokens = tokenize(raw);
      const cmd = tokens[0];
      if (cmd === 'create' || cmd === '-N') {
        const set = parseCreate(tokens);
        const name = tokens[1];
        const prior = sets.get(name);
        if (prior) throw new Error(`create ${name}: set already created on line ${prior.line}`);
        sets.set(name, { ...set, line: n + 1 });
      } else if (cmd === 'add' || cmd === '-A') {
        const name = checkSetName(tokens[1]);
        const set = sets.get(name);
        if (!set) throw new Error(`add ${name}: no create line for this set before this line`);
        set.members.push(parseAdd(tokens, set, name));
      } else {
        throw new Error(`unknown command "${cmd}" (expected create or add)`);
      }
    } catch (err) {
      errors.push({ line: n + 1, message: (err as Error).message });
    }
  }
  if (errors.length > 0) throw new RestoreSyntaxError(errors);
  return sets;
}
