/** The pure parts against published vectors: RFC 8785, vc-di-eddsa's eddsa-jcs-2022 example,
 * transparency-dev/merkle's inclusion probes (most of them broken proofs), and the Keeper's
 * timing rules on a fixed clock. */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { Keeper, LeaseLost, Unavailable, canonicalize, parseStrict, verifyInclusion } from "../src/index.js";
import { writtenAsFraction } from "../src/ijson.js";
import { verifyProof } from "../src/dataintegrity.js";
import { REPO, repoJson } from "./harness.js";

const JCS_DIR = ["tests", "vectors", "vc-di-eddsa", "eddsa-jcs-2022"];

test("RFC 8785: key order by UTF-16 code units, ECMAScript numbers, minimal escapes", () => {
  const value = { "\u20ac": 1, "\r": 2, "\ud83d\ude00": 3, "\ufb33": 4, "1": [4.5, 1e-7, -0, 0.1, "\u000f\n\"/"] };
  const expected = '{"\\r":2,"1":[4.5,1e-7,0,0.1,"\\u000f\\n\\"/"],"\u20ac":1,"\ud83d\ude00":3,"\ufb33":4}';
  assert.equal(canonicalize(value).toString("utf8"), expected);
  assert.throws(() => canonicalize({ a: "\ud800" }), /lone surrogate/);
  assert.throws(() => canonicalize({ a: 2 ** 53 }), /I-JSON/);
});

test("I-JSON: a repeated key, an unsafe integer, a lone surrogate are refused; 1.0 is remembered", () => {
  assert.throws(() => parseStrict('{"a":{"t":999,"t":1}}'), /repeats the key "t"/);
  assert.throws(() => parseStrict('{"t":9007199254740993}'), /beyond/);
  assert.throws(() => parseStrict('["\\ud800"]'), /lone surrogate/);
  assert.throws(() => parseStrict('{"a":1} x'), /after/);
  const value = parseStrict('{"t":1.0,"u":2,"__proto__":{"x":1}}') as Record<string, unknown>;
  assert.deepEqual([value["t"], writtenAsFraction(value, "t"), writtenAsFraction(value, "u")], [1, true, false]);
  assert.deepEqual(Object.keys(value), ["t", "u", "__proto__"]);
});

test("vc-di-eddsa eddsa-jcs-2022: the W3C example's canonical form and proof verify", () => {
  const signed = repoJson(...JCS_DIR, "signedJCS.json") as Record<string, unknown>;
  const unsecured = { ...signed };
  delete unsecured["proof"];
  const canon = readFileSync(join(REPO, ...JCS_DIR, "canonDocJCS.txt"), "utf8").trim();
  assert.equal(canonicalize(unsecured).toString("utf8"), canon);
  assert.deepEqual(verifyProof(signed).error, null);
  const tampered = { ...signed, issuer: `${String(signed["issuer"])}x` };
  assert.equal(verifyProof(tampered).verified, false);
});

test("RFC 9162 inclusion: every transparency-dev/merkle probe as it wants", () => {
  const root = join(REPO, "tests", "vectors", "merkle", "inclusion");
  const files = walk(root).filter((path) => path.endsWith(".json"));
  assert.ok(files.length >= 90, `only ${files.length} probes found`);
  const b = (value: string) => Buffer.from(value, "base64");
  for (const file of files) {
    const probe = JSON.parse(readFileSync(file, "utf8")) as Probe;
    const run = () =>
      verifyInclusion(probe.leafIdx, probe.treeSize, b(probe.leafHash ?? ""), (probe.proof ?? []).map(b), b(probe.root ?? ""));
    if (probe.wantErr) assert.throws(run, Error, file);
    else assert.doesNotThrow(run, file);
  }
});

test("keeper: renew at a third of the ttl, counted from when the grant was sent", () => {
  const keeper = Keeper.granted(30_000, 1_000);
  assert.equal(keeper.delay(1_000), 10_000);
  assert.equal(keeper.delay(12_000), 0);
  assert.equal(keeper.renewed(11_000, 11_500), null);
  assert.equal(keeper.validUntil, 41_000);
});

test("keeper: an unknown renewal retries every ttl/12, then the lease is lost for good", () => {
  const keeper = Keeper.granted(12_000, 0);
  assert.equal(keeper.failed(new Unavailable("no answer"), 5_000), null);
  assert.equal(keeper.delay(5_000), 1_000);
  const lost = keeper.failed(new Unavailable("no answer"), 12_000);
  assert.ok(lost instanceof LeaseLost);
  assert.ok(keeper.renewed(11_000, 12_500) instanceof LeaseLost, "a late confirmation revives nothing");
  assert.equal(keeper.expired(12_500), true);
});

interface Probe {
  leafIdx: number;
  treeSize: number;
  leafHash: string | null;
  root: string | null;
  proof: string[] | null;
  wantErr: boolean;
}

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}
