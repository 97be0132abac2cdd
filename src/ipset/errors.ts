/** ipset refusals as named kinds: the kernel's errno (an errno or an IPSET_ERR_* code) read in the
 * context of the command and the set type, so type-specific codes get their right meaning. */
import { NetlinkError } from '../netlink/errors';
import * as C from './constants';

export type IpsetErrorKind =
  | 'set-not-found'
  | 'set-exists'
  | 'second-set-not-found'
  | 'in-use'
  | 'referenced'
  | 'type-mismatch'
  | 'type-not-found'
  | 'element-exists'
  | 'element-missing'
  | 'hash-full'
  | 'list-full'
  | 'out-of-range'
  | 'invalid-cidr'
  | 'invalid-family'
  | 'invalid-proto'
  | 'missing-proto'
  | 'timeout-unsupported'
  | 'counters-unsupported'
  | 'comment-unsupported'
  | 'member-set-not-found'
  | 'loop'
  | 'max-sets'
  | 'protocol'
  | 'permission'
  | 'other';

/** The command an error came from; it decides how IPSET_ERR_EXIST reads. */
export type IpsetOpName = 'protocol' | 'type' | 'create' | 'destroy' | 'flush' | 'rename' | 'swap' | 'add' | 'del' | 'test' | 'list' | 'header';

interface KindText {
  kind: IpsetErrorKind;
  text: string;
}

const COMMON: Record<number, KindText> = {
  [C.IPSET_ERR_PROTOCOL]: { kind: 'protocol', text: 'kernel rejected the message (protocol or attribute error)' },
  [C.IPSET_ERR_FIND_TYPE]: { kind: 'type-not-found', text: 'set type not supported by the kernel' },
  [C.IPSET_ERR_MAX_SETS]: { kind: 'max-sets', text: 'kernel limit on the number of sets reached' },
  [C.IPSET_ERR_BUSY]: { kind: 'in-use', text: 'set is in use by a kernel component' },
  [C.IPSET_ERR_EXIST_SETNAME2]: { kind: 'second-set-not-found', text: 'the second set does not exist (or the new name is taken)' },
  [C.IPSET_ERR_TYPE_MISMATCH]: { kind: 'type-mismatch', text: 'sets have different types or families' },
  [C.IPSET_ERR_INVALID_CIDR]: { kind: 'invalid-cidr', text: 'invalid prefix length' },
  [C.IPSET_ERR_INVALID_NETMASK]: { kind: 'invalid-cidr', text: 'invalid netmask' },
  [C.IPSET_ERR_INVALID_FAMILY]: { kind: 'invalid-family', text: 'address family does not match the set' },
  [C.IPSET_ERR_TIMEOUT]: { kind: 'timeout-unsupported', text: 'set was created without timeout support' },
  [C.IPSET_ERR_REFERENCED]: { kind: 'referenced', text: 'set is referenced by another set or rule' },
  [C.IPSET_ERR_IPADDR_IPV4]: { kind: 'invalid-family', text: 'an IPv4 address was expected' },
  [C.IPSET_ERR_IPADDR_IPV6]: { kind: 'invalid-family', text: 'an IPv6 address was expected' },
  [C.IPSET_ERR_COUNTER]: { kind: 'counters-unsupported', text: 'set was created without counter support' },
  [C.IPSET_ERR_COMMENT]: { kind: 'comment-unsupported', text: 'set was created without comment support' },
  [C.IPSET_ERR_INVALID_MARKMASK]: { kind: 'other', text: 'invalid markmask' },
  [C.IPSET_ERR_SKBINFO]: { kind: 'other', text: 'set was created without skbinfo support' },
};

const HASH: Record<number, KindText> = {
  [C.IPSET_ERR_HASH_FULL]: { kind: 'hash-full', text: 'hash is full, cannot add more elements' },
  [C.IPSET_ERR_HASH_ELEM]: { kind: 'other', text: 'null-valued element cannot be stored' },
  [C.IPSET_ERR_INVALID_PROTO]: { kind: 'invalid-proto', text: 'invalid protocol' },
  [C.IPSET_ERR_MISSING_PROTO]: { kind: 'missing-proto', text: 'protocol missing but required' },
  [C.IPSET_ERR_HASH_RANGE_UNSUPPORTED]: { kind: 'other', text: 'range is not supported for this element' },
  [C.IPSET_ERR_HASH_RANGE]: { kind: 'out-of-range', text: 'invalid range' },
};

const BITMAP: Record<number, KindText> = {
  [C.IPSET_ERR_BITMAP_RANGE]: { kind: 'out-of-range', text: 'element is outside the range of the set' },
  [C.IPSET_ERR_BITMAP_RANGE_SIZE]: { kind: 'out-of-range', text: 'range is too large' },
};

const LIST: Record<number, KindText> = {
  [C.IPSET_ERR_NAME]: { kind: 'member-set-not-found', text: 'member set does not exist' },
  [C.IPSET_ERR_LOOP]: { kind: 'loop', text: 'a list:set cannot contain a list:set' },
  [C.IPSET_ERR_BEFORE]: { kind: 'other', text: 'missing reference set for before/after' },
  [C.IPSET_ERR_NAMEREF]: { kind: 'member-set-not-found', text: 'reference set does not exist' },
  [C.IPSET_ERR_LIST_FULL]: { kind: 'list-full', text: 'list is full' },
  [C.IPSET_ERR_REF_EXIST]: { kind: 'element-missing', text: 'reference set is not in the list' },
};

const ERRNO: Record<number, KindText> = {
  1: { kind: 'permission', text: 'operation not permitted (needs CAP_NET_ADMIN)' },
  2: { kind: 'set-not-found', text: 'set does not exist' },
  16: { kind: 'in-use', text: 'set is in use' },
  17: { kind: 'set-exists', text: 'a set with that name already exists with other parameters' },
};

/** Reads an error number as ipset means it for this command and set type. */
export function describeIpsetErrno(errno: number, op: IpsetOpName, typeName?: string): KindText {
  if (errno === C.IPSET_ERR_EXIST) {
    if (op === 'add') return { kind: 'element-exists', text: 'element is already in the set' };
    if (op === 'del') return { kind: 'element-missing', text: 'element is not in the set' };
    if (op === 'test') return { kind: 'element-missing', text: 'element is not in the set' };
    return { kind: 'set-exists', text: 'set already exists' };
  }
  if (op === 'create' && errno === 2) return { kind: 'type-not-found', text: 'set type or revision not supported by the kernel' };
  if (errno >= C.IPSET_ERR_TYPE_SPECIFIC) {
    const table = typeName?.startsWith('hash:') ? HASH : typeName?.startsWith('bitmap:') ? BITMAP : typeName === 'list:set' ? LIST : undefined;
    const hit = table?.[errno];
    if (hit) return hit;
    return { kind: 'other', text: `type-specific error ${errno}` };
  }
  return COMMON[errno] ?? ERRNO[errno] ?? { kind: 'other', text: `error ${errno}` };
}

/** A kernel refusal of one ipset command, naming the set and, for add/del/test, the element. */
export class IpsetError extends NetlinkError {
  readonly kind: IpsetErrorKind;
  readonly set?: string;
  readonly element?: string;

  constructor(fields: { errno: number; code: string; op: IpsetOpName; set?: string; element?: string; typeName?: string; extAck?: string }) {
    const { kind, text } = describeIpsetErrno(fields.errno, fields.op, fields.typeName);
    const subject = [fields.set ? `set ${fields.set}` : undefined, fields.element ? `element ${fields.element}` : undefined].filter(Boolean).join(', ');
    const reason = fields.extAck ? `${text}; kernel: ${fields.extAck}` : text;
    super({
      code: fields.code,
      errno: fields.errno,
      extAck: fields.extAck,
      op: `ipset ${fields.op}`,
      object: fields.set,
      message: `ipset ${fields.op}${subject ? ` (${subject})` : ''}: ${reason} [${kind}, ${fields.code}]`,
    });
    this.name = 'IpsetError';
    this.kind = kind;
    this.set = fields.set;
    this.element = fields.element;
  }
}
