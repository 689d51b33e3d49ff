/**
 * "Public API has TSDoc", as a test. Every entry point of package.json's "exports" is read from
 * src/ in one `ts.Program`, and every symbol it exports (re-exports followed to the declaration)
 * must carry a `/** … *\/` comment with a summary: functions, classes, interfaces, type aliases,
 * enums and consts; a class's public members (its own and those it inherits from a class in src/)
 * and its constructor when that takes parameters; each property and method of an exported
 * interface or object type alias, inherited ones too.
 *
 * What counts as documented:
 * - a summary: the text before the first tag. A tags-only comment (`/** @defaultValue 1 *\/`)
 *   says nothing of what the thing is, so it does not count;
 * - for a constructor, any text, tags included: the class's doc is its summary;
 * - for a parameter property (`constructor(readonly code: …)`), its own doc or the constructor's
 *   `@param code …`;
 * - for a member that overrides or implements one (a class's `extends`/`implements`, an
 *   interface's `extends`), the doc of the member it overrides, as an editor shows it;
 * - for overloads, the first signature's doc; for a get/set pair, either's.
 *
 * A file's own doc (`@packageDocumentation`, `@module`) is never a declaration's, even when the
 * parser attaches it to the first statement. Failures are listed all at once per entry point, as
 * `src/file.ts:line Symbol.member: no TSDoc`, at the declaration (a base's member is reported
 * where the base declares it, under the first exported name that reaches it).
 */
import path from "node:path";
import ts from "typescript";
import { beforeAll, describe, expect, it } from "vitest";
import { entryPoints, ROOT, tsconfigOptions } from "./source-program.js";

/**
 * Symbols and members left undocumented on purpose, by the name a failure gives them. Keep it
 * short, with a reason each: an entry whose gap is gone fails the last test.
 */
const EXEMPT: ReadonlyMap<string, string> = new Map([]);

const SRC = path.join(ROOT, "src") + path.sep;

/** One entry point's undocumented declarations, as failure lines. */
interface Report {
  specifier: string;
  /** How many symbols it exports: none means the entry point was not read, not that all is well. */
  exports: number;
  gaps: string[];
}

function checkExports(): { reports: Report[]; exempted: Set<string> } {
  const entries = entryPoints();
  const program = ts.createProgram({
    rootNames: entries.map((e) => e.file),
    options: { ...tsconfigOptions(), noEmit: true },
  });
  const checker = program.getTypeChecker();
  const exempted = new Set<string>();
  const reports = entries.map(({ specifier, file }) => {
    const source = program.getSourceFile(file);
    const module = source && checker.getSymbolAtLocation(source);
    if (!module) throw new Error(`${specifier}: ${file} is not a module`);
    const gaps: string[] = [];
    const seen = new Set<string>();
    const gap = (node: ts.Node, name: string, problem = "no TSDoc") => {
      const sf = node.getSourceFile();
      const start = node.getStart(sf);
      // A base's member reached through two exports is one gap.
      if (seen.has(`${sf.fileName}:${start}`)) return;
      seen.add(`${sf.fileName}:${start}`);
      const where = `${path.relative(ROOT, sf.fileName)}:${sf.getLineAndCharacterOfPosition(start).line + 1}`;
      if (EXEMPT.has(name)) exempted.add(name);
      else gaps.push(`${where} ${name}: ${problem}`);
    };
    const exports = checker.getExportsOfModule(module);
    for (const exported of exports) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      checkSymbol(checker, exported.name, symbol, gap);
    }
    return { specifier, exports: exports.length, gaps };
  });
  return { reports, exempted };
}

type Gap = (node: ts.Node, name: string, problem?: string) => void;

function checkSymbol(checker: ts.TypeChecker, name: string, symbol: ts.Symbol, gap: Gap): void {
  const declarations = symbol.declarations ?? [];
  const own = declarations.filter(inSrc);
  if (own.length === 0) {
    const anywhere = declarations[0];
    if (anywhere) gap(anywhere, name, "declared outside src/");
    return;
  }
  const cls = own.find(ts.isClassDeclaration);
  // The class's doc speaks for an interface merged into it, and anything's for a namespace.
  const primary =
    cls ??
    own.find(
      (d) =>
        ts.isFunctionDeclaration(d) ||
        ts.isInterfaceDeclaration(d) ||
        ts.isTypeAliasDeclaration(d) ||
        ts.isEnumDeclaration(d) ||
        ts.isVariableDeclaration(d),
    ) ??
    own[0]!;
  if (!hasDoc(primary)) gap(primary, name);
  // A value and a type of one name (`const X` beside `type X`) are two things to document: the
  // first declaration of each other kind needs its own doc (later ones are overloads or merges).
  own.forEach((d, i) => {
    if (d.kind === primary.kind || ts.isModuleDeclaration(d) || (cls && ts.isInterfaceDeclaration(d))) return;
    if (own.findIndex((o) => o.kind === d.kind) === i && !hasDoc(d)) gap(d, name);
  });

  if (cls) {
    const ctor = cls.members.find(ts.isConstructorDeclaration);
    if (ctor && ctor.parameters.length > 0 && !isPrivate(ctor) && !hasDoc(ctor, { tags: true }))
      gap(ctor, `${name}.constructor`);
    const instance = checker.getDeclaredTypeOfSymbol(symbol);
    const statics = checker.getTypeOfSymbol(symbol);
    for (const member of [...checker.getPropertiesOfType(instance), ...checker.getPropertiesOfType(statics)])
      checkMember(checker, name, member, gap);
    return;
  }
  if (own.some((d) => ts.isInterfaceDeclaration(d) || ts.isTypeAliasDeclaration(d))) {
    const type = checker.getDeclaredTypeOfSymbol(symbol);
    const parts = type.isUnion() ? type.types : [type];
    for (const part of parts) {
      if (!(part.flags & (ts.TypeFlags.Object | ts.TypeFlags.Intersection))) continue;
      for (const member of checker.getPropertiesOfType(part)) checkMember(checker, name, member, gap);
    }
  }
}

/** `exported`'s member, named after the interface, class or type alias that declares it. */
function checkMember(checker: ts.TypeChecker, exported: string, member: ts.Symbol, gap: Gap): void {
  const declarations = (member.declarations ?? []).filter(inSrc);
  const first = declarations[0];
  if (!first || declarations.some(isPrivate)) return;
  // Overloads: the first signature's doc; accessors: either half's.
  const documented = ts.isAccessor(first)
    ? declarations.some((d) => hasDoc(d) || inheritsDoc(checker, d))
    : hasDoc(first) || inheritsDoc(checker, first);
  if (!documented) gap(first, `${declaringName(first) ?? exported}.${member.name}`);
}

function declaringName(member: ts.Node): string | undefined {
  for (let node = member.parent; node; node = node.parent) {
    if (ts.isInterfaceDeclaration(node) || ts.isClassDeclaration(node) || ts.isTypeAliasDeclaration(node))
      return node.name?.text;
  }
  return undefined;
}

function inSrc(node: ts.Node): boolean {
  return node.getSourceFile().fileName.startsWith(SRC);
}

function isPrivate(node: ts.Declaration): boolean {
  const name = ts.getNameOfDeclaration(node);
  if (name && ts.isPrivateIdentifier(name)) return true;
  return (ts.getCombinedModifierFlags(node) & ts.ModifierFlags.Private) !== 0;
}

/** Whether `node` has a doc with a summary (or, with `tags`, any text at all). */
function hasDoc(node: ts.Node, { tags = false } = {}): boolean {
  for (const doc of ts.getJSDocCommentsAndTags(node)) {
    if (ts.isJSDocParameterTag(doc)) {
      // A parameter property, documented by the constructor's `@param`.
      if (text(doc.comment)) return true;
      continue;
    }
    if (!ts.isJSDoc(doc)) continue;
    if (doc.tags?.some((t) => t.tagName.text === "packageDocumentation" || t.tagName.text === "module"))
      continue;
    if (text(doc.comment)) return true;
    if (tags && doc.tags?.some((t) => text(t.comment))) return true;
  }
  return false;
}

function text(comment: string | ts.NodeArray<ts.JSDocComment> | undefined): boolean {
  return (ts.getTextOfJSDocComment(comment) ?? "").trim() !== "";
}

/** Whether a member of that name in a type `member`'s container extends or implements has a doc. */
function inheritsDoc(checker: ts.TypeChecker, member: ts.Declaration, depth = 0): boolean {
  const container = ts.isParameter(member) ? member.parent.parent : member.parent;
  const name = ts.getNameOfDeclaration(member);
  if (depth > 10 || !name || !(ts.isClassLike(container) || ts.isInterfaceDeclaration(container)))
    return false;
  const key = ts.isIdentifier(name) || ts.isStringLiteral(name) ? name.text : undefined;
  for (const clause of container.heritageClauses ?? []) {
    for (const base of clause.types) {
      const inherited = key && checker.getTypeAtLocation(base).getProperty(key);
      for (const d of inherited ? (inherited.declarations ?? []) : []) {
        if (d !== member && (hasDoc(d) || inheritsDoc(checker, d, depth + 1))) return true;
      }
    }
  }
  return false;
}

let checked: ReturnType<typeof checkExports>;

describe("every export of package.json's entry points has TSDoc", () => {
  beforeAll(() => {
    checked = checkExports();
  });

  for (const { specifier } of entryPoints()) {
    it(specifier, () => {
      const report = checked.reports.find((r) => r.specifier === specifier)!;
      expect(report.exports).toBeGreaterThan(0);
      expect(report.gaps).toEqual([]);
    });
  }

  it("exempts only what is still undocumented", () => {
    expect([...EXEMPT.keys()].filter((name) => !checked.exempted.has(name))).toEqual([]);
  });
});
