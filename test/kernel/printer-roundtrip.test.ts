/** The library printer as a user pipes it: a rule built with nftBuild, printed with
 * formatRuleBody, loaded with `nft -f` into a test namespace and read back is the rule that was
 * built (a seeded property test, so a failure replays); interface wildcards stay wildcards. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalExprs, listRules, nftBuild as b } from '../../src/netfilter';
import { formatRuleBody } from '../../src/nft/format';
import { CtStateName } from '../../src/net/protocols';
import { Expr } from '../../src/nft/types';
import { withSandbox } from '../helpers/netns';
import { mulberry32 } from '../helpers/prng';

const RULES = 120;
const SEED = 0x26_08;

type Rand = () => number;
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
const int = (r: Rand, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));

function ifname(r: Rand): string {
  const chars = [...'abcdefghijklmnopqrstuvwxyz0123456789-'];
  const name = Array.from({ length: int(r, 1, 14) }, () => pick(r, chars)).join('');
  return r() < 0.5 ? `${name}*` : name;
}

function address(r: Rand, v6: boolean): string {
  return v6 ? `2001:db8::${int(r, 1, 0xffff).toString(16)}` : `198.${int(r, 18, 19)}.${int(r, 0, 255)}.${int(r, 0, 255)}`;
}

/** One random rule: each kind of match at most once, in any order (nft merges repeated protocol
 * dependencies, a builder does not), then optional statements and a verdict. */
function randomRule(r: Rand): Expr[] {
  const matches: Expr[][] = [];
  const field = r() < 0.5 ? pick(r, ['ip saddr', 'ip daddr', 'ip6 saddr', 'ip6 daddr'] as const) : undefined;
  if (field) {
    const v6 = field.startsWith('ip6');
    matches.push(r() < 0.6 ? b.matchAddr(field, address(r, v6)) : b.matchAddrInSet(field, v6 ? 'addrs6' : 'addrs4', r() < 0.3));
  }
  // One transport protocol per rule: a port of tcp, udp or sctp, or IPv6 neighbor discovery
  // (which brings its own IPv6 dependency, so never beside an address).
  if (r() < 0.5) {
    const port = int(r, 1, 65000);
    matches.push(b.matchPort(pick(r, ['tcp', 'udp', 'sctp'] as const), pick(r, ['th sport', 'th dport'] as const), port, r() < 0.3 ? port + int(r, 1, 500) : undefined));
  } else if (!field && r() < 0.2) {
    matches.push(b.icmpv6NeighborDiscovery());
  }
  if (r() < 0.4) matches.push(b.iifname(ifname(r)));
  if (r() < 0.4) matches.push(b.oifname(ifname(r)));
  if (r() < 0.3) {
    const states: CtStateName[] = ['new', 'established', 'related', 'invalid', 'untracked'];
    matches.push(b.ctState(states.filter(() => r() < 0.5).concat(pick(r, states)).filter((s, i, all) => all.indexOf(s) === i)));
  }
  if (r() < 0.3) matches.push(b.matchMark(int(r, 0, 0xffffffff), r() < 0.5 ? int(r, 1, 0xfffffffe) : undefined, pick(r, ['eq', 'neq'] as const)));
  if (r() < 0.3) matches.push(b.matchCtMark(int(r, 0, 0xffffffff), r() < 0.5 ? int(r, 1, 0xfffffffe) : undefined, pick(r, ['eq', 'neq'] as const)));
  for (let i = matches.length - 1; i > 0; i--) {
    const j = int(r, 0, i);
    [matches[i], matches[j]] = [matches[j], matches[i]];
  }
  const exprs = matches.flat();
  const statements: Expr[] = [];
  if (r() < 0.4) statements.push(b.counter());
  if (r() < 0.2) statements.push(b.limit(int(r, 1, 1000), int(r, 1, 100)));
  if (r() < 0.2) statements.push(b.log(int(r, 0, 65535), `nfk-${int(r, 0, 999)} `));
  if (r() < 0.2) statements.push(...b.setMark(int(r, 0, 0xffffffff)));
  const verdict = pick(r, [b.accept(), b.drop(), b.jump('target'), b.goto('target'), b.rejectAdminProhibited(), undefined]);
  const rule = [...exprs, ...statements, ...(verdict ? [verdict] : [])];
  // An empty rule has no text to print.
  return rule.length ? rule : [b.accept()];
}

test(`${RULES} random rules: build -> formatRuleBody -> nft -f -> read back is the rule built`, async () => {
  const r = mulberry32(SEED);
  const rules = Array.from({ length: RULES }, () => randomRule(r));
  const printed = rules.map((exprs) => formatRuleBody(exprs));
  await withSandbox(async (sb) => {
    const script = [
      'table inet roundtrip {',
      '  set addrs4 { type ipv4_addr; }',
      '  set addrs6 { type ipv6_addr; }',
      '  chain target { }',
      '  chain rules {',
      ...printed.map((text) => `    ${text}`),
      '  }',
      '}',
      '',
    ].join('\n');
    sb.run('nft', ['-f', '-'], script);
    const back = await listRules(sb.socket, 'inet', 'roundtrip', 'rules');
    assert.equal(back.length, rules.length);
    back.forEach((rule, i) => {
      assert.deepEqual(canonicalExprs(rule.exprs), canonicalExprs(rules[i]), `seed ${SEED} rule ${i}: ${printed[i]}`);
      assert.equal(formatRuleBody(rule.exprs), printed[i], `rule ${i} prints the same after the round trip`);
    });
  });
});

test('an interface wildcard prints as one, and an exact name without one', () => {
  assert.equal(formatRuleBody([...b.iifname('veth*'), b.accept()]), 'iifname "veth*" accept');
  assert.equal(formatRuleBody([...b.oifname('veth'), b.drop()]), 'oifname "veth" drop');
});
