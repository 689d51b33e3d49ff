/**
 * The Redis store's Lua scripts, by name: each one's SHA-1 for EVALSHA, and its text, put
 * together from the generated pieces (scripts/gen.ts) only when Redis lacks the script.
 * @module
 */
import { pieces, scripts } from "../generated/redis-scripts.js";

export type ScriptName = keyof typeof scripts;

export const scriptNames = Object.keys(scripts) as ScriptName[];

/** The SHA-1 of {@link scriptText}`(name)`, as EVALSHA and SCRIPT EXISTS take it. */
export function scriptSha(name: ScriptName): string {
  return scripts[name].sha;
}

/** A script's text, put together on each call: only a load or an EVAL after NOSCRIPT needs it. */
export function scriptText(name: ScriptName): string {
  let text = "";
  for (const i of scripts[name].parts) text += pieces[i];
  return text;
}
