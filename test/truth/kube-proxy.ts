/** A kube-proxy-like neighbourhood for the foreign-safety tests: iptables-nft nat and filter
 * tables as kube-proxy writes them (service, endpoint and masquerade chains, DNAT, `-m mark`,
 * `-m set`), the same for IPv6, iptables-legacy rules, another firewall's nft table and ipsets. */

/** Created before the iptables rules (the filter table matches KUBE-NODE-IPS). */
export const IPSETS = `create KUBE-NODE-IPS hash:ip family inet hashsize 1024 maxelem 65536
add KUBE-NODE-IPS 198.18.0.1
add KUBE-NODE-IPS 198.18.0.254
create KUBE-LOOP-BACK hash:ip,port,ip family inet hashsize 1024 maxelem 65536
add KUBE-LOOP-BACK 198.18.200.1,tcp:6443,198.18.200.1
create other-blocklist hash:net family inet6 hashsize 1024 maxelem 65536 counters
add other-blocklist 2001:db8:bad::/48
`;

export const IPTABLES = `*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-NPX46M4PTMTKRN6Y - [0:0]
:KUBE-SEP-ABCDEFGHIJKLMNOP - [0:0]
:KUBE-SEP-QRSTUVWXYZ012345 - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
-A KUBE-SERVICES -d 198.19.0.1/32 -p tcp -m comment --comment "default/kubernetes:https cluster IP" -m tcp --dport 443 -j KUBE-SVC-NPX46M4PTMTKRN6Y
-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
-A KUBE-SVC-NPX46M4PTMTKRN6Y ! -s 198.18.0.0/16 -d 198.19.0.1/32 -p tcp -m comment --comment "default/kubernetes:https cluster IP" -m tcp --dport 443 -j KUBE-MARK-MASQ
-A KUBE-SVC-NPX46M4PTMTKRN6Y -m comment --comment "default/kubernetes:https -> 198.18.200.1:6443" -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-ABCDEFGHIJKLMNOP
-A KUBE-SVC-NPX46M4PTMTKRN6Y -m comment --comment "default/kubernetes:https -> 198.18.200.2:6443" -j KUBE-SEP-QRSTUVWXYZ012345
-A KUBE-SEP-ABCDEFGHIJKLMNOP -s 198.18.200.1/32 -m comment --comment "default/kubernetes:https" -j KUBE-MARK-MASQ
-A KUBE-SEP-ABCDEFGHIJKLMNOP -p tcp -m comment --comment "default/kubernetes:https" -m tcp -j DNAT --to-destination 198.18.200.1:6443
-A KUBE-SEP-QRSTUVWXYZ012345 -s 198.18.200.2/32 -m comment --comment "default/kubernetes:https" -j KUBE-MARK-MASQ
-A KUBE-SEP-QRSTUVWXYZ012345 -p tcp -m comment --comment "default/kubernetes:https" -m tcp -j DNAT --to-destination 198.18.200.2:6443
COMMIT
*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-FIREWALL - [0:0]
:KUBE-FORWARD - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-EXTERNAL-SERVICES - [0:0]
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES
-A INPUT -j KUBE-FIREWALL
-A INPUT -m set --match-set KUBE-NODE-IPS src -m comment --comment "node addresses" -j ACCEPT
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -j KUBE-FIREWALL
-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A KUBE-SERVICES -d 198.19.0.99/32 -p tcp -m comment --comment "default/no-endpoints has no endpoints" -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable
COMMIT
`;

export const IP6TABLES = `*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-6QWERTYUIOPASDFG - [0:0]
:KUBE-SEP-ZXCVBNMLKJHGFDSA - [0:0]
:KUBE-MARK-MASQ - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-SERVICES -d 2001:db8:ffff::1/128 -p tcp -m comment --comment "default/web:http cluster IP" -m tcp --dport 80 -j KUBE-SVC-6QWERTYUIOPASDFG
-A KUBE-SVC-6QWERTYUIOPASDFG -m comment --comment "default/web:http -> [2001:db8::2]:80" -j KUBE-SEP-ZXCVBNMLKJHGFDSA
-A KUBE-SEP-ZXCVBNMLKJHGFDSA -s 2001:db8::2/128 -m comment --comment "default/web:http" -j KUBE-MARK-MASQ
-A KUBE-SEP-ZXCVBNMLKJHGFDSA -p tcp -m comment --comment "default/web:http" -m tcp -j DNAT --to-destination [2001:db8::2]:80
COMMIT
*filter
:INPUT ACCEPT [0:0]
:FORWARD DROP [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-FORWARD - [0:0]
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
COMMIT
`;

/** Another host firewall, in its own nft table: sets, a map, a named counter, a drop-policy base
 * chain on the forward hook (the coexistence check logs it) and rules that use all of them. */
export const OTHER_NFT = `table inet hostfw {
  counter dropped { }
  set admins { type ipv4_addr; flags interval; elements = { 198.18.100.0/24, 198.18.101.7 } }
  map ports { type inet_service : verdict; elements = { 22 : accept, 23 : drop } }
  chain forward_filter {
    type filter hook forward priority 5; policy drop;
    ct state established,related accept
    ip saddr @admins accept
    tcp dport vmap @ports
    meta mark 0x4000 accept
    counter name "dropped"
  }
  chain inp {
    type filter hook input priority -5; policy accept;
    iifname "lo" accept
    tcp dport 22 ip saddr != @admins drop
  }
}
`;

/** iptables-legacy rules (x_tables, invisible to nf_tables). */
export const IPTABLES_LEGACY = `*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:LEGACY-FW - [0:0]
-A INPUT -j LEGACY-FW
-A LEGACY-FW -s 198.18.9.9/32 -j DROP
COMMIT
`;
