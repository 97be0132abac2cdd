/** The same intent as other tools load it, for side-by-side rows: kube-router's iptables/ipset
 * dataplane, and an nft file as a person writes it. */
import type { PolicyIR, PortTriple } from '../src/policy/engine/ir';

/** kube-router's dataplane for the same intent: one ipset per peer set and family, a chain per
 * policy and per pod, FORWARD dispatch per pod address; re-rendered whole on every event. */
export function kubeRouterStyle(ir: PolicyIR): { ipsets: string; iptables: string } {
  const sets: string[] = [];
  const setName = (id: string, fam: string) => `KR-${id}-${fam}`.slice(0, 31);
  for (const ps of ir.peerSets.values()) {
    for (const [fam, members] of [['4', ps.v4], ['6', ps.v6]] as const) {
      const name = setName(ps.id, fam);
      sets.push(`create ${name} hash:ip family ${fam === '4' ? 'inet' : 'inet6'} hashsize 1024 maxelem 65536 -exist`, `flush ${name}`);
      for (const m of members) sets.push(`add ${name} ${m}`);
    }
  }
  const lines = ['*filter', ':KUBE-ROUTER-FORWARD - [0:0]'];
  const rules: string[] = [];
  for (const p of ir.policies.values()) {
    for (const dir of ['ingress', 'egress'] as const) {
      const entries = p[dir];
      if (!entries) continue;
      const chain = `KUBE-NWPLCY-${p.id}-${dir === 'ingress' ? 'I' : 'E'}`.slice(0, 28);
      lines.push(`:${chain} - [0:0]`);
      for (const e of entries) {
        const peers = e.peers === 'any' ? [''] : e.peers.filter((r) => r.kind === 'pods').map((r) => `-m set --match-set ${setName(r.set, '4')} ${dir === 'ingress' ? 'src' : 'dst'} `);
        const ports = e.ports === 'any' ? [''] : e.ports.map((pm) => `-p ${pm.protocol.toLowerCase()} ${pm.port !== undefined ? `--dport ${pm.port}${pm.endPort ? `:${pm.endPort}` : ''} ` : ''}`);
        for (const peer of peers) for (const port of ports.length ? ports : ['']) rules.push(`-A ${chain} ${peer}${port}-j ACCEPT`);
      }
    }
  }
  for (const t of ir.targets.values()) {
    const chain = `KUBE-POD-FW-${t.id}`.slice(0, 28);
    lines.push(`:${chain} - [0:0]`);
    for (const dir of ['ingress', 'egress'] as const) {
      for (const pid of t[dir] ?? []) rules.push(`-A ${chain} -j ${`KUBE-NWPLCY-${pid}-${dir === 'ingress' ? 'I' : 'E'}`.slice(0, 28)}`);
    }
    rules.push(`-A ${chain} -j DROP`);
    for (const ip of t.v4) rules.push(`-A KUBE-ROUTER-FORWARD -d ${ip} -j ${chain}`, `-A KUBE-ROUTER-FORWARD -s ${ip} -j ${chain}`);
  }
  lines.push(':FORWARD ACCEPT [0:0]', '-A FORWARD -j KUBE-ROUTER-FORWARD', ...rules, 'COMMIT', '');
  return { ipsets: sets.join('\n') + '\n', iptables: lines.join('\n') };
}

/** The same intent as a person writes it in one nft file, the way the issue's reference file was
 * written: per-pod dispatch rules in a forward base chain, a chain per pod and per policy
 * direction, each peer's addresses inline as an anonymous set, ports as plain matches. */
export function straightforwardNft(ir: PolicyIR, opts: { onlyUsedPolicies?: boolean } = {}): string {
  // With onlyUsedPolicies, a policy direction gets its chain only when a local pod's chain jumps
  // to it: what a person writing the node's rules would write.
  const used = new Set<string>();
  for (const t of ir.targets.values()) for (const dir of ['ingress', 'egress'] as const) for (const id of t[dir] ?? []) used.add(`${id} ${dir}`);
  const out = ['table inet plain {'];
  const podChains: string[] = [];
  const chain = (name: string, body: string[], to = out) => to.push(`  chain ${name} {`, ...body.map((l) => `    ${l}`), '  }');
  const forward = ['type filter hook forward priority 0; policy accept;', 'ct state established,related accept'];
  const dirs = [
    ['ingress', 'in', 'daddr', 'saddr'],
    ['egress', 'out', 'saddr', 'daddr'],
  ] as const;
  for (const t of ir.targets.values()) {
    for (const [dir, tag, own] of dirs) {
      const policies = t[dir];
      if (!policies) continue;
      chain(`pod-${t.id}-${tag}`, [...policies.map((id) => `jump pol-${id}-${tag}`), 'drop'], podChains);
      for (const ip of t.v4) forward.push(`ip ${own} ${ip} jump pod-${t.id}-${tag}`);
      for (const ip of t.v6) forward.push(`ip6 ${own} ${ip} jump pod-${t.id}-${tag}`);
    }
  }
  for (const p of ir.policies.values()) {
    for (const [dir, tag, own, peer] of dirs) {
      const entries = p[dir];
      if (!entries || (opts.onlyUsedPolicies && !used.has(`${p.id} ${dir}`))) continue;
      const rules: string[] = [];
      for (const e of entries) {
        // Each match with its address family ('' for either): a rule joins matches of one family.
        const peers: [string, string][] = [];
        if (e.peers === 'any') peers.push(['', '']);
        else {
          for (const ref of e.peers) {
            if (ref.kind === 'pods') {
              const ps = ir.peerSets.get(ref.set)!;
              if (ps.v4.length) peers.push(['ip', `ip ${peer} { ${ps.v4.join(', ')} } `]);
              if (ps.v6.length) peers.push(['ip6', `ip6 ${peer} { ${ps.v6.join(', ')} } `]);
            } else {
              const b = ir.ipBlockSets.get(ref.set)!;
              const ip = b.family === 'v4' ? 'ip' : 'ip6';
              peers.push([ip, `${ip} ${peer} ${b.cidr} ${b.except.length ? `${ip} ${peer} != { ${b.except.join(', ')} } ` : ''}`]);
            }
          }
        }
        const ports: [string, string][] = [];
        if (e.ports === 'any') ports.push(['', '']);
        else {
          for (const pm of e.ports) {
            const proto = pm.protocol.toLowerCase();
            ports.push(['', pm.port === undefined ? `meta l4proto ${proto} ` : `${proto} dport ${pm.port}${pm.endPort ? `-${pm.endPort}` : ''} `]);
          }
          const named = e.namedPorts ? ir.namedPortSets.get(e.namedPorts)! : undefined;
          // Named ports: (destination address, protocol, port) of every pod that has the name.
          const dest = dir === 'ingress' ? own : peer;
          const triples = (xs: PortTriple[]) => xs.map((x) => `${x.ip} . ${x.protocol.toLowerCase()} . ${x.port}`).join(', ');
          if (named?.v4.length) ports.push(['ip', `ip ${dest} . meta l4proto . th dport { ${triples(named.v4)} } `]);
          if (named?.v6.length) ports.push(['ip6', `ip6 ${dest} . meta l4proto . th dport { ${triples(named.v6)} } `]);
        }
        for (const [fa, a] of peers) for (const [fb, b] of ports) if (!fa || !fb || fa === fb) rules.push(`${a}${b}accept`);
      }
      chain(`pol-${p.id}-${tag}`, rules);
    }
  }
  // Chains are written before the chains that jump to them.
  out.push(...podChains);
  chain('forward', forward);
  out.push('}', '');
  return out.join('\n');
}
