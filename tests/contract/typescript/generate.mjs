// Generates the TypeScript types of qhost's API from its OpenAPI document with
// openapi-typescript, for the typed client (openapi-fetch) that smoke.ts drives.
//
//   node generate.mjs openapi.json qhost-api.d.ts
//
// Bytes (a string of format `binary`: an upload, an output) are typed `Blob`, as
// openapi-typescript's documentation does it; every other part is generated as it is.
// Fails, saying why, on a document it cannot read.
import { readFileSync, writeFileSync } from "node:fs";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";

const [document, out] = process.argv.slice(2);
if (!document || !out) {
  console.error("usage: node generate.mjs OPENAPI_JSON OUT_D_TS");
  process.exit(2);
}
const BLOB = ts.factory.createTypeReferenceNode(ts.factory.createIdentifier("Blob"));
const ast = await openapiTS(JSON.parse(readFileSync(document, "utf8")), {
  transform(schema) {
    if (schema.format === "binary") return BLOB;
  },
});
writeFileSync(out, astToString(ast));
