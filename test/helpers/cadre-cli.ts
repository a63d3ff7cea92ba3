// The operator's CLI as an operator runs it: `bin/cadre …` is `tsx src/cli/cadre.ts …`, a real
// child process on this test run's database. Never throws: a refusal is an exit code to check.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { fileDatabaseUrl } from "./app.ts";

const run = promisify(execFile);

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function cadre(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run("npx", ["--no-install", "tsx", "src/cli/cadre.ts", ...args], {
      env: { ...process.env, DATABASE_URL: fileDatabaseUrl(), PORT: "3700", LOG_LEVEL: "silent", ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}
