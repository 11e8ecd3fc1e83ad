/**
 * A live tenure server for the tests: TENURE_URL when set (a pytest test or CI started one),
 * else `python -m api serve` from the repository's venv (TENURE_PYTHON overrides) on a free
 * port, with its own temporary data and keys, stopped when the tests end.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = resolve(fileURLToPath(import.meta.url), "../../../../..");

export interface LiveServer {
  url: string;
  stop(): Promise<void>;
}

/** A resource name the anonymous tenant accepts (≥ 128 random bits) and no other test uses. */
export function rid(prefix = "js"): string {
  return `${prefix}-${randomBytes(16).toString("hex")}`;
}

export async function startServer(): Promise<LiveServer> {
  const given = process.env["TENURE_URL"];
  if (given) return { url: given, stop: async () => undefined };
  const port = await freePort();
  const root = mkdtempSync(join(tmpdir(), "tenure-js-"));
  const python = process.env["TENURE_PYTHON"] ?? join(REPO, ".venv", "bin", "python");
  const args = ["-m", "api", "serve", "--port", String(port), "--data", join(root, "data"), "--keys", join(root, "keys")];
  const child = spawn(python, args, { cwd: REPO, stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr?.on("data", (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  await ready(url, child, () => log);
  return { url, stop: () => stop(child) };
}

async function ready(url: string, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited: ${log()}`);
    try {
      if ((await fetch(`${url}/healthz`)).status === 200) return;
    } catch {
      await new Promise((done) => setTimeout(done, 100));
    }
  }
  child.kill("SIGKILL");
  throw new Error(`server did not answer within 30 s: ${log()}`);
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((done) => {
    if (child.exitCode !== null) return done();
    child.once("exit", () => done());
    child.kill("SIGTERM");
  });
}

export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

/** A JSON file of the repository (test vectors). */
export function repoJson(...path: string[]): unknown {
  return JSON.parse(readFileSync(join(REPO, ...path), "utf8"));
}
