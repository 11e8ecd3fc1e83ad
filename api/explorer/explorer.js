// tenure ledger explorer: read-only, no dependencies, every proof checked here with WebCrypto.
// Signed notes: https://c2sp.org/signed-note (Ed25519 key ID = SHA-256(name ‖ 0x0A ‖ 0x01 ‖ key)[:4]);
// checkpoints: https://c2sp.org/tlog-checkpoint; inclusion proofs: RFC 9162 §2.1.3.2, in the
// shape of transparency-dev/merkle proof/verify.go (the proof length is fixed by index and size).
"use strict";

const PAGE = 20;
const API = "/api/v1";
const utf8 = new TextEncoder();
const $ = (id) => document.getElementById(id);
const view = { checkpoint: null, start: 0, page: [] };

// -- bytes -----------------------------------------------------------------------------------

function b64decode(text) {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function b64encode(bytes) {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

function equal(a, b) {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

async function sha256(bytes) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

const leafHash = (entry) => sha256(concat(Uint8Array.of(0), entry)); // RFC 9162 §2.1.1
const nodeHash = (l, r) => sha256(concat(Uint8Array.of(1), l, r));

const B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

function b58decode(text) {
  let n = 0n;
  for (const c of text) {
    const v = B58.indexOf(c);
    if (v < 0) throw new Error("not base58btc");
    n = n * 58n + BigInt(v);
  }
  const bytes = [];
  while (n > 0n) { bytes.unshift(Number(n & 255n)); n >>= 8n; }
  for (const c of text) { if (c !== "1") break; bytes.unshift(0); }
  return Uint8Array.from(bytes);
}

function didKeyPublic(did) {
  // did:key:z + base58btc(0xed 0x01 ‖ 32-byte Ed25519 public key)
  if (!did.startsWith("did:key:z")) throw new Error("not an Ed25519 did:key");
  const raw = b58decode(did.slice("did:key:z".length));
  if (raw.length !== 34 || raw[0] !== 0xed || raw[1] !== 0x01) throw new Error("not Ed25519");
  return raw.slice(2);
}

// -- signed notes and checkpoints --------------------------------------------------------------

function parseNote(note) {
  const split = note.lastIndexOf("\n\n");
  if (split < 0 || !note.endsWith("\n")) throw new Error("not a signed note");
  const text = note.slice(0, split + 1);
  const signatures = note.slice(split + 2, -1).split("\n").map((line) => {
    if (!line.startsWith("— ")) throw new Error("bad signature line");
    const [name, sig] = line.slice(2).split(" ");
    const raw = b64decode(sig);
    return { name, keyId: raw.slice(0, 4), signature: raw.slice(4) };
  });
  const [origin, size, root] = text.split("\n");
  return { text, signatures, origin, size: BigInt(size), root: b64decode(root) };
}

async function noteKeyId(name, publicKey) {
  return (await sha256(concat(utf8.encode(name + "\n"), Uint8Array.of(1), publicKey))).slice(0, 4);
}

// "verified" | "invalid" | "unsupported" (this browser has no WebCrypto Ed25519)
async function verifyNote(note, did) {
  const publicKey = didKeyPublic(did);
  const kid = await noteKeyId(note.origin, publicKey);
  const mine = note.signatures.filter((s) => s.name === note.origin && equal(s.keyId, kid));
  if (!mine.length) return "invalid";
  let key;
  try {
    key = await crypto.subtle.importKey("raw", publicKey, { name: "Ed25519" }, false, ["verify"]);
  } catch (e) {
    return "unsupported";
  }
  for (const s of mine) {
    const ok = await crypto.subtle.verify({ name: "Ed25519" }, key, s.signature, utf8.encode(note.text));
    if (!ok) return "invalid";
  }
  return "verified";
}

// -- RFC 9162 inclusion -----------------------------------------------------------------------

async function rootFromInclusion(index, size, leaf, proof) {
  if (index >= size) throw new Error(`index ${index} is beyond tree size ${size}`);
  const inner = (index ^ (size - 1n)).toString(2).length - ((index ^ (size - 1n)) === 0n ? 1 : 0);
  const border = [...(index >> BigInt(inner)).toString(2)].filter((b) => b === "1").length;
  if (proof.length !== inner + border) {
    throw new Error(`wrong inclusion proof size ${proof.length}, want ${inner + border}`);
  }
  let h = leaf;
  for (let i = 0; i < inner; i++) {
    h = ((index >> BigInt(i)) & 1n) === 0n ? await nodeHash(h, proof[i]) : await nodeHash(proof[i], h);
  }
  for (let i = inner; i < proof.length; i++) h = await nodeHash(proof[i], h);
  return h;
}

// -- the page ---------------------------------------------------------------------------------

async function getJSON(path) {
  const answer = await fetch(path, { headers: { Accept: "application/json" } });
  if (!answer.ok) throw new Error(`GET ${path}: HTTP ${answer.status}`);
  return answer.json();
}

function setStatus(element, status, text) {
  element.dataset.status = status;
  element.textContent = text;
}

async function loadCheckpoint() {
  const [served, keyring] = await Promise.all([getJSON(`${API}/log/checkpoint`), getJSON(`${API}/keys`)]);
  const note = parseNote(served.note);
  view.checkpoint = note;
  $("cp-origin").textContent = note.origin;
  $("cp-size").textContent = note.size.toString();
  $("cp-root").textContent = b64encode(note.root);
  $("cp-time").textContent = served.timestamp || "—";
  const outcomes = [];
  for (const key of keyring.keys) {
    const outcome = await verifyNote(note, key.did);
    if (outcome === "verified") {
      return setStatus($("cp-signature"), "verified",
        `✓ Ed25519 signature verified in this browser under ${key.did} (published at ${API}/keys;` +
        " compare it with the key you trust)");
    }
    outcomes.push(outcome);
  }
  if (outcomes.includes("unsupported")) {
    setStatus($("cp-signature"), "unsupported",
      "not checked: this browser's WebCrypto has no Ed25519; use `tenure monitor` or `tenure audit`");
  } else {
    setStatus($("cp-signature"), "invalid", "✗ no published key verifies this checkpoint's signature");
  }
}

function cell(row, text, mono) {
  const td = row.insertCell();
  td.textContent = text === undefined || text === null ? "" : String(text);
  if (mono) { td.className = "mono"; td.title = td.textContent; }
  return td;
}

async function loadEntries(start) {
  const size = Number(view.checkpoint.size);
  const body = $("entries").tBodies[0];
  body.replaceChildren();
  if (size === 0) { $("page-label").textContent = "the log is empty"; return; }
  view.start = Math.max(0, Math.min(start, size - 1));
  const end = Math.min(view.start + PAGE, size);
  const page = await getJSON(`${API}/log/entries?start=${view.start}&end=${end}`);
  view.page = page.entries;
  for (const item of page.entries) {
    const e = item.entry;
    const row = body.insertRow();
    row.dataset.index = item.index;
    cell(row, item.index);
    cell(row, e.time);
    cell(row, e.kind);
    cell(row, e.tenant, true);
    cell(row, e.resource, true);
    cell(row, e.holder, true);
    cell(row, e.fencingToken);
    cell(row, e.expiresAt);
    const button = document.createElement("button");
    button.type = "button";
    button.className = "prove";
    button.textContent = "prove";
    button.addEventListener("click", () => prove(item));
    cell(row, "").append(button);
  }
  $("page-label").textContent = `entries ${view.start}–${end - 1} of ${size}`;
}

async function prove(item) {
  const out = $("proof");
  const cp = view.checkpoint;
  setStatus(out, "pending", `checking entry ${item.index}…`);
  try {
    const proof = await getJSON(`${API}/log/proof/inclusion?index=${item.index}&treeSize=${cp.size}`);
    const hashes = proof.hashes.map(b64decode);
    const computed = await rootFromInclusion(BigInt(item.index), cp.size, await leafHash(b64decode(item.leaf)), hashes);
    if (equal(computed, cp.root)) {
      setStatus(out, "pass", `✓ entry ${item.index} is included in the signed checkpoint of size ` +
        `${cp.size}: its leaf bytes and ${hashes.length} proof hashes lead to root ${b64encode(cp.root)}`);
    } else {
      setStatus(out, "fail", `✗ entry ${item.index}: the proof leads to ${b64encode(computed)}, ` +
        `not the signed root ${b64encode(cp.root)}`);
    }
  } catch (e) {
    setStatus(out, "fail", `✗ entry ${item.index}: ${e.message}`);
  }
}

async function verifyDocument(text) {
  const out = $("report");
  setStatus(out, "pending", "verifying…");
  try {
    JSON.parse(text);
  } catch (e) {
    return setStatus(out, "error", `not JSON: ${e.message}`);
  }
  const answer = await fetch(`${API}/verify-provenance`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: text,
  });
  const data = (await answer.json()).data || {};
  if (!answer.ok || !Array.isArray(data.checks)) {
    const why = data.error ? `${data.error.code}: ${data.error.message}` : `HTTP ${answer.status}`;
    return setStatus(out, "error", `the verifier refused it: ${why}`);
  }
  out.replaceChildren();
  out.dataset.status = data.status;
  const heading = document.createElement("p");
  heading.className = "verdict";
  heading.textContent = data.status === "pass" ? "PASS: every check holds" : "FAIL: a check failed";
  const list = document.createElement("ul");
  for (const check of data.checks) {
    const li = document.createElement("li");
    li.className = check.ok ? "ok" : "bad";
    li.dataset.check = check.check;
    li.textContent = `${check.check}: ${check.detail}`;
    list.append(li);
  }
  out.append(heading, list);
}

function wire() {
  const zone = $("drop-zone");
  zone.addEventListener("dragover", (e) => { e.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", async (e) => {
    e.preventDefault();
    zone.classList.remove("over");
    const file = e.dataTransfer.files[0];
    if (file) await verifyDocument(await file.text());
  });
  $("file-input").addEventListener("change", async (e) => {
    const file = e.target.files[0];
    if (file) await verifyDocument(await file.text());
  });
  $("verify-button").addEventListener("click", () => verifyDocument($("paste").value));
  $("cp-refresh").addEventListener("click", () => refresh(view.start));
  $("page-first").addEventListener("click", () => loadEntries(0));
  $("page-prev").addEventListener("click", () => loadEntries(view.start - PAGE));
  $("page-next").addEventListener("click", () => loadEntries(view.start + PAGE));
  $("page-last").addEventListener("click", () => {
    const size = Number(view.checkpoint.size);
    loadEntries(size - 1 - ((size - 1) % PAGE));
  });
}

async function refresh(start) {
  try {
    await loadCheckpoint();
    await loadEntries(start);
  } catch (e) {
    setStatus($("cp-signature"), "error", `could not load the log: ${e.message}`);
  }
}

wire();
refresh(0);
