/** The receipt check and verifyFence on live answers of a real server, and on those answers
 * tampered with: each tampering is refused, naming the check that caught it. */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Client, FenceRefused, ReceiptInvalid, canonicalRequest, checkReceipt, trustedKeys, verifyFence, verifyReceipt } from "../src/index.js";
import type { LeaseAnswer } from "../src/index.js";
import { type LiveServer, rid, startServer } from "./harness.js";

type Json = Record<string, any>;
let server: LiveServer;
let keys: Json;
let client: Client;

before(async () => {
  server = await startServer();
  keys = await new Client(server.url).keys();
  client = new Client(server.url, { trust: keys as never });
});
after(() => server.stop());

const copy = (value: unknown): Json => JSON.parse(JSON.stringify(value));

async function grant(): Promise<{ resource: string; answer: LeaseAnswer }> {
  const resource = rid();
  return { resource, answer: await client.acquire(resource, "w1", { ttl: 30 }) };
}

test("a live grant verifies, and its fence is its resource and token", async () => {
  const { resource, answer } = await grant();
  const report = verifyReceipt(answer.receipt, trustedKeys(keys as never));
  assert.equal(report.ok, true, JSON.stringify(report.checks));
  const fence = verifyFence(answer.receipt, { trust: keys as never, resource, minToken: answer.fencingToken! });
  assert.equal(fence.fencingToken, answer.fencingToken);
  assert.equal(fence.holder, "w1");
  assert.equal(fence.issuer, keys["keys"][0].did);
});

test("tampered receipts are refused, each by the check that catches it", async () => {
  const { resource, answer } = await grant();
  const other = copy((await grant()).answer.receipt);
  const trust = trustedKeys(keys as never);
  const cases: [string, (r: Json) => void][] = [
    ["manifest:tenure.data", (r) => (r.data.holder = "w2")],
    ["manifest:tenure.data", (r) => (r.data.fencingToken += 1)],
    ["proof", (r) => (r._provenance.credentialSubject.fencingToken += 1)],
    ["proof", (r) => (r._provenance.proof.proofValue = other._provenance.proof.proofValue)],
    ["format", (r) => (r._provenance.credentialSubject.extra = 1)],
  ];
  for (const [check, tamper] of cases) {
    const receipt = copy(answer.receipt);
    tamper(receipt);
    assert.throws(() => checkReceipt(receipt, trust), (e: any) => e.check === check || assert.fail(`${check}: ${e.message}`));
  }
  const refused = (reason: string) => (e: unknown) => e instanceof FenceRefused && e.reason === reason;
  const wrongKey = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK";
  assert.throws(() => verifyFence(answer.receipt, { trust: wrongKey, resource, minToken: 0 }), refused("issuer"));
  assert.throws(() => verifyFence(answer.receipt, { trust: keys as never, resource: rid(), minToken: 0 }), refused("resource"));
  const token = answer.fencingToken!;
  assert.throws(() => verifyFence(answer.receipt, { trust: keys as never, resource, minToken: token + 1 }), refused("token"));
});

test("a get states the holder's token but grants nothing: no fence", async () => {
  const { resource } = await grant();
  const seen = await client.get(resource);
  assert.equal(seen.outcome, "HOLDING");
  assert.throws(() => verifyFence(seen.receipt, { trust: keys as never, resource, minToken: 0 }),
    (e: unknown) => e instanceof FenceRefused && e.reason === "grant");
});

test("an answer is bound to its request: another request's hash is refused", async () => {
  const { resource, answer } = await grant();
  const asked = canonicalRequest({ method: "POST", path: "/api/v1/lease/acquire", body: { resource, holder: "w9" }, timeoutMs: 0, signed: true, expect: [] });
  assert.throws(() => checkReceipt(answer.receipt, trustedKeys(keys as never), asked), (e: any) => e.check === "manifest:tenure.request");
});

test("a receipt's entry is proved in the log by an RFC 9162 inclusion proof", async () => {
  const { answer } = await grant();
  const proved = await client.proveInclusion(answer);
  assert.equal(proved.logIndex, answer.ledger["logIndex"]);
  assert.ok(proved.treeSize > proved.logIndex);
  const forged = Object.assign(Object.create(Object.getPrototypeOf(answer)), answer, {
    data: { ...answer.data, ledger: { ...answer.ledger, leafHash: Buffer.alloc(32, 7).toString("base64") } },
  });
  await assert.rejects(client.proveInclusion(forged), (e: unknown) => e instanceof ReceiptInvalid && e.check === "inclusion");
});
