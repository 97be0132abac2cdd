/** A table's record of the options that shape it (Table.options, NFTA_TABLE_USERDATA): flag
 * words the read commands parse back (src/cli/table-record.ts). */

/** `--name=value` words, `--name` for a boolean that is on; the order is fixed so one setting
 * always records the same text. */
export function flagText(entries: [string, string | boolean | undefined][]): string {
  return entries
    .filter(([, v]) => v !== undefined && v !== false)
    .map(([k, v]) => (v === true ? `--${k}` : `--${k}=${v}`))
    .join(' ');
}
