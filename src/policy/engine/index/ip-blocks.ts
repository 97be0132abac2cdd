/** ipBlock sets: fixed contents (compiled from the policy alone), counted by the policies
 * referencing them. */

import type { IpBlockSet } from '../ir';
import { ReferencedSets } from './referenced-sets';

export class IpBlockSetIndex extends ReferencedSets<{ set: IpBlockSet; refs: number }, IpBlockSet> {
  ref(set: IpBlockSet): void {
    if (!this.counted(set.id)) this.sets.set(set.id, { set, refs: 1 });
  }

  contents(id: string): IpBlockSet {
    return this.sets.get(id)!.set;
  }
}
