/** Files imported `with { type: "file" }` resolve to a path Bun.file can read (on disk, or inside a compiled binary). */
declare module "*.wasm" {
  const path: string;
  export default path;
}
declare module "*.png" {
  const path: string;
  export default path;
}
