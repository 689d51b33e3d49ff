/**
 * The example worker `npm run serve` runs beside the server: `errand serve --jobs` (and
 * `errand worker --jobs`) load every job definition a module exports.
 */
import { defineJob, NonRetryableError } from "../../src/index.js";

export const sendEmail = defineJob({
  type: "send-email",
  queue: "emails",
  handler: async (payload: { to?: string }) => {
    if (!payload?.to) throw new NonRetryableError("payload.to is required");
    return { sent: true, to: payload.to };
  },
});

export const resizeImage = defineJob({
  type: "resize-image",
  handler: async (payload: { file?: string; sizes?: number[] }, ctx) => {
    const sizes = payload?.sizes ?? [64, 256];
    for (const [i, size] of sizes.entries()) await ctx.checkpoint({ done: sizes.slice(0, i + 1), size });
    return { file: payload?.file ?? "image.png", variants: sizes.length };
  },
});
