/** Errors about cluster objects and the files they come from: always name the object and field. */

/** A Kubernetes object that does not have the shape enforcement needs. */
export class K8sObjectError extends Error {
  /** e.g. `NetworkPolicy x/allow-web`. */
  readonly object: string;
  /** Dotted path into the object, e.g. `spec.ingress[0].from[1].ipBlock.cidr`. */
  readonly field: string;
  /** What is wrong, without the object and field. */
  readonly problem: string;

  constructor(object: string, field: string, problem: string) {
    super(`${object}: ${field}: ${problem}`);
    this.name = 'K8sObjectError';
    this.object = object;
    this.field = field;
    this.problem = problem;
  }
}

/** An object too malformed to enforce as written, that must not be dropped either (dropping a
 * NetworkPolicy would let through what it denied). `replacement` is what to enforce instead:
 * the same object reduced to what could be read, failing closed. Sources report the error and
 * deliver the replacement. */
export class FailClosedError<T = unknown> extends K8sObjectError {
  constructor(
    object: string,
    field: string,
    problem: string,
    readonly replacement: T,
  ) {
    super(object, field, problem);
    this.name = 'FailClosedError';
  }
}

/** What a source reports instead of throwing: a bad object, a bad file, a lost connection. */
export interface SourceError {
  message: string;
  /** The object involved, e.g. `Pod x/a`, when known. */
  object?: string;
  field?: string;
  /** Manifest source: the file and the 0-based document index within it. */
  file?: string;
  document?: number;
  /** `warning`: nothing enforced is affected (e.g. a kind nfkube does not read); absent: an error. */
  severity?: 'warning';
  cause?: unknown;
}

export function sourceErrorFrom(err: unknown, where: { file?: string; document?: number } = {}): SourceError {
  const located = (text: string): string => {
    const parts: string[] = [];
    if (where.file !== undefined) parts.push(where.file);
    if (where.document !== undefined) parts.push(`document ${where.document}`);
    return parts.length ? `${parts.join(', ')}: ${text}` : text;
  };
  if (err instanceof K8sObjectError) {
    return { message: located(err.message), object: err.object, field: err.field, ...where, cause: err };
  }
  const text = err instanceof Error ? err.message : String(err);
  return { message: located(text), ...where, cause: err };
}
