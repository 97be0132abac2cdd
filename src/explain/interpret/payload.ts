/** payload: a load of header bytes the flow defines. */
import { ExprEvaluator, Unsupported } from './context';
import { definedByFlow, fieldName } from './packet';

export const payload: ExprEvaluator<'payload'> = (e, cx) => {
  if (e.dreg === undefined) throw new Unsupported('payload store');
  const from = e.base === 'network' ? cx.headers.network : e.base === 'transport' ? cx.headers.transport : undefined;
  if (!from) throw new Unsupported(`payload base ${e.base}`);
  const family = cx.packet.family;
  if (!definedByFlow(family, e.base as 'network' | 'transport', e.offset, e.len)) {
    throw new Unsupported(`it matches ${fieldName(family, e.base, e.offset, e.len)}, which a flow of SRC, DST, port and protocol does not define`);
  }
  cx.regs.store(e.dreg, from.subarray(e.offset, e.offset + e.len));
  return true;
};
