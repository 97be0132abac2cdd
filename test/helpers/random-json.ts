/** Random JSON values for parser fuzzing: strings full of quotes, backslashes, brackets,
 * non-ASCII and the word `items`. */
export function randomValue(rand: () => number, depth: number): unknown {
  const pick = rand();
  if (depth <= 0 || pick < 0.3) {
    const scalars = [() => null, () => true, () => false, () => Math.floor(rand() * 1e6) - 5e5, () => rand() * 1e-3, () => randomString(rand)];
    return scalars[Math.floor(rand() * scalars.length)]();
  }
  if (pick < 0.6) return Array.from({ length: Math.floor(rand() * 4) }, () => randomValue(rand, depth - 1));
  const o: Record<string, unknown> = {};
  for (let k = Math.floor(rand() * 4); k > 0; k--) o[randomString(rand)] = randomValue(rand, depth - 1);
  return o;
}

export function randomString(rand: () => number): string {
  const alphabet = ['a', 'z', '"', '\\', '[', ']', '{', '}', ',', ':', ' ', '\n', 'é', '\u2028', '\u0000', 'items', '\\"'];
  let s = '';
  for (let k = Math.floor(rand() * 8); k > 0; k--) s += alphabet[Math.floor(rand() * alphabet.length)];
  return s;
}

