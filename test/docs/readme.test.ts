/**
 * The README's TypeScript examples, compiled against src/ so they cannot drift from the API.
 *
 * Every ```ts block of README.md (indented ones in list items too) becomes a virtual module: its
 * `import` lines hoisted to the top, the rest wrapped in an `async function` (so top-level `await`
 * works and blocks may each declare `queue`), after a shared prelude that declares what the
 * fragments take as given: the Quick start's imports, the definitions made in earlier blocks
 * (`sendEmail`, `queue`, `worker`, …) and the reader's own code (`mailer`, `pool`, …). `errand` and
 * its subpaths resolve to src/ through `paths` made from package.json's "exports". All blocks are
 * one `ts.Program` with tsconfig.json's options; each `it` reports its block's diagnostics by
 * README line.
 *
 * Every block compiles: a fragment that is not TypeScript is rewritten until it is, or it is not
 * a `ts` block.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { beforeAll, describe, expect, it } from "vitest";
import { ROOT, sourcePaths, tsconfigOptions } from "./source-program.js";

const README = path.join(ROOT, "README.md");
/** Where the blocks' virtual modules live: inside the package, so `"type": "module"` applies. */
const VIRTUAL_DIR = path.join(ROOT, "test/docs/.readme");

/**
 * What README fragments take as given. A block that imports one of these names itself does not
 * get the prelude's import or declaration of it.
 */
const PRELUDE = `
// The Quick start's imports, which the later blocks take as read.
import { defineJob, openQueue, Worker } from "errand";
import type { Job, JobDefinition, JobPage, Queue } from "errand";

// Made in earlier blocks: the Quick start's queue, worker and sendEmail; Job types' resize.
declare const queue: Queue;
declare const worker: Worker;
declare const sendEmail: JobDefinition<{ to: string }, { sent: boolean }>;
declare const resize: JobDefinition<{ file: string; sizes: number[] }, void>;

// Job types the examples use without defining them.
declare const report: JobDefinition<Record<string, never>>;
declare const syncCrm: JobDefinition<Record<string, never>>;
declare const charge: JobDefinition<{ orderId: string }>;
declare const sync: JobDefinition<{ userId: string }>;
declare const notify: JobDefinition<{ userId: string }>;
declare const reindex: JobDefinition<{ doc: number }>;
declare const sendReceipt: JobDefinition<{ orderId: number }>;

// Values the examples stand for.
declare const id: string, deadJobId: string, finishedId: string, orderId: string, userId: string;
declare const payload: { userId: string };
declare const tomorrow: Date;
declare const recipients: string[];
declare const bigImport: Array<{ account: number }>;
declare const entries: LedgerEntry[];
declare const page: JobPage; // an earlier list() page
declare const job: Job; // a job lease() gave

// The reader's own code.
import { expect } from "vitest";
import type { Pool } from "pg";
declare const pool: Pool;
declare const mailer: { send(to: string, options: { signal: AbortSignal }): Promise<void> };
declare function syncAccount(account: number): Promise<void>;
interface LedgerEntry { accountId: string }
declare const ledger: { post(entry: LedgerEntry): Promise<void> };
type PartnerRequest = Record<string, unknown>;
declare const partner: { healthy(): Promise<boolean>; send(request: PartnerRequest): Promise<unknown> };
declare class RateLimited extends Error { retryAfterMs: number }
declare function run(job: Job): Promise<unknown>;
declare function signUp(queue: Queue, email: string): Promise<void>;
`;

/** One fenced ```ts block of the README. */
interface Block {
  /** 1-based README line of the opening fence. */
  fenceLine: number;
  /** How far the fence is indented (a block inside a list item); stripped from every line. */
  indent: number;
  lines: string[];
}

function readmeBlocks(text: string): Block[] {
  const lines = text.split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^( *)```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const end = lines.findIndex((line, j) => j > i && /^ *```\s*$/.test(line));
    if (end < 0) throw new Error(`README.md:${i + 1}: the fence opened here is never closed`);
    if (open[2] === "ts" || open[2] === "typescript") {
      blocks.push({
        fenceLine: i + 1,
        indent,
        lines: lines
          .slice(i + 1, end)
          .map((line) => line.slice(Math.min(indent, /^ */.exec(line)![0].length))),
      });
    }
    i = end;
  }
  return blocks;
}

/** A block as a module: its text, and the README line (1-based) of each of its lines, or null. */
interface VirtualModule {
  fileName: string;
  text: string;
  readmeLines: Array<number | null>;
  block: Block;
}

function toModule(block: Block): VirtualModule {
  const source = ts.createSourceFile("block.ts", block.lines.join("\n"), ts.ScriptTarget.Latest, true);
  const lineOf = (pos: number) => source.getLineAndCharacterOfPosition(pos).line;
  const hoisted = new Set<number>();
  const imported = new Set<string>();
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement)) continue;
    for (let line = lineOf(statement.getStart(source)); line <= lineOf(statement.getEnd()); line++) {
      hoisted.add(line);
    }
    const clause = statement.importClause;
    if (clause?.name) imported.add(clause.name.text);
    const bindings = clause?.namedBindings;
    if (bindings && ts.isNamespaceImport(bindings)) imported.add(bindings.name.text);
    if (bindings && ts.isNamedImports(bindings)) for (const e of bindings.elements) imported.add(e.name.text);
  }

  const out: string[] = [];
  const readmeLines: Array<number | null> = [];
  const emit = (text: string, line: number | null) => {
    for (const part of text.split("\n")) {
      out.push(part);
      readmeLines.push(line);
    }
  };
  const firstLine = block.fenceLine + 1;
  for (const line of preludeFor(imported)) emit(line, null);
  block.lines.forEach((line, i) => {
    if (hoisted.has(i)) emit(line, firstLine + i);
  });
  emit(`export async function readmeLine${block.fenceLine}(): Promise<void> {`, null);
  block.lines.forEach((line, i) => {
    if (!hoisted.has(i)) emit(line, firstLine + i);
  });
  emit("}", null);
  return {
    fileName: path.join(VIRTUAL_DIR, `readme-${block.fenceLine}.ts`),
    text: out.join("\n"),
    readmeLines,
    block,
  };
}

/** The prelude's lines, less what the block imports itself (an import of it would clash). */
function preludeFor(imported: ReadonlySet<string>): string[] {
  const prelude = ts.createSourceFile("prelude.ts", PRELUDE, ts.ScriptTarget.Latest, true);
  const lines: string[] = [];
  for (const statement of prelude.statements) {
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      const bindings = clause?.namedBindings;
      if (!clause || !bindings || !ts.isNamedImports(bindings))
        throw new Error("the prelude imports by name only");
      const kept = bindings.elements.filter((e) => !imported.has(e.name.text)).map((e) => e.getText());
      const from = statement.moduleSpecifier.getText();
      if (kept.length > 0)
        lines.push(`import ${clause.isTypeOnly ? "type " : ""}{ ${kept.join(", ")} } from ${from};`);
    } else if (!declaredNames(statement).some((name) => imported.has(name))) {
      lines.push(statement.getText());
    }
  }
  return lines;
}

function declaredNames(statement: ts.Statement): string[] {
  if (ts.isVariableStatement(statement)) {
    return statement.declarationList.declarations.flatMap((d) =>
      ts.isIdentifier(d.name) ? [d.name.text] : [],
    );
  }
  const name = (statement as { name?: ts.Node }).name;
  return name && ts.isIdentifier(name) ? [name.text] : [];
}

function compilerOptions(): ts.CompilerOptions {
  return {
    ...tsconfigOptions(),
    noEmit: true,
    declaration: false,
    sourceMap: false,
    // Examples may leave a result unused (`const ids = …`); that is no drift.
    noUnusedLocals: false,
    noUnusedParameters: false,
    paths: sourcePaths(),
  };
}

/**
 * Compiles every module in one program. Answers each block's diagnostics (by its fence line) as
 * README locations, and the program's own (options, globals, anything read from dist/).
 */
function compile(modules: VirtualModule[]): { byBlock: Map<number, string[]>; other: string[] } {
  const options = compilerOptions();
  const host = ts.createCompilerHost(options, true);
  const virtual = new Map(modules.map((m) => [m.fileName, m]));
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    const m = virtual.get(fileName);
    if (m) return ts.createSourceFile(fileName, m.text, languageVersion, true, ts.ScriptKind.TS);
    return getSourceFile.call(host, fileName, languageVersion, onError, shouldCreate);
  };
  host.fileExists = (fileName) => virtual.has(fileName) || fileExists.call(host, fileName);
  host.readFile = (fileName) => virtual.get(fileName)?.text ?? readFile.call(host, fileName);

  const program = ts.createProgram({ rootNames: [...virtual.keys()], options, host });
  const byBlock = new Map<number, string[]>();
  for (const m of modules) {
    const sf = program.getSourceFile(m.fileName)!;
    const diagnostics = [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)];
    byBlock.set(
      m.block.fenceLine,
      diagnostics.map((d) => describeDiagnostic(m, sf, d)),
    );
  }
  const other = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()].map((d) =>
    ts.flattenDiagnosticMessageText(d.messageText, "\n"),
  );
  for (const sf of program.getSourceFiles()) {
    if (sf.fileName.startsWith(path.join(ROOT, "dist/")))
      other.push(`${sf.fileName}: read from dist/, not src/`);
  }
  return { byBlock, other };
}

function describeDiagnostic(m: VirtualModule, sf: ts.SourceFile, d: ts.Diagnostic): string {
  const message = `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n  ")}`;
  if (d.start === undefined) return `README.md:${m.block.fenceLine}: ${message}`;
  const { line, character } = sf.getLineAndCharacterOfPosition(d.start);
  const readmeLine = m.readmeLines[line];
  if (readmeLine === null || readmeLine === undefined) {
    const text = sf.text.split("\n")[line];
    return `README.md:${m.block.fenceLine} (the block's prelude or wrapper, "${text}"): ${message}`;
  }
  return `README.md:${readmeLine}:${character + 1 + m.block.indent}: ${message}`;
}

const blocks = readmeBlocks(readFileSync(README, "utf8"));
const modules = blocks.map(toModule);
let compiled: ReturnType<typeof compile>;

describe("README.md's TypeScript examples", () => {
  beforeAll(() => {
    compiled = compile(modules);
  });

  it("are found, and errand's imports resolve to src/", () => {
    expect(blocks.length).toBeGreaterThan(0);
    expect(compiled.other).toEqual([]);
  });

  for (const block of blocks) {
    const first = block.lines.find((line) => line.trim() !== "")?.trim() ?? "";
    const name = `README.md:${block.fenceLine} ${first.length > 72 ? `${first.slice(0, 71)}…` : first}`;
    it(name, () => {
      expect(compiled.byBlock.get(block.fenceLine)).toEqual([]);
    });
  }
});
