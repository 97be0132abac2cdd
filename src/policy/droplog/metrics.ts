/** Drop log metrics, registered on the agent's registry: logged packets per (namespace, pod,
 * direction, verdict), and what the log lost. Pod names come and go, so the label sets are
 * bounded: past `maxPods` distinct pods, further ones are counted under pod="_other" in their
 * namespace, and past `maxPods` namespaces under namespace="_other" too. */
import { Counter, Registry } from 'prom-client';

export const OTHER = '_other';

export class DropLogMetrics {
  private readonly logged: Counter<'namespace' | 'pod' | 'direction' | 'verdict'>;
  private readonly lost: Counter<'reason'>;
  private readonly pods = new Set<string>();
  private readonly namespaces = new Set<string>();

  constructor(registry: Registry, private readonly maxPods = 1000) {
    this.logged = new Counter({
      name: 'nfkube_drop_log_packets_total',
      help: 'Packets the deny rules logged over nfnetlink_log (at most the per-pod rate limit), by pod, direction and verdict (drop, reject, or audit for audit mode).',
      labelNames: ['namespace', 'pod', 'direction', 'verdict'],
      registers: [registry],
    });
    this.lost = new Counter({
      name: 'nfkube_drop_log_lost_total',
      help: 'Drop log messages lost, by reason: overrun (the socket queue was full), decode (malformed bytes), unknown (no combination chain of this agent, or no local pod at the address).',
      labelNames: ['reason'],
      registers: [registry],
    });
  }

  countLogged(namespace: string, pod: string, direction: string, verdict: string): void {
    const key = `${namespace}/${pod}`;
    if (!this.pods.has(key)) {
      if (this.pods.size < this.maxPods) this.pods.add(key);
      else pod = OTHER;
    }
    if (!this.namespaces.has(namespace)) {
      if (this.namespaces.size < this.maxPods) this.namespaces.add(namespace);
      else namespace = OTHER;
    }
    this.logged.inc({ namespace, pod, direction, verdict });
  }

  /** A pod that left frees its label set. */
  forgetPod(namespace: string, pod: string): void {
    if (!this.pods.delete(`${namespace}/${pod}`)) return;
    for (const direction of ['ingress', 'egress']) for (const verdict of ['drop', 'reject', 'audit']) this.logged.remove({ namespace, pod, direction, verdict });
  }

  countLost(reason: 'overrun' | 'decode' | 'unknown', n = 1): void {
    this.lost.inc({ reason }, n);
  }
}
