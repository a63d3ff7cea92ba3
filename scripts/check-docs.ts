// Checks the project's markdown: every code fence closed, every relative link pointing at a file
// that exists and, when it names a #heading, at a heading that exists; and, for the whole tree,
// that docs/markdown-api.md lists every page the registry serves (page-list.ts). A small script
// rather than a markdown linter: none is in node_modules, and these checks are all we need.
//
//   npx tsx scripts/check-docs.ts            the tree: README.md, docs/, bench/*.md, src/**/README.md
//   npx tsx scripts/check-docs.ts FILE...    only these files (the test runs it on fixtures)
//
// Exits 1 and prints one line per problem (file:line: what) when anything is wrong.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { pageListProblems } from "./page-list.ts";

export interface Problem {
  file: string;
  line: number;
  message: string;
}

interface Fence {
  marker: string;
  line: number;
}

const fencePattern = /^ {0,3}(`{3,}|~{3,})(.*)$/;

/** Which lines sit inside a code block, with the problems the fences themselves have. */
function scanFences(lines: string[], file: string): { inCode: boolean[]; problems: Problem[] } {
  const inCode: boolean[] = [];
  const problems: Problem[] = [];
  let open: Fence | undefined;
  lines.forEach((text, index) => {
    const match = fencePattern.exec(text);
    const marker = match?.[1];
    const info = (match?.[2] ?? "").trim();
    if (!open) {
      inCode.push(Boolean(marker));
      if (marker) open = { marker, line: index + 1 };
      return;
    }
    inCode.push(true);
    if (!marker || marker[0] !== open.marker[0] || marker.length < open.marker.length) return;
    if (info === "") {
      open = undefined;
      return;
    }
    // CommonMark reads "```json" inside an open block as text, so the block the author meant to
    // close earlier runs on past it (the README's MCP section once rendered as code this way).
    // A block that really shows a fence uses a longer outer fence, which this never flags.
    problems.push({
      file,
      line: index + 1,
      message: `a fence with an info string ("${text.trim()}") inside the code block opened at line ${open.line}: that block is probably not closed`,
    });
  });
  if (open) {
    problems.push({ file, line: open.line, message: "code fence opened here is never closed" });
  }
  return { inCode, problems };
}

/** GitHub's heading anchor: lowercase, punctuation dropped, spaces to hyphens, repeats numbered. */
export function headingAnchors(markdown: string): Set<string> {
  const lines = markdown.split("\n");
  const { inCode } = scanFences(lines, "");
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  lines.forEach((text, index) => {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
    const explicit = text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g);
    if (inCode[index]) return;
    for (const match of explicit) if (match[1]) anchors.add(match[1]);
    if (!heading?.[1]) return;
    const slug = heading[1]
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  });
  return anchors;
}

/** Link targets on one line, with inline code spans taken out first. */
function linkTargets(text: string): string[] {
  const prose = text.replace(/(`+)[^`]*?\1/g, "");
  const inline = [...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]);
  const reference = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(prose)?.[1];
  return [...inline, reference].filter((target): target is string => Boolean(target));
}

const anchorCache = new Map<string, Set<string>>();

function anchorsOf(file: string): Set<string> {
  let anchors = anchorCache.get(file);
  if (!anchors) {
    anchors = headingAnchors(readFileSync(file, "utf8"));
    anchorCache.set(file, anchors);
  }
  return anchors;
}

function checkLink(file: string, line: number, target: string): Problem | undefined {
  // Addresses with a scheme (https:, mailto:) are not ours to check offline, and one starting
  // with "/" is an address in the running app (/studios/general), not a file beside this one.
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("/")) return undefined;
  const [filePart = "", anchor] = target.split("#", 2);
  const pathPart = decodeURIComponent(filePart.split("?")[0] ?? "");
  const resolved = pathPart === "" ? file : path.resolve(path.dirname(file), pathPart);
  if (!existsSync(resolved)) return { file, line, message: `dead link: ${target} (no ${pathPart})` };
  if (!anchor || statSync(resolved).isDirectory() || !resolved.endsWith(".md")) return undefined;
  if (anchorsOf(resolved).has(decodeURIComponent(anchor).toLowerCase())) return undefined;
  return {
    file,
    line,
    message: `dead link: ${target} (no heading #${anchor} in ${pathPart || "this file"})`,
  };
}

export function checkFile(file: string): Problem[] {
  const lines = readFileSync(file, "utf8").split("\n");
  const { inCode, problems } = scanFences(lines, file);
  lines.forEach((text, index) => {
    if (inCode[index]) return;
    for (const target of linkTargets(text)) {
      const problem = checkLink(file, index + 1, target);
      if (problem) problems.push(problem);
    }
  });
  return problems;
}

function markdownUnder(folder: string, onlyReadmes: boolean): string[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder, { recursive: true, encoding: "utf8" })
    .filter((name) => (onlyReadmes ? path.basename(name) === "README.md" : name.endsWith(".md")))
    .map((name) => path.join(folder, name))
    .sort();
}

/** The markdown a reader of the repository meets: the front door, the manual, bench, folder READMEs. */
export function projectMarkdown(root: string): string[] {
  const topLevel = (folder: string) =>
    existsSync(path.join(root, folder))
      ? readdirSync(path.join(root, folder))
          .filter((name) => name.endsWith(".md"))
          .map((name) => path.join(root, folder, name))
          .sort()
      : [];
  return [
    path.join(root, "README.md"),
    ...markdownUnder(path.join(root, "docs"), false),
    ...topLevel("bench"),
    ...markdownUnder(path.join(root, "src"), true).filter(
      (file) => !file.includes(`${path.sep}generated${path.sep}`),
    ),
  ];
}

export function checkDocs(files: string[]): Problem[] {
  return files.flatMap((file) => checkFile(file));
}

/** docs/markdown-api.md's page list against the pages the registry serves (page-list.ts). */
export async function checkPageList(root: string): Promise<Problem[]> {
  // Imported here, not above: checking fixtures needs no app.
  const { registry } = await import("../src/services/catalog/catalog.ts");
  const file = path.join(root, "docs", "markdown-api.md");
  const patterns = registry.pages.map((page) => page.pattern);
  return pageListProblems(file, readFileSync(file, "utf8"), patterns);
}

async function main(): Promise<void> {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const requested = process.argv.slice(2);
  const files = requested.length > 0 ? requested.map((file) => path.resolve(file)) : projectMarkdown(root);
  // The whole tree also means the page list; named files are checked for fences and links only.
  const problems = [...checkDocs(files), ...(requested.length > 0 ? [] : await checkPageList(root))];
  for (const problem of problems) {
    console.error(`${path.relative(process.cwd(), problem.file)}:${problem.line}: ${problem.message}`);
  }
  if (problems.length > 0) {
    console.error(`${problems.length} problem(s) in ${files.length} markdown file(s)`);
    process.exit(1);
  }
  const pages = requested.length > 0 ? "" : ", every registry page listed in docs/markdown-api.md";
  console.log(`${files.length} markdown file(s): every fence closed, every relative link found${pages}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
