/** Every feature of the node, in the order their options appear in `nfkube agent --help`, their
 * kinds are read and their tables are committed. A new feature is its own folder and one line here. */
import { ipamFeature } from '../ipam/feature';
import type { Feature } from '../pipeline/feature';
import { dropLogFeature } from '../policy/droplog/feature';
import { policyFeature } from '../policy/feature';
import { proxyFeature } from '../proxy/feature';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const FEATURES: readonly Feature<any>[] = [policyFeature, dropLogFeature, proxyFeature, ipamFeature];
