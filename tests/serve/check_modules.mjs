// The serve tests' fixture: the npm packages they import are installed, at the versions package-lock.json pins.
// Fails with the command that installs them.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.dirname(fileURLToPath(import.meta.url));
const lock = JSON.parse(fs.readFileSync(path.join(dir, 'package-lock.json'), 'utf8'));
const major = Number(process.versions.node.split('.')[0]);
const problems = [];
if (major < 20) problems.push(`Node ${process.versions.node} is too old: the tests need Node 20 or newer`);
for (const name of Object.keys(lock.packages[''].dependencies)) {
  const want = lock.packages[`node_modules/${name}`].version;
  const file = path.join(dir, 'node_modules', name, 'package.json');
  if (!fs.existsSync(file)) {
    problems.push(`${name} ${want} is not installed`);
    continue;
  }
  const have = JSON.parse(fs.readFileSync(file, 'utf8')).version;
  if (have !== want) problems.push(`${name} is ${have}, package-lock.json pins ${want}`);
}
if (problems.length) {
  console.error(`tests/serve: ${problems.join('; ')}.\nInstall them with scripts/install-deps.sh ` +
                `(or: cd ${path.relative(process.cwd(), dir) || '.'} && npm ci).`);
  process.exit(1);
}
console.log(`tests/serve: Node ${process.versions.node}; ` +
            Object.keys(lock.packages[''].dependencies).map((n) => `${n} ${lock.packages[`node_modules/${n}`].version}`).join(', '));
