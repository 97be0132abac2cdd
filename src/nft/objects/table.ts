/** table: the container of chains and sets (nf_tables_api.c, NFTA_TABLE_*). */
import { AttrMap, AttrWriter } from '../../netlink/attr';
import * as C from '../constants';
import { Table } from '../types';
import { commentUdata, decodeComment, decodeTextUdata, definition, textUdata, UDATA_TABLE_NFKUBE_OPTIONS, familyFromNumber, flushableVerbs, isCreation, ObjectCodec, tableReference, UDATA_TABLE_COMMENT } from './codec';

// Encoders write a message's attributes into the caller's writer (one buffer per batch).

export function encodeTable(w: AttrWriter, t: Table): void {
  w.str(C.NFTA_TABLE_NAME, t.name);
  if (t.flags !== undefined) w.be32(C.NFTA_TABLE_FLAGS, t.flags);
  // The kernel keeps a table's user data from its creation: an update does not change it.
  const udata = [...(t.comment !== undefined ? [commentUdata(UDATA_TABLE_COMMENT, t.comment, 'table comment')] : []), ...(t.options ? [textUdata(UDATA_TABLE_NFKUBE_OPTIONS, t.options)] : [])];
  const bytes = Buffer.concat(udata);
  if (bytes.length > C.NFT_USERDATA_MAXLEN) throw new Error(`table ${t.name}: user data of ${bytes.length} bytes (comment and recorded options) exceeds the kernel's ${C.NFT_USERDATA_MAXLEN}`);
  if (bytes.length) w.bytes(C.NFTA_TABLE_USERDATA, bytes);
}

export function encodeTableRef(w: AttrWriter, t: { name: string }): void {
  w.str(C.NFTA_TABLE_NAME, t.name);
}

export function decodeTable(family: number, payload: Buffer): Table {
  const a = AttrMap.parse(payload, 'table');
  const table: Table = {
    family: familyFromNumber(family),
    name: a.required(a.str(C.NFTA_TABLE_NAME), 'NFTA_TABLE_NAME'),
    flags: a.be32(C.NFTA_TABLE_FLAGS),
    handle: a.be64(C.NFTA_TABLE_HANDLE),
    use: a.be32(C.NFTA_TABLE_USE),
  };
  const udata = a.bytes(C.NFTA_TABLE_USERDATA);
  const comment = udata && decodeComment(udata, UDATA_TABLE_COMMENT);
  if (comment !== undefined) table.comment = comment;
  const options = udata && decodeTextUdata(udata, UDATA_TABLE_NFKUBE_OPTIONS);
  if (options !== undefined) table.options = options;
  const owner = a.be32(C.NFTA_TABLE_OWNER);
  if (owner !== undefined) table.owner = owner;
  return table;
}

const FLAG_NAMES: [number, string][] = [
  [C.NFT_TABLE_F_DORMANT, 'dormant'],
  [C.NFT_TABLE_F_OWNER, 'owner'],
  [C.NFT_TABLE_F_PERSIST, 'persist'],
];

export const table: ObjectCodec<'table'> = {
  // Flushing a table deletes the rules of all its chains.
  verbs: flushableVerbs(C.NFT_MSG_NEWTABLE, C.NFT_MSG_DELTABLE, C.NFT_MSG_DESTROYTABLE, C.NFT_MSG_DELRULE),

  family: (op) => op.table.family,

  encode(w, op) {
    if (isCreation(op.verb)) encodeTable(w, op.table);
    else if (op.verb === 'flush') w.str(C.NFTA_RULE_TABLE, op.table.name);
    else encodeTableRef(w, op.table);
  },

  describe: (op) => `table ${op.table.family} ${op.table.name}`,

  format(op) {
    const t = op.table;
    const ref = `${t.family} ${t.name}`;
    if (!isCreation(op.verb) || (t.comment === undefined && !t.flags)) return `${op.verb} table ${ref}`;
    const flags = FLAG_NAMES.filter(([bit]) => (t.flags ?? 0) & bit).map(([, name]) => name);
    const parts = [...(flags.length ? [`flags ${flags.join(',')};`] : []), ...(t.comment !== undefined ? [`comment "${t.comment}";`] : [])];
    return `${op.verb} table ${ref} { ${parts.join(' ')} }`;
  },

  references: (op) => (isCreation(op.verb) ? [] : [{ ...tableReference(op.table.family, op.table.name), role: 'the table' }]),

  defines(op) {
    const d = definition(op.verb, { kind: 'table', family: op.table.family, table: op.table.name, name: op.table.name });
    return d && { ...d, holdsObjects: true };
  },
};
