/** The client against a live server: the calls, their refusals, a held lease whose signal
 * aborts when it is lost, safe retries through a connection that drops answers, and answers
 * altered on the way that are never believed. */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Client, InvalidRequest, LeaseHeld, LeaseLost, ReceiptInvalid } from "../src/index.js";
import { type LiveServer, rid, startServer } from "./harness.js";
import { startProxy } from "./proxy.js";

let server: LiveServer;
let client: Client;

before(async () => {
  server = await startServer();
  client = new Client(server.url, { trust: (await new Client(server.url).keys()) as never });
});
after(() => server.stop());

test("acquire, held, renew, get, release, then the lease is no longer yours", async () => {
  const resource = rid();
  const grant = await client.acquire(resource, "w1", { ttl: 30 });
  assert.equal(grant.outcome, "GRANTED");
  await assert.rejects(client.acquire(resource, "w2"), (e: unknown) => e instanceof LeaseHeld && e.heldBy.length === 1);
  const renewed = await client.renew(resource, grant.ownerToken!, { ttl: 60, fencingToken: grant.fencingToken! });
  assert.equal(renewed.fencingToken, grant.fencingToken);
  assert.equal((await client.get(resource)).outcome, "HOLDING");
  assert.equal((await client.release(resource, grant.ownerToken!)).outcome, "RELEASED");
  await assert.rejects(client.release(resource, grant.ownerToken!), LeaseLost);
  assert.equal("ownerToken" in grant.receipt.data, false, "a receipt never carries the owner token");
});

test("lease(): renewed in the background; released under it, its signal aborts with LeaseLost", async () => {
  const resource = rid();
  const lost: LeaseLost[] = [];
  const lease = await client.lease(resource, "w1", { ttl: 3, onLost: (e) => lost.push(e) });
  assert.equal(lease.signal.aborted, false);
  await client.release(resource, lease.ownerToken);
  await new Promise((done) => lease.signal.addEventListener("abort", done, { once: true }));
  assert.ok(lease.signal.reason instanceof LeaseLost);
  assert.equal(lost.length, 1);
  assert.equal(lease.lost, true);
  await assert.rejects(lease.release(), LeaseLost);
});

test("withLease: the body runs holding the lease, renewed in the background, then released", async () => {
  const resource = rid();
  const token = await client.withLease(resource, "w1", async (lease) => {
    while (lease.receipts.length < 2) await new Promise((done) => setTimeout(done, 20));
    const [granted, renewed] = lease.receipts.map((r) => Date.parse(String(r.data["expiresAt"])));
    assert.ok(renewed! > granted!, "the renewal moved the expiry on");
    assert.equal(lease.signal.aborted, false);
    return lease.fencingToken;
  }, { ttl: 2 });
  assert.equal(typeof token, "number");
  assert.equal((await client.get(resource)).outcome, "FREE");
});

test("a dropped answer is retried with the same requestId: one grant, replayed", async () => {
  let dropped = 0;
  const proxy = await startProxy(server.url, (path, _body, answer) => (path.endsWith("/acquire") && dropped++ === 0 ? "drop" : answer));
  try {
    const viaProxy = new Client(proxy.url, { trust: (await client.keys()) as never, retry: { baseMs: 10 } });
    const resource = rid();
    const grant = await viaProxy.acquire(resource, "w1");
    const sent = proxy.bodies.filter((b) => b.includes(resource)).map((b) => JSON.parse(b).requestId);
    assert.equal(sent.length, 2);
    assert.equal(sent[0], sent[1], "the retry repeats the requestId");
    assert.equal(grant.replayed, true);
    assert.ok(grant.ownerToken, "a replayed grant still hands over the owner token");
    await viaProxy.release(resource, grant.ownerToken!);
  } finally {
    await proxy.close();
  }
});

test("an answer altered on the way is never believed", async () => {
  const proxy = await startProxy(server.url, (path, _body, answer) =>
    path.endsWith("/acquire") ? answer.replace('"fencingToken":', '"fencingToken":1000') : answer);
  try {
    const viaProxy = new Client(proxy.url, { trust: (await client.keys()) as never });
    await assert.rejects(viaProxy.acquire(rid(), "w1"), (e: unknown) => e instanceof ReceiptInvalid && e.check.startsWith("manifest"));
  } finally {
    await proxy.close();
  }
});

test("an answer with a planted first fencingToken is never read as a grant", async () => {
  const proxy = await startProxy(server.url, (path, _body, answer) =>
    path.endsWith("/acquire") ? answer.replace('{"data":{', '{"data":{"fencingToken":999,') : answer);
  try {
    const viaProxy = new Client(proxy.url, { trust: (await client.keys()) as never });
    await assert.rejects(viaProxy.acquire(rid(), "w1"), (e: unknown) => e instanceof InvalidRequest && /not a tenure answer/.test(e.message));
  } finally {
    await proxy.close();
  }
});
