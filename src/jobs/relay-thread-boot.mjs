// Entry of the event relay's thread (relay-thread.ts). Node 20 does not carry the parent's
// TypeScript loader (tsx) into worker threads, so the thread registers it itself before
// loading the relay.
import { register } from "tsx/esm/api";

register();
await import("./relay-thread.ts");
