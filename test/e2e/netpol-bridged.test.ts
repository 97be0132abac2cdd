/** The core conformance cases with every pod on one Linux bridge in the node (br_netfilter hands
 * bridged IP traffic to the inet hooks): enforcement must not depend on how pods are wired. */
import { bridgeNetfilterUnavailable } from '../helpers/topology';
import { CASES } from './cases';
import { conformanceSuite } from './run-cases';

conformanceSuite('NetworkPolicy conformance (bridged pods)', 'bridged', CASES.filter((c) => c.core), bridgeNetfilterUnavailable());
