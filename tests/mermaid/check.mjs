// Parse each file given with Mermaid's own parser (as GitHub's renderer would); print one line per file, exit 1 if
// any is refused. Mermaid's sanitizer wants a DOM, which jsdom provides; nothing is rendered.
import { readFileSync } from "node:fs";
import { JSDOM } from "jsdom";

const dom = new JSDOM("<!DOCTYPE html><body></body>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false });

let refused = 0;
for (const file of process.argv.slice(2)) {
  try {
    const result = await mermaid.parse(readFileSync(file, "utf8"));
    console.log(`ok ${file} ${result.diagramType}`);
  } catch (error) {
    refused += 1;
    console.log(`refused ${file}: ${String(error.message || error).split("\n").join(" ")}`);
  }
}
process.exit(refused ? 1 : 0);
