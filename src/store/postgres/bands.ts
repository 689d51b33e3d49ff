/**
 * The claim walks by priority band. A walk of one type reads errand_job_claim, (queue, type,
 * priority DESC, run_at, id), in claim order with `run_at <= now` as a condition on each entry:
 * over a range of priorities the index cannot stop at the first job not yet due, so a claim that
 * did not fill its limit read every job scheduled ahead (beside 200,000 scheduled an hour ahead,
 * ~10 ms of the server a claim, and ~24 ms for the locking walk alone on a cold cache). Within one
 * priority the index is in run_at order and the search stops there.
 *
 * So each walk becomes three: the type's highest priority, its next, and the rest as one range
 * (as the SQLite store's claim-walk.ts does), appended in that order under the walk's own LIMIT.
 * The bands are disjoint and in claim order, and an Append runs its arms in turn and stops when
 * the LIMIT is met: the walk yields the rows it did, and a locking walk locks no row beyond them.
 * A locking arm is a subquery of its own, as PostgreSQL takes `FOR UPDATE` in a subquery of a
 * UNION's arm but not in the arm. Jobs not yet due of a third priority and below are read as
 * before.
 *
 * What it costs: the probe for the type's highest priority starts where the walk does, at the head
 * of the type's range, where a burst of claims leaves the entries of the jobs it took until vacuum
 * clears them, so it steps over them once more. A 20,000-job drain at concurrency 50, claims of
 * 50: ~1.5–2 µs of the server a job (2–4% of the rate); with `prefetch: 450` nothing measurable.
 *
 * The bands are made from the statements' own text, once per text, and a walk that does not read
 * as expected is left as it is: the fair claims' walks of turned jobs, in turn order (a job's turn
 * comes before its run_at in that order, so bands by priority would not bound them either).
 * @module
 */
import { perStore } from "./per-store.js";

/** The end of a walk: its claim order, its LIMIT and, for a locking walk, its lock. */
const WALK_END =
  /\n([ ]*)ORDER BY j\.priority DESC, j\.run_at, j\.id\n[ ]*LIMIT (\$3|\$9|s\.n|least\(\$3, \(SELECT greatest\(room, 0\) FROM cap\)\))\n(?:[ ]*(FOR UPDATE OF j SKIP LOCKED)\n)?/g;

/**
 * The walk's type, on a line of its own: each form's (the merged walks', the one-type form's,
 * fairClaimKeyed's, rateHeld's), with what else that line asks of the walk's rows (a fair claim's
 * rest step leaves the fair types' turned jobs out there), but not a band's (a walk is banded
 * once). A walk that stops matching is left unbanded: test/unit/bands.test.ts counts each form's.
 */
const WALKED =
  /\n([ ]*)AND j\.type = (t\.type|s\.type|\(\$8::text\[\]\)\[1\]|\$8::text)((?: AND (?![^\n]*j\.priority [=<])[^\n]*)?)\n/g;

/**
 * The head of a walk of the hot table, on its first line or its second: its table and its queue
 * (a claim's `$1`, or rateHeld's queue of the row it walks for).
 */
const HEAD =
  /SELECT [^\n]*(?:\n[ ]*)?FROM (\S+) j\n[ ]*WHERE j\.queue = (\$1|q\.name) AND j\.state = 'pending' AND j\.parked IS NULL AND j\.run_at <= \$[28]\n/g;

/** The highest priority of the type's jobs in the claim index, due or not (NULL: none). */
const top = (table: string, queue: string, type: string, below: string | null): string =>
  `(SELECT j.priority FROM ${table} j WHERE j.queue = ${queue} AND j.state = 'pending' AND j.parked IS NULL ` +
  `AND j.type = ${type}${below === null ? "" : ` AND j.priority < ${below}`} ORDER BY j.priority DESC LIMIT 1)`;

/**
 * `walk` (one walk's text, from its SELECT to the line before its ORDER BY) as its three bands;
 * `walked` is its line naming the type, which each band extends.
 */
function bandsOf(
  walk: string,
  walked: RegExpMatchArray,
  head: RegExpMatchArray,
  end: RegExpMatchArray,
): string {
  const [line, ws, type, also] = walked as unknown as [string, string, string, string];
  const [, table, queue] = head as unknown as [string, string, string];
  const [, pad, limit, lock] = end as unknown as [string, string, string, string | undefined];
  const a = top(table, queue, type, null);
  const b = top(table, queue, type, a);
  const arm = (band: string, order: string, name: string) =>
    `SELECT * FROM (\n${walk.replace(line, `\n${ws}AND j.type = ${type}${also} AND j.priority ${band}\n`)}` +
    `${pad}ORDER BY ${order}\n${pad}LIMIT ${limit}${lock === undefined ? "" : `\n${pad}${lock}`}\n${pad}) AS ${name}`;
  return (
    [
      arm(`= ${a}`, "j.run_at, j.id", "band_a"),
      arm(`= ${b}`, "j.run_at, j.id", "band_b"),
      arm(`< ${b}`, "j.priority DESC, j.run_at, j.id", "band_c"),
    ].join(`\n${pad}UNION ALL\n${pad}`) + `\n${pad}LIMIT ${limit}\n`
  );
}

/**
 * `text` with every walk of the hot table in claim order given its priority bands; walks of
 * another shape are left as they are.
 */
export function banded(text: string): string {
  let out = "";
  let from = 0;
  for (const end of text.matchAll(WALK_END)) {
    const stop = end.index + end[0].length;
    // The walk's head: the last one before its end, past the end of the walk before it.
    let head: RegExpExecArray | null = null;
    HEAD.lastIndex = from;
    for (let m = HEAD.exec(text); m !== null && m.index < end.index; m = HEAD.exec(text)) head = m;
    if (head === null) continue;
    const body = text.slice(head.index, end.index + 1);
    const types = [...body.matchAll(WALKED)];
    if (types.length !== 1) continue;
    out += text.slice(from, head.index) + bandsOf(body, types[0]!, head, end);
    from = stop;
  }
  return out + text.slice(from);
}

/** {@link banded}, once per statement text of a store. */
export const bandedTexts = perStore(() => {
  const made = new Map<string, string>();
  return (text: string): string => {
    let b = made.get(text);
    if (b === undefined) {
      b = banded(text);
      made.set(text, b);
    }
    return b;
  };
});
