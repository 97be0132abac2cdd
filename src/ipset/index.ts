/** ipset over netlink: the object model, codec, client, reconciler and save format. */
export * from './types';
export * from './errors';
export { IpsetClient, IpsetOp, IpsetTransport, MessageCounts, OpFailure } from './client';
export { ElementSyntaxError, parseElement, elementKey, formatIp } from './element';
export { syncSets, SyncMode, SyncOptions, SyncResult, SyncInputError, tempNamePattern } from './sync';
export { formatSave, parseSave, ParsedSet, RestoreSyntaxError, LineError } from './save-format';
