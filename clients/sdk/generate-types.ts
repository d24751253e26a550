import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';
import type { OpenAPI3 } from 'openapi-typescript';
import { openApiDocument } from '../../shared/contracts/openapi';

/** Where the SDK's types live; checked in, so that the SDK builds without the service's code. */
export const typesFile = fileURLToPath(new URL('./schema.ts', import.meta.url));

/** The SDK's types for the document the service serves today (`enumValues` adds each enum as an array too). */
export async function generatedTypes(): Promise<string> {
  const ast = await openapiTS(structuredClone(openApiDocument()) as OpenAPI3, { enumValues: true });
  return `${COMMENT_HEADER}// Regenerate with: npm run sdk:types\n\n${astToString(ast)}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await writeFile(typesFile, await generatedTypes());
  console.log(`wrote ${typesFile}`);
}
