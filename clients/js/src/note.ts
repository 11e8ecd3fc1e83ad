/**
 * C2SP signed notes (c2sp.org/signed-note) and tlog checkpoints (c2sp.org/tlog-checkpoint),
 * verification only: an Ed25519 key's ID is the first 4 bytes of SHA-256(name ‖ 0x0A ‖ 0x01 ‖
 * key); each signature line is `— <name> <base64(key ID ‖ signature)>`.
 */
import { createHash, verify as edVerify } from "node:crypto";
import { ed25519Key } from "./multikey.js";
import { MalformedInput } from "./errors.js";

const SIG_PREFIX = "\u2014 ";

export interface Checkpoint {
  origin: string;
  size: number;
  rootHash: Buffer;
}

/** The checkpoint a note states, once a signature by (name, key) verifies over its text. */
export function verifyCheckpoint(note: string, name: string, publicKey: Buffer): Checkpoint {
  const split = note.lastIndexOf("\n\n");
  if (split < 0 || !note.endsWith("\n")) throw new MalformedInput("not a signed note");
  const text = note.slice(0, split + 1);
  const id = createHash("sha256").update(`${name}\n`).update(Buffer.from([1])).update(publicKey).digest().subarray(0, 4);
  const mine = note
    .slice(split + 2, -1)
    .split("\n")
    .map((line) => signatureLine(line))
    .filter((sig) => sig.name === name && sig.raw.subarray(0, 4).equals(id));
  if (mine.length === 0) throw new MalformedInput(`note carries no signature by key ${name}`);
  for (const sig of mine) {
    if (!edVerify(null, Buffer.from(text, "utf8"), ed25519Key(publicKey), sig.raw.subarray(4))) {
      throw new MalformedInput(`invalid note signature by key ${name}`);
    }
  }
  return parseCheckpoint(text);
}

function signatureLine(line: string): { name: string; raw: Buffer } {
  if (!line.startsWith(SIG_PREFIX)) throw new MalformedInput("signature line has no em dash");
  const [name = "", encoded = ""] = line.slice(SIG_PREFIX.length).split(" ");
  return { name, raw: canonicalBase64(encoded, "signature") };
}

function parseCheckpoint(text: string): Checkpoint {
  const [origin = "", size = "", root = ""] = text.slice(0, -1).split("\n");
  if (!origin || !/^(0|[1-9]\d{0,15})$/.test(size)) throw new MalformedInput("bad checkpoint");
  const rootHash = canonicalBase64(root, "checkpoint root hash");
  if (rootHash.length !== 32) throw new MalformedInput("checkpoint root hash is not 32 bytes");
  return { origin, size: Number(size), rootHash };
}

export function canonicalBase64(value: string, what: string): Buffer {
  const raw = Buffer.from(value, "base64");
  if (!value || raw.toString("base64") !== value) throw new MalformedInput(`${what} is not canonical base64`);
  return raw;
}
