/** What the router hands each view. */
export interface ViewContext {
  /** The view's own element; detached once the user navigates away, so late writes show nowhere. */
  root: HTMLElement;
  /** The route's path parts after the view's name (`#/jobs/abc` → `["abc"]`), decoded. */
  path: string[];
  /** The route's query (`#/jobs?state=dead`). */
  query: URLSearchParams;
  /** Reports an error from work the view started on its own (polling, a button). */
  fail(error: unknown): void;
  /** Takes away the message above the view (a view's error it has since got over). */
  clearNotice(): void;
  /** Shows a short message above the view. */
  notice(text: string, kind?: "info" | "error"): void;
  /** Goes to another route, with a message to show above it. */
  navigate(hash: string, notice?: string): void;
}

/** Renders into `ctx.root`; may return a function that stops what it keeps running. */
export type View = (ctx: ViewContext) => Promise<(() => void) | undefined>;

/**
 * A page size from the URL (`?limit=…`): a whole number from 1 to 1,000, as the API takes it;
 * `fallback` for none or one that is not a number. `2.5` reads as 2 (the API refuses a fraction).
 */
export function pageSize(value: string | null, fallback: number): number {
  return Math.min(1000, Math.max(1, Math.trunc(Number(value)) || fallback));
}
