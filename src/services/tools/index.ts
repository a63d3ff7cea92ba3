// Tools at the edge of the workspace (DESIGN.md): remote MCP servers connected by a person or a
// studio. This is the API the rest of Cadre uses; nothing outside this folder opens a secret.
export { type CallResult, callTool, DEFAULT_TIMEOUT_MS, MAX_RESULT_CHARS } from "./call.ts";
export { maskSecrets, ownSecrets, ToolConnectionError } from "./client.ts";
export {
  acceptToolChange,
  connectionsFor,
  createConnection,
  type ListedTool,
  listTools,
  type NewConnection,
  setStatus,
  type ToolConnection,
} from "./connections.ts";
export { definitionHash, namespacedToolName, SLUG_PATTERN } from "./definitions.ts";
export { disconnectConnection, type Revocation } from "./disconnect.ts";
export { CALLBACK_PATH, finishSignIn, signInFor, startSignIn } from "./sign-in.ts";
