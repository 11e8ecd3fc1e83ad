/**
 * `npm test`: one live server for every test file (TENURE_URL when set, else one started here
 * from the repository's venv), then `node --test` over the compiled tests, then the server
 * stopped; the exit status is the tests'.
 */
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer } from "./harness.js";

const here = dirname(fileURLToPath(import.meta.url));
const files = readdirSync(here).filter((name) => name.endsWith(".test.js")).map((name) => join(here, name));
const server = await startServer();
const tests = spawn(process.execPath, ["--test", ...files], {
  stdio: "inherit",
  env: { ...process.env, TENURE_URL: server.url },
});
const code: number = await new Promise((done) => tests.once("exit", (status) => done(status ?? 1)));
await server.stop();
process.exit(code);
