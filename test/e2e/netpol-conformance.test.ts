/** NetworkPolicy conformance with real packets on the routed topology: every case's manifests go
 * to `nfkube agent --once` in the node's namespace, then the whole matrix is probed. */
import { CASES } from './cases';
import { conformanceSuite } from './run-cases';

conformanceSuite('NetworkPolicy conformance (routed pods)', 'routed', CASES);
