/** `nfkube agent`: enforce NetworkPolicy for this node's pods until stopped (or once); with
 * --proxy serve Services, with --ipam hand out addresses. The node composition (src/node/) does
 * the work; this is its flags. */
import { FEATURES } from '../../node/features';
import { NODE_OPTIONS, runNode } from '../../node/run';
import { Command } from '../command';
import { COMMON_OPTIONS, parse, usageText, type OptionTable } from '../options';

// Built from whichever features there are: its values are typed only as strings or booleans, and
// the node and the features read them with stringOption (options/values.ts).
const options: OptionTable = {
  ...COMMON_OPTIONS,
  ...NODE_OPTIONS,
  ...Object.assign({}, ...FEATURES.map((f) => f.options)),
};
const usage = usageText('nfkube agent [--kubeconfig PATH | --manifests DIR] [options]', options, "Enforces NetworkPolicy for this node's pods until SIGTERM/SIGINT (the rules stay in place).");

const command: Command = {
  summary: 'enforce NetworkPolicy for the pods on this node, with --proxy serve Services, with --ipam hand out addresses (--once: sync and exit)',
  usage,
  options,
  run: (args, ctx) => runNode(parse(args, options, usage), ctx),
};

export default command;
