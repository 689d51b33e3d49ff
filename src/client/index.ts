/**
 * `errand/client`: errand over HTTP. {@link ErrandClient} has the {@link Queue}'s methods;
 * {@link RemoteWorker} has the {@link Worker}'s API and events, leasing from an errand server.
 * @packageDocumentation
 */
export {
  type ClientOptions,
  ErrandClient,
  type JobSummaryPage,
  MAX_RESPONSE_BYTES,
  type RemoteJobType,
  type RemoteLeaseOptions,
  type RemoteListOptions,
  type RemoteTypePage,
  type ReportItem,
  reviveJob,
} from "./client.js";
export { RemoteWorker, type RemoteWorkerOptions } from "./remote-worker.js";
