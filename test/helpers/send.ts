/** Sends an exact number of packets from inside a pod's namespace: one TCP SYN (a connect given
 * up before the first retransmission) or `count` UDP datagrams, for tests that count what the
 * kernel logged. Runs a short node script under nsenter; resolves with its duration in ms. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

const SCRIPT = `
const [proto, host, port, family, count] = process.argv.slice(1);
const t0 = process.hrtime.bigint();
const done = () => { process.stdout.write(String(Number(process.hrtime.bigint() - t0) / 1e6)); process.exit(0); };
if (proto === 'tcp') {
  const s = require('net').connect({ host, port: +port, family: +family });
  s.on('error', () => undefined);
  setTimeout(() => { s.destroy(); done(); }, 500);
} else {
  const d = require('dgram').createSocket(family === '4' ? 'udp4' : 'udp6');
  d.on('error', () => undefined);
  d.connect(+port, host, () => {
    let left = +count, sent = 0;
    const payload = Buffer.from('probe');
    for (let i = 0; i < left; i++) d.send(payload, () => { if (++sent === left) { d.close(); done(); } });
  });
}
`;

export async function sendPackets(netnsPath: string, protocol: 'tcp' | 'udp', host: string, port: number, family: 4 | 6, count = 1): Promise<number> {
  const { stdout } = await execFileAsync('nsenter', [`--net=${netnsPath}`, process.execPath, '-e', SCRIPT, protocol, host, String(port), String(family), String(count)], { timeout: 30_000 });
  return Number(stdout);
}
