/**
 * For the agreement test (tests/test_js_client.py): reads cases `[{receipt, trust, resource,
 * minToken}]` as JSON on stdin and prints, per case, `{receipt, fence}`: "ok" or the name of
 * the first failed check (checkReceipt) and the reason verifyFence refuses — the answers the
 * Python verifier must give too. A receipt given as a string is its JSON text, read strictly.
 */
import { readFileSync } from "node:fs";
import { FenceRefused, MalformedInput, ReceiptError, checkReceipt, parseStrict, trustedKeys, verifyFence } from "../src/index.js";

interface Case {
  receipt: unknown;
  trust: string | string[];
  resource: string;
  minToken: number;
}

function verdict(run: () => unknown): string {
  try {
    run();
    return "ok";
  } catch (error) {
    if (error instanceof ReceiptError) return error.check;
    if (error instanceof FenceRefused) return error.reason;
    if (error instanceof MalformedInput) return "format";
    throw error;
  }
}

const cases = JSON.parse(readFileSync(0, "utf8")) as Case[];
const verdicts = cases.map(({ receipt, trust, resource, minToken }) => ({
  receipt: verdict(() => checkReceipt(typeof receipt === "string" ? parseStrict(receipt) : receipt, trustedKeys(trust))),
  fence: verdict(() => verifyFence(receipt, { trust, resource, minToken })),
}));
process.stdout.write(JSON.stringify(verdicts));
