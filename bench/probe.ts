/** Preloaded into a measured process (`node -r dist/bench/probe.js ...`): at exit it writes the
 * process's own CPU time (getrusage) and peak RSS (VmHWM from /proc/self/status) as one JSON line
 * to the file named by NFKUBE_BENCH_PROBE, so a new-process row reports the process alone. */
import { appendFileSync, readFileSync } from 'node:fs';

const out = process.env.NFKUBE_BENCH_PROBE;
if (out) {
  process.on('exit', (code) => {
    const status = readFileSync('/proc/self/status', 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    const cpu = process.cpuUsage();
    appendFileSync(out, `${JSON.stringify({ code, userMs: cpu.user / 1000, systemMs: cpu.system / 1000, hwmKB: kb('VmHWM'), uptimeMs: process.uptime() * 1000 })}\n`);
  });
}
