/** The part of @20minutes/s3rver's API the tests use (the package ships no types). */
declare module "@20minutes/s3rver" {
  import type { IncomingMessage, ServerResponse } from "node:http";
  export default class S3rver {
    constructor(options: { silent?: boolean; directory: string; configureBuckets?: { name: string }[] });
    configureBuckets(): Promise<void>;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    store: { putBucket(name: string): Promise<unknown> };
  }
}
