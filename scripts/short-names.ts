// How many declared names in src/ are one or two letters: the team's count for the
// "whole words" rule (CONVENTIONS.md 15, issue 41). Run: npx tsx scripts/short-names.ts [dir]
// [--list]. Counted: variables, parameters, functions, classes, destructured names, catch
// bindings. Not counted: the parameters of a one-line arrow callback (`(x) => x.id`), and the
// usual `id`, `db`, `tx`. Generated code (src/generated) is skipped.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

const ALLOWED = new Set(["id", "db", "tx"]);
const root = process.argv.slice(2).find((arg) => !arg.startsWith("--")) ?? "src";
const listing = process.argv.includes("--list");

function sourceFiles(directory: string): string[] {
  return readdirSync(directory).flatMap((entry) => {
    const path = join(directory, entry);
    if (entry === "generated" || entry === "node_modules") return [];
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|mts)$/.test(entry) && !entry.endsWith(".d.ts") ? [path] : [];
  });
}

/** A one-line arrow function passed as an argument: its parameters may be short. */
function isOneLineCallback(node: ts.Node, file: ts.SourceFile): boolean {
  if (!ts.isArrowFunction(node) || !ts.isCallExpression(node.parent)) return false;
  const start = file.getLineAndCharacterOfPosition(node.getStart(file)).line;
  const end = file.getLineAndCharacterOfPosition(node.getEnd()).line;
  return start === end;
}

/** The names a binding declares (`a`, or each name of `{ a, b: [c] }`). */
function boundNames(name: ts.BindingName): ts.Identifier[] {
  if (ts.isIdentifier(name)) return [name];
  return name.elements.flatMap((element) =>
    ts.isOmittedExpression(element) ? [] : boundNames(element.name),
  );
}

function declaredNames(file: ts.SourceFile): { name: string; line: number }[] {
  const found: { name: string; line: number }[] = [];
  const add = (identifier: ts.Identifier) =>
    found.push({
      name: identifier.text,
      line: file.getLineAndCharacterOfPosition(identifier.getStart(file)).line + 1,
    });
  const visit = (node: ts.Node) => {
    if (ts.isVariableDeclaration(node) || ts.isBindingElement(node)) {
      if (ts.isIdentifier(node.name)) add(node.name);
    } else if (ts.isParameter(node)) {
      if (!isOneLineCallback(node.parent, file)) for (const name of boundNames(node.name)) add(name);
    } else if (
      (ts.isFunctionDeclaration(node) || ts.isClassDeclaration(node) || ts.isFunctionExpression(node)) &&
      node.name
    ) {
      add(node.name);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

interface Tally {
  short: number;
  all: number;
}
const byDirectory = new Map<string, Tally>();
const total: Tally = { short: 0, all: 0 };
for (const path of sourceFiles(root)) {
  const file = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true);
  const directory = relative(root, path).split("/").slice(0, -1).join("/") || ".";
  const tally = byDirectory.get(directory) ?? { short: 0, all: 0 };
  byDirectory.set(directory, tally);
  for (const { name, line } of declaredNames(file)) {
    const short = name.length <= 2 && !ALLOWED.has(name) && name !== "_";
    tally.all++;
    total.all++;
    if (!short) continue;
    tally.short++;
    total.short++;
    if (listing) console.log(`${path}:${line}: ${name}`);
  }
}

const percent = (tally: Tally) => (tally.all ? (100 * tally.short) / tally.all : 0).toFixed(1);
for (const [directory, tally] of [...byDirectory].sort(([left], [right]) => left.localeCompare(right))) {
  console.log(
    `${percent(tally).padStart(5)} %  ${String(tally.short).padStart(4)} / ${tally.all}  ${directory}`,
  );
}
console.log(
  `${percent(total).padStart(5)} %  ${String(total.short).padStart(4)} / ${total.all}  all of ${root}`,
);
