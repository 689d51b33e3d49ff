-- wake: Store.wake(). Wakes the claimers of every process sharing this schema.
--
-- Guarantees: one notification on the schema's wake channel, sent at once (outside any
-- transaction). Best effort: a process that misses it still polls.
--
-- Why: the payload is the sending store's tag, so its own listener, already woken in process,
-- ignores the echo. Statements that make jobs ready send the same notification themselves, as
-- part of the statement, so theirs go out exactly when the jobs become visible.
--
-- $1 notify tag.

-- name: notify
SELECT pg_notify({{channel}}, $1)
