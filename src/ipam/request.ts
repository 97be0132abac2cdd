/** Checks of a request from the socket, field by field, before the agent reads it: the bytes come
 * from whoever could connect, so a wrong type is a CNI error naming the field, never a TypeError
 * or a key like "[object Object]". Pure. */
import { containerIdProblem, ifnameProblem } from '../cni/plugin';
import { CNI_ERR } from '../cni/protocol';

export interface RequestProblem {
  code: number;
  msg: string;
}

const COMMANDS = new Set(['ADD', 'DEL', 'CHECK', 'GC', 'STATUS']);
/** Commands that name one attachment (and so need a valid container ID and interface name). */
const PER_ATTACHMENT = new Set(['ADD', 'DEL', 'CHECK']);

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function invalid(code: number, msg: string): RequestProblem {
  return { code, msg: `ipam request: ${msg}` };
}

/** Why req is not a well-formed IpamRequest, or undefined when it is. */
export function requestProblem(req: unknown): RequestProblem | undefined {
  if (!isRecord(req)) return invalid(CNI_ERR.decodeFailure, 'not a JSON object');
  if (typeof req.command !== 'string' || !COMMANDS.has(req.command)) return invalid(CNI_ERR.invalidEnv, `unknown command ${JSON.stringify(req.command)}`);
  if (typeof req.network !== 'string' || req.network === '') return invalid(CNI_ERR.invalidConfig, 'network: the network configuration has no name');
  if (req.pool !== undefined && typeof req.pool !== 'string') return invalid(CNI_ERR.invalidConfig, 'pool must be a string');
  if (PER_ATTACHMENT.has(req.command)) {
    const bad = containerIdProblem(req.containerID) ?? ifnameProblem(req.ifname);
    if (bad) return invalid(CNI_ERR.invalidEnv, bad);
  }
  if (req.args !== undefined && (!isRecord(req.args) || !Object.values(req.args).every((v) => typeof v === 'string'))) {
    return invalid(CNI_ERR.invalidEnv, 'args must be an object of strings (CNI_ARGS)');
  }
  if (req.expected !== undefined && (!Array.isArray(req.expected) || !req.expected.every((v) => typeof v === 'string'))) {
    return invalid(CNI_ERR.invalidConfig, 'expected must be a list of "address/prefix" strings');
  }
  if (req.validAttachments !== undefined) {
    if (!Array.isArray(req.validAttachments)) return invalid(CNI_ERR.invalidConfig, 'validAttachments must be a list');
    for (const [i, a] of req.validAttachments.entries()) {
      if (!isRecord(a) || typeof a.containerID !== 'string' || typeof a.ifname !== 'string') {
        return invalid(CNI_ERR.invalidConfig, `validAttachments[${i}] must be an object with string containerID and ifname`);
      }
    }
  }
  return undefined;
}

