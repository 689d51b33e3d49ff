-- fair: turns of fair types (KeyRules.fair, EnqueueManyParams.fairTypes; migrations/0007_fair.sql),
-- used by enqueueMany and claim (fair.ts).
--
-- Guarantees:
--   - A new job of a fair type gets turn max(its key's next, the type's turn now) and its key's
--     next becomes one more, in the enqueue's write transaction (the one writer makes it exact).
--   - A claim meeting a ready job of a fair type with a turn takes instead claimFair's row: the
--     type's ready job in the queue with the highest priority, then the lowest turn (then run_at,
--     id), passing over what the claim's other filters pass over; then the type's turn moves up.
-- Why: claimFair walks errand_job_fair (queue, type, priority DESC, fair_turn, run_at, id), partial
-- on jobs with a turn (the jobs waiting for theirs: claim.sql's claimActivateTurnMany takes the
-- turn off a job taken by it), so a claim reads only the turns it hands out, whatever the number
-- of keys or jobs; rows it must pass over (blocked, future, expired, held back) are walked over.
--
-- fairTypeTurn: 1 type. fairKeyNext: 1 type, 2 key ('' for none). fairKeySet: 1 type, 2 key,
--   3 next. fairJobTurn: 1 turn, 2 id.
-- fairAdvance: 1 type, 2 turn (kept when lower than the type's).
-- claimFair (named): $queue, $type, $now, $skip, $xkeys as claimArm's. Returns the pending
--   fields, then fair_turn, of the type's next 16 jobs by turn, which the claim hands out to its
--   slots in order (fair.ts): what one statement per slot would return, since within the claim's
--   write transaction nothing but the claim changes them, a job it takes leaves by its turn and
--   one it passes over stays passed over. Sixteen: a statement per slot cost ~6 µs, a row read
--   ahead ~2.7, so a claim of one over-reads ~40 µs and a claim of 50 saves ~100. The LIMIT is
--   written in, not bound: SQLite reads a LIMIT that is a bare bound parameter when it prepares
--   the statement, and prepares it again whenever that parameter is bound (~32 µs a call more,
--   even on an empty table; claim-walk.ts's `$limit + 0`, an expression, avoids it too).

-- name: fairTypeTurn
SELECT turn FROM errand_fair_type WHERE type = ?;

-- name: fairKeyNext
SELECT next FROM errand_fair_key WHERE type = ? AND key = ?;

-- name: fairKeySet
INSERT INTO errand_fair_key (type, key, next) VALUES (?, ?, ?)
ON CONFLICT (type, key) DO UPDATE SET next = excluded.next;

-- name: fairJobTurn
UPDATE errand_job SET fair_turn = ? WHERE id = ?;

-- name: fairAdvance
INSERT INTO errand_fair_type (type, turn) VALUES (?, ?)
ON CONFLICT (type) DO UPDATE SET turn = max(turn, excluded.turn);

-- name: claimFair
SELECT {{pendingFields}}, fair_turn
FROM errand_job INDEXED BY errand_job_fair
WHERE queue = $queue AND type = $type AND state = 'pending' AND fair_turn IS NOT NULL
  AND run_at <= $now
  AND (expires_at IS NULL OR expires_at > $now)
  AND ($skip IS NULL OR id NOT IN (SELECT value FROM json_each($skip)))
  AND ($xkeys IS NULL OR key IS NULL
    OR (type, key) NOT IN (SELECT value ->> 0, value ->> 1 FROM json_each($xkeys)))
ORDER BY priority DESC, fair_turn, run_at, id
LIMIT 16;

