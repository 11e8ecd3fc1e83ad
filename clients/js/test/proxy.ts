/** A man in the middle for the tests: forwards each request to the real server, then lets the
 * test drop the answer (the connection is cut) or rewrite it. */
import { createServer, type Server } from "node:http";

export type Decide = (path: string, body: string, answer: string) => string | "drop";

export interface Proxy {
  url: string;
  bodies: string[];
  close(): Promise<void>;
}

export function startProxy(upstream: string, decide: Decide): Promise<Proxy> {
  const bodies: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", async () => {
      const body = Buffer.concat(chunks).toString("utf8");
      bodies.push(body);
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([k]) => !["host", "content-length", "connection"].includes(k)),
      ) as Record<string, string>;
      const method = req.method ?? "GET";
      const answer = await fetch(upstream + (req.url ?? "/"), { method, headers, body: method === "GET" ? undefined : body });
      const text = await answer.text();
      const decided = decide(req.url ?? "/", body, text);
      if (decided === "drop") return void req.socket.destroy();
      res.writeHead(answer.status, { "content-type": "application/json" });
      res.end(decided);
    });
  });
  return new Promise((done) => {
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      done({ url: `http://127.0.0.1:${port}`, bodies, close: () => new Promise((ok) => server.close(() => ok())) });
    });
  });
}
