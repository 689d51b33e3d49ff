/**
 * Reading README.md's ```sh blocks for test/docs/readme-shell.test.ts: the blocks' lines, a small
 * shell tokenizer (quotes, `$VAR`, `;`/`&&`/`|`), a curl command line as the request it sends, and
 * an `errand …` synopsis line checked against the commander tree that buildProgram() makes.
 *
 * Terminology: a *line* is one shell line of a block (a `\`-continued line joined to the next,
 * numbered by its first line); a *command* is one part of a line between `;`, `&&` or `||`; a
 * *synopsis* is an `errand …` line, where `|` and `[…]` are grammar, not shell.
 */
import type { Command, Option } from "commander";

/** One shell line of a ```sh block: its code and its trailing `# comment`, apart. */
export interface ShellLine {
  /** README.md's line number (1-based) of the line's first physical line. */
  line: number;
  /** The line as written, continuations joined. */
  text: string;
  code: string;
  comment: string;
}

/** A word of a command, after quote removal and `$VAR` expansion. */
export interface Word {
  kind: "word";
  text: string;
  /** `text` less the `[` and `]` written outside quotes (a synopsis's optional parts). */
  bare: string;
  /** Whether any part of the word was quoted. */
  quoted: boolean;
}

/** A control operator between commands (or, in a synopsis, between alternatives). */
export interface Operator {
  kind: "op";
  text: ";" | "&&" | "||" | "|";
  /** How many `[` were open outside quotes where it stands. */
  depth: number;
}

export type Token = Word | Operator;

/** Every line of every ```sh block in `markdown`, blank and comment-only lines left out. */
export function shellLines(markdown: string): ShellLine[] {
  const out: ShellLine[] = [];
  const lines = markdown.split("\n");
  let inBlock = false;
  for (let i = 0; i < lines.length; i++) {
    const trimmed = lines[i]!.trim();
    if (!inBlock) {
      inBlock = trimmed === "```sh";
      continue;
    }
    if (trimmed.startsWith("```")) {
      inBlock = false;
      continue;
    }
    const start = i;
    let text = lines[i]!;
    while (text.endsWith("\\") && i + 1 < lines.length) text = text.slice(0, -1) + " " + lines[++i]!.trim();
    const { code, comment } = splitComment(text);
    if (code.trim() === "") continue;
    out.push({ line: start + 1, text: text.trim(), code: code.trim(), comment });
  }
  return out;
}

/** A line's code and its comment: a `#` outside quotes that starts a word begins the comment. */
export function splitComment(text: string): { code: string; comment: string } {
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === quote) quote = null;
      else if (c === "\\" && quote === '"') i++;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === "\\") i++;
    else if (c === "#" && (i === 0 || /\s/.test(text[i - 1]!)))
      return { code: text.slice(0, i), comment: text.slice(i + 1).trim() };
  }
  return { code: text, comment: "" };
}

/**
 * The tokens of `code` as a POSIX shell reads them, as far as README examples need: single and
 * double quotes, backslash escapes, `$NAME` and `${NAME}` expanded from `vars` (a name not in it
 * is kept as written, so a placeholder like `$ID` survives), and the operators `;`, `&&`, `||`
 * and `|`. One liberty: a `|` glued to a word on both sides (`get|cancel`, `cancel|run`) is part
 * of the word, as synopses write alternatives; the README writes its pipes ` | `. No globs,
 * redirections or substitutions.
 */
export function shellTokens(code: string, vars: ReadonlyMap<string, string>): Token[] {
  const tokens: Token[] = [];
  let word: Word | null = null;
  let depth = 0;
  const add = (s: string, quoted: boolean, bare = true) => {
    word ??= { kind: "word", text: "", bare: "", quoted: false };
    word.text += s;
    if (bare) word.bare += s;
    if (quoted) word.quoted = true;
  };
  const end = () => {
    if (word) tokens.push(word);
    word = null;
  };
  /** `$NAME` at `i` expanded; returns the index after it. */
  const dollar = (i: number, quoted: boolean): number => {
    const m = /^\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))/.exec(code.slice(i));
    if (!m) {
      add("$", quoted);
      return i + 1;
    }
    add(vars.get((m[1] ?? m[2])!) ?? m[0], quoted);
    return i + m[0].length;
  };
  let i = 0;
  while (i < code.length) {
    const c = code[i]!;
    const two = code.slice(i, i + 2);
    if (/\s/.test(c)) {
      end();
      i++;
    } else if (two === "&&" || two === "||") {
      end();
      tokens.push({ kind: "op", text: two, depth });
      i += 2;
    } else if (c === ";" || (c === "|" && !(word && /\S/.test(code[i + 1] ?? " ")))) {
      end();
      tokens.push({ kind: "op", text: c, depth });
      i++;
    } else if (c === "'") {
      const close = code.indexOf("'", i + 1);
      if (close < 0) throw new Error(`unclosed ' in: ${code}`);
      add(code.slice(i + 1, close), true);
      i = close + 1;
    } else if (c === '"') {
      add("", true);
      i++;
      while (i < code.length && code[i] !== '"') {
        if (code[i] === "\\" && /["\\$`]/.test(code[i + 1] ?? "")) {
          add(code[i + 1]!, true);
          i += 2;
        } else if (code[i] === "$") i = dollar(i, true);
        else add(code[i++]!, true);
      }
      if (i >= code.length) throw new Error(`unclosed " in: ${code}`);
      i++;
    } else if (c === "\\") {
      add(code[i + 1] ?? "", false);
      i += 2;
    } else if (c === "$") {
      i = dollar(i, false);
    } else {
      if (c === "[") depth++;
      if (c === "]") depth--;
      add(c, false, c !== "[" && c !== "]");
      i++;
    }
  }
  end();
  return tokens;
}

/** Tokens split at the operators `ops` (any depth), operators dropped, empty parts left out. */
export function splitAt(tokens: readonly Token[], ops: ReadonlySet<string>): Token[][] {
  const parts: Token[][] = [[]];
  for (const t of tokens) {
    if (t.kind === "op" && ops.has(t.text)) parts.push([]);
    else parts[parts.length - 1]!.push(t);
  }
  return parts.filter((p) => p.length > 0);
}

/** A command's leading `NAME=value` words, and the words after them. */
export function assignments(words: readonly Word[]): { vars: Array<[string, string]>; rest: Word[] } {
  const vars: Array<[string, string]> = [];
  let i = 0;
  for (; i < words.length; i++) {
    const m = /^([A-Za-z_]\w*)=([\s\S]*)$/.exec(words[i]!.text);
    if (!m) break;
    vars.push([m[1]!, m[2]!]);
  }
  return { vars, rest: words.slice(i) };
}

/** What one curl command line sends. */
export interface CurlRequest {
  method: string;
  /** The URL as written (after expansion). */
  url: string;
  headers: Array<[string, string]>;
  /** `-d`'s text, if any. */
  data?: string;
}

/**
 * A curl command's words (after `curl`) as its request: `-X`/`--request` (also `-XPOST`),
 * `-H`/`--header`, `-d`/`--data`/`--data-raw`, the quiet flags `-s`, `-S`, `-sS`, and one URL.
 * Anything else throws, so an example using another option is noticed here, not misread.
 */
export function parseCurl(words: readonly Word[]): CurlRequest {
  let method: string | null = null;
  const headers: Array<[string, string]> = [];
  let data: string | undefined;
  const urls: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!.text;
    const value = () => {
      const v = words[++i];
      if (!v) throw new Error(`curl ${w} needs a value`);
      return v.text;
    };
    if (w === "-X" || w === "--request") method = value();
    else if (/^-X[A-Z]+$/.test(w)) method = w.slice(2);
    else if (w === "-H" || w === "--header") {
      const h = value();
      const colon = h.indexOf(":");
      if (colon < 0) throw new Error(`curl header without a colon: ${h}`);
      headers.push([h.slice(0, colon).trim().toLowerCase(), h.slice(colon + 1).trim()]);
    } else if (w === "-d" || w === "--data" || w === "--data-raw") data = value();
    else if (w === "-s" || w === "-S" || w === "-sS" || w === "--silent") continue;
    else if (w.startsWith("-")) throw new Error(`curl option this test does not read: ${w}`);
    else urls.push(w);
  }
  if (urls.length !== 1) throw new Error(`curl needs one URL, got ${urls.length}: ${urls.join(" ")}`);
  // curl's own defaults: -d makes a POST, and says form data unless a content-type is given.
  if (data !== undefined && !headers.some(([k]) => k === "content-type"))
    headers.push(["content-type", "application/x-www-form-urlencoded"]);
  return { method: method ?? (data === undefined ? "GET" : "POST"), url: urls[0]!, headers, data };
}

/** A command's long and short flags in `text` (`--no-dashboard`, `--watch`), in order. */
export function flagsIn(text: string): string[] {
  return [...text.matchAll(/(?<![\w-])--[a-z][a-z0-9-]*/g)].map((m) => m[0]);
}

/** The full name of a command, `errand jobs list`. */
export function commandName(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}

function subcommand(cmd: Command, name: string): Command | undefined {
  return cmd.commands.find((c) => c.name() === name || c.aliases().includes(name));
}

function option(cmd: Command, flag: string): Option | undefined {
  return cmd.options.find((o) => o.long === flag || o.short === flag);
}

/** Commander gives every command these without listing them in `.options`. */
const IMPLICIT_FLAGS = new Set(["--help", "-h"]);

/**
 * What is wrong with an `errand …` synopsis line against `program` (empty: nothing). The words
 * after the program name (`errand`, or `npx tsx src/cli/index.ts`) are read as README synopses
 * are written:
 * - `a | b | c` outside brackets: alternatives, the first a full command path, each other a
 *   subcommand of the first's parent (`errand schedules list | set NAME … | rm NAME`);
 * - `get|cancel|retry` in one word where a subcommand stands: each is a subcommand;
 * - `[…]`: optional, read as if written; `|` inside brackets separates alternative options.
 * Each named subcommand must exist (by name or alias); each `--flag` must be an option of the
 * command it follows, taking as many values as the option does; the positional words must be as
 * many as the command's arguments allow; the command's required options must all be given.
 * `commentFlags`, the flags a line's comment mentions, must be options of every command it names.
 */
export function synopsisProblems(
  program: Command,
  words: readonly Token[],
  commentFlags: string[],
): string[] {
  const problems: string[] = [];
  const alternatives = splitAtTopLevelBar(words);
  const leaves: Command[] = [];
  let parents: Command[] = [program];
  alternatives.forEach((segment, n) => {
    const found = resolvePath(n === 0 ? [program] : parents, segment, problems);
    if (!found) return;
    if (n === 0) parents = [...new Set(found.commands.map((c) => c.parent ?? program))];
    for (const cmd of found.commands) {
      checkArguments(cmd, segment.slice(found.used), problems);
      leaves.push(cmd);
    }
  });
  for (const flag of commentFlags)
    for (const cmd of leaves)
      if (!IMPLICIT_FLAGS.has(flag) && !option(cmd, flag))
        problems.push(`the comment's ${flag} is not an option of "${commandName(cmd)}"`);
  return problems;
}

function splitAtTopLevelBar(tokens: readonly Token[]): Token[][] {
  const parts: Token[][] = [[]];
  for (const t of tokens) {
    if (t.kind === "op" && t.text === "|" && t.depth === 0) parts.push([]);
    else parts[parts.length - 1]!.push(t);
  }
  return parts;
}

/** The commands a segment's leading words name, starting at `from`, and how many words named them. */
function resolvePath(
  from: Command[],
  segment: readonly Token[],
  problems: string[],
): { commands: Command[]; used: number } | null {
  let commands = from;
  let used = 0;
  while (commands.some((c) => c.commands.length > 0)) {
    const t = segment[used];
    if (t?.kind !== "word" || t.text.startsWith("-")) {
      problems.push(`"${commands.map(commandName).join(", ")}" needs a subcommand here`);
      return null;
    }
    const next: Command[] = [];
    for (const cmd of commands)
      for (const name of t.text.split("|")) {
        const sub = subcommand(cmd, name);
        if (sub) next.push(sub);
        else problems.push(`"${commandName(cmd)}" has no subcommand "${name}"`);
      }
    if (next.length === 0) return null;
    commands = next;
    used++;
  }
  return { commands, used };
}

/** Options and positionals after a command's path, checked against the command. */
function checkArguments(cmd: Command, rest: readonly Token[], problems: string[]): void {
  const given = new Set<Option>();
  let positionals = 0;
  let unknown = false;
  const words = rest.filter((t): t is Word => t.kind === "word" && t.bare !== "");
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const text = w.quoted ? w.text : w.bare;
    if (w.quoted || !/^--?[a-z]/i.test(text)) {
      positionals++;
      continue;
    }
    const flag = text.split("=")[0]!;
    if (IMPLICIT_FLAGS.has(flag)) continue;
    const o = option(cmd, flag);
    if (!o) {
      problems.push(`"${commandName(cmd)}" has no option ${flag}`);
      unknown = true;
      continue;
    }
    given.add(o);
    if (text.includes("=")) continue;
    const isFlag = (j: number) => {
      const v = words[j];
      return v !== undefined && !v.quoted && /^--?[a-z]/i.test(v.bare);
    };
    if (o.variadic) while (i + 1 < words.length && !isFlag(i + 1)) i++;
    else if (o.required) i++;
    else if (o.optional && i + 1 < words.length && !isFlag(i + 1)) i++;
  }
  const args = cmd.registeredArguments;
  const min = args.filter((a) => a.required).length;
  const max = args.some((a) => a.variadic) ? Number.POSITIVE_INFINITY : args.length;
  // After an unknown option, its value (if it takes one) cannot be told from an argument.
  if (!unknown && (positionals < min || positionals > max))
    problems.push(
      `"${commandName(cmd)}" takes ${min === max ? min : `${min} to ${max}`} argument(s), the line gives ${positionals}`,
    );
  for (const o of cmd.options)
    if (o.mandatory && !given.has(o))
      problems.push(`"${commandName(cmd)}" needs ${o.long}, which the line leaves out`);
}
