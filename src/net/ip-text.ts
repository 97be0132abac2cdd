/** Address text shared by every codec and component: dotted quads and IPv6 groups parsed by
 * hand, and RFC 5952 formatting. */

/** The run of zero groups that `::` replaces: the longest of two or more (the first on a tie),
 * as RFC 5952 and glibc's inet_ntop choose it; `length` 0 when there is none. */
export function longestZeroRun(groups: number[]): { start: number; length: number } {
  let start = -1;
  let length = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > length) {
      start = i;
      length = j - i;
    }
    i = j;
  }
  return start < 0 ? { start: -1, length: 0 } : { start, length };
}

/** RFC 5952 text for an IPv6 address given as eight 16-bit groups: lower-case hex, the longest run
 * of two or more zero groups (the first on a tie) compressed to `::`. */
export function formatIPv6Groups(groups: number[]): string {
  const run = longestZeroRun(groups);
  const hex = (gs: number[]): string => gs.map((g) => g.toString(16)).join(':');
  if (run.length === 0) return hex(groups);
  return `${hex(groups.slice(0, run.start))}::${hex(groups.slice(run.start + run.length))}`;
}

/** The eight 16-bit groups of an IPv6 address, or undefined when the text is not one. Pod and
 * set-element addresses are parsed in bulk, so the groups are read character by character rather
 * than split and matched. A dotted IPv4 tail is accepted; a zone is not. */
export function parseIPv6Groups(text: string): number[] | undefined {
  let end = text.length;
  let tail: number[] | undefined;
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    const v4 = parseDottedQuad(text.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    tail = [Math.floor(v4 / 65536), v4 & 0xffff];
    // Keep the '::' when the address ends in it before the embedded IPv4 ("::1.2.3.4").
    end = text[lastColon - 1] === ':' ? lastColon + 1 : lastColon;
  }
  // The groups are text[0, end): at most one '::' there, splitting them into left and right.
  let gap = text.indexOf('::');
  if (gap + 2 > end) gap = -1;
  if (gap >= 0) {
    const second = text.indexOf('::', gap + 2);
    if (second >= 0 && second + 2 <= end) return undefined;
  }
  const left: number[] = [];
  const right: number[] = [];
  if (!readGroups(text, 0, gap >= 0 ? gap : end, left)) return undefined;
  if (gap >= 0 && !readGroups(text, gap + 2, end, right)) return undefined;
  if (tail) right.push(tail[0], tail[1]);
  const missing = 8 - left.length - right.length;
  if (gap >= 0 ? missing < 1 : missing !== 0) return undefined;
  for (let i = 0; i < missing; i++) left.push(0);
  for (const g of right) left.push(g);
  return left;
}

/** Appends the colon-separated groups of text[start, end) (1-4 hex digits each) to `out`;
 * false when one is malformed. An empty range has no groups. */
function readGroups(text: string, start: number, end: number, out: number[]): boolean {
  if (start === end) return true;
  let value = 0;
  let digits = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x3a) {
      if (digits === 0) return false;
      out.push(value);
      value = 0;
      digits = 0;
      continue;
    }
    const d = hexDigit(c);
    if (d < 0 || ++digits > 4) return false;
    value = value * 16 + d;
  }
  if (digits === 0) return false;
  out.push(value);
  return true;
}

function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

/** A dotted quad as a number; leading zeros are refused (inet_aton, and with it the ipset and
 * nft tools, reads "010" as octal 8). Hand-parsed: set members are read in bulk. */
export function parseDottedQuad(text: string): number | undefined {
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (digits > 0 && octet === 0) return undefined;
      octet = octet * 10 + c - 48;
      if (++digits > 3 || octet > 255) return undefined;
    } else if (c === 46 && digits > 0 && dots < 3) {
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
      dots++;
    } else {
      return undefined;
    }
  }
  if (dots !== 3 || digits === 0) return undefined;
  return value * 256 + octet;
}

/** A 32-bit number as a dotted quad. */
export function formatDottedQuad(n: number): string {
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/** Whether an address (or a key starting with one, as a triple's `ip protocol port`) is IPv6:
 * only an IPv6 address has a colon. */
export const isV6 = (address: string): boolean => address.includes(':');
