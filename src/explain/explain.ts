/** `nfkube explain`: one flow's verdict from the model the agent enforces and from the table
 * read back from the kernel, what decides each, and whether they agree. */
import { PolicyModes } from '../policy/modes';
import { printable } from '../log';
import { formatRule } from '../nft/format';
import type { TableContents } from '../nft/types';
import type { PolicyIR } from '../policy/engine/ir';
import type { FlowPacket } from './flow';
import { evaluateKernel, KernelVerdict } from './kernel-verdict';
import { evaluateModel, ModelVerdict, SideVerdict, type SideWrapper } from './model-verdict';

export interface Explanation {
  packet: FlowPacket;
  model: ModelVerdict;
  /** Undefined when the table could not be evaluated (kernelError says why). */
  kernel?: KernelVerdict;
  kernelError?: string;
  agree: boolean;
}

/** `table` undefined: nfkube's table does not exist, so the kernel enforces nothing of it. */
export function explainFlow(ir: PolicyIR, modes: PolicyModes, table: TableContents | undefined, packet: FlowPacket, tiers?: SideWrapper): Explanation {
  const model = evaluateModel(ir, modes, packet, tiers);
  let kernel: KernelVerdict | undefined;
  let kernelError: string | undefined;
  try {
    kernel = table ? evaluateKernel(table, packet) : { allowed: true, steps: [] };
  } catch (err) {
    kernelError = (err as Error).message;
  }
  return { packet, model, kernel, kernelError, agree: kernel !== undefined && kernel.allowed === model.allowed };
}

const verdictWord = (allowed: boolean) => (allowed ? 'ALLOWED' : 'DENIED');

function describeSide(s: SideVerdict): string {
  if (s.tier) return `${s.direction.padEnd(7)} ${s.pod}: ${s.tier.tier} tier: ${s.tier.action === 'Accept' ? 'accepted' : 'denied'} by ${s.tier.decidedBy}${s.audit ? ' (audit mode: let through and logged)' : ''}`;
  if (!s.pod) return `${s.direction.padEnd(7)} not isolated (no policy selects the ${s.direction === 'egress' ? 'source' : 'destination'} on this node)`;
  const by = `${s.pod}: isolated by ${s.policies.join(', ')}`;
  if (s.allowedBy) return `${s.direction.padEnd(7)} ${by}; allowed by ${s.allowedBy}`;
  return `${s.direction.padEnd(7)} ${by}; no rule allows it${s.audit ? ' (audit mode: let through and logged)' : ''}`;
}

export function formatExplanation(e: Explanation, what: string): string {
  const p = e.packet;
  const port = p.dport > 0 ? `${p.protocol}/${p.dport}` : `${p.protocol} (no port given: port-independent rules only)`;
  const lines = [`${what} ${port}, ${p.family === 'ipv4' ? 'IPv4' : 'IPv6'} ${p.src} -> ${p.dst}`];
  lines.push(`  model   ${verdictWord(e.model.allowed)}`, `    ${describeSide(e.model.egress)}`, `    ${describeSide(e.model.ingress)}`);
  if (!e.kernel) lines.push(`  kernel  UNKNOWN: ${e.kernelError}`);
  else {
    lines.push(`  kernel  ${verdictWord(e.kernel.allowed)}`);
    if (e.kernel.steps.length === 0) lines.push('    no nfkube base chain on the forward hook');
    for (const s of e.kernel.steps) {
      const via = s.path.length > 0 ? ` (chains entered: ${s.path.join(' -> ')})` : '';
      lines.push(`    ${s.base}: ${s.verdict}${via}: ${s.rule ? `${s.rule.chain}: ${formatRule(s.rule)}` : 'chain policy'}`);
    }
  }
  lines.push(e.agree ? '  model and kernel agree' : e.kernel ? '  MODEL AND KERNEL DISAGREE' : '  the kernel verdict is UNKNOWN: not comparable with the model');
  // Names come from cluster objects and from the kernel (foreign rules): never raw to a terminal.
  return lines.map(printable).join('\n') + '\n';
}
