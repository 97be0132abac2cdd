/** The health-check node ports of `externalTrafficPolicy: Local` load-balancer services, served as
 * kube-proxy serves them (pkg/proxy/healthcheck): any path answers JSON
 * `{"service":{"namespace":..,"name":..},"localEndpoints":N,"serviceProxyHealthy":true}`, 200
 * when the node has a ready local endpoint and 503 when not, so a cloud load balancer skips the
 * node. One listener per port, opened and closed as services come and go. */
import { createServer, Server } from 'node:http';

export interface HealthCheck {
  /** `namespace/name` */
  service: string;
  port: number;
  localEndpoints: number;
}

export class HealthCheckServer {
  private readonly servers = new Map<number, { server: Server; check: HealthCheck }>();

  /** `host`: the address to listen on (default all). */
  constructor(private readonly opts: { host?: string } = {}) {}

  /** Makes the listeners match `checks`; returns those that could not be served (the port in
   * use, say), with the error, to be tried again at the next sync. */
  async sync(checks: HealthCheck[]): Promise<{ check: HealthCheck; error: string }[]> {
    const failed: { check: HealthCheck; error: string }[] = [];
    const wanted = new Map(checks.map((c) => [c.port, c]));
    for (const [port, entry] of [...this.servers]) {
      if (wanted.has(port)) continue;
      this.servers.delete(port);
      await new Promise<void>((resolve) => entry.server.close(() => resolve()));
    }
    for (const [port, check] of wanted) {
      const have = this.servers.get(port);
      if (have) {
        have.check = check;
        continue;
      }
      const entry = { server: createServer((_req, res) => this.answer(entry.check, res)), check };
      this.servers.set(port, entry);
      await new Promise<void>((resolve) => {
        entry.server.once('error', (err: NodeJS.ErrnoException) => {
          failed.push({ check, error: err.code ?? err.message });
          this.servers.delete(port);
          resolve();
        });
        entry.server.listen(port, this.opts.host, () => resolve());
      });
    }
    return failed;
  }

  private answer(check: HealthCheck, res: import('node:http').ServerResponse): void {
    const [namespace, name] = check.service.split('/');
    const body = JSON.stringify({ service: { namespace, name }, localEndpoints: check.localEndpoints, serviceProxyHealthy: true });
    res.writeHead(check.localEndpoints > 0 ? 200 : 503, {
      'Content-Type': 'application/json',
      'X-Content-Type-Options': 'nosniff',
      // Weighted load balancers read the local endpoint count here (service_health.go).
      'X-Load-Balancing-Endpoint-Weight': String(check.localEndpoints),
    });
    res.end(body);
  }

  async close(): Promise<void> {
    await this.sync([]);
  }
}
