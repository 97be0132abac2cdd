/** Option values typed from their table: a command reads its own values with no cast (this file
 * does not compile when parse() returns untyped values), and a reader of values no one table
 * types (the agent's, a table record) gets each option checked for its type at run time. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse, parseWithPositionals, usageText, type OptionTable } from '../../src/cli/options';
import { stringOption } from '../../src/options/values';

const table = {
  table: { type: 'string', description: 'a string option' },
  'log-drops': { type: 'boolean', description: 'a boolean option' },
} as const satisfies OptionTable;
const usage = usageText('nfkube test [options]', table);

test("parse: each value has its option's type, from the table", () => {
  const v = parse(['--table', 't1', '--log-drops'], table, usage);
  const name: string | undefined = v.table;
  const on: boolean | undefined = v['log-drops'];
  assert.equal(name, 't1');
  assert.equal(on, true);
  // @ts-expect-error a string option is not a boolean
  const wrong: boolean | undefined = v.table;
  assert.equal(typeof wrong, 'string');
  const { values, positionals } = parseWithPositionals(['SRC', '--table=t2'], table, usage, true, {});
  const positional: string | undefined = values.table;
  assert.deepEqual([positional, values['log-drops'], positionals], ['t2', undefined, ['SRC']]);
});

test('stringOption: the value of an untyped record, or an error naming the flag when its type is wrong', () => {
  const values = { table: 't1', 'log-drops': true };
  assert.equal(stringOption(values, 'table'), 't1');
  assert.equal(stringOption(values, 'absent'), undefined);
  assert.throws(() => stringOption(values, 'log-drops'), /^Error: --log-drops: expected a value, got true$/);
});
