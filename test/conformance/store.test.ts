/**
 * The conformance suite: every semantic of DESIGN.md, run against every selected store
 * (ERRAND_STORES=sqlite,postgres,redis,redis-cluster; default every store that exists). One file per
 * semantic, each exporting an `exercise…(backend)` that registers its tests.
 */
import { describe } from "vitest";
import { selectedBackends } from "./backend.js";
import { exerciseBadInput } from "./bad-input.js";
import { exerciseBusyKeys } from "./busy-keys.js";
import { exerciseCancel } from "./cancel.js";
import { exerciseClaim } from "./claim.js";
import { exerciseClosed } from "./closed.js";
import { exerciseDebounce } from "./debounce.js";
import { exerciseDelivery } from "./delivery.js";
import { exerciseDependencies } from "./dependencies.js";
import { exerciseDependencyFailure } from "./dependency-failure.js";
import { exerciseDependencyRetention } from "./dependency-retention.js";
import { exerciseEnqueueIds } from "./enqueue-ids.js";
import { exerciseErrorHistory } from "./error-history.js";
import { exerciseEvents } from "./events.js";
import { exerciseExpiry } from "./expiry.js";
import { exerciseFailMany } from "./fail-many.js";
import { exerciseFair } from "./fair.js";
import { exerciseFencing } from "./fencing.js";
import { exerciseFlows } from "./flows.js";
import { exerciseHeldBack } from "./held-back.js";
import { exerciseIdempotency } from "./idempotency.js";
import { exerciseJobTypes } from "./job-types.js";
import { exerciseKeyLimits } from "./key-limits.js";
import { exerciseKeys } from "./keys.js";
import { exerciseLeases } from "./leases.js";
import { exerciseLimits } from "./limits.js";
import { exerciseListPages } from "./list-pages.js";
import { exerciseNames } from "./names.js";
import { exerciseOrdered } from "./ordered.js";
import { exerciseOwners } from "./owners.js";
import { exercisePause } from "./pause.js";
import { exercisePrefetch } from "./prefetch.js";
import { exerciseQueues } from "./queues.js";
import { exerciseRateLimits } from "./rate-limits.js";
import { exerciseReplay } from "./replay.js";
import { exerciseResults } from "./results.js";
import { exerciseRetention } from "./retention.js";
import { exerciseRetries } from "./retries.js";
import { exerciseSchedules } from "./schedules.js";
import { exerciseShutdown } from "./shutdown.js";
import { exerciseSnooze } from "./snooze.js";
import { exerciseTimeouts } from "./timeouts.js";
import { exerciseWakeups } from "./wakeups.js";

for (const backend of selectedBackends({ conformance: true })) {
  describe(backend.name, () => {
    exerciseClaim(backend);
    exerciseClosed(backend);
    exerciseWakeups(backend);
    exerciseFencing(backend);
    exerciseFailMany(backend);
    exerciseLeases(backend);
    exerciseRetries(backend);
    exerciseErrorHistory(backend);
    exerciseIdempotency(backend);
    exerciseEnqueueIds(backend);
    exerciseQueues(backend);
    exerciseLimits(backend);
    exerciseDelivery(backend);
    exerciseExpiry(backend);
    exerciseCancel(backend);
    exerciseSchedules(backend);
    exerciseRetention(backend);
    exerciseResults(backend);
    exerciseEvents(backend);
    exerciseShutdown(backend);
    exercisePrefetch(backend);
    exerciseTimeouts(backend);
    exerciseBadInput(backend);
    exerciseJobTypes(backend);
    exerciseOwners(backend);
    exercisePause(backend);
    exerciseNames(backend);
    exerciseReplay(backend);
    exerciseDependencies(backend);
    exerciseDependencyFailure(backend);
    exerciseFlows(backend);
    exerciseDependencyRetention(backend);
    exerciseKeys(backend);
    exerciseListPages(backend);
    exerciseSnooze(backend);
    exerciseDebounce(backend);
    exerciseKeyLimits(backend);
    exerciseOrdered(backend);
    exerciseBusyKeys(backend);
    exerciseFair(backend);
    exerciseRateLimits(backend);
    exerciseHeldBack(backend);
  });
}
