/**
 * What the tests of the binary's MCP server share: the smoke episode's tools as a
 * Messages request declares them (the scripted upstream plays the smoke episode), and
 * an MCP SDK client connected over Streamable HTTP with an episode's bearer token.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

export const smokeMessagesTools = ["observe", "record", "finish"].map((name) => ({
  name: `mcp__ura__${name}`,
  description: name,
  input_schema: {
    type: "object",
    properties: name === "observe" ? {} : { [name === "record" ? "nonce" : "answer"]: { type: "string" } },
  },
}));

export async function connectMcp(
  url: string,
  token: string | undefined,
  name = "ura-binary-test",
): Promise<Client> {
  const client = new Client({ name, version: "0.0.0" });
  const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}
