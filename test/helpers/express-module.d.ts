// express ships no types (and @types/express is not installed): the part of it
// test/helpers/oauth-server.ts uses to host the MCP SDK's authorization-server router.
declare module "express" {
  import type { IncomingMessage, Server, ServerResponse } from "node:http";

  export interface Request extends IncomingMessage {
    body: Record<string, string>;
  }
  export interface Response extends ServerResponse {
    send(body: string): Response;
    redirect(url: string): void;
    type(kind: string): Response;
  }
  export type RequestHandler = (req: Request, res: Response, next: (err?: unknown) => void) => void;
  export interface Express {
    (req: IncomingMessage, res: ServerResponse): void;
    use(handler: RequestHandler): Express;
    get(path: string, handler: (req: Request, res: Response) => void): Express;
    post(path: string, handler: (req: Request, res: Response) => void): Express;
    listen(port: number, host: string): Server;
  }
  interface ExpressFactory {
    (): Express;
    urlencoded(options?: { extended?: boolean }): RequestHandler;
    json(): RequestHandler;
  }
  const express: ExpressFactory;
  export default express;
}
