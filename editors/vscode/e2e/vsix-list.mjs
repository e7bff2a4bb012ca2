// Lists the files in a .vsix (a zip), one per line: run-tests.sh checks
// what a package carries. yauzl comes with vsce (devDependencies).
//
//	node e2e/vsix-list.mjs FILE.vsix
import { createRequire } from "node:module";

const yauzl = createRequire(import.meta.url)("yauzl");
const file = process.argv[2];
if (!file) {
  console.error("usage: node e2e/vsix-list.mjs FILE.vsix");
  process.exit(2);
}
yauzl.open(file, { lazyEntries: true }, (err, zip) => {
  if (err) {
    console.error(`${file}: ${err.message}`);
    process.exit(1);
  }
  zip.on("entry", (e) => {
    console.log(e.fileName);
    zip.readEntry();
  });
  zip.on("end", () => zip.close());
  zip.on("error", (e) => {
    console.error(`${file}: ${e.message}`);
    process.exit(1);
  });
  zip.readEntry();
});
