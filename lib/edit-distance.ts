/**
 * The edit distance of two short strings (insertions, deletions, substitutions and swaps of two adjacent
 * characters, each one edit: the optimal string alignment distance), for "did you mean" suggestions.
 */
export const editDistance = (a: string, b: string): number => {
  const rows = Array.from({ length: a.length + 1 }, (_, index) => [
    index,
    ...new Array<number>(b.length).fill(0),
  ]);
  for (let column = 0; column <= b.length; column += 1) rows[0]![column] = column;
  for (let i = 1; i <= a.length; i += 1) {
    for (let j = 1; j <= b.length; j += 1) {
      const substitution = rows[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, substitution);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
};
