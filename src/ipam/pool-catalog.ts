/** The IPPools this node may allocate from, read from the API with this Node's labels (for the
 * pools' node selectors), and which pool a request gets.
 *
 * Invariants: an invalid pool, or two pools that overlap, are never used (both are refused and
 * named); a request gets a pool only if the pool selects this node; a request naming a pool not
 * known yet re-reads the pools once before it is refused. */
import { CNI_ERR } from '../cni/protocol';
import { IpamContext, IpamError } from './context';
import { PLURALS } from './objects';
import { overlappingPools, parsePool, Pool, poolSelectsNode } from './pool';

export class PoolCatalog {
  private pools = new Map<string, Pool>();
  private problems: string[] = [];
  private nodeLabels: Record<string, string> = {};

  constructor(private readonly ctx: IpamContext) {}

  get(name: string): Pool | undefined {
    return this.pools.get(name);
  }

  all(): IterableIterator<Pool> {
    return this.pools.values();
  }

  names(): string[] {
    return [...this.pools.keys()];
  }

  async refresh(): Promise<void> {
    const objs = await this.ctx.api.list(PLURALS.pools);
    const pools = new Map<string, Pool>();
    const problems: string[] = [];
    for (const obj of objs) {
      try {
        const p = parsePool(obj);
        pools.set(p.name, p);
      } catch (err) {
        problems.push((err as Error).message);
      }
    }
    for (const [a, b] of overlappingPools([...pools.values()])) {
      problems.push(`IPPool ${a} and IPPool ${b} overlap; neither is used`);
      pools.delete(a);
      pools.delete(b);
    }
    if (problems.length) this.ctx.log.error({ problems }, 'invalid IPPools');
    this.pools = pools;
    this.problems = problems;
    try {
      this.nodeLabels = (await this.ctx.api.getNode(this.ctx.nodeName))?.labels ?? {};
    } catch (err) {
      this.ctx.log.warn({ err }, 'reading this Node for pool node selectors failed');
    }
  }

  /** The first pool (by name) that selects this node. */
  private defaultPool(): Pool | undefined {
    return [...this.pools.values()].sort((a, b) => (a.name < b.name ? -1 : 1)).find((p) => poolSelectsNode(p, this.nodeLabels));
  }

  /** The pool a request names (or the default one), refreshed once when unknown. */
  async poolFor(name: string | undefined): Promise<Pool> {
    let pool = name ? this.pools.get(name) : this.defaultPool();
    if (!pool) {
      await this.refresh();
      pool = name ? this.pools.get(name) : this.defaultPool();
    }
    if (!pool) {
      throw new IpamError(CNI_ERR.invalidConfig, name ? `ipam.pool: IPPool ${name} does not exist or is invalid` : `no IPPool selects node ${this.ctx.nodeName}`);
    }
    if (name && !poolSelectsNode(pool, this.nodeLabels)) throw new IpamError(CNI_ERR.invalidConfig, `ipam.pool: IPPool ${name} does not select node ${this.ctx.nodeName}`);
    return pool;
  }

  /** CNI STATUS: throws when the plugin cannot serve this pool (or, unnamed, any pool) now. */
  checkAvailable(name: string | undefined): void {
    if (this.problems.length) throw new IpamError(CNI_ERR.pluginNotAvailable, this.problems.join('; '));
    const wanted = name ? this.pools.get(name) : this.defaultPool();
    if (!wanted) throw new IpamError(CNI_ERR.pluginNotAvailable, name ? `IPPool ${name} does not exist` : `no IPPool selects node ${this.ctx.nodeName}`);
  }
}
