/** An IPAM agent as its own process (`nfkube agent --ipam --no-policy` in miniature, through
 * startIpam), for tests that kill it with SIGKILL or run it inside a mount namespace holding a
 * small tmpfs. argv: kubeconfig, node name, state directory, socket path. Prints one JSON line
 * {"port": <observe port>} once serving, then runs until killed. */
import { createLogger } from '../../src/log';
import { startIpam } from '../../src/ipam/start';

async function main(): Promise<void> {
  const [kubeconfig, nodeName, stateDir, socketPath] = process.argv.slice(2);
  const handle = await startIpam({ kubeconfig, nodeName, stateDir, socketPath, logger: createLogger('silent'), metricsAddr: '127.0.0.1:0', gcIntervalMs: 0 });
  process.stdout.write(JSON.stringify({ port: handle.observeAddress?.port }) + '\n');
}

main().catch((err) => {
  process.stderr.write(`crash-agent: ${(err as Error).stack}\n`);
  process.exit(2);
});
