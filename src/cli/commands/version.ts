/** `nfkube version` (and `nfkube --version`): the version and commit recorded at build time. */
import { versionLine } from '../../build-info';
import { Command } from '../command';
import { parse, usageText } from '../options';

const options = {};
const usage = usageText('nfkube version | nfkube --version', options, 'Prints the version, the git commit it was built from, and the Node.js version.');

const command: Command = {
  summary: 'print the version and the commit it was built from',
  usage,
  options,
  async run(args) {
    parse(args, options, usage);
    process.stdout.write(versionLine());
    return 0;
  },
};

export default command;
