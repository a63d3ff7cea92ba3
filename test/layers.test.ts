// The layer rules (.dependency-cruiser.cjs) hold on src/, and they bite: a tree with an import
// that points up a layer, or a cycle, fails with the rule's name and the reason it exists.
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "..");
const depcruise = join(root, "node_modules", ".bin", "depcruise");

async function cruise(cwd: string): Promise<{ code: number; out: string }> {
  try {
    const r = await run(
      depcruise,
      ["src", "--config", ".dependency-cruiser.cjs", "--output-type", "err-long"],
      {
        cwd,
      },
    );
    return { code: 0, out: r.stdout + r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

/** A small tree of our layout in a temporary folder, with the project's own rules. */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "cadre-layers-"));
  cpSync(join(root, ".dependency-cruiser.cjs"), join(dir, ".dependency-cruiser.cjs"));
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: { module: "NodeNext", allowImportingTsExtensions: true, noEmit: true },
    }),
  );
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  made.push(dir);
  return dir;
}
const made: string[] = [];
afterAll(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

// Every module of the fixture is imported by an entry, so only the rule under test fires.
const base = {
  "src/worker.ts": 'import "./services/catalog/catalog.ts";\n',
  "src/services/catalog/catalog.ts":
    'import { page } from "../pages/notes.ts";\nexport const all = [page];\n',
  "src/services/pages/notes.ts": 'import { limit } from "../../config.ts";\nexport const page = limit;\n',
  "src/config.ts": "export const limit = 1;\n",
};

describe("layer rules", () => {
  it("hold on src/ as it is", async () => {
    const r = await cruise(root);
    expect(r.out).toContain("no dependency violations found");
    expect(r.code).toBe(0);
  });

  it("refuse an import that points up a layer, naming the rule and why it exists", async () => {
    const r = await cruise(
      tree({
        ...base,
        "src/config.ts":
          'import { all } from "./services/catalog/catalog.ts";\nexport const limit = all.length;\n',
      }),
    );
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("lib-is-the-bottom: src/config.ts → src/services/catalog/catalog.ts");
    expect(r.out).toMatch(/import nothing of ours/);
  });

  it("refuse a page that imports the catalog, and the cycle it makes", async () => {
    const r = await cruise(
      tree({
        ...base,
        "src/services/pages/notes.ts":
          'import { all } from "../catalog/catalog.ts";\nexport const page = all;\n',
      }),
    );
    expect(r.code).not.toBe(0);
    expect(r.out).toContain(
      "pages-below-catalog: src/services/pages/notes.ts → src/services/catalog/catalog.ts",
    );
    expect(r.out).toContain("no-circular");
  });

  it("accept the same tree with imports pointing down", async () => {
    const r = await cruise(tree(base));
    expect(r.out).toContain("no dependency violations found");
    expect(r.code).toBe(0);
  });
});
