-- completeMany: Store.completeMany(). Records a batch of successful attempts in one statement.
--
-- Guarantees:
--   - Compare-and-set per item: only the current attempt of an active job completes; a stale or
--     unknown attempt changes nothing and is left out of the result.
--   - The job leaves errand_job and enters errand_job_done (state completed, its result,
--     finished_at) in the same statement, so a reader sees it in exactly one of them.
--   - A batch naming one attempt twice completes it once (the DELETE matches its row once); the
--     store gives the win to the first report.
--
-- Why: completions are batched by the worker, so one round trip and one plan serve any batch.
--
-- $1 ids, $2 attempts, $3 results (JSON text), $4 now.
-- Returns (id, attempt) of each attempt completed.

-- name: completeMany
WITH input AS (SELECT * FROM unnest($1::text[], $2::integer[], $3::text[]) AS i(id, attempt, result)),
moved AS (
  DELETE FROM {{errandJob}} j USING input i
  WHERE j.id = i.id AND j.state = 'active' AND j.attempt = i.attempt
  RETURNING j.*, i.result AS new_result
), ins AS (
  INSERT INTO {{errandJobDone}} ({{sharedColumns}}, state, result, finished_at)
  SELECT {{sharedColumns}}, 'completed', new_result, $4 FROM moved
  RETURNING id, attempt
)
SELECT id, attempt FROM ins
