/** Errors of the netlink layer: kernel refusals (with errno and the kernel's own words) and
 * malformed bytes from the kernel (never a crash). */

/** The kernel refused a message. Names the operation and object when the caller knows them. */
export class NetlinkError extends Error {
  readonly code: string;
  readonly errno: number;
  readonly extAck?: string;
  readonly offset?: number;
  /** Index of the failing message within its batch, if it was part of one. */
  readonly msgIndex?: number;
  readonly op?: string;
  readonly object?: string;
  /** For ENOENT/EINVAL in a transaction: the referenced object that does not exist. */
  readonly missing?: string;

  constructor(fields: {
    code: string;
    errno: number;
    extAck?: string;
    offset?: number;
    msgIndex?: number;
    op?: string;
    object?: string;
    missing?: string;
    message?: string;
  }) {
    const where = [fields.op, fields.object].filter(Boolean).join(' ');
    const text =
      fields.message ??
      `${where ? where + ': ' : ''}${fields.code}` +
        (fields.missing ? `: ${fields.missing}` : '') +
        (fields.extAck ? ` (${fields.extAck})` : '') +
        (fields.msgIndex !== undefined ? ` [message ${fields.msgIndex}]` : '');
    super(text);
    this.name = 'NetlinkError';
    this.code = fields.code;
    this.errno = fields.errno;
    this.extAck = fields.extAck;
    this.offset = fields.offset;
    this.msgIndex = fields.msgIndex;
    this.op = fields.op;
    this.object = fields.object;
    this.missing = fields.missing;
  }
}

/** Bytes that do not form what they claim to be. Raised by decoders instead of crashing. */
export class DecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DecodeError';
  }
}

export function isNotFound(err: unknown): boolean {
  return err instanceof NetlinkError && err.code === 'ENOENT';
}

export function isAlreadyExists(err: unknown): boolean {
  return err instanceof NetlinkError && err.code === 'EEXIST';
}

export function isBusy(err: unknown): boolean {
  return err instanceof NetlinkError && err.code === 'EBUSY';
}

/** The ruleset generation moved since the batch was computed (NFNL_BATCH_GENID mismatch). */
export function isGenerationMismatch(err: unknown): boolean {
  return err instanceof NetlinkError && err.code === 'ERESTART';
}
